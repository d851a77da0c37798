"""Install the default beat schedule into django-celery-beat (admins then see and change it)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand
from django_celery_beat.models import IntervalSchedule, PeriodicTask

from boincproj.celery import DEFAULT_SCHEDULE


class Command(BaseCommand):
    help = "Create the periodic tasks of the default schedule; --reset restores their intervals."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--reset", action="store_true", help="Overwrite intervals changed in the admin")

    def handle(self, *args: Any, **opts: Any) -> None:
        created = 0
        for entry in DEFAULT_SCHEDULE:
            interval, _ = IntervalSchedule.objects.get_or_create(
                every=entry.every_seconds, period=IntervalSchedule.SECONDS
            )
            task, was_created = PeriodicTask.objects.get_or_create(
                name=entry.name,
                defaults={"task": entry.task, "interval": interval, "description": entry.description},
            )
            if was_created:
                created += 1
            elif opts["reset"]:
                task.task, task.interval, task.description = entry.task, interval, entry.description
                task.save()
        self.stdout.write(
            f"Periodic tasks: {created} created, {len(DEFAULT_SCHEDULE) - created} already present."
        )

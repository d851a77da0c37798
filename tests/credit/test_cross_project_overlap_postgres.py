"""Two cross-project passes at once, on PostgreSQL: the daily task and an admin's command.

Each pass rewrites the PlanClassScale table. When the two see different data (here an app
is deprecated between their reads) they lock its rows in orders that cross, and without a
guard PostgreSQL aborts one of them as a deadlock victim. The second pass must instead
step aside and say so, and the first must finish.
"""

from __future__ import annotations

import io
import threading
from collections.abc import Iterator
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.db import connection
from django.db.models.signals import post_save

from apps.applications.models import App
from apps.core.db import advisory_key
from apps.credit.models import PlanClassScale
from apps.credit.tasks import cross_project_task
from apps.projects.models import DaemonRun
from tests.factories import AppFactory, AppVersionFactory, ProjectFactory
from tests.threads import in_thread, wait_for, waiting_on_a_lock

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.postgres,
    pytest.mark.skipif(connection.vendor != "postgresql", reason="SQLite runs one writer at a time"),
]

SKIPPED = "skipped: another cross-project pass is running"


def mixed_app(project, name: str, cpu_plan_class: str, gpu_plan_class: str) -> App:
    app = AppFactory(project=project, name=name)
    AppVersionFactory(app=app, plan_class=cpu_plan_class, expavg_credit=100.0, pfc_scale=1.0)
    AppVersionFactory(
        app=app,
        plan_class=gpu_plan_class,
        proc_type="NVIDIA",
        gpu_usage=1,
        expavg_credit=100.0,
        pfc_scale=0.2,
    )
    return app


@pytest.fixture
def two_mixed_apps(now) -> App:
    """Plan classes "", ati (first app), cuda, mt (second), each with yesterday's factor;
    returns the first app."""
    project = ProjectFactory(slug="mixed")
    first = mixed_app(project, "first", "", "ati")
    mixed_app(project, "second", "mt", "cuda")
    for plan_class in ("", "ati", "cuda", "mt"):
        PlanClassScale.objects.create(plan_class=plan_class, scale=1.0, computed_time=now - timedelta(days=1))
    return first


@pytest.fixture
def first_pass_held() -> Iterator[tuple[threading.Event, threading.Event]]:
    """(holding, release): the first pass to store the "" factor stops there, its row locked."""
    holding, release = threading.Event(), threading.Event()

    def hold(sender, instance, **kwargs):
        if instance.plan_class == "" and not holding.is_set():
            holding.set()
            assert release.wait(20), "the test never released the first pass"

    post_save.connect(hold, sender=PlanClassScale, dispatch_uid="first_pass_held")
    yield holding, release
    release.set()
    post_save.disconnect(sender=PlanClassScale, dispatch_uid="first_pass_held")


def test_a_command_run_during_the_daily_pass_steps_aside_and_the_daily_pass_finishes(
    two_mixed_apps, first_pass_held
):
    holding, release = first_pass_held
    daily_outcome: list[dict[str, int]] = []
    daily, daily_errors = in_thread(lambda: daily_outcome.append(cross_project_task()))
    assert holding.wait(20), "the daily pass never stored a factor"
    App.objects.filter(id=two_mixed_apps.id).update(deprecated=True)  # the command sees cuda, mt only

    out = io.StringIO()
    command, command_errors = in_thread(lambda: call_command("cross_project_normalize", stdout=out))
    wait_for(lambda: not command.is_alive() or waiting_on_a_lock())
    release.set()
    command.join(30)
    daily.join(30)

    assert (daily_errors, command_errors) == ([], [])
    assert SKIPPED in out.getvalue()
    assert daily_outcome[0]["errors"] == 0
    assert list(PlanClassScale.objects.values_list("plan_class", flat=True)) == ["", "ati", "cuda", "mt"]


def lock_held_elsewhere() -> tuple[threading.Thread, list[BaseException], threading.Event]:
    """Another connection holds the cross-project lock until the returned event is set."""
    holder_ready, release = threading.Event(), threading.Event()

    def hold_the_lock() -> None:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_lock(%s)", [advisory_key("credit.cross_project")])
            holder_ready.set()
            assert release.wait(20)
            cursor.execute("SELECT pg_advisory_unlock(%s)", [advisory_key("credit.cross_project")])

    holder, holder_errors = in_thread(hold_the_lock)
    assert holder_ready.wait(20)
    return holder, holder_errors, release


def test_a_second_daily_pass_records_that_it_skipped(two_mixed_apps):
    holder, holder_errors, release = lock_held_elsewhere()
    try:
        outcome = cross_project_task()
    finally:
        release.set()
        holder.join(30)

    assert holder_errors == []
    assert outcome == {"items": 0, "errors": 0}
    assert DaemonRun.objects.get(daemon="cross_project").message == SKIPPED
    assert PlanClassScale.objects.get(plan_class="cuda").scale == 1.0  # yesterday's, untouched


def test_the_admins_recompute_during_a_pass_says_the_factors_were_not_refreshed(admin_client, two_mixed_apps):
    holder, holder_errors, release = lock_held_elsewhere()
    try:
        page = admin_client.post(f"/admin/credit/planclassscale/app/{two_mixed_apps.pk}/", follow=True)
    finally:
        release.set()
        holder.join(30)

    assert holder_errors == []
    assert "Factors not refreshed: another cross-project pass is running" in page.content.decode()
    assert PlanClassScale.objects.get(plan_class="cuda").scale == 1.0  # yesterday's, untouched

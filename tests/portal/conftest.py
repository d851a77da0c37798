"""Fixtures of the portal tests."""

from __future__ import annotations

from collections.abc import Iterator
from io import StringIO

import pytest
from django.core.management import call_command
from django.db import transaction
from django.test import override_settings

from apps.projects.models import Project


@pytest.fixture(scope="module")
def demo(django_db_setup, django_db_blocker, tmp_path_factory) -> Iterator[Project]:
    """The demo project as ``seed_demo`` makes it, seeded once per module (``seed_demo`` replays two
    weeks through the daemons, about ten seconds): inside a transaction rolled back when the
    module ends, so each test's own transaction is a savepoint within it and sees the demo data."""
    data_dir = tmp_path_factory.mktemp("demo") / "data"
    with django_db_blocker.unblock(), override_settings(COBBLESTONE_DATA_DIR=data_dir), transaction.atomic():
        call_command("seed_demo", stdout=StringIO())
        yield Project.objects.get(slug="demo")
        transaction.set_rollback(True)

"""/health/: each check on its own, the report monitoring clients see, the summary everyone else sees."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

import pytest
from celery import Celery
from django.db import connection
from django.db.migrations.recorder import MigrationRecorder
from health_check.exceptions import ServiceUnavailable

from apps.ops.health import Broker, DataAreaDisk, HealthView, Migrations

pytestmark = pytest.mark.django_db(transaction=True)


def get(client, *args, **kwargs):
    """The view is async; Playwright's sync API (the browser tests' session fixture) keeps an
    event loop running in the test thread, where Django cannot run one, so ask from another."""
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(client.get, *args, **kwargs).result()


@pytest.fixture(autouse=True)
def _no_cached_summary():
    HealthView._summary = None


@pytest.fixture
def without_celery_workers(monkeypatch):
    """The checks that need no Celery worker (unit tests run none; the production test does)."""
    checks = tuple(c for c in HealthView.checks if getattr(c, "__name__", "") != "CeleryWorkers")
    monkeypatch.setattr(HealthView, "checks", checks)


def test_the_report_lists_every_check(client, without_celery_workers, settings):
    settings.COBBLESTONE_DATA_DIR.mkdir(parents=True)
    response = get(client, "/health/", HTTP_ACCEPT="application/json")
    assert response.status_code == 200
    assert json.loads(response.content) == {
        "Database(alias='default')": "OK",
        "Broker()": "OK",
        "DataAreaDisk()": "OK",
        "Migrations()": "OK",
        "StaticFiles()": "OK",
    }


def test_no_celery_worker_answering_is_unhealthy(client, settings):
    settings.COBBLESTONE_DATA_DIR.mkdir(parents=True)
    response = get(client, "/health/?format=json")
    assert response.status_code == 503
    assert json.loads(response.content)["CeleryWorkers()"] == "Unavailable: Celery workers unavailable"


def test_others_see_only_the_status(client, without_celery_workers, settings):
    settings.COBBLESTONE_DATA_DIR.mkdir(parents=True)
    response = get(client, "/health/", REMOTE_ADDR="203.0.113.9")
    assert response.status_code == 200
    assert json.loads(response.content) == {"status": "healthy"}


def test_others_see_unhealthy_as_503(client, without_celery_workers, settings):
    # no data directory
    response = get(client, "/health/", REMOTE_ADDR="203.0.113.9")
    assert response.status_code == 503
    assert json.loads(response.content) == {"status": "unhealthy"}


def test_a_missing_data_directory_is_unavailable(settings):
    with pytest.raises(ServiceUnavailable, match="the data directory does not exist"):
        DataAreaDisk().run()


def test_a_data_area_below_the_free_space_floor_is_unavailable(settings):
    (settings.COBBLESTONE_DATA_DIR / "demo" / "download").mkdir(parents=True)
    settings.HEALTH_DISK_MIN_FREE_MB = 10**12  # more than any disk has
    with pytest.raises(ServiceUnavailable, match="MB free, below HEALTH_DISK_MIN_FREE_MB"):
        DataAreaDisk().run()


def test_a_migration_missing_from_the_database_is_unavailable():
    Migrations().run()  # all applied
    recorder = MigrationRecorder(connection)
    recorder.record_unapplied("work", "0001_initial")
    try:
        with pytest.raises(
            ServiceUnavailable, match=r"1 migration\(s\) not applied, first work.0001_initial"
        ):
            Migrations().run()
    finally:
        # The table outlives this test (transactional tests flush only the models' tables);
        # later tests that migrate need the history whole.
        recorder.record_applied("work", "0001_initial")


def test_a_broker_that_refuses_connections_is_unavailable():
    # Not the current app: later tests in this process send the project's tasks through it.
    app = Celery(broker="redis://127.0.0.1:1/0", set_as_current=False)
    with pytest.raises(ServiceUnavailable, match="cannot connect"):
        Broker(app=app, timeout=timedelta(seconds=1)).run()

"""deploy/monitoring/: the alert rules pass promtool, and every metric the dashboard's panels and
the alerts name is one that /metrics (or /health/'s OpenMetrics report) exports."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor

import pytest
import yaml
from django.core.management import call_command

from apps.benchmarks.stack.units import BASE_DIR
from apps.ops.health import HealthView
from tests.ops.conftest import jobs, project  # noqa: F401
from tests.scheduler.conftest import account, cpu_app, make_request, rpc, worker  # noqa: F401

MONITORING = BASE_DIR / "deploy" / "monitoring"
ALERTS = MONITORING / "cobblestone-alerts.yml"
DASHBOARD = MONITORING / "cobblestone-dashboard.json"
# Metric names are those of Cobblestone's and django-health-check's; `up` is Prometheus's own.
METRIC = re.compile(r"\b(?:cobblestone|django_health_check)_[a-z0-9_]+\b")


def promtool() -> str:
    found = os.environ.get("COBBLESTONE_TEST_PROMTOOL") or shutil.which("promtool")
    if found:
        return found
    if os.environ.get("CI"):
        pytest.fail("promtool missing under CI: .ci/services.sh installs Debian's prometheus package")
    pytest.skip("promtool not installed (Debian's prometheus package; .ci/services.sh installs it)")


def dashboard_expressions() -> dict[str, list[str]]:
    panels = json.loads(DASHBOARD.read_text())["panels"]
    return {panel["title"]: [target["expr"] for target in panel["targets"]] for panel in panels}


def alert_expressions() -> dict[str, str]:
    groups = yaml.safe_load(ALERTS.read_text())["groups"]
    return {rule["alert"]: rule["expr"] for group in groups for rule in group["rules"]}


def exported(text: str) -> set[str]:
    return {line.split("{")[0].split()[0] for line in text.splitlines() if line and not line.startswith("#")}


def test_promtool_finds_the_alert_rules_clean():
    done = subprocess.run(
        [promtool(), "check", "rules", str(ALERTS)], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"SUCCESS: {len(alert_expressions())} rules found" in done.stdout


def test_the_alerts_fire_on_promtools_series_and_spare_a_paused_daemon():
    # deploy/monitoring/cobblestone-alerts.test.yml: each case lists every alert it expects.
    done = subprocess.run(
        [promtool(), "test", "rules", str(MONITORING / "cobblestone-alerts.test.yml")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_every_dashboard_panel_names_a_metric():
    assert [
        title for title, exprs in dashboard_expressions().items() if not METRIC.search(" ".join(exprs))
    ] == []


def test_the_alerts_cover_work_daemons_backlogs_errors_and_health():
    names = " ".join(alert_expressions().values())
    for metric in (
        "cobblestone_results",
        "cobblestone_daemon_last_run_age_seconds",
        "cobblestone_daemon_backlog",
        "cobblestone_scheduler_rpcs_total",
        "django_health_check_overall_status",
    ):
        assert metric in names


def get(client, *args, **kwargs):
    """The health view is async; asked from another thread, as tests/ops/test_health.py does."""
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(client.get, *args, **kwargs).result()


@pytest.mark.django_db(transaction=True)
def test_every_metric_the_dashboard_and_alerts_use_is_exported(
    client,
    project,  # noqa: F811
    account,  # noqa: F811
    jobs,  # noqa: F811
    settings,
    monkeypatch,
):
    reply = rpc(
        client, project, make_request(account.authenticator, work_req_seconds=3600.0, cpu_req_secs=3600.0)
    )
    assert reply.results
    client.post("/ops/file_upload_handler", data=b"garbage", content_type="application/x-www-form-urlencoded")
    call_command("run_daemons", "--once", "--project", "ops")
    metrics = client.get("/metrics")
    assert metrics.status_code == 200
    # The report's metric names; no Celery worker runs here, so that check is left out.
    monkeypatch.setattr(
        HealthView, "checks", tuple(c for c in HealthView.checks if c.__name__ != "CeleryWorkers")
    )
    HealthView._summary = None
    settings.COBBLESTONE_DATA_DIR.mkdir(parents=True, exist_ok=True)
    health = get(client, "/health/?format=openmetrics")
    names = exported(metrics.content.decode()) | exported(health.content.decode())
    used = set(METRIC.findall(" ".join(e for exprs in dashboard_expressions().values() for e in exprs)))
    used |= set(METRIC.findall(" ".join(alert_expressions().values())))
    assert used - names == set()

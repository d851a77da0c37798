"""/metrics: the scheduler's and upload handler's counters, the database gauges, and who may read them."""

from __future__ import annotations

import pytest
from django.core.management import call_command
from django.db import OperationalError
from prometheus_client import REGISTRY

from apps.hosts.models import Host
from apps.protocol import render_request
from tests.scheduler.conftest import make_request, rpc

pytestmark = pytest.mark.django_db


def sample(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


def test_a_scheduler_rpc_is_counted_with_its_outcome_and_latency(client, project, account, jobs):
    before = sample("cobblestone_scheduler_rpcs_total", project="ops", outcome="ok")
    latencies = sample("cobblestone_scheduler_rpc_seconds_count", project="ops")
    dispatched = sample("cobblestone_jobs_dispatched_total", project="ops", resource="CPU")
    reply = rpc(
        client, project, make_request(account.authenticator, work_req_seconds=3600.0, cpu_req_secs=3600.0)
    )
    assert sample("cobblestone_scheduler_rpcs_total", project="ops", outcome="ok") == before + 1
    assert sample("cobblestone_scheduler_rpc_seconds_count", project="ops") == latencies + 1
    assert sample("cobblestone_jobs_dispatched_total", project="ops", resource="CPU") == dispatched + len(
        reply.results
    )
    assert len(reply.results) > 0


def test_a_bad_request_and_an_unknown_project_are_counted_apart(client, project):
    bad = sample("cobblestone_scheduler_rpcs_total", project="ops", outcome="bad_request")
    unknown = sample("cobblestone_scheduler_rpcs_total", project="", outcome="no_project")
    client.post("/ops/cgi", data=b"<not xml", content_type="application/x-www-form-urlencoded")
    client.post(
        "/nosuch/cgi",
        data=render_request(make_request("x")),
        content_type="application/x-www-form-urlencoded",
    )
    assert sample("cobblestone_scheduler_rpcs_total", project="ops", outcome="bad_request") == bad + 1
    assert sample("cobblestone_scheduler_rpcs_total", project="", outcome="no_project") == unknown + 1


def test_an_upload_refused_is_counted(client, project):
    before = sample("cobblestone_uploads_total", project="ops", status="refused")
    client.post("/ops/file_upload_handler", data=b"garbage", content_type="application/x-www-form-urlencoded")
    assert sample("cobblestone_uploads_total", project="ops", status="refused") == before + 1


def test_metrics_show_backlogs_daemon_ages_and_work_remaining_per_app(client, project, jobs):
    response = client.get("/metrics")
    assert response.status_code == 200
    text = response.content.decode()
    assert 'cobblestone_results{app="cpuapp",project="ops",state="unsent"} 3.0' in text
    assert 'cobblestone_results{app="cpuapp",project="ops",state="in_progress"} 0.0' in text
    assert 'cobblestone_daemon_backlog{daemon="validator",project="ops"} 0.0' in text
    assert "cobblestone_scheduler_rpcs_total" in text


def test_daemon_last_run_age_is_exported_once_a_daemon_ran(client, project, jobs):
    call_command("run_daemons", "--once", "--project", "ops")
    text = client.get("/metrics").content.decode()
    prefix = 'cobblestone_daemon_last_run_age_seconds{daemon="transitioner",project="ops"}'
    line = next(row for row in text.splitlines() if row.startswith(prefix))
    assert 0 <= float(line.split()[-1]) < 60


def test_metrics_refused_outside_the_monitoring_networks(client, project):
    response = client.get("/metrics", REMOTE_ADDR="203.0.113.9")
    assert response.status_code == 403


def test_a_token_opens_metrics_from_anywhere(client, project, settings):
    settings.MONITORING_TOKEN = "s3cret-token"
    assert (
        client.get("/metrics", REMOTE_ADDR="203.0.113.9", HTTP_AUTHORIZATION="Bearer wrong").status_code
        == 403
    )
    ok = client.get("/metrics", REMOTE_ADDR="203.0.113.9", HTTP_AUTHORIZATION="Bearer s3cret-token")
    assert ok.status_code == 200


def test_behind_the_proxy_the_forwarded_client_is_the_one_checked(client, project):
    # nginx on loopback appends the address it saw: an outside client stays outside.
    response = client.get("/metrics", REMOTE_ADDR="127.0.0.1", HTTP_X_FORWARDED_FOR="203.0.113.9")
    assert response.status_code == 403


def test_a_forwarded_header_from_an_untrusted_peer_is_ignored(client, project):
    response = client.get("/metrics", REMOTE_ADDR="203.0.113.9", HTTP_X_FORWARDED_FOR="127.0.0.1")
    assert response.status_code == 403


def test_the_scheduler_records_the_hosts_address_given_by_the_proxy(client, project, account, jobs):
    body = render_request(make_request(account.authenticator))
    client.post(
        "/ops/cgi",
        data=body,
        content_type="application/x-www-form-urlencoded",
        REMOTE_ADDR="127.0.0.1",
        HTTP_X_FORWARDED_FOR="198.51.100.23",
    )
    assert Host.objects.get(account=account).last_ip_addr == "198.51.100.23"


def test_without_the_database_metrics_still_serve_the_counters(client, project, monkeypatch):
    def down(**kwargs):
        raise OperationalError("server closed the connection unexpectedly")

    monkeypatch.setattr("apps.ops.metrics.work_backlog_get", down)
    response = client.get("/metrics")
    assert response.status_code == 200
    text = response.content.decode()
    assert "cobblestone_database_up 0.0" in text
    assert "cobblestone_daemon_backlog" not in text


def test_a_count_that_cannot_be_kept_does_not_fail_the_rpc(client, project, account, jobs, monkeypatch):
    def broken(**labels):
        raise FileNotFoundError("/run/cobblestone/prometheus/counter_1.db")

    monkeypatch.setattr("apps.core.metrics.SCHEDULER_RPCS.labels", broken)
    reply = rpc(
        client, project, make_request(account.authenticator, work_req_seconds=3600.0, cpu_req_secs=3600.0)
    )
    assert len(reply.results) > 0

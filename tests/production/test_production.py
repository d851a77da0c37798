"""The production stack end to end, as deploy/ sets it up and an operator runs it.

nginx (TLS) + gunicorn + PostgreSQL + Redis + a Celery worker and beat on loopback, DEBUG off,
configured only by an environment file made from deploy/cobblestone.env.example, the
processes started with their systemd units' command lines (apps.benchmarks.stack). The stock BOINC
client attaches through nginx, computes, uploads, reports and is granted credit by the
daemons beat schedules; a browser sees the admin and the volunteer pages styled; /health/ is
healthy; /metrics counts the client's RPCs. The restore drill backs up the running project,
restores it into a fresh database and data area, and the same client reports to it.
"""

from __future__ import annotations

import http.client
import json
import logging
import re
import shutil
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from apps.benchmarks.stack import Stack
from apps.benchmarks.stack.databases import database_drop
from apps.protocol import render_request
from apps.work.domain.states import Outcome, ServerState
from tests.e2e.conftest import BoincClient, wait_until
from tests.production.conftest import job_create, project_install, sql, tls_client, volunteer_attach
from tests.scheduler.conftest import make_request

pytestmark = [pytest.mark.slow, pytest.mark.boinc_client, pytest.mark.browser]
logger = logging.getLogger(__name__)
ADMIN_PASSWORD = "operator-pw-8842"


def result_state(stack: Stack, name: str) -> tuple[int, int, float] | None:
    rows = sql(stack, "SELECT server_state, outcome, granted_credit FROM work_result WHERE name = %s", name)
    return rows[0] if rows else None


def project_hosts(stack: Stack, slug: str) -> list[tuple[int]]:
    return sql(
        stack,
        "SELECT h.id FROM hosts_host h JOIN projects_project p ON p.id = h.project_id WHERE p.slug = %s",
        slug,
    )


def wait_for_credit(stack: Stack, client: BoincClient, name: str) -> None:
    """Until the result is reported and beat's daemons have validated it and granted credit."""
    wait_until(
        lambda: (result_state(stack, name) or (0, 0, 0.0))[0] == ServerState.OVER,
        timeout=90,
        what=f"the report of {name}",
        client=client,
    )
    wait_until(lambda: result_state(stack, name)[2] > 0, timeout=90, what=f"credit for {name}", client=client)


def metric(stack: Stack, name: str, **labels: str) -> float:
    status, _, body = stack.get("/metrics")
    assert status == 200
    for family in text_string_to_metric_families(body.decode()):
        for sample in family.samples:
            if sample.name == name and all(sample.labels.get(k) == v for k, v in labels.items()):
                return sample.value
    return 0.0


def test_a_stock_client_attaches_through_nginx_computes_and_is_granted_credit(stack, boinc_client, tmp_path):
    started = time.monotonic()
    master_url = project_install(stack, "prod", tmp_path)
    job_create(stack, "prod", "job1", tmp_path)
    client = tls_client(stack, boinc_client)
    client.start()
    volunteer_attach(client, master_url)

    wait_for_credit(stack, client, "job1_0")
    wait_until(lambda: "got ack for task job1_0" in client.log(), timeout=30, what="the ack", client=client)
    state = result_state(stack, "job1_0")
    assert state[:2] == (ServerState.OVER, Outcome.SUCCESS)
    output = sql(stack, "SELECT name, uploaded FROM work_outputfile WHERE name LIKE 'job1_0%%'")
    assert [uploaded for _, uploaded in output] == [True]
    assert (Path(stack.env["COBBLESTONE_DATA_DIR"]) / "prod" / "upload" / output[0][0]).is_file()
    client.update(master_url)
    status = client.project_status()
    assert float(status["user_total_credit"]) > 0
    assert float(status["host_total_credit"]) > 0

    # /metrics sums the gunicorn workers' counts: every RPC the client made, each job, the upload.
    rpcs = client.rpc_count()
    assert metric(stack, "cobblestone_scheduler_rpcs_total", project="prod", outcome="ok") == rpcs
    assert metric(stack, "cobblestone_scheduler_rpc_seconds_count", project="prod") == rpcs
    assert metric(stack, "cobblestone_jobs_dispatched_total", project="prod", resource="CPU") == 1
    assert metric(stack, "cobblestone_uploads_total", project="prod", status="ok") >= 1
    assert metric(stack, "cobblestone_results", project="prod", app="worker", state="unsent") == 0
    age = metric(stack, "cobblestone_daemon_last_run_age_seconds", project="prod", daemon="validator")
    assert 0 <= age < 120
    # BOINC's bin/status: every daemon beat runs has run for the project, a worker answers.
    status = stack.manage("status", "--project", "prod").stdout
    assert "prod (Production prod): scheduler running" in status
    assert "not running" not in status
    assert "Celery workers answering: worker1@" in status
    logger.info("client attach to credit through the production stack: %.1f s", time.monotonic() - started)


def test_metrics_count_every_rpc_whichever_web_process_answered(stack):
    assert len(stack.part("web").children()) == 2  # two gunicorn worker processes
    before = metric(stack, "cobblestone_scheduler_rpcs_total", project="", outcome="no_project")
    body = render_request(make_request("no-such-key"))
    bind = stack.env["GUNICORN_BIND"]

    def post(_: int) -> int:
        # One connection per request, straight to gunicorn, so the workers share them; with
        # the header nginx adds, or Django would redirect the plain-HTTP request to HTTPS.
        headers = {"Connection": "close", "X-Forwarded-Proto": "https"}
        request = urllib.request.Request(f"http://{bind}/nosuch/cgi", data=body, headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return response.status
        except urllib.error.HTTPError as exc:
            return exc.code

    with ThreadPoolExecutor(max_workers=8) as pool:
        statuses = list(pool.map(post, range(40)))
    assert statuses == [404] * 40
    assert metric(stack, "cobblestone_scheduler_rpcs_total", project="", outcome="no_project") == before + 40


def test_check_deploy_is_clean_on_the_running_configuration(stack):
    done = stack.manage("check", "--deploy", "--fail-level", "WARNING")
    assert done.stdout.strip() == "System check identified no issues (0 silenced)."


def test_health_is_healthy_through_nginx(stack):
    status, headers, body = stack.get("/health/", {"Accept": "application/json"})
    assert status == 200, body
    report = json.loads(body)
    assert set(report.values()) == {"OK"}
    assert set(report) == {
        "Database(alias='default')",
        "Broker()",
        "CeleryWorkers()",
        "DataAreaDisk()",
        "Migrations()",
        "StaticFiles()",
    }
    assert headers["Strict-Transport-Security"].startswith("max-age=31536000")


def test_nginx_serves_downloads_with_range_and_passes_missing_files_to_django(stack, tmp_path):
    project_install(stack, "files", tmp_path)
    source = job_create(stack, "files", "file1", tmp_path)
    content = source.read_bytes()
    status, headers, body = stack.get(f"/files/download/{source.name}", {"Range": "bytes=10-"})
    assert (status, body) == (206, content[10:])
    assert headers["Content-Range"] == f"bytes 10-{len(content) - 1}/{len(content)}"
    assert "X-Frame-Options" not in headers  # nginx sent the file; Django adds this header to all it answers
    status, headers, _ = stack.get("/files/download/no-such-file.txt")
    assert status == 404
    assert headers.get("X-Frame-Options") == "DENY"  # Django's answer, which counts the failure
    errors = sql(
        stack,
        "SELECT sum(r.errors) FROM projects_daemonrun r JOIN projects_project p ON p.id = r.project_id "
        "WHERE p.slug = 'files' AND r.daemon = 'download'",
    )
    assert errors == [(1,)]


def test_plain_http_is_redirected_to_https(stack):
    connection = http.client.HTTPConnection("127.0.0.1", stack.ports["http"], timeout=10)
    connection.request("GET", "/prod/")
    response = connection.getresponse()
    assert response.status == 301
    assert response.getheader("Location") == "https://127.0.0.1/prod/"


def styled(page, selector: str, prop: str) -> str:
    return page.eval_on_selector(selector, f"e => getComputedStyle(e).getPropertyValue('{prop}')")


def test_a_browser_sees_the_admin_and_the_volunteer_pages_styled_and_the_api_docs_offline(
    stack, browser, tmp_path
):
    stack.manage(
        "createsuperuser", "--noinput", "--username", "operator", "--email", "operator@example.org",
        env={"DJANGO_SUPERUSER_PASSWORD": ADMIN_PASSWORD},
    )  # fmt: skip
    project_install(stack, "pages", tmp_path)
    context = browser.new_context(ignore_https_errors=True)
    elsewhere: list[str] = []

    def offline(route) -> None:
        # Nothing but this server: a page that needs the internet shows it here.
        if route.request.url.startswith(stack.base_url):
            route.continue_()
        else:
            elsewhere.append(route.request.url)
            route.abort()

    context.route("**/*", offline)
    page = context.new_page()
    page.set_default_timeout(20000)
    stylesheets: list[tuple[str, int]] = []
    page.on(
        "response",
        lambda r: stylesheets.append((r.url, r.status)) if r.request.resource_type == "stylesheet" else None,
    )

    page.goto(f"{stack.base_url}/pages/")
    assert styled(page, "header.site", "border-bottom-style") == "solid"  # from portal/site.css
    page.goto(f"{stack.base_url}/admin/login/")
    assert styled(page, "#header", "background-color") not in ("", "rgba(0, 0, 0, 0)")
    page.fill("#id_username", "operator")
    page.fill("#id_password", ADMIN_PASSWORD)
    page.click("input[type=submit]")
    page.wait_for_selector("#site-name")
    assert styled(page, "#header", "background-color") not in ("", "rgba(0, 0, 0, 0)")
    assert stylesheets
    assert all(status == 200 for _, status in stylesheets)
    assert all(
        re.search(r"\.[0-9a-f]{12}\.css$", url) for url, _ in stylesheets
    )  # collectstatic's hashed names

    page.goto(f"{stack.base_url}/api/docs/")
    page.wait_for_selector(".swagger-ui .info .title")
    assert "Cobblestone API" in page.inner_text(".swagger-ui .info .title")
    assert elsewhere == []
    context.close()


def test_each_part_can_be_killed_or_restarted_and_the_server_recovers(stack):
    """The launcher's fault API (what a fault-injection test builds on), and /health/ after each."""

    last: list[object] = []

    def healthy() -> bool:
        try:
            status, _, body = stack.get("/health/", {"Accept": "application/json"})
        except OSError as exc:  # a part is still starting
            last[:] = [exc]
            return False
        last[:] = [status, body]
        return status == 200 and set(json.loads(body).values()) == {"OK"}

    def until(predicate, what: str) -> None:
        # Generous: the suite runs this beside other pytest processes on two cores.
        deadline = time.monotonic() + 180
        while not predicate():
            assert time.monotonic() < deadline, f"timed out waiting for {what}; {diagnosis()}"
            time.sleep(0.5)

    def diagnosis() -> str:
        # Whether the worker answers a ping from a new client tells a worker that stopped
        # listening from a web process whose own broker connection went stale.
        return (
            f"last answer: {last}; the worker answers a new client's ping: {worker.ready()}\n"
            f"--- worker log (end) ---\n{worker.log()[-3000:]}"
        )

    web, worker = stack.part("web"), stack.part("worker")
    killed = stack.kill("web", child=True)
    until(lambda: len(web.children()) == 2 and killed not in web.children(), "gunicorn to replace its worker")
    killed = stack.kill("worker", child=True)
    until(
        lambda: len(worker.children()) == 2 and killed not in worker.children(),
        "Celery to replace its process",
    )
    stack.restart("redis")
    stack.restart("postgres")
    until(healthy, "health after restarting Redis and PostgreSQL")
    stack.kill("postgres")  # SIGKILL to the postmaster: a crash
    stack.start_part("postgres")  # recovers
    until(healthy, "health after PostgreSQL's crash recovery")
    stack.kill("nginx")
    stack.start_part("nginx")
    until(healthy, "health through the new nginx")


def test_restore_drill_a_backup_of_the_running_project_takes_the_clients_report(
    stack, boinc_client, tmp_path
):
    started = time.monotonic()
    master_url = project_install(stack, "drill", tmp_path)
    job_create(stack, "drill", "drill1", tmp_path, seconds=6)
    client = tls_client(stack, boinc_client)
    client.start()
    volunteer_attach(client, master_url, email="drill@example.org")
    wait_until(lambda: "Starting task drill1_0" in client.log(), timeout=60, what="the task", client=client)
    client.cmd("--set_network_mode", "never")  # the result waits on the client for the restored server
    logger.info("drill: task running after %.1f s", time.monotonic() - started)
    hosts_before = project_hosts(stack, "drill")

    backup = tmp_path / "backup"
    stack.manage("backup", "--output", str(backup))  # while every part runs
    old_database, old_data = stack.env["DATABASE_URL"], Path(stack.env["COBBLESTONE_DATA_DIR"])
    for part in ("nginx", "beat", "worker", "web"):
        stack.stop_part(part)
    database_drop(old_database)  # the original is gone: only the backup remains
    stack.databases.remove(old_database)
    shutil.rmtree(old_data)
    stack.reconfigure(DATABASE_URL=stack.new_database(), COBBLESTONE_DATA_DIR=str(tmp_path / "restored-data"))
    restored = stack.manage("restore", str(backup))
    assert restored.stdout.startswith("Restored ")
    stack.manage("migrate", "--noinput")  # the upgrade step: nothing to do for the same code
    for part in ("web", "worker", "beat", "nginx"):
        stack.start_part(part)
    logger.info("drill: backed up, restored and restarted after %.1f s", time.monotonic() - started)

    client.cmd("--set_network_mode", "always")
    client.cmd("--network_available")
    wait_for_credit(stack, client, "drill1_0")
    logger.info("drill: reported and credited after %.1f s", time.monotonic() - started)
    assert result_state(stack, "drill1_0")[:2] == (ServerState.OVER, Outcome.SUCCESS)
    assert (tmp_path / "restored-data" / "drill" / "upload").is_dir()
    uploaded = list((tmp_path / "restored-data" / "drill" / "upload").iterdir())
    assert [p.name.startswith("drill1_0") for p in uploaded] == [True]
    client.update(master_url)
    assert float(client.project_status()["user_total_credit"]) > 0
    assert project_hosts(stack, "drill") == hosts_before
    logger.info("restore drill: %.1f s", time.monotonic() - started)

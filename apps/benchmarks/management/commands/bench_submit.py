"""bench_submit: BOINC's remote submission RPCs at scale, served in-process over HTTP.

    python manage.py bench_submit [--jobs 10000] [--query-jobs 100000]

1. ``submit_batch`` of ``--jobs`` jobs (each with one uploaded input file and the app's
   templates), as BOINC's Python library sends it: the seconds of the request and the peak
   resident memory of this process, which serves it as a web worker would.
2. ``query_batch`` of a batch of ``--query-jobs`` jobs (workunits written directly, their
   results left out), without and with job details: seconds and peak memory.

Everything happens in one transaction of the configured database, rolled back at the end,
with a temporary data area. Run it on a quiet server or against a scratch DATABASE_URL: on
SQLite it holds the write lock while it runs.
"""

from __future__ import annotations

import hashlib
import os
import resource
import tempfile
import time
from pathlib import Path
from urllib.parse import urlencode

from django.conf import settings
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management.base import BaseCommand, CommandParser
from django.db import connection, transaction
from django.test import Client
from django.test.utils import override_settings

from apps.applications.services import app_create
from apps.projects.services import project_create
from apps.submit.domain.states import BatchState
from apps.submit.models import Batch, UserSubmit
from apps.submit.services.submission import templates_dir
from apps.volunteers.models import Account
from apps.work.models import Workunit

SLUG = "bench-submit"
INPUT_TEMPLATE = (
    "<input_template><file_info><number>0</number></file_info><workunit><file_ref><file_number>0"
    "</file_number><open_name>in</open_name></file_ref><rsc_fpops_est>1e12</rsc_fpops_est>"
    "<rsc_fpops_bound>1e14</rsc_fpops_bound></workunit></input_template>\n"
)
OUTPUT_TEMPLATE = (
    "<output_template><file_info><name><OUTFILE_0/></name><generated_locally/><upload_when_present/>"
    "<max_nbytes>100000</max_nbytes><url><UPLOAD_URL/></url></file_info><result><file_ref>"
    "<file_name><OUTFILE_0/></file_name><open_name>out</open_name></file_ref></result></output_template>\n"
)


def _peak_mb() -> float:
    """The process's peak resident set so far (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _rss_mb() -> float:
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    except OSError:
        return 0.0


class Command(BaseCommand):
    help = "Time submit_batch and query_batch of large batches (rolled back) and print a table."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--jobs", type=int, default=10_000)
        parser.add_argument("--query-jobs", type=int, default=100_000)

    def handle(self, *args: object, **opts: int) -> None:
        rows: list[tuple[str, float, float, float]] = []
        with (
            tempfile.TemporaryDirectory() as tmp,
            override_settings(
                COBBLESTONE_DATA_DIR=Path(tmp) / "data",
                COBBLESTONE_SUBMIT_MAX_JOBS=max(opts["jobs"], settings.COBBLESTONE_SUBMIT_MAX_JOBS),
            ),
            transaction.atomic(),
        ):
            account = self._setup()
            hosts = [h for h in settings.ALLOWED_HOSTS if h and "*" not in h and not h.startswith(".")]
            client = Client(HTTP_HOST=hosts[0] if hosts else "testserver")
            rows.append(self._submit(client, account, opts["jobs"]))
            batch_id = self._big_batch(account, opts["query_jobs"])
            for details in (False, True):
                rows.append(self._query(client, account, batch_id, opts["query_jobs"], details))
            transaction.set_rollback(True)  # a benchmark leaves nothing behind
        load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
        self.stdout.write(f"database {connection.vendor}, load average {load}")
        self.stdout.write(f"{'call':<44} {'seconds':>8} {'RSS before MB':>14} {'peak RSS MB':>12}")
        for name, seconds, before, peak in rows:
            self.stdout.write(f"{name:<44} {seconds:>8.2f} {before:>14.0f} {peak:>12.0f}")

    def _setup(self) -> Account:
        project = project_create(slug=SLUG, name="Submission benchmark").project
        app_create(project=project, name="benchapp")
        folder = templates_dir(project)
        folder.mkdir(parents=True)
        (folder / "benchapp_in").write_text(INPUT_TEMPLATE)
        (folder / "benchapp_out").write_text(OUTPUT_TEMPLATE)
        account = Account.objects.create(project=project, name="scientist", email_addr="s@example.com")
        UserSubmit.objects.create(account=account, submit_all=True)
        return account

    def _post(self, client: Client, handler: str, xml: str) -> bytes:
        response = client.post(
            f"/{SLUG}/{handler}",
            data=urlencode({"request": xml}),
            content_type="application/x-www-form-urlencoded",
        )
        if response.status_code != 200 or b"<error>" in response.content:
            raise RuntimeError(response.content[:500].decode(errors="replace"))
        return response.content

    def _submit(self, client: Client, account: Account, n: int) -> tuple[str, float, float, float]:
        data = b"benchmark input\n"
        name = "jf_" + hashlib.md5(data).hexdigest()
        auth = f"<authenticator>{account.authenticator}</authenticator>"
        upload = f"<upload_files>{auth}<batch_id>0</batch_id><delete_time>0</delete_time><phys_name>{name}</phys_name></upload_files>"
        client.post(
            f"/{SLUG}/job_file.php", data={"request": upload, "file_0": SimpleUploadedFile(name, data)}
        )
        jobs = "".join(
            f"<job>\n<name>bench_{i}</name>\n<command_line>--n {i}</command_line>\n"
            f"<input_file>\n<mode>local_staged</mode>\n<source>{name}</source>\n</input_file>\n</job>\n"
            for i in range(n)
        )
        xml = f"<submit_batch>\n{auth}\n<batch>\n<app_name>benchapp</app_name>\n<batch_id>0</batch_id>\n{jobs}</batch>\n</submit_batch>\n"
        before = _rss_mb()
        start = time.perf_counter()
        self._post(client, "submit_rpc_handler.php", xml)
        return (
            f"submit_batch, {n:,} jobs ({len(xml) / 2**20:.1f} MB)",
            time.perf_counter() - start,
            before,
            _peak_mb(),
        )

    def _big_batch(self, account: Account, n: int) -> int:
        app = account.project.apps.get(name="benchapp")
        batch = Batch.objects.create(
            project=account.project, owner=account, app=app, name="big", state=BatchState.IN_PROGRESS, njobs=n
        )
        chunk = 5000
        for start in range(0, n, chunk):
            Workunit.objects.bulk_create(
                Workunit(project=account.project, app=app, name=f"big_{i}", batch=batch.id)
                for i in range(start, min(n, start + chunk))
            )
        return batch.id

    def _query(
        self, client: Client, account: Account, batch_id: int, n: int, details: bool
    ) -> tuple[str, float, float, float]:
        xml = (
            f"<query_batch><authenticator>{account.authenticator}</authenticator><batch_id>{batch_id}</batch_id>"
            f"<get_cpu_time>0</get_cpu_time><get_job_details>{int(details)}</get_job_details></query_batch>"
        )
        before = _rss_mb()
        start = time.perf_counter()
        body = self._post(client, "submit_rpc_handler.php", xml)
        label = f"query_batch, {n:,} jobs{' with details' if details else ''} ({len(body) / 2**20:.1f} MB)"
        return (label, time.perf_counter() - start, before, _peak_mb())

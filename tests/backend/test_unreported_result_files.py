"""Uploads of results sent but never reported (timed out) are deleted with their workunit's
files, so nothing is left in the upload area once db_purge has removed the rows."""

from __future__ import annotations

from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import call_command

from apps.core import clock
from apps.scheduler.transfer import partial_path
from apps.work.domain.states import FileDeleteState, Outcome, ServerState
from apps.work.models import Workunit
from apps.work.services import workunit_cancel
from tests.backend.conftest import make_wu, report, results_of, send
from tests.factories import AppFactory, AppVersionFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def single(project):
    """One replica per job (quorum 1)."""
    app = AppFactory(project=project, name="single", min_quorum=1, target_nresults=1)
    AppVersionFactory(app=app)
    return app


def run_daemons(*args: str) -> None:
    call_command("run_daemons", "--once", *args, stdout=StringIO(), stderr=StringIO())


def timed_out_send(project, app, host):
    """A job whose only replica went to ``host`` and is past its deadline and grace period."""
    wu = make_wu(project, app, now=None)
    [result] = results_of(wu)
    sent = clock.now() - timedelta(days=2)
    send(result, host, app.versions.get(), sent, delay=3600)
    Workunit.objects.filter(id=wu.id).update(transition_time=sent)
    return wu, result


def test_a_cancelled_jobs_unfinished_upload_is_deleted_before_the_job_is_purged(project, single, hosts):
    wu, result = timed_out_send(project, single, hosts[0])
    part = partial_path(project, result.output_files.get().name)
    part.parent.mkdir(parents=True, exist_ok=True)
    part.write_bytes(b"half an outp")
    run_daemons()
    result.refresh_from_db()
    assert (result.server_state, result.outcome) == (ServerState.OVER, Outcome.NO_REPLY)
    assert len(results_of(wu)) == 2  # the transitioner sent the job again
    workunit_cancel(workunit_ids=[wu.id])
    run_daemons("--purge-min-age-days", "0")
    assert not Workunit.objects.filter(id=wu.id).exists()
    assert not part.exists()


def test_a_timed_out_results_late_complete_upload_is_deleted(project, single, hosts):
    wu, late = timed_out_send(project, single, hosts[0])
    run_daemons()
    late.refresh_from_db()
    assert late.outcome == Outcome.NO_REPLY
    # The first host uploads its whole output after all, and never reports.
    output = late.output_files.get()
    (project.upload_dir / output.name).write_bytes(b"42\n")
    output.uploaded, output.nbytes = True, 3
    output.save(update_fields=["uploaded", "nbytes"])
    replacement = results_of(wu)[1]
    send(replacement, hosts[1], single.versions.get(), clock.now())
    report(replacement, clock.now())
    run_daemons("--purge-min-age-days", "0")
    assert not Workunit.objects.filter(id=wu.id).exists()
    assert not (project.upload_dir / output.name).exists()


def test_a_result_never_sent_is_not_marked_for_file_deletion(project, single, hosts):
    wu, _ = timed_out_send(project, single, hosts[0])
    run_daemons()
    unsent = results_of(wu)[1]
    workunit_cancel(workunit_ids=[wu.id])
    run_daemons()  # db_purge keeps it: a week has not passed
    wu.refresh_from_db()
    unsent.refresh_from_db()
    assert wu.file_delete_state == FileDeleteState.DONE
    assert (unsent.outcome, unsent.file_delete_state) == (Outcome.DIDNT_NEED, FileDeleteState.INIT)

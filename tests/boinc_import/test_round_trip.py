"""After the move, everything a volunteer had still works: the attached client uploads and
reports the task it got from the old server, is credited for it and gets new work; the
volunteer logs in with the old password; credit and its decay go on as before.

Marked postgres: production imports into PostgreSQL, where the rows arrive by COPY and the
id sequences are moved past them before the scheduler and daemons add rows of their own."""

from __future__ import annotations

import hashlib
import math
from dataclasses import replace
from datetime import timedelta

import pytest
from django.contrib.auth.hashers import identify_hasher
from django.test import Client

from apps.core import clock
from apps.core.domain.signing import sign_upload_certificate
from apps.credit.services.stats import credit_update_stats
from apps.hosts.models import Host
from apps.projects.models import Project
from apps.protocol import (
    ClientVersion,
    ReportedFile,
    ReportedResult,
    UploadReply,
    UploadRequest,
    UploadStatus,
    parse_account_reply,
    parse_upload_reply,
    render_file_size_query,
    render_upload_header,
)
from apps.volunteers.models import Account, Team, passwd_hash
from apps.work.domain.states import Outcome, ServerState, ValidateState
from apps.work.models import Result
from apps.work.services import workunits_transition, workunits_validate
from tests.boinc_import.conftest import OUTPUT_MAX, PLATFORM, Scenario, hier, import_boinc, write
from tests.factories import AccountFactory, HostFactory, ProjectFactory
from tests.scheduler.conftest import make_request, rpc

pytestmark = [pytest.mark.django_db, pytest.mark.mysql, pytest.mark.slow, pytest.mark.postgres]

OUTPUT = b"the answer is 42\n"
HALF_LIFE = 7 * 86400.0


def upload_output(client: Client, project: Project, name: str, keys, *, offset: int = 0) -> UploadReply:
    """Upload an output as the client does, with the certificate the old server signed."""
    header = render_upload_header(
        UploadRequest(
            name=name,
            max_nbytes=OUTPUT_MAX,
            nbytes=len(OUTPUT),
            md5_cksum=hashlib.md5(OUTPUT).hexdigest(),
            offset=offset,
            xml_signature=sign_upload_certificate(keys.upload.private_text, name, OUTPUT_MAX),
            data_offset=0,
            client_version=ClientVersion(7, 20, 5),
        )
    )
    response = client.post(
        f"/{project.slug}/file_upload_handler",
        data=header + OUTPUT[offset:],
        content_type="application/x-www-form-urlencoded",
    )
    return parse_upload_reply(response.content)


def report_and_ask(client: Client, project: Project, s: Scenario, *, hostid: int, seqno: int):
    """The 7.20 client's RPC after finishing the task: report it and ask for an hour of work."""
    return rpc(
        client,
        project,
        make_request(
            s.ada.authenticator,
            hostid=hostid,
            rpc_seqno=seqno,
            work_req_seconds=3600.0,
            cpu_req_secs=3600.0,
            cpu_req_instances=1.0,
            host_info=replace(
                make_request("").host_info, p_fpops=3e9, host_cpid="c" * 32, domain_name="adas-pc"
            ),
            results=(
                ReportedResult(
                    name=s.running_result,
                    final_cpu_time=500.0,
                    final_elapsed_time=550.0,
                    exit_status=0,
                    state=5,
                    platform=PLATFORM,
                    version_num=100,
                    app_version_num=100,
                    stderr_out="<stderr_txt>done</stderr_txt>",
                    files=(
                        ReportedFile(
                            name=s.running_output,
                            nbytes=len(OUTPUT),
                            max_nbytes=OUTPUT_MAX,
                            md5_cksum=hashlib.md5(OUTPUT).hexdigest(),
                        ),
                    ),
                ),
            ),
        ),
    )


def test_an_imported_host_reports_its_old_task_is_credited_and_gets_new_work(
    client, boinc_db, standard, project_dir, keys
):
    import_boinc(boinc_db, project_dir)
    project = Project.objects.get(slug="oldproj")
    assert upload_output(client, project, standard.running_output, keys).status == UploadStatus.OK
    reply = report_and_ask(client, project, standard, hostid=standard.host_id, seqno=43)
    assert reply.result_acks == (standard.running_result,)
    assert reply.hostid is None  # the client keeps its host id
    assert [r.name for r in reply.results] == [standard.fresh_result]
    assert reply.user_total_credit == 3000.0
    host = Host.objects.get(pk=standard.host_id)
    assert (host.rpc_seqno, host.account.email_addr) == (43, standard.ada.email)

    now = clock.now() + timedelta(minutes=1)
    workunits_transition(project=project, now=now)
    workunits_validate(project=project, now=now)
    done = Result.objects.get(name=standard.running_result)
    assert (done.server_state, done.outcome, done.validate_state) == (
        ServerState.OVER,
        Outcome.SUCCESS,
        ValidateState.VALID,
    )
    assert done.granted_credit > 0
    host.refresh_from_db()
    ada = Account.objects.get(email_addr=standard.ada.email)
    assert host.total_credit == pytest.approx(2500.0 + done.granted_credit)
    assert ada.total_credit == pytest.approx(3000.0 + done.granted_credit)
    assert Team.objects.get().total_credit == pytest.approx(5000.0 + done.granted_credit)


def test_a_task_uploaded_to_the_old_server_and_reported_here_is_credited(
    client, boinc_db, standard, project_dir
):
    write(hier(project_dir / "upload", standard.running_output), OUTPUT)
    import_boinc(boinc_db, project_dir)
    project = Project.objects.get(slug="oldproj")
    reply = report_and_ask(client, project, standard, hostid=standard.host_id, seqno=43)
    assert reply.result_acks == (standard.running_result,)
    now = clock.now() + timedelta(minutes=1)
    workunits_transition(project=project, now=now)
    workunits_validate(project=project, now=now)
    done = Result.objects.get(name=standard.running_result)
    assert (done.validate_state, done.granted_credit > 0) == (ValidateState.VALID, True)


def test_an_upload_interrupted_before_the_move_resumes_here(client, boinc_db, standard, project_dir, keys):
    write(hier(project_dir / "upload", standard.running_output), OUTPUT[:5])
    import_boinc(boinc_db, project_dir)
    project = Project.objects.get(slug="oldproj")
    response = client.post(
        f"/{project.slug}/file_upload_handler",
        data=render_file_size_query(standard.running_output, ClientVersion(7, 20, 5)),
        content_type="application/x-www-form-urlencoded",
    )
    assert parse_upload_reply(response.content).file_size == 5
    assert upload_output(client, project, standard.running_output, keys, offset=5).status == UploadStatus.OK
    assert (project.upload_dir / standard.running_output).read_bytes() == OUTPUT


def test_a_client_whose_host_id_was_taken_is_told_its_new_id(client, boinc_db, standard, project_dir, keys):
    other = ProjectFactory(slug="other")
    HostFactory(id=standard.host_id, project=other, account=AccountFactory(project=other))
    import_boinc(boinc_db, project_dir)
    project = Project.objects.get(slug="oldproj")
    new_id = project.host_id_from_client(standard.host_id)
    assert upload_output(client, project, standard.running_output, keys).status == UploadStatus.OK
    reply = report_and_ask(client, project, standard, hostid=standard.host_id, seqno=43)
    assert (reply.hostid, reply.result_acks) == (new_id, (standard.running_result,))
    assert Host.objects.filter(project=project).count() == 1
    assert Result.objects.get(name=standard.running_result).server_state == ServerState.OVER
    # The client now sends its new id (and, as BOINC's does, counts RPCs from 0 again).
    again = report_and_ask(client, project, standard, hostid=new_id, seqno=0)
    assert again.hostid is None


def test_a_copied_client_state_still_gets_a_new_host(client, boinc_db, standard, project_dir):
    """BOINC's rule survives the import: a lower rpc_seqno than stored means another computer."""
    import_boinc(boinc_db, project_dir)
    project = Project.objects.get(slug="oldproj")
    reply = report_and_ask(client, project, standard, hostid=standard.host_id, seqno=5)
    assert reply.hostid not in (None, standard.host_id)


# --- passwords -----------------------------------------------------------------------------------


@pytest.mark.real_password_hasher
@pytest.mark.parametrize("who", ["ada", "bob"])
def test_a_volunteer_logs_in_on_the_web_with_the_old_password_and_is_rehashed(
    client, boinc_db, standard, project_dir, who
):
    volunteer = getattr(standard, who)
    import_boinc(boinc_db, project_dir)
    stored = Account.objects.get(email_addr=volunteer.email).passwd_hash
    # BOINC's hash as it was: Ada's the bare md5 of old servers, Bob's PHP's bcrypt of it.
    assert stored.startswith("bcrypt$$2y$") is (who == "bob")
    response = client.post("/oldproj/account/", {"email": volunteer.email, "password": volunteer.password})
    assert response.status_code == 302
    assert volunteer.authenticator in client.get("/oldproj/account/").content.decode()
    upgraded = Account.objects.get(email_addr=volunteer.email).passwd_hash
    assert identify_hasher(upgraded).algorithm == "bcrypt_sha256"


@pytest.mark.real_password_hasher
@pytest.mark.parametrize("who", ["ada", "bob"])
def test_lookup_account_with_the_old_password_gives_the_account_key(
    client, boinc_db, standard, project_dir, who
):
    volunteer = getattr(standard, who)
    import_boinc(boinc_db, project_dir)
    digest = passwd_hash(volunteer.password, volunteer.email)
    response = client.get(f"/oldproj/lookup_account.php?email_addr={volunteer.email}&passwd_hash={digest}")
    assert parse_account_reply(response.content).authenticator == volunteer.authenticator
    wrong = passwd_hash("not it", volunteer.email)
    response = client.get(f"/oldproj/lookup_account.php?email_addr={volunteer.email}&passwd_hash={wrong}")
    assert parse_account_reply(response.content).error_num == -206


# --- credit ------------------------------------------------------------------------------------


def boinc_decay(avg: float, avg_time: float, now: float) -> float:
    """BOINC's update_average with no new work (lib/util.cpp): avg × e^(-Δt·ln2/half-life)."""
    return avg * math.exp(-max(0.0, now - avg_time) * math.log(2) / HALF_LIFE)


def test_credit_totals_and_recent_averages_equal_the_sources_decayed_to_the_same_time(
    boinc_db, standard, project_dir
):
    source = {
        ("user", row[0]): row[1:]
        for row in boinc_db.query("SELECT id, total_credit, expavg_credit, expavg_time FROM user")
    }
    source |= {
        ("team", row[0]): row[1:]
        for row in boinc_db.query("SELECT id, total_credit, expavg_credit, expavg_time FROM team")
    }
    source |= {
        ("host", row[0]): row[1:]
        for row in boinc_db.query("SELECT id, total_credit, expavg_credit, expavg_time FROM host")
    }
    import_boinc(boinc_db, project_dir)
    project = Project.objects.get(slug="oldproj")
    later = clock.now() + timedelta(days=3)
    credit_update_stats(project=project, now=later)
    imported = {("user", a.pk): a for a in Account.objects.filter(project=project)}
    imported |= {("team", t.pk): t for t in Team.objects.filter(project=project)}
    imported |= {("host", h.pk): h for h in Host.objects.filter(project=project)}
    assert set(imported) == set(source)
    for key, (total, rac, rac_time) in source.items():
        row = imported[key]
        assert row.total_credit == total
        assert row.expavg_credit == pytest.approx(boinc_decay(rac, rac_time, later.timestamp()), rel=1e-9)

"""A scheduler RPC as the stock client sees it: identity, credit, first job, reports."""

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from apps.hosts.models import Host
from apps.protocol import MessagePriority
from apps.work.domain.states import ClientState, Outcome, ServerState
from apps.work.models import Result, Workunit
from apps.work.services.transitioner import workunit_transition
from tests.scheduler.conftest import GPU, make_jobs, make_request, others, reported, rpc

pytestmark = pytest.mark.django_db


def test_new_host_first_request_for_one_second_gets_a_job(client, project, account, cpu_app):
    make_jobs(project, cpu_app, 3)
    reply = rpc(client, project, make_request(account.authenticator))
    assert len(reply.results) == 1
    assert reply.hostid == Host.objects.get().id


def test_every_reply_carries_user_and_host_credit(client, project, account, cpu_app):
    account.total_credit, account.expavg_credit = 123.5, 4.25
    account.save()
    reply = rpc(client, project, make_request(account.authenticator))
    assert (reply.user_total_credit, reply.user_expavg_credit) == (123.5, 4.25)
    assert (reply.host_total_credit, reply.host_expavg_credit) == (0.0, 0.0)


def test_reply_gives_project_name_master_url_and_request_delay(client, project, account):
    reply = rpc(client, project, make_request(account.authenticator))
    assert reply.project_name == "Scheduler Test"
    assert reply.master_url == "http://127.0.0.1:8000/sched/"
    assert reply.request_delay == 7


def test_sent_job_has_signed_app_files_and_upload_certificate(client, project, account, cpu_app):
    make_jobs(project, cpu_app, 1)
    reply = rpc(client, project, make_request(account.authenticator))
    app_files = [f for f in reply.file_infos if f.executable]
    uploads = [f for f in reply.file_infos if f.is_upload]
    assert app_files
    assert all(f.file_signature for f in app_files)
    assert uploads
    assert all(f.xml_signature and f.max_nbytes for f in uploads)


def test_code_sign_key_is_sent_only_when_the_client_has_none(client, project, account):
    first = rpc(client, project, make_request(account.authenticator))
    later = rpc(
        client,
        project,
        make_request(
            account.authenticator, hostid=first.hostid, rpc_seqno=1, code_sign_key=first.code_sign_key
        ),
    )
    assert first.code_sign_key.startswith("1024")
    assert later.code_sign_key is None


def test_known_host_is_recognised_and_gets_no_new_hostid(client, project, account):
    first = rpc(client, project, make_request(account.authenticator))
    second = rpc(client, project, make_request(account.authenticator, hostid=first.hostid, rpc_seqno=1))
    assert second.hostid is None
    assert Host.objects.count() == 1


def test_lower_rpc_seqno_means_a_copied_state_file_and_a_new_host(client, project, account):
    first = rpc(client, project, make_request(account.authenticator))
    rpc(client, project, make_request(account.authenticator, hostid=first.hostid, rpc_seqno=5))
    copied = rpc(client, project, make_request(account.authenticator, hostid=first.hostid, rpc_seqno=2))
    assert copied.hostid not in (None, first.hostid)
    assert Host.objects.count() == 2


def test_host_hardware_and_gpus_are_recorded(client, project, account):
    from tests.scheduler.conftest import GPU

    rpc(client, project, make_request(account.authenticator, coprocs=(GPU,)))
    host = Host.objects.get()
    coproc = host.coprocs.get()
    assert (host.p_ncpus, host.p_fpops, host.m_nbytes) == (4, 1e9, 8e9)
    assert (coproc.proc_type, coproc.count, coproc.peak_flops, coproc.have_opencl) == (
        "NVIDIA",
        1,
        2e12,
        True,
    )


def test_unknown_authenticator_gets_boinc_message_and_long_delay_and_nothing_written(client, project):
    reply = rpc(client, project, make_request("not-a-real-key"))
    assert reply.request_delay == 3600
    assert "Invalid or missing account key" in reply.messages[0].text
    assert Host.objects.count() == 0


def _sent_result(client, project, account):
    reply = rpc(client, project, make_request(account.authenticator))
    return reply, Result.objects.get(name=reply.results[0].name)


def test_reported_success_is_recorded_and_acknowledged(client, project, account, cpu_app):
    make_jobs(project, cpu_app, 1)
    first, result = _sent_result(client, project, account)
    reply = rpc(
        client,
        project,
        make_request(
            account.authenticator,
            hostid=first.hostid,
            rpc_seqno=1,
            results=(reported(result.name, elapsed=321.0),),
            cpu_req_secs=0.0,
            work_req_seconds=0.0,
        ),
    )
    result.refresh_from_db()
    assert reply.result_acks == (result.name,)
    assert (result.server_state, result.outcome, result.elapsed_time) == (
        ServerState.OVER,
        Outcome.SUCCESS,
        321.0,
    )
    assert result.workunit.transition_time is not None


def _report_outputs(client, project, account, app, *, uploaded: bool):
    """Send one job, give its output file a stored size and MD5, then report it (conftest's
    ``reported`` lists that file with 12 bytes and its MD5)."""
    make_jobs(project, app, 1)
    first, result = _sent_result(client, project, account)
    output = result.output_files.get()
    output.nbytes, output.md5_cksum, output.uploaded = 100, "0" * 32, uploaded
    output.save()
    rpc(
        client,
        project,
        make_request(
            account.authenticator,
            hostid=first.hostid,
            rpc_seqno=1,
            results=(reported(result.name),),
        ),
    )
    output.refresh_from_db()
    return output


def test_a_report_records_the_size_and_md5_of_an_output_not_yet_uploaded(client, project, account, cpu_app):
    output = _report_outputs(client, project, account, cpu_app, uploaded=False)
    assert (output.nbytes, output.md5_cksum) == (12, "d533b16cb509e0614cb307fa6494b7eb")


def test_a_report_leaves_an_uploaded_output_as_the_upload_handler_recorded_it(
    client, project, account, cpu_app
):
    output = _report_outputs(client, project, account, cpu_app, uploaded=True)
    assert (output.nbytes, output.md5_cksum) == (100, "0" * 32)


def test_reported_compute_error_is_a_client_error(client, project, account, cpu_app):
    make_jobs(project, cpu_app, 1)
    first, result = _sent_result(client, project, account)
    rpc(
        client,
        project,
        make_request(
            account.authenticator,
            hostid=first.hostid,
            rpc_seqno=1,
            results=(reported(result.name, state=ClientState.COMPUTE_ERROR, exit_status=1),),
        ),
    )
    result.refresh_from_db()
    assert (result.outcome, result.exit_status, result.client_state) == (Outcome.CLIENT_ERROR, 1, 3)


def test_an_unsigned_windows_exit_status_is_stored_as_the_clients_int(client, project, account, cpu_app):
    make_jobs(project, cpu_app, 1)
    first, result = _sent_result(client, project, account)
    crash = reported(result.name, state=ClientState.COMPUTE_ERROR, exit_status=0xC0000005)
    reply = rpc(
        client,
        project,
        make_request(account.authenticator, hostid=first.hostid, rpc_seqno=1, results=(crash,)),
    )
    result.refresh_from_db()
    assert reply.result_acks == (result.name,)
    assert (result.outcome, result.exit_status) == (Outcome.CLIENT_ERROR, 0xC0000005 - 2**32)


def test_an_implausible_gpu_compute_capability_is_stored_as_unknown(client, project, account, mixed_app):
    gpu = replace(GPU, properties=(("have_cuda", "1"), ("major", "99999999999"), ("minor", "-1")))
    reply = rpc(client, project, make_request(account.authenticator, coprocs=(gpu,)))
    host = Host.objects.get(id=reply.hostid)
    assert [(c.count, c.compute_capability) for c in host.coprocs.all()] == [(1, 0)]


def test_duplicate_report_changes_nothing_and_is_still_acknowledged(client, project, account, cpu_app):
    make_jobs(project, cpu_app, 1)
    first, result = _sent_result(client, project, account)
    report = make_request(
        account.authenticator,
        hostid=first.hostid,
        rpc_seqno=1,
        cpu_req_secs=0.0,
        work_req_seconds=0.0,
        results=(reported(result.name, elapsed=100.0),),
    )
    rpc(client, project, report)
    result.refresh_from_db()
    received = result.received_time
    again = rpc(
        client, project, replace(report, rpc_seqno=2, results=(reported(result.name, elapsed=999.0),))
    )
    result.refresh_from_db()
    assert again.result_acks == (result.name,)
    assert (result.elapsed_time, result.received_time) == (100.0, received)


def test_a_report_after_the_result_timed_out_is_kept_and_validated_later(client, project, account, cpu_app):
    make_jobs(project, cpu_app, 1)
    first, result = _sent_result(client, project, account)
    late = result.report_deadline + timedelta(seconds=project.report_grace_period + 60)
    workunit_transition(workunit_id=result.workunit_id, now=late)
    result.refresh_from_db()
    assert (result.server_state, result.outcome) == (ServerState.OVER, Outcome.NO_REPLY)
    report = make_request(
        account.authenticator,
        hostid=first.hostid,
        rpc_seqno=1,
        cpu_req_secs=0.0,
        work_req_seconds=0.0,
        results=(reported(result.name, elapsed=100.0),),
    )
    reply = rpc(client, project, report)
    result.refresh_from_db()
    assert reply.result_acks == (result.name,)
    assert (result.outcome, result.elapsed_time) == (Outcome.SUCCESS, 100.0)
    assert result.received_time is not None
    # ...and the workunit is looked at again, so the validator sees it.
    assert result.workunit.transition_time <= result.received_time
    again = rpc(
        client, project, replace(report, rpc_seqno=2, results=(reported(result.name, elapsed=999.0),))
    )
    result.refresh_from_db()
    assert (again.result_acks, result.elapsed_time) == ((result.name,), 100.0)


def test_a_report_of_a_result_the_server_withdrew_changes_nothing(client, project, account, cpu_app):
    make_jobs(project, cpu_app, 1)
    first, result = _sent_result(client, project, account)
    Result.objects.filter(id=result.id).update(server_state=ServerState.OVER, outcome=Outcome.DIDNT_NEED)
    reply = rpc(
        client,
        project,
        make_request(
            account.authenticator, hostid=first.hostid, rpc_seqno=1, results=(reported(result.name),)
        ),
    )
    result.refresh_from_db()
    assert reply.result_acks == (result.name,)
    assert (result.outcome, result.received_time) == (Outcome.DIDNT_NEED, None)


def test_report_of_another_hosts_result_is_refused_with_a_message(client, project, account, cpu_app):
    make_jobs(project, cpu_app, 1)
    _, result = _sent_result(client, project, account)
    base = make_request(account.authenticator)
    other = rpc(client, project, replace(base, host_info=replace(base.host_info, host_cpid="other-cpid")))
    reply = rpc(
        client,
        project,
        make_request(
            account.authenticator, hostid=other.hostid, rpc_seqno=1, results=(reported(result.name),)
        ),
    )
    result.refresh_from_db()
    assert result.server_state == ServerState.IN_PROGRESS
    assert reply.result_acks == (result.name,)
    assert any("not sent to this computer" in m.text for m in reply.messages)


def test_unknown_reported_result_is_acknowledged_so_the_client_drops_it(client, project, account):
    reply = rpc(client, project, make_request(account.authenticator, results=(reported("ghost_0"),)))
    assert reply.result_acks == ("ghost_0",)


def test_cancelled_job_held_by_the_host_is_aborted(client, project, account, cpu_app):
    from apps.work.services import workunit_cancel

    make_jobs(project, cpu_app, 1)
    first, result = _sent_result(client, project, account)
    workunit_cancel(workunit_ids=[result.workunit_id])
    reply = rpc(
        client,
        project,
        make_request(
            account.authenticator, hostid=first.hostid, rpc_seqno=1, other_results=others(result.name)
        ),
    )
    assert reply.result_aborts == (result.name,)


def test_job_whose_workunit_is_done_is_aborted_if_not_started(client, project, account, cpu_app):
    make_jobs(project, cpu_app, 1)
    first, result = _sent_result(client, project, account)
    wu = result.workunit
    wu.canonical_result = result
    wu.save()
    reply = rpc(
        client,
        project,
        make_request(
            account.authenticator, hostid=first.hostid, rpc_seqno=1, other_results=others(result.name)
        ),
    )
    assert reply.result_aborts_if_not_started == (result.name,)


@pytest.mark.parametrize(
    ("outcome", "hard"),
    [(Outcome.NO_REPLY, False), (Outcome.DIDNT_NEED, True)],
    ids=["timed-out", "withdrawn"],
)
def test_a_timed_out_task_is_aborted_only_if_not_started(client, project, account, cpu_app, outcome, hard):
    # A late task already running may still report, and its report is kept; a withdrawn
    # one is of no use any more.
    make_jobs(project, cpu_app, 1)
    first, result = _sent_result(client, project, account)
    Result.objects.filter(id=result.id).update(server_state=ServerState.OVER, outcome=outcome)
    reply = rpc(
        client,
        project,
        make_request(
            account.authenticator, hostid=first.hostid, rpc_seqno=1, other_results=others(result.name)
        ),
    )
    aborts = (reply.result_aborts, reply.result_aborts_if_not_started)
    assert aborts == (((result.name,), ()) if hard else ((), (result.name,)))


def test_result_unknown_to_the_server_held_by_host_is_aborted(client, project, account):
    reply = rpc(client, project, make_request(account.authenticator, other_results=others("phantom_0")))
    assert reply.result_aborts == ("phantom_0",)


def test_no_work_reply_says_why(client, project, account, cpu_app):
    reply = rpc(client, project, make_request(account.authenticator))
    assert reply.results == ()
    assert any("No tasks are available" in m.text for m in reply.messages)


@pytest.mark.parametrize("asks", [1.0, 0.0], ids=["asking-for-work", "reporting-only"])
def test_a_platform_without_app_versions_gets_boincs_notice(client, project, account, cpu_app, asks):
    make_jobs(project, cpu_app, 1)
    request = make_request(account.authenticator, platform_name="sparc-sun-solaris", cpu_req_secs=asks)
    reply = rpc(client, project, replace(request, work_req_seconds=asks))
    notices = [m.text for m in reply.messages if m.priority == MessagePriority.NOTICE]
    assert notices == ["This project doesn't support computers of type sparc-sun-solaris"]
    assert reply.results == ()
    assert not any(m.text.startswith("No tasks sent") for m in reply.messages)


def test_stopped_scheduler_says_project_is_down(client, project, account):
    project.sched_stopped = True
    project.save()
    reply = rpc(client, project, make_request(account.authenticator))
    assert reply.project_is_down is True
    assert Host.objects.count() == 0


def test_a_send_brings_the_transition_time_forward_to_the_deadline_plus_grace(
    client, project, account, cpu_app
):
    wu = make_jobs(project, cpu_app, 1)[0]
    Workunit.objects.filter(id=wu.id).update(transition_time=None)
    _, result = _sent_result(client, project, account)
    wu.refresh_from_db()
    assert wu.transition_time == result.report_deadline + timedelta(seconds=project.report_grace_period)


def test_a_send_never_pushes_an_earlier_transition_time_back(client, project, account, cpu_app):
    wu = make_jobs(project, cpu_app, 1)[0]
    early = datetime(2001, 1, 1, tzinfo=UTC)
    Workunit.objects.filter(id=wu.id).update(transition_time=early)
    _sent_result(client, project, account)
    wu.refresh_from_db()
    assert wu.transition_time == early

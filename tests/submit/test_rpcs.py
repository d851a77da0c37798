"""The other calls of submit_rpc_handler.php and server_status.php?counts=1, as BOINC's
clients send them."""

from __future__ import annotations

from datetime import timedelta

import pytest

from apps.core import clock
from apps.submit.models import Batch
from apps.work.models import Workunit
from apps.work.services.daemons import daemons_round
from tests.submit.client import InputFile, Job, SubmitClient, as_list, md5_name
from tests.submit.conftest import INPUT_TEMPLATE

pytestmark = pytest.mark.django_db


@pytest.fixture
def sub(client, project, alice):
    return SubmitClient(client, project.slug, alice.authenticator)


@pytest.fixture
def staged(sub, tmp_path) -> str:
    path = tmp_path / "in.txt"
    path.write_bytes(b"data\n")
    name = md5_name(path.read_bytes())
    sub.upload_files([path], [name])
    return name


@pytest.fixture
def batch_id(sub, app, staged) -> int:
    reply = sub.submit_batch("cpuapp", [Job(name=f"j{i}", files=[InputFile(staged)]) for i in range(3)])
    return int(reply["batch_id"])


def test_ping_answers_success(sub, app):
    assert sub.post("<ping/>") == {"success": "1"}


def test_estimate_batch_is_the_flops_over_the_projects_speed(sub, app, staged):
    reply = sub.estimate_batch(
        "cpuapp", [Job(rsc_fpops_est=2e12, files=[InputFile(staged)]) for _ in range(3)]
    )
    assert float(reply["seconds"]) == 6000.0  # 6e12 FLOPs at the floor of a GigaFLOPS


def test_query_batches_lists_the_submitters_batches(sub, batch_id):
    batches = as_list(sub.query_batches()["batch"])
    assert [(b["id"], b["njobs"], b["state"], b["app_name"]) for b in batches] == [
        (str(batch_id), "3", "1", "cpuapp")
    ]


def test_query_batch2_gives_each_jobs_status_by_batch_name(sub, batch_id):
    name = Batch.objects.get(id=batch_id).name
    reply = sub.post(
        f"<query_batch2><authenticator>{sub.authenticator}</authenticator><batch_name>{name}</batch_name></query_batch2>"
    )
    assert reply["batch_size"] == "3"
    assert [(j["job_name"], j["status"]) for j in reply["job"]] == [(f"j{i}", "UNSENT") for i in range(3)]


def test_query_job_lists_the_jobs_instances(sub, batch_id):
    job_id = Workunit.objects.get(name="j0").id
    reply = sub.post(
        f"<query_job><authenticator>{sub.authenticator}</authenticator><job_id>{job_id}</job_id></query_job>"
    )
    assert (reply["instance"]["name"], reply["instance"]["state"]) == ("j0_0", "Unsent")


def test_abort_batch_cancels_its_jobs(sub, batch_id):
    assert sub.batch_op("abort_batch", batch_id) == {"success": "1"}
    reply = sub.query_batch(batch_id, details=True)
    assert reply["state"] == "3"
    assert {j["status"] for j in reply["job"]} == {"error"}


def test_abort_jobs_cancels_the_named_jobs_only(sub, batch_id):
    assert sub.abort_jobs(["j0", "j2"]) == {"success": "1"}
    assert sorted(Workunit.objects.filter(error_mask__gt=0).values_list("name", flat=True)) == ["j0", "j2"]


def test_set_expire_time_sets_it(sub, batch_id):
    reply = sub.post(
        f"<set_expire_time><authenticator>{sub.authenticator}</authenticator><batch_id>{batch_id}</batch_id>"
        "<expire_time>2000000000</expire_time></set_expire_time>"
    )
    assert reply == {"success": "1"}
    assert Batch.objects.get(id=batch_id).expire_time.timestamp() == 2_000_000_000


def test_an_expired_batch_is_aborted_and_retired_by_the_daemons(sub, project, batch_id):
    Batch.objects.filter(id=batch_id).update(expire_time=clock.now() - timedelta(seconds=1))
    daemons_round(slug=project.slug)
    assert Batch.objects.get(id=batch_id).state == 4
    assert Workunit.objects.filter(batch=batch_id, error_mask=0).count() == 0


def test_get_templates_returns_the_apps_templates(sub, app):
    reply = sub.post(
        f"<get_templates><authenticator>{sub.authenticator}</authenticator><app_name>cpuapp</app_name></get_templates>"
    )
    assert reply["templates"]["input_template"]["workunit"]["rsc_fpops_est"] == "1e12"
    assert "output_template" in reply["templates"]


def test_per_job_templates_override_the_apps(sub, app, staged):
    template = INPUT_TEMPLATE.replace("1e12", "5e12")
    reply = sub.submit_batch("cpuapp", [Job(name="t0", input_template=template, files=[InputFile(staged)])])
    assert "batch_id" in reply, reply
    assert Workunit.objects.get(name="t0").rsc_fpops_est == 5e12


def test_job_counts_answer_a_post_as_the_python_library_sends_it(sub, batch_id):
    assert sub.job_counts()["results_ready_to_send"] == "3"


def test_job_params_of_zero_as_the_cpp_client_writes_them_leave_the_templates_values(sub, app, staged):
    params = (
        "<job_params><rsc_disk_bound>0.000000</rsc_disk_bound><rsc_fpops_est>0.000000</rsc_fpops_est>"
        "<rsc_fpops_bound>0.000000</rsc_fpops_bound><rsc_memory_bound>0.000000</rsc_memory_bound>"
        "<delay_bound>86400.000000</delay_bound></job_params>\n"
    )
    reply = sub.submit_batch("cpuapp", [Job(name="c0", files=[InputFile(staged)])], extra=params)
    assert "batch_id" in reply, reply
    wu = Workunit.objects.get(name="c0")
    assert (wu.rsc_fpops_est, wu.delay_bound) == (1e12, 86400)


def test_a_request_sent_as_multipart_as_the_cpp_client_sends_every_call_is_answered(
    client, project, sub, batch_id
):
    xml = f"<query_batch><authenticator>{sub.authenticator}</authenticator><batch_id>{batch_id}</batch_id></query_batch>"
    response = client.post(f"/{project.slug}/submit_rpc_handler.php", data={"request": xml})  # multipart
    assert b"<njobs>3</njobs>" in response.content

"""A scientist's whole round over BOINC's remote-submission RPCs, with simulated hosts
running the jobs through the scheduler: create, upload, submit, follow, download, retire."""

from __future__ import annotations

import io
import zipfile

import pytest

from apps.submit.models import Batch
from apps.work.services.daemons import daemons_round
from tests.submit.client import InputFile, Job, SubmitClient, as_list, md5_name
from tests.submit.hosts import SimHosts, output_of

pytestmark = pytest.mark.django_db


def test_a_batch_runs_on_simulated_hosts_and_its_outputs_download(
    client, project, app, alice, volunteers, tmp_path
):
    sub = SubmitClient(client, project.slug, alice.authenticator)
    batch_id = int(sub.create_batch("cpuapp", "first batch")["batch_id"])

    paths = []
    for i in range(2):
        path = tmp_path / f"input{i}.txt"
        path.write_bytes(f"input number {i}\n".encode())
        paths.append(path)
    names = [md5_name(p.read_bytes()) for p in paths]
    assert sub.upload_files(paths, names, batch_id=batch_id) == {"success": None}
    assert sub.query_files(names)["absent_files"].strip() == ""  # both are there now

    jobs = [Job(name=f"job{i}", files=[InputFile(names[i % 2])], command_line=f"--n {i}") for i in range(4)]
    assert sub.submit_batch("cpuapp", jobs, batch_id=batch_id) == {"batch_id": str(batch_id)}
    running = sub.query_batch(batch_id)
    assert (running["state"], running["njobs"], running["name"]) == ("1", "4", "first batch")

    hosts = SimHosts(client, project, volunteers, ask_seconds=4000)
    for _ in range(4):
        hosts.step()
        daemons_round(slug=project.slug)
    done = sub.query_batch(batch_id, details=True)
    assert (done["state"], float(done["fraction_done"]), done["nerror_jobs"]) == ("2", 1.0, "0")
    assert [j["status"] for j in as_list(done["job"])] == ["done"] * 4

    completed = sub.query_completed_job("job1")["completed_job"]
    result_name = "job1_0"
    assert (completed["exit_status"], completed["canonical_resultid"] != "0") == ("0", True)

    response = client.get(sub.output_file_url(result_name, 0))
    assert response.status_code == 200
    assert b"".join(response.streaming_content) == output_of(result_name)

    archive = client.get(sub.output_files_url(batch_id))
    with zipfile.ZipFile(io.BytesIO(b"".join(archive.streaming_content))) as z:
        assert sorted(z.namelist()) == sorted(f"job{i}_0_0" for i in range(4))

    assert sub.batch_op("retire_batch", batch_id) == {"success": "1"}
    daemons_round(slug=project.slug)
    assert not any((project.results_dir / f"job{i}").exists() for i in range(4))
    assert Batch.objects.get(id=batch_id).files_deleted
    assert "batch" not in sub.query_batches()

"""The scientists' pages (submit.php): their batches with progress, a batch's jobs, abort
and retire after a confirmation, and another submitter's batch out of reach."""

from __future__ import annotations

import io
import zipfile

import pytest

from apps.submit.domain.states import BatchState
from apps.submit.models import Batch, UserSubmit
from apps.work.models import Workunit
from tests.portal.volunteer_helpers import PASSWORD, log_in
from tests.submit.batches import submitted

pytestmark = pytest.mark.django_db


def logged_in(client, account) -> None:
    account.set_password(PASSWORD)
    account.save()
    log_in(client, account)


def test_a_submitter_sees_their_batches_with_progress(client, project, app, alice, bob):
    submitted(project, app, alice, "alices")
    submitted(project, app, bob, "bobs")
    logged_in(client, alice)
    page = client.get("/subm/submit.php").content.decode()
    assert "alices" in page
    assert "bobs" not in page
    assert '<progress class="batch-progress" max="1" value="0.000000">' in page


def test_a_submitter_managing_every_app_sees_every_batch(client, project, app, alice, bob):
    submitted(project, app, alice, "alices")
    UserSubmit.objects.filter(account=bob).update(manage_all=True)
    logged_in(client, bob)
    assert "alices" in client.get("/subm/submit.php").content.decode()


def test_a_volunteer_who_is_not_a_submitter_is_told_so(client, project, volunteers):
    logged_in(client, volunteers[0])
    response = client.get("/subm/submit.php")
    assert response.status_code == 403
    assert "may not submit jobs" in response.content.decode()


def test_abort_asks_first_then_cancels_the_jobs(client, project, app, alice):
    batch = submitted(project, app, alice, "alices")
    logged_in(client, alice)
    url = f"/subm/submit_batch_action.php?batch_id={batch.id}&action=abort"
    assert "Abort batch alices?" in client.get(url).content.decode()
    assert Batch.objects.get(id=batch.id).state == BatchState.IN_PROGRESS

    response = client.post(
        "/subm/submit_batch_action.php", {"batch_id": batch.id, "action": "abort"}, follow=True
    )
    assert "Batch alices is aborted." in response.content.decode()
    assert Batch.objects.get(id=batch.id).state == BatchState.ABORTED
    assert all(wu.error_mask for wu in Workunit.objects.filter(batch=batch.id))


def test_retire_from_the_batch_page(client, project, app, alice):
    batch = submitted(project, app, alice, "alices")
    logged_in(client, alice)
    client.post("/subm/submit_batch_action.php", {"batch_id": batch.id, "action": "retire"})
    assert Batch.objects.get(id=batch.id).state == BatchState.RETIRED


def test_the_batch_page_lists_its_jobs(client, project, app, alice):
    batch = submitted(project, app, alice, "alices", njobs=3)
    logged_in(client, alice)
    page = client.get(f"/subm/submit_batch.php?batch_id={batch.id}").content.decode()
    assert [f"alices_{i}" in page for i in range(3)] == [True] * 3
    assert 'id="abort-batch"' in page


def test_another_submitters_batch_is_not_found_and_not_touched(client, project, app, alice, bob):
    batch = submitted(project, app, alice, "alices")
    logged_in(client, bob)
    assert client.get(f"/subm/submit_batch.php?batch_id={batch.id}").status_code == 404
    response = client.post("/subm/submit_batch_action.php", {"batch_id": batch.id, "action": "abort"})
    assert response.status_code == 404
    assert client.get(f"/subm/submit_output.php?batch_id={batch.id}").status_code == 404
    assert Batch.objects.get(id=batch.id).state == BatchState.IN_PROGRESS


def test_the_owner_downloads_the_batch_zip(client, project, app, alice):
    batch = submitted(project, app, alice, "alices")
    logged_in(client, alice)
    response = client.get(f"/subm/submit_output.php?batch_id={batch.id}")
    with zipfile.ZipFile(io.BytesIO(b"".join(response.streaming_content))) as z:
        assert z.namelist() == []  # no job has finished yet


def test_the_pages_need_a_log_in(client, project):
    response = client.get("/subm/submit.php")
    assert response.status_code == 302

"""The admin's batch list: figures, filter by owner, abort and retire through the services."""

from __future__ import annotations

import pytest

from apps.submit.domain.states import BatchState
from apps.submit.models import Batch
from apps.work.models import Workunit
from tests.submit.batches import submitted

pytestmark = pytest.mark.django_db

URL = "/admin/submit/batch/"


def test_the_list_shows_progress_and_filters_by_owner(admin_client, project, app, alice, bob):
    submitted(project, app, alice, "alices")
    submitted(project, app, bob, "bobs")
    page = admin_client.get(f"{URL}?owner={alice.id}").content.decode()
    assert "alices" in page
    assert "bobs" not in page
    assert '<progress max="1" value="0.0">0 %</progress>' in page


def test_the_abort_action_cancels_the_jobs(admin_client, project, app, alice):
    batch = submitted(project, app, alice, "alices")
    admin_client.post(URL, {"action": "abort", "_selected_action": [batch.id]})
    assert Batch.objects.get(id=batch.id).state == BatchState.ABORTED
    assert all(wu.error_mask for wu in Workunit.objects.filter(batch=batch.id))


def test_the_retire_action_retires(admin_client, project, app, alice):
    batch = submitted(project, app, alice, "alices")
    admin_client.post(URL, {"action": "retire", "_selected_action": [batch.id]})
    assert Batch.objects.get(id=batch.id).state == BatchState.RETIRED

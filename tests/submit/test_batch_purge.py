"""db_purge and batches: a batch's jobs stay until the submitter retires the batch and its
outputs are deleted; then they are purged like any other workunit."""

from __future__ import annotations

from datetime import timedelta

import pytest

from apps.core import clock
from apps.submit.domain.states import BatchState
from apps.submit.models import Batch
from apps.submit.services.batches import batch_retire
from apps.work.models import Workunit
from apps.work.services.daemons import daemons_round
from apps.work.services.purge import workunits_purge
from tests.submit.batches import submitted
from tests.submit.client import SubmitClient
from tests.submit.hosts import SimHosts

pytestmark = pytest.mark.django_db

LATER = timedelta(days=30)  # past any purge age


@pytest.fixture
def done_batch(client, project, app, alice, volunteers) -> Batch:
    batch = submitted(project, app, alice, "kept")
    hosts = SimHosts(client, project, volunteers, ask_seconds=4000)
    for _ in range(4):
        hosts.step()
        daemons_round(slug=project.slug)
    batch.refresh_from_db()
    assert batch.njobs_success == 2  # every job done, its files deleted by the file deleter
    assert sorted(p.name for p in project.results_dir.glob("kept_*")) == ["kept_0", "kept_1"]
    return batch


def test_the_jobs_of_a_batch_not_retired_are_not_purged(client, project, alice, done_batch):
    workunits_purge(project=project, now=clock.now() + LATER, min_age_days=0)
    assert Workunit.objects.filter(batch=done_batch.id).count() == 2
    sub = SubmitClient(client, project.slug, alice.authenticator)
    assert sub.query_batch(done_batch.id)["njobs"] == "2"


def test_the_jobs_of_a_retired_batch_are_kept_until_its_outputs_are_deleted(project, done_batch):
    batch_retire(batch=done_batch)
    workunits_purge(project=project, now=clock.now() + LATER, min_age_days=0)
    assert Workunit.objects.filter(batch=done_batch.id).count() == 2


def test_the_jobs_of_a_retired_batch_are_purged_once_its_outputs_are_deleted(project, done_batch):
    batch_retire(batch=done_batch)
    daemons_round(slug=project.slug)  # the batches daemon deletes the outputs
    assert Batch.objects.get(id=done_batch.id).files_deleted
    workunits_purge(project=project, now=clock.now() + LATER, min_age_days=0)
    assert not Workunit.objects.filter(batch=done_batch.id).exists()
    assert not any(project.results_dir.glob("kept_*"))


def test_a_batch_number_without_a_batch_of_the_project_holds_nothing(project, done_batch):
    Workunit.objects.filter(batch=done_batch.id).update(batch=done_batch.id + 1000)
    workunits_purge(project=project, now=clock.now() + LATER, min_age_days=0)
    assert not Workunit.objects.filter(batch=done_batch.id + 1000).exists()


def test_the_jobs_of_an_expired_batch_are_purged_once_the_daemon_retires_it(project, done_batch):
    Batch.objects.filter(id=done_batch.id).update(expire_time=clock.now() - timedelta(minutes=1))
    workunits_purge(project=project, now=clock.now() + LATER, min_age_days=0)
    assert Workunit.objects.filter(batch=done_batch.id).count() == 2  # expired, not yet retired
    daemons_round(slug=project.slug)  # the batches daemon retires it and deletes its outputs
    batch = Batch.objects.get(id=done_batch.id)
    assert (batch.state, batch.files_deleted) == (BatchState.RETIRED, True)
    workunits_purge(project=project, now=clock.now() + LATER, min_age_days=0)
    assert not Workunit.objects.filter(batch=done_batch.id).exists()

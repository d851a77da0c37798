from io import StringIO

import pytest
from django.core.management import call_command

from apps.applications.models import AppVersion
from apps.core import clock
from apps.sequences.models import WorkSequence
from apps.work.domain.states import AssimilateState, FileDeleteState, Outcome, ServerState, ValidateState
from apps.work.models import Result, Workunit
from apps.work.services import files_delete, workunits_transition

pytestmark = pytest.mark.django_db


def test_demo_has_cpu_gpu_and_multithread_versions(demo):
    kinds = set(AppVersion.objects.filter(app__project=demo).values_list("proc_type", "multi_thread"))
    assert {("CPU", False), ("NVIDIA", False), ("CPU", True)} <= kinds


def test_demo_has_work_in_every_state(demo):
    results = Result.objects.filter(project=demo)
    assert results.filter(server_state=ServerState.UNSENT).exists()
    assert results.filter(server_state=ServerState.IN_PROGRESS).exists()
    assert results.filter(outcome=Outcome.SUCCESS, validate_state=ValidateState.VALID).exists()
    assert results.filter(outcome=Outcome.CLIENT_ERROR).exists()
    assert results.filter(outcome=Outcome.NO_REPLY).exists()


def test_demo_volunteers_have_credit(demo):
    assert demo.accounts.filter(total_credit__gt=0).exists()


def test_demo_has_sequences_in_several_states(demo):
    assert WorkSequence.objects.filter(project=demo).values("state").distinct().count() >= 3


def test_seed_demo_if_empty_is_idempotent(demo):
    before = Result.objects.count()
    call_command("seed_demo", "--if-empty", stdout=StringIO())
    assert Result.objects.count() == before


def test_no_assimilated_demo_job_keeps_its_files_after_the_deleter_runs(demo):
    now = clock.now()
    workunits_transition(project=demo, now=now)
    files_delete(project=demo, now=now)
    assimilated = Workunit.objects.filter(
        project=demo, canonical_result__isnull=False, assimilate_state=AssimilateState.DONE
    )
    assert assimilated.count() > 0
    kept = assimilated.exclude(file_delete_state=FileDeleteState.DONE)
    assert list(kept.values_list("name", flat=True)) == []

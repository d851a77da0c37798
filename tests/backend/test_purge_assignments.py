"""db_purge of a targeted job's workunit empties its assignment, which the scheduler drops."""

from datetime import timedelta

import pytest

from apps.work.domain.assignments import TargetType
from apps.work.models import Assignment, Workunit
from apps.work.services import files_delete, workunits_purge
from tests.backend.test_assimilator_and_files import _assimilated_and_marked

pytestmark = pytest.mark.django_db


def test_purging_a_targeted_workunit_empties_its_assignment(project, app, version, hosts, now):
    wu = _assimilated_and_marked(project, app, version, hosts, now)
    Assignment.objects.create(
        project=project, workunit=wu, target_type=TargetType.HOST, target_id=hosts[0].id
    )
    files_delete(project=project, now=now)
    workunits_purge(project=project, now=now + timedelta(days=8))
    assert not Workunit.objects.filter(id=wu.id).exists()
    assert Assignment.objects.get().workunit_id is None

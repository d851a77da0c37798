"""apps.boinc_import.queries gives what a plain ORM version gives on the same rows (both passes:
SQLite by default, PostgreSQL with DATABASE_URL, so each vendor branch runs in one of them)."""

from collections.abc import Callable

import pytest
from django.db.models import Exists
from django.utils import timezone

from apps.boinc_import.queries import (
    canonical_results_set,
    rows_insert,
    sequence_handed_out,
    sequence_reserve,
    team_founders_set,
)
from apps.volunteers.models import Team
from apps.work.models import Result, Workunit
from tests.factories import AccountFactory, ResultFactory, TeamFactory, WorkunitFactory

pytestmark = pytest.mark.django_db


def _founders_after(update: Callable[[list[tuple[int, int]]], None]) -> list[bool]:
    founder, other = AccountFactory(), AccountFactory()
    teams = [TeamFactory(), TeamFactory(founder=other)]
    update([(founder.id, team.id) for team in teams])
    return [Team.objects.get(id=team.id).founder_id == founder.id for team in teams]


def test_team_founders_set_equals_the_orm_update() -> None:
    def orm(pairs: list[tuple[int, int]]) -> None:
        for founder_id, team_id in pairs:
            Team.objects.filter(id=team_id, founder__isnull=True).update(founder_id=founder_id)

    assert _founders_after(team_founders_set) == _founders_after(orm) == [True, False]


def _canonical_after(update: Callable[[list[tuple[int, int]]], None]) -> list[bool]:
    result = ResultFactory()
    workunits = [result.workunit, WorkunitFactory(), WorkunitFactory(canonical_result=result)]
    update([(workunits[0].id, result.id), (workunits[1].id, result.id + 10**6), (workunits[2].id, result.id)])
    return [Workunit.objects.get(id=wu.id).canonical_result_id is not None for wu in workunits]


def test_canonical_results_set_equals_the_orm_update() -> None:
    def orm(pairs: list[tuple[int, int]]) -> None:
        for wu_id, result_id in pairs:
            Workunit.objects.filter(
                Exists(Result.objects.filter(id=result_id)), id=wu_id, canonical_result__isnull=True
            ).update(canonical_result_id=result_id)

    assert _canonical_after(canonical_results_set) == _canonical_after(orm) == [True, False, True]


def test_rows_insert_and_sequences_equal_the_orm() -> None:
    project = AccountFactory().project
    last_id = Team.objects.order_by("-id").values_list("id", flat=True).first() or 0
    new_id = last_id + 100
    sequence_reserve(Team, new_id)
    rows_insert(
        Team, [{"id": new_id, "project_id": project.id, "name": "Imported", "create_time": timezone.now()}]
    )
    assert Team.objects.get(id=new_id).name == "Imported"
    assert sequence_handed_out(Team) >= new_id
    assert TeamFactory(project=project).id > new_id

"""WorkSequence's move from the work app to its own: a database at the old layout, holding
sequences with their steps, results and hosts, migrates forward with every row, every foreign
key and every permission kept."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
from django.apps.registry import Apps
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.contrib.contenttypes.models import ContentType
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from apps.sequences.models import WorkSequence
from apps.work.domain.states import Outcome, SequenceState, ServerState
from apps.work.models import Result, Workunit
from tests.factories import AppFactory, HostFactory, ProjectFactory

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE_MOVE = ("work", "0008_sequence_disagreements_error_reason")
T0 = datetime(2026, 11, 21, 12, 0, 0, tzinfo=UTC)


@pytest.fixture
def old_layout() -> Iterator[Apps]:
    """The database migrated back to the work app's last migration before the move; the
    historical models of that state. Afterwards, the database is at the latest migrations."""
    executor = MigrationExecutor(connection)
    state = executor.migrate([BEFORE_MOVE])
    try:
        yield state.apps
    finally:
        executor.loader.build_graph()
        executor.migrate(executor.loader.graph.leaf_nodes())
        ContentType.objects.clear_cache()


def migrate_forward() -> None:
    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())
    ContentType.objects.clear_cache()


def make_old_sequences(old: Apps) -> dict[str, int]:
    """Two chains (one a replica of the other) of the old models, with steps and results,
    assigned, relocated and checkpointed, so every foreign key of the model holds a row."""
    project = ProjectFactory()
    app = AppFactory(project=project)
    host, old_host = HostFactory(account__project=project), HostFactory(account__project=project)
    OldSequence = old.get_model("work", "WorkSequence")
    OldWorkunit = old.get_model("work", "Workunit")
    OldResult = old.get_model("work", "Result")
    seq = OldSequence.objects.create(
        project_id=project.id,
        app_id=app.id,
        name="climate",
        state=SequenceState.ASSIGNED,
        max_result_time=86400,
        assigned_host_id=host.id,
        assigned_time=T0,
        restartable_every=2,
        expected_length=3,
        last_progress_time=T0,
        n_relocations=1,
        relocated_from_id=old_host.id,
        relocated_time=T0,
        n_disagreements=1,
    )
    replica = OldSequence.objects.create(
        project_id=project.id, app_id=app.id, name="climate_r1", max_result_time=86400, replica_of=seq
    )
    steps, results = [], []
    for chain in (seq, replica):
        for index in range(3 if chain is seq else 1):
            wu = OldWorkunit.objects.create(
                project_id=project.id,
                app_id=app.id,
                name=f"{chain.name}_{index}",
                rsc_fpops_est=1e12,
                rsc_fpops_bound=1e14,
                sequence=chain,
                sequence_index=index,
            )
            steps.append(wu)
            results.append(
                OldResult.objects.create(
                    project_id=project.id,
                    app_id=app.id,
                    workunit=wu,
                    name=f"{wu.name}_0",
                    host_id=host.id if index < 2 else None,
                    server_state=ServerState.OVER if index == 0 else ServerState.IN_PROGRESS,
                    outcome=Outcome.SUCCESS if index == 0 else Outcome.INIT,
                )
            )
    OldSequence.objects.filter(id=seq.id).update(
        head_workunit=steps[0],
        first_unvalidated=steps[1],
        first_undispatched=steps[2],
        checkpoint_result=results[0],
    )
    return {"sequence": seq.id, "replica": replica.id, "host": host.id, "old_host": old_host.id}


def rows(model: type, like: list[dict[str, object]] | None = None) -> list[dict[str, object]]:
    """The rows by id; with ``like``, only its columns (later migrations add others)."""
    found = list(model.objects.order_by("id").values())
    if like:
        return [{key: row[key] for key in like[0]} for row in found]
    return found


def test_every_sequence_row_and_foreign_key_survives_the_move(old_layout):
    ids = make_old_sequences(old_layout)
    sequences_before = rows(old_layout.get_model("work", "WorkSequence"))
    workunits_before = rows(old_layout.get_model("work", "Workunit"))
    results_before = rows(old_layout.get_model("work", "Result"))

    migrate_forward()

    assert rows(WorkSequence, sequences_before) == sequences_before
    assert rows(Workunit, workunits_before) == workunits_before
    assert rows(Result, results_before) == results_before
    seq = WorkSequence.objects.get(id=ids["sequence"])
    assert [w.sequence_index for w in seq.workunits.order_by("sequence_index")] == [0, 1, 2]
    assert (seq.head_workunit.name, seq.first_unvalidated.name, seq.first_undispatched.name) == (
        "climate_0",
        "climate_1",
        "climate_2",
    )
    assert seq.checkpoint_result.name == "climate_0_0"
    assert (seq.assigned_host_id, seq.relocated_from_id) == (ids["host"], ids["old_host"])
    assert list(seq.replicas.values_list("id", flat=True)) == [ids["replica"]]
    assert seq.assigned_host.sequences.get() == seq


def test_the_workunit_keeps_its_sequence_column_indexed_without_a_foreign_key(old_layout):
    make_old_sequences(old_layout)
    migrate_forward()
    with connection.cursor() as cursor:
        constraints = connection.introspection.get_constraints(cursor, Workunit._meta.db_table)
    on_sequence = [c for c in constraints.values() if c["columns"] == ["sequence_id"]]
    assert [c["foreign_key"] for c in on_sequence if c["foreign_key"]] == []
    assert any(c["index"] for c in on_sequence)


def test_permissions_on_work_sequences_carry_to_the_sequences_app(old_layout):
    OldContentType = old_layout.get_model("contenttypes", "ContentType")
    OldPermission = old_layout.get_model("auth", "Permission")
    old_type = OldContentType.objects.get(app_label="work", model="worksequence")
    change = OldPermission.objects.get(content_type=old_type, codename="change_worksequence")
    view = OldPermission.objects.get(content_type=old_type, codename="view_worksequence")
    user = get_user_model().objects.create_user("operator", is_staff=True)
    user.user_permissions.add(change.id)
    group = Group.objects.create(name="viewers")
    group.permissions.add(view.id)
    member = get_user_model().objects.create_user("viewer", is_staff=True)
    member.groups.add(group)

    migrate_forward()

    moved = ContentType.objects.get(app_label="sequences", model="worksequence")
    assert moved.id == old_type.id
    assert not ContentType.objects.filter(app_label="work", model="worksequence").exists()
    assert get_user_model().objects.get(id=user.id).has_perm("sequences.change_worksequence") is True
    assert get_user_model().objects.get(id=member.id).has_perm("sequences.view_worksequence") is True
    assert get_user_model().objects.get(id=member.id).has_perm("sequences.change_worksequence") is False


def test_a_sequences_content_type_made_before_the_move_is_merged_with_its_grants(old_layout):
    # A server that ran post_migrate with the new code before migrating holds both types.
    OldContentType = old_layout.get_model("contenttypes", "ContentType")
    OldPermission = old_layout.get_model("auth", "Permission")
    early = OldContentType.objects.create(app_label="sequences", model="worksequence")
    early_change = OldPermission.objects.create(
        content_type=early, codename="change_worksequence", name="Can change work sequence"
    )
    user = get_user_model().objects.create_user("operator", is_staff=True)
    user.user_permissions.add(early_change.id)
    old_type = OldContentType.objects.get(app_label="work", model="worksequence")

    migrate_forward()

    assert list(ContentType.objects.filter(model="worksequence").values_list("id", "app_label")) == [
        (old_type.id, "sequences")
    ]
    assert get_user_model().objects.get(id=user.id).has_perm("sequences.change_worksequence") is True
    assert sorted(
        ContentType.objects.get(id=old_type.id).permission_set.values_list("codename", flat=True)
    ) == ["add_worksequence", "change_worksequence", "delete_worksequence", "view_worksequence"]

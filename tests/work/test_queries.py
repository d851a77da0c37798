"""apps.work.queries gives what a plain ORM version gives on the same rows (both passes:
SQLite by default, PostgreSQL with DATABASE_URL, so each vendor branch runs in one of them)."""

from datetime import timedelta

import pytest
from django.db import connection
from django.db.models import Exists, F, OuterRef, Q
from django.utils import timezone

from apps.applications.models import App
from apps.core.db import ModelColumns, WriteBatch, db_datetime
from apps.hosts.models import HostAppVersion
from apps.projects.models import Project
from apps.work.domain.states import AssimilateState, FileDeleteState, Outcome, ServerState
from apps.work.models import InputFile, OutputFile, Result, Workunit, WorkunitFileRef
from apps.work.queries import (
    apps_with_projects,
    column_set_null,
    file_delete_states_write,
    host_app_versions_lock_for_results,
    input_file_states_key_shared,
    input_files_locked,
    input_files_ready_locked,
    input_files_used_elsewhere,
    orphan_input_files_delete,
    output_names_by_result,
    result_outputs_for_archive,
    results_delete,
    results_of_workunits_locked,
    results_unsent_withdraw,
    results_with_workunits,
    rows_delete,
    rows_file_delete_ready,
    rows_insert,
    transition_times_lower,
    uploaded_output_names,
    workunit_and_results_early,
    workunit_file_refs,
    workunit_inputs_for_archive,
    workunits_assimilate_ready_ids,
    workunits_assimilation_claims_release,
    workunits_assimilation_waiting,
    workunits_assimilation_write,
    workunits_claim_assimilation,
    workunits_claim_due,
    workunits_claim_validation,
    workunits_in_order,
    workunits_purgeable,
    workunits_transition_apply,
    workunits_transition_claims_release,
    workunits_transition_time_set,
    workunits_validation_write,
    workunits_with_app_and_canonical,
    workunits_with_transition_settings,
)
from tests.factories import (
    AppFactory,
    AppVersionFactory,
    HostAppVersionFactory,
    HostFactory,
    InputFileFactory,
    OutputFileFactory,
    ProjectFactory,
    ResultFactory,
    WorkunitFactory,
)

pytestmark = pytest.mark.django_db

NOW = timezone.now().replace(microsecond=0)


def _fields(obj: object) -> dict[str, object]:
    return {k: v for k, v in vars(obj).items() if not k.startswith("_")}


def _times(wus: list[Workunit]) -> list[tuple[object, bool]]:
    fresh = {wu.id: wu for wu in Workunit.objects.filter(id__in=[wu.id for wu in wus])}
    return [(fresh[wu.id].transition_time, fresh[wu.id].need_validate) for wu in wus]


def _twin_workunits(app: object, times: list[object], need_validate: bool = False) -> list[list[Workunit]]:
    """The same workunits twice: one set for the SQL, one for the ORM version."""
    return [
        [WorkunitFactory(app=app, transition_time=t, need_validate=need_validate) for t in times]
        for _ in range(2)
    ]


def test_results_with_workunits_equal_select_related() -> None:
    wu = WorkunitFactory()
    ResultFactory(workunit=wu)
    ResultFactory(workunit=wu, server_state=2)
    ResultFactory()
    found = results_with_workunits("w.id = %s", [wu.id], tail=" ORDER BY r.id")
    expected = list(Result.objects.select_related("workunit").filter(workunit_id=wu.id).order_by("id"))
    assert [_fields(r) for r in found] == [_fields(r) for r in expected]
    assert [_fields(r.workunit) for r in found] == [_fields(r.workunit) for r in expected]


def test_claim_due_equals_the_orm_select_then_update() -> None:
    app = AppFactory()
    times = [NOW - timedelta(minutes=m) for m in (5, 30, 1, 10)] + [NOW + timedelta(hours=1)]
    wus = [WorkunitFactory(app=app, transition_time=t) for t in times]
    expected = list(
        Workunit.objects.filter(project_id=app.project_id, transition_time__lte=NOW)
        .order_by("transition_time", "id")
        .values_list("id", "transition_time")[:3]
    )
    lease = NOW + timedelta(seconds=90)
    assert workunits_claim_due(app.project_id, NOW, 3, lease) == expected
    claimed = {wu_id for wu_id, _ in expected}
    assert [t for t, _ in _times(wus)] == [lease if wu.id in claimed else wu.transition_time for wu in wus]


def test_claim_validation_equals_the_orm_version() -> None:
    times = [None, NOW - timedelta(minutes=1), NOW + timedelta(hours=2), NOW + timedelta(days=1)]
    mine_app, app = AppFactory(), AppFactory()
    mine = [WorkunitFactory(app=mine_app, transition_time=t, need_validate=True) for t in times]
    theirs = [WorkunitFactory(app=app, transition_time=t, need_validate=True) for t in times]
    lease = NOW + timedelta(seconds=90)
    claimed = workunits_claim_validation(mine_app.id, NOW, 3, lease)
    # The ORM version: the flagged workunits, lowest ids first, then an update per kind of time.
    picked = list(Workunit.objects.filter(app_id=app.id, need_validate=True).order_by("id")[:3])
    ids = [wu.id for wu in picked]
    Workunit.objects.filter(id__in=ids).filter(
        Q(transition_time__isnull=True) | Q(transition_time__gt=NOW)
    ).update(transition_time=lease)
    Workunit.objects.filter(id__in=ids).update(need_validate=False)
    assert [wu.transition_time for wu in sorted(claimed, key=lambda wu: wu.id)] == [
        wu.transition_time for wu in picked
    ]
    assert _times(mine) == _times(theirs)


@pytest.mark.parametrize("claim", ["validation", "due"])
def test_a_claim_takes_no_more_than_its_limit_when_statistics_are_stale(claim: str) -> None:
    # Statistics taken when the table held one row lead PostgreSQL to a nested loop that
    # runs the locking subquery again for each row it updates; each run skips the rows
    # this statement has just changed, so an inline subquery would claim past its limit.
    app = AppFactory()
    WorkunitFactory(app=app, transition_time=NOW + timedelta(days=1), need_validate=False)
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(f"ANALYZE {Workunit._meta.db_table}")
    due = NOW - timedelta(minutes=1)
    wus = [WorkunitFactory(app=app, transition_time=due, need_validate=True) for _ in range(4)]
    lease = NOW + timedelta(seconds=90)
    if claim == "validation":
        claimed = [wu.id for wu in workunits_claim_validation(app.id, NOW, 3, lease)]
        left = list(Workunit.objects.filter(app=app, need_validate=True).values_list("id", flat=True))
    else:
        claimed = [wu_id for wu_id, _ in workunits_claim_due(app.project_id, NOW, 3, lease)]
        left = list(Workunit.objects.filter(app=app, transition_time=due).values_list("id", flat=True))
    assert (sorted(claimed), left) == ([wu.id for wu in wus[:3]], [wus[3].id])


def test_transition_claims_release_equals_one_orm_update_per_claim() -> None:
    app = AppFactory()
    lease, old = NOW + timedelta(seconds=90), NOW - timedelta(minutes=5)
    # Still leased, already given back, and claimed since by another worker.
    mine, theirs = _twin_workunits(app, [lease, old, NOW + timedelta(hours=1)])
    workunits_transition_claims_release([(wu.id, lease, old) for wu in mine], need_validate=True)
    for wu in theirs:
        Workunit.objects.filter(id=wu.id, transition_time=lease).update(
            transition_time=old, need_validate=True
        )
        Workunit.objects.filter(id=wu.id, transition_time=old).update(need_validate=True)
    assert _times(mine) == _times(theirs)
    assert _times(mine) == [(old, True), (old, True), (NOW + timedelta(hours=1), False)]


def test_transition_time_set_equals_orm_updates() -> None:
    app = AppFactory()
    mine, theirs = _twin_workunits(app, [NOW, None])
    new = [NOW + timedelta(hours=6), NOW + timedelta(minutes=3)]
    workunits_transition_time_set([(wu.id, at) for wu, at in zip(mine, new, strict=True)])
    for wu, at in zip(theirs, new, strict=True):
        Workunit.objects.filter(id=wu.id).update(transition_time=at)
    assert _times(mine) == _times(theirs)


def test_host_app_version_lock_finds_what_the_orm_finds() -> None:
    if not connection.features.has_select_for_update:
        pytest.skip("a lock only where rows can be locked (SQLite locks the database)")
    version = AppVersionFactory()
    wu = WorkunitFactory(app=version.app)
    hav = HostAppVersionFactory(app_version=version)
    anonymous = HostAppVersionFactory(
        host=HostFactory(), app_version=None, app=version.app, anonymous_proc_type="CPU"
    )
    HostAppVersionFactory(host=hav.host)  # another version on the same host: not locked
    ResultFactory(workunit=wu, host=hav.host, app_version=version)
    ResultFactory(workunit=wu, host=anonymous.host, app_version=None, anonymous_proc_type="CPU")
    ResultFactory(workunit=wu, host=HostFactory(), app_version=version, server_state=5)
    locked = host_app_versions_lock_for_results([wu.id], "r.server_state = %s", [2])
    matches = Q()
    for r in Result.objects.filter(workunit=wu, server_state=2):
        matches |= Q(host_id=r.host_id) & (
            Q(app_version_id=r.app_version_id)
            if r.app_version_id is not None
            else Q(app_version__isnull=True, app_id=r.app_id, anonymous_proc_type=r.anonymous_proc_type)
        )
    assert locked == list(HostAppVersion.objects.filter(matches).order_by("id").values_list("id", flat=True))


def _columns(wus: list[Workunit], names: tuple[str, ...]) -> list[tuple[object, ...]]:
    return list(Workunit.objects.filter(id__in=[wu.id for wu in wus]).order_by("id").values_list(*names))


def _results_by_id(ids: list[int]) -> list[dict[str, object]]:
    return [_fields(r) for r in Result.objects.filter(id__in=ids).order_by("id")]


def test_results_of_workunits_locked_equal_the_orm_rows() -> None:
    wu, other = WorkunitFactory(), WorkunitFactory()
    ResultFactory(workunit=wu)
    ResultFactory(workunit=other)
    ResultFactory(workunit=wu, server_state=ServerState.OVER)
    ResultFactory()
    found = results_of_workunits_locked([wu.id, other.id], ModelColumns(Result, "r"))
    expected = Result.objects.filter(workunit_id__in=[wu.id, other.id]).order_by("id")
    assert [_fields(r) for r in found] == [_fields(r) for r in expected]


def test_workunits_in_order_equal_the_orm_rows() -> None:
    wus = [WorkunitFactory() for _ in range(3)]
    ids = [wus[2].id, wus[0].id]
    found = workunits_in_order(ids, ModelColumns(Workunit, "w"))
    assert [_fields(wu) for wu in found] == [
        _fields(wu) for wu in Workunit.objects.filter(id__in=ids).order_by("id")
    ]


def test_workunits_with_transition_settings_equal_select_related() -> None:
    wus = [WorkunitFactory() for _ in range(2)]
    found = workunits_with_transition_settings([wu.id for wu in wus], ModelColumns(Workunit, "w"))
    expected = Workunit.objects.select_related("project").filter(id__in=[wu.id for wu in wus]).order_by("id")
    assert [(_fields(wu), *rest) for wu, *rest in found] == [
        (
            _fields(wu),
            wu.project.report_grace_period,
            wu.project.delete_delay_hours,
            wu.project.reliable_priority_on_over,
            wu.project.reliable_priority_on_over_except_error,
        )
        for wu in expected
    ]


def test_workunit_and_results_early_equal_the_orm_join() -> None:
    wu = WorkunitFactory()
    ResultFactory(workunit=wu)
    ResultFactory(workunit=wu)
    ResultFactory()
    found = workunit_and_results_early([wu.id], ModelColumns(Workunit, "w"), ModelColumns(Result, "r"))
    expected = Result.objects.select_related("workunit").filter(workunit_id=wu.id).order_by("id")
    assert [(_fields(w), _fields(r)) for w, r in found] == [
        (_fields(r.workunit), _fields(r)) for r in expected
    ]


def test_unsent_withdraw_equals_the_orm_update() -> None:
    states = [ServerState.UNSENT, ServerState.INACTIVE, ServerState.IN_PROGRESS, ServerState.OVER]
    mine, theirs = (
        [ResultFactory(workunit=wu, server_state=s) for s in states]
        for wu in (WorkunitFactory(), WorkunitFactory())
    )
    assert results_unsent_withdraw([mine[0].workunit_id]) == 2
    Result.objects.filter(
        workunit_id=theirs[0].workunit_id, server_state__in=[ServerState.UNSENT, ServerState.INACTIVE]
    ).update(server_state=ServerState.OVER, outcome=Outcome.DIDNT_NEED)
    strip = lambda rows: [(r["server_state"], r["outcome"]) for r in rows]  # noqa: E731
    assert strip(_results_by_id([r.id for r in mine])) == strip(_results_by_id([r.id for r in theirs]))


def test_transition_times_lower_equals_conditional_orm_updates() -> None:
    app = AppFactory()
    mine, theirs = _twin_workunits(app, [None, NOW + timedelta(hours=1), NOW - timedelta(hours=1)])
    at = NOW
    transition_times_lower({wu.id: at for wu in mine})
    Workunit.objects.filter(id__in=[wu.id for wu in theirs]).filter(
        Q(transition_time__isnull=True) | Q(transition_time__gt=at)
    ).update(transition_time=at)
    assert _times(mine) == _times(theirs)


def test_transition_apply_equals_the_orm_per_workunit() -> None:
    app = AppFactory()
    lease = NOW + timedelta(seconds=90)
    mine, theirs = _twin_workunits(app, [lease, NOW + timedelta(hours=3)])
    for wus in (mine, theirs):
        Workunit.objects.filter(id__in=[wu.id for wu in wus]).update(error_mask=2, hr_class=3)
    next_time = NOW + timedelta(hours=1)
    writes = WriteBatch()
    workunits_transition_apply(
        [(wu.id, db_datetime(lease), db_datetime(next_time), 4, True, True, True, True, 7) for wu in mine],
        writes,
    )
    writes.flush()
    for wu in theirs:
        row = Workunit.objects.get(id=wu.id)
        if row.transition_time == lease:
            row.transition_time = next_time
        row.error_mask |= 4
        row.need_validate = True
        if row.assimilate_state == AssimilateState.INIT:
            row.assimilate_state = AssimilateState.READY
        if row.file_delete_state == FileDeleteState.INIT:
            row.file_delete_state = FileDeleteState.READY
        row.app_version_id, row.hr_class, row.priority = None, 0, 7
        row.save()
    keep = (
        "transition_time",
        "error_mask",
        "need_validate",
        "assimilate_state",
        "file_delete_state",
        "hr_class",
        "priority",
    )
    assert _columns(mine, keep) == _columns(theirs, keep)


def test_validation_write_equals_the_orm_per_workunit() -> None:
    app = AppFactory()
    mine, theirs = _twin_workunits(app, [NOW, NOW], need_validate=True)
    canonical = [ResultFactory(workunit=wu) for wu in mine], [ResultFactory(workunit=wu) for wu in theirs]
    new_time = NOW + timedelta(days=1)
    # The first gets a canonical result and a new time; the second only an error bit.
    workunits_validation_write(
        [
            (mine[0].id, canonical[0][0].id, 12.5, True, 0, None, True, db_datetime(new_time)),
            (mine[1].id, None, None, False, 8, 3, False, None),
        ]
    )
    Workunit.objects.filter(id=theirs[0].id).update(
        need_validate=False,
        canonical_result_id=canonical[1][0].id,
        canonical_credit=12.5,
        assimilate_state=AssimilateState.READY,
        transition_time=new_time,
    )
    Workunit.objects.filter(id=theirs[1].id).update(need_validate=False, error_mask=8, target_nresults=3)
    keep = (
        "need_validate",
        "canonical_credit",
        "assimilate_state",
        "error_mask",
        "target_nresults",
        "transition_time",
    )
    assert _columns(mine, keep) == _columns(theirs, keep)


def _assimilation_workunits(app: object) -> list[Workunit]:
    """READY workunits never tried, due, not yet due; one done."""
    retry = [None, NOW - timedelta(minutes=2), NOW + timedelta(hours=1), None]
    states = [AssimilateState.READY] * 3 + [AssimilateState.DONE]
    return [
        WorkunitFactory(app=app, assimilate_state=s, assimilate_retry_time=t, assimilate_attempts=1)
        for s, t in zip(states, retry, strict=True)
    ]


def test_assimilate_ready_ids_equal_the_orm_ranges() -> None:
    app = AppFactory()
    _assimilation_workunits(app)
    ready = Workunit.objects.filter(project_id=app.project_id, assimilate_state=AssimilateState.READY)
    by_retry = ready.order_by("assimilate_retry_time", "id").values_list("id", flat=True)
    assert workunits_assimilate_ready_ids(app.project_id, due_by=NOW, limit=5) == list(
        by_retry.filter(assimilate_retry_time__lte=NOW)
    )
    assert workunits_assimilate_ready_ids(app.project_id, due_by=None, limit=5) == list(
        by_retry.filter(assimilate_retry_time__isnull=True)
    )


def test_claim_assimilation_equals_an_orm_update_then_read() -> None:
    mine, theirs = _assimilation_workunits(AppFactory()), _assimilation_workunits(AppFactory())
    lease = NOW + timedelta(seconds=90)
    claimed = workunits_claim_assimilation([wu.id for wu in mine], lease)
    ids = [wu.id for wu in theirs]
    Workunit.objects.filter(id__in=ids, assimilate_state=AssimilateState.READY).update(
        assimilate_attempts=F("assimilate_attempts") + 1, assimilate_retry_time=lease
    )
    expected = dict(
        Workunit.objects.filter(id__in=ids, assimilate_state=AssimilateState.READY).values_list(
            "id", "assimilate_attempts"
        )
    )
    assert sorted(claimed.values()) == sorted(expected.values())
    keep = ("assimilate_attempts", "assimilate_retry_time", "assimilate_state")
    assert _columns(mine, keep) == _columns(theirs, keep)


def test_workunits_with_app_and_canonical_equal_select_related() -> None:
    wu, without = WorkunitFactory(), WorkunitFactory()
    wu.canonical_result = ResultFactory(workunit=wu)
    wu.save()
    found = workunits_with_app_and_canonical(
        [wu.id, without.id], ModelColumns(Workunit, "w"), ModelColumns(App, "a"), ModelColumns(Result, "c")
    )
    expected = Workunit.objects.select_related("app", "canonical_result").filter(id__in=[wu.id, without.id])
    assert sorted(
        (repr(_fields(w)), repr(_fields(a)), repr(c and _fields(c))) for w, a, c in found
    ) == sorted(
        (repr(_fields(w)), repr(_fields(w.app)), repr(w.canonical_result and _fields(w.canonical_result)))
        for w in expected
    )


def test_assimilation_write_equals_orm_updates_where_the_claim_holds() -> None:
    mine, theirs = _assimilation_workunits(AppFactory()), _assimilation_workunits(AppFactory())
    # The first workunit's claim is this worker's (attempts 1), the second's is another's.
    written = workunits_assimilation_write(
        ["path"], ["text"], [(mine[0].id, 1, "/a"), (mine[1].id, 2, "/b")], "assimilated_path = v.path", []
    )
    Workunit.objects.filter(
        id=theirs[0].id, assimilate_attempts=1, assimilate_state=AssimilateState.READY
    ).update(assimilated_path="/a")
    assert written == {mine[0].id}
    assert _columns(mine, ("assimilated_path",)) == _columns(theirs, ("assimilated_path",))


def test_assimilation_claims_release_and_waiting_equal_the_orm() -> None:
    mine, theirs = _assimilation_workunits(AppFactory()), _assimilation_workunits(AppFactory())
    assert workunits_assimilation_waiting(mine[0].project_id, NOW) == (
        Workunit.objects.filter(
            project_id=mine[0].project_id,
            assimilate_state=AssimilateState.READY,
            assimilate_retry_time__gt=NOW,
        ).count()
    )
    workunits_assimilation_claims_release([(wu.id, 1) for wu in mine], NOW)
    Workunit.objects.filter(
        id__in=[wu.id for wu in theirs], assimilate_attempts=1, assimilate_state=AssimilateState.READY
    ).update(assimilate_retry_time=NOW)
    assert _columns(mine, ("assimilate_retry_time",)) == _columns(theirs, ("assimilate_retry_time",))


def _file_users() -> tuple[list[InputFile], list[Workunit]]:
    """Three input files: one used by an unfinished workunit, one by a finished one, one by
    none; the workunits in that order."""
    project = ProjectFactory()
    files = [InputFileFactory(project=project, file_delete_state=FileDeleteState.READY) for _ in range(3)]
    app = AppFactory(project=project)
    busy = WorkunitFactory(app=app, file_delete_state=FileDeleteState.INIT)
    done = WorkunitFactory(app=app, file_delete_state=FileDeleteState.DONE)
    WorkunitFileRef.objects.create(workunit=busy, file=files[0], ordinal=0)
    WorkunitFileRef.objects.create(workunit=done, file=files[1], ordinal=0)
    return files, [busy, done]


def test_input_files_used_elsewhere_equal_the_orm_exists() -> None:
    files, (busy, _done) = _file_users()
    ids = [f.id for f in files]
    users = WorkunitFileRef.objects.filter(file_id=OuterRef("id")).exclude(
        workunit__file_delete_state__in=[FileDeleteState.DONE, FileDeleteState.ERROR]
    )
    expected = set(InputFile.objects.filter(id__in=ids).filter(Exists(users)).values_list("id", flat=True))
    assert input_files_used_elsewhere(ids, []) == expected == {files[0].id}
    assert input_files_used_elsewhere(ids, [busy.id]) == set(
        InputFile.objects.filter(id__in=ids)
        .filter(Exists(users.exclude(workunit_id=busy.id)))
        .values_list("id", flat=True)
    )


def test_file_deleter_reads_equal_the_orm() -> None:
    files, wus = _file_users()
    project_id = files[0].project_id
    columns = ("id", "name", "sticky", "no_delete", "gzip", "file_delete_state")
    ids = [f.id for f in files]
    assert input_files_locked(ids) == list(
        InputFile.objects.filter(id__in=ids).order_by("id").values_list(*columns)
    )
    assert input_files_ready_locked(project_id, 2) == list(
        InputFile.objects.filter(project_id=project_id, file_delete_state=FileDeleteState.READY)
        .order_by("id")
        .values_list(*columns)[:2]
    )
    assert sorted(workunit_file_refs([wu.id for wu in wus])) == sorted(
        WorkunitFileRef.objects.filter(workunit__in=wus).values_list("workunit_id", "file_id")
    )
    Workunit.objects.filter(id=wus[1].id).update(file_delete_state=FileDeleteState.READY)
    assert rows_file_delete_ready(Workunit, project_id, "id, name", only=None, skip=[], limit=5) == list(
        Workunit.objects.filter(project_id=project_id, file_delete_state=FileDeleteState.READY)
        .order_by("id")
        .values_list("id", "name")
    )
    assert rows_file_delete_ready(Workunit, project_id, "id", only=None, skip=[wus[1].id], limit=5) == []


def test_file_delete_states_write_and_uploaded_names_equal_the_orm() -> None:
    mine, theirs = _file_users()[0], _file_users()[0]
    states = [FileDeleteState.DONE, FileDeleteState.ERROR, FileDeleteState.DONE]
    file_delete_states_write(InputFile, {f.id: int(s) for f, s in zip(mine, states, strict=True)})
    for f, s in zip(theirs, states, strict=True):
        InputFile.objects.filter(id=f.id).update(file_delete_state=s)
    state = lambda fs: [InputFile.objects.get(id=f.id).file_delete_state for f in fs]  # noqa: E731
    assert state(mine) == state(theirs)
    result = ResultFactory()
    OutputFileFactory(result=result, upload=True)
    OutputFileFactory(result=result, upload=False, name="other", ordinal=1)
    assert sorted(uploaded_output_names([result.id])) == sorted(
        OutputFile.objects.filter(result=result, upload=True).values_list("result_id", "name")
    )


def test_workunits_purgeable_equal_the_orm_filter() -> None:
    app = AppFactory()
    old = NOW - timedelta(days=30)
    wus = [WorkunitFactory(app=app, file_delete_state=FileDeleteState.DONE) for _ in range(3)]
    WorkunitFactory(app=app, file_delete_state=FileDeleteState.READY)
    Workunit.objects.filter(id__in=[wu.id for wu in wus]).update(create_time=old)
    ResultFactory(workunit=wus[1], received_time=NOW)  # received after the cutoff: kept
    cutoff = NOW - timedelta(days=7)
    found = workunits_purgeable(
        app.project_id, cutoff, 10, ModelColumns(Workunit, "w"), only=None, skip=[wus[2].id]
    )
    recent = Result.objects.filter(workunit_id=OuterRef("id"), received_time__gt=cutoff)
    expected = (
        Workunit.objects.filter(
            project_id=app.project_id, file_delete_state=FileDeleteState.DONE, create_time__lte=cutoff
        )
        .exclude(Exists(recent))
        .exclude(id=wus[2].id)
        .order_by("id")
    )
    assert [_fields(wu) for wu in found] == [_fields(wu) for wu in expected]


def test_purge_deletes_equal_the_orm_deletes() -> None:
    mine, theirs = WorkunitFactory(), WorkunitFactory()
    for wu in (mine, theirs):
        OutputFileFactory(result=ResultFactory(workunit=wu))
    result_ids = results_delete([mine.id])
    expected = list(Result.objects.filter(workunit=theirs).values_list("id", flat=True))
    Result.objects.filter(workunit=theirs).delete()
    assert len(result_ids) == len(expected) == 1
    rows_delete(OutputFile, "result_id", result_ids)
    assert not OutputFile.objects.filter(result_id__in=result_ids).exists()
    rows_delete(Workunit, "id", [mine.id])
    theirs.delete()
    assert not Workunit.objects.filter(id__in=[mine.id, theirs.id]).exists()


def test_orphan_input_files_delete_equals_the_orm_delete() -> None:
    files, _wus = _file_users()
    InputFile.objects.filter(id__in=[f.id for f in files]).update(file_delete_state=FileDeleteState.DONE)
    expected = set(
        InputFile.objects.filter(project_id=files[0].project_id, file_delete_state=FileDeleteState.DONE)
        .exclude(Exists(WorkunitFileRef.objects.filter(file_id=OuterRef("id"))))
        .values_list("id", flat=True)
    )
    assert set(orphan_input_files_delete(files[0].project_id)) == expected == {files[2].id}


def test_column_set_null_equals_the_orm_update() -> None:
    wu = WorkunitFactory()
    canonical = ResultFactory(workunit=wu)
    kept = WorkunitFactory(canonical_result=canonical)
    Workunit.objects.filter(id=wu.id).update(canonical_result=canonical)
    column_set_null(Workunit, "canonical_result_id", [canonical.id], [kept.id])
    assert list(
        Workunit.objects.filter(id__in=[wu.id, kept.id])
        .order_by("id")
        .values_list("canonical_result_id", flat=True)
    ) == [
        None,
        canonical.id,
    ]


def test_archive_reads_equal_the_orm() -> None:
    _files, (busy, _done) = _file_users()
    result = ResultFactory(workunit=busy)
    OutputFileFactory(result=result, upload=True)
    assert workunit_inputs_for_archive([busy.id]) == list(
        WorkunitFileRef.objects.filter(workunit=busy)
        .order_by("workunit_id", "ordinal")
        .values_list("workunit_id", "file__name", "file__md5_cksum", "file__nbytes", "open_name")
    )
    assert [(*row[:4], bool(row[4])) for row in result_outputs_for_archive([busy.id])] == list(
        OutputFile.objects.filter(result__workunit=busy)
        .order_by("result_id", "ordinal", "id")
        .values_list("result_id", "name", "nbytes", "md5_cksum", "uploaded")
    )
    assert [(r, n, bool(o), on) for r, n, o, on in output_names_by_result([result.id])] == list(
        OutputFile.objects.filter(result=result, upload=True)
        .order_by("result_id", "ordinal")
        .values_list("result_id", "name", "optional", "open_name")
    )


def test_apps_with_projects_equal_select_related() -> None:
    apps = [AppFactory(), AppFactory()]
    found = apps_with_projects([a.id for a in apps], ModelColumns(App, "a"), ModelColumns(Project, "p"))
    expected = App.objects.select_related("project").filter(id__in=[a.id for a in apps])
    assert {i: (_fields(a), _fields(a.project)) for i, a in found.items()} == {
        a.id: (_fields(a), _fields(a.project)) for a in expected
    }


def test_input_file_states_equal_the_orm_values() -> None:
    files, _wus = _file_users()
    ids = [f.id for f in files]
    assert input_file_states_key_shared(ids) == list(
        InputFile.objects.filter(id__in=ids).order_by("id").values_list("id", "file_delete_state")
    )


def test_rows_insert_stores_what_bulk_create_stores() -> None:
    project = ProjectFactory()
    names = ["a.dat", "b.dat"]
    returned = rows_insert(
        InputFile,
        ("project", "name", "md5_cksum", "nbytes"),
        [(project.id, n, "0" * 32, 7) for n in names],
        returning=("id",),
    )
    InputFile.objects.bulk_create(
        [InputFile(project=project, name=f"orm-{n}", md5_cksum="0" * 32, nbytes=7) for n in names]
    )
    keep = (
        "name",
        "md5_cksum",
        "nbytes",
        "sticky",
        "no_delete",
        "gzip",
        "file_delete_state",
        "report_on_rpc",
    )
    rows = {r[0]: r[1:] for r in InputFile.objects.filter(project=project).values_list(*keep)}
    assert len(returned) == 2
    assert [rows[n] for n in names] == [rows[f"orm-{n}"] for n in names]

"""apps.work.queries gives what a plain ORM version gives on the same rows (both passes:
SQLite by default, PostgreSQL with DATABASE_URL, so each vendor branch runs in one of them)."""

from datetime import timedelta

import pytest
from django.db import connection
from django.db.models import Q
from django.utils import timezone

from apps.hosts.models import HostAppVersion
from apps.work.models import Result, Workunit
from apps.work.queries import (
    host_app_versions_lock_for_results,
    results_with_workunits,
    workunits_claim_due,
    workunits_claim_validation,
    workunits_transition_claims_release,
    workunits_transition_time_set,
)
from tests.factories import (
    AppFactory,
    AppVersionFactory,
    HostAppVersionFactory,
    HostFactory,
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

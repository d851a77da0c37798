"""apps.scheduler.queries gives what a plain ORM version gives on the same rows (both passes:
SQLite by default, PostgreSQL with DATABASE_URL, so each vendor branch runs in one of them)."""

import pytest
from django.db.models import Q
from django.utils import timezone

from apps.core.db import ModelColumns, WriteBatch
from apps.hosts.models import Host, HostAppVersion, HostCoproc
from apps.projects.models import Project
from apps.scheduler.queries import (
    account_by_key,
    account_by_key_with_host,
    apps_busy_on_host,
    assignments_delete,
    assignments_for_host,
    file_refs_with_inputs,
    host_app_versions_locked,
    host_coprocs,
    host_jobs_in_progress,
    other_results_state,
    output_file_mark_uploaded,
    output_files_client_report,
    output_files_of_results,
    project_by_slug,
    result_states_of_workunits,
    upload_target_row,
    workunits_by_id,
    workunits_with_results_on_host,
)
from apps.volunteers.models import Account
from apps.work.domain.assignments import TargetType
from apps.work.domain.states import Outcome, ServerState, ValidateState
from apps.work.models import Assignment, InputFile, OutputFile, Result, Workunit, WorkunitFileRef
from tests.factories import (
    AccountFactory,
    AppFactory,
    HostAppVersionFactory,
    HostCoprocFactory,
    HostFactory,
    InputFileFactory,
    OutputFileFactory,
    ProjectFactory,
    ResultFactory,
    TeamFactory,
    WorkunitFactory,
)

pytestmark = pytest.mark.django_db

IN_PROGRESS = ServerState.IN_PROGRESS


def _fields(obj: object) -> dict[str, object]:
    return {k: v for k, v in vars(obj).items() if not k.startswith("_")}


def test_project_by_slug_equals_the_orm_get() -> None:
    project = ProjectFactory()
    found = project_by_slug(project.slug, ModelColumns(Project, "p"))
    assert found is not None
    assert _fields(found) == _fields(Project.objects.get(slug=project.slug))
    assert project_by_slug("no-such-project", ModelColumns(Project, "p")) is None


def test_account_by_key_equals_the_orm_get_with_its_team() -> None:
    team = TeamFactory()
    account = AccountFactory(project=team.project, team=team)
    by_id = account_by_key(team.project_id, account_id=account.id, authenticator="ignored")
    by_key = account_by_key(team.project_id, account_id=None, authenticator=account.authenticator)
    expected = Account.objects.select_related("team").get(project=team.project, id=account.id)
    assert by_id is not None
    assert by_key is not None
    assert _fields(by_id) == _fields(by_key) == _fields(expected)
    assert _fields(by_id.team) == _fields(expected.team)
    assert account_by_key(ProjectFactory().id, account_id=None, authenticator=account.authenticator) is None


def test_account_by_key_with_host_equals_the_orm_reads() -> None:
    account = AccountFactory()
    host = HostFactory(account=account)
    HostCoprocFactory(host=host, proc_type="NVIDIA")
    HostCoprocFactory(host=host, proc_type="ATI")
    found = account_by_key_with_host(
        account.project_id, host.id, account_id=None, authenticator=account.authenticator
    )
    assert found is not None
    got_account, got_host, got_coprocs = found
    assert _fields(got_account) == _fields(Account.objects.get(id=account.id))
    assert got_account.team is None
    assert got_host is not None
    assert _fields(got_host) == _fields(Host.objects.get(id=host.id))
    expected = [_fields(c) for c in HostCoproc.objects.filter(host=host).order_by("id")]
    assert sorted((_fields(c) for c in got_coprocs), key=lambda f: f["id"]) == expected
    assert sorted((_fields(c) for c in host_coprocs(host.id)), key=lambda f: f["id"]) == expected


def test_account_by_key_with_host_leaves_out_another_accounts_host() -> None:
    account = AccountFactory()
    other_host = HostFactory(account__project=account.project)
    found = account_by_key_with_host(
        account.project_id, other_host.id, account_id=account.id, authenticator=""
    )
    assert found is not None
    assert found[0].id == account.id
    assert found[1:] == (None, [])


def test_other_results_state_equals_the_orm_values() -> None:
    wu = WorkunitFactory()
    host = HostFactory(account__project=wu.project)
    results = [ResultFactory(workunit=wu, host=host, server_state=IN_PROGRESS), ResultFactory(workunit=wu)]
    names = [r.name for r in results] + ["unknown"]
    expected = {
        name: rest
        for name, *rest in Result.objects.filter(project=wu.project, name__in=names).values_list(
            "name",
            "host_id",
            "server_state",
            "outcome",
            "workunit__error_mask",
            "workunit__canonical_result_id",
            "workunit__sequence_id",
        )
    }
    assert {k: list(v) for k, v in other_results_state(wu.project_id, names).items()} == expected


def test_host_jobs_and_busy_apps_equal_the_orm() -> None:
    host = HostFactory()
    apps = [AppFactory(project=host.project) for _ in range(3)]
    ResultFactory(workunit=WorkunitFactory(app=apps[0]), host=host, server_state=IN_PROGRESS)
    ResultFactory(workunit=WorkunitFactory(app=apps[1]), host=host, server_state=ServerState.OVER)
    in_progress = Result.objects.filter(host=host, server_state=IN_PROGRESS)
    assert sorted(host_jobs_in_progress(host.id)) == sorted(in_progress.values_list("app_id", "proc_type"))
    ids = [a.id for a in apps]
    assert apps_busy_on_host(host.id, ids) == set(
        in_progress.filter(app_id__in=ids).values_list("app_id", flat=True)
    )


def test_host_app_versions_locked_equal_the_orm_rows() -> None:
    host = HostFactory()
    HostAppVersionFactory(host=host)
    HostAppVersionFactory(host=host)
    HostAppVersionFactory()
    found = host_app_versions_locked(host.id, ModelColumns(HostAppVersion, "v"))
    assert [_fields(h) for h in found] == [
        _fields(h) for h in HostAppVersion.objects.filter(host=host).order_by("id")
    ]


def test_output_files_client_report_equals_orm_updates() -> None:
    mine, theirs = ResultFactory(), ResultFactory()
    for result in (mine, theirs):
        OutputFileFactory(result=result, name=f"{result.name}_0", nbytes=500)
        OutputFileFactory(
            result=result, name=f"{result.name}_1", ordinal=1, nbytes=100, uploaded=True, md5_cksum="u"
        )
    batch = WriteBatch()
    output_files_client_report(
        [(mine.id, f"{mine.name}_0", "abc", 300), (mine.id, f"{mine.name}_1", "def", 50)], batch
    )
    batch.flush()
    for suffix, md5, nbytes in (("_0", "abc", 300), ("_1", "def", 50)):
        for f in OutputFile.objects.filter(result=theirs, name=f"{theirs.name}{suffix}", uploaded=False):
            f.md5_cksum, f.nbytes = md5, min(f.nbytes, nbytes)
            f.save()

    def state(result: Result) -> list[tuple[object, ...]]:
        return list(
            OutputFile.objects.filter(result=result).order_by("ordinal").values_list("md5_cksum", "nbytes")
        )

    assert state(mine) == state(theirs) == [("abc", 300), ("u", 100)]


def test_file_refs_and_output_files_equal_the_orm() -> None:
    wu = WorkunitFactory()
    files = [InputFileFactory(project=wu.project) for _ in range(2)]
    for i, f in enumerate(reversed(files)):
        WorkunitFileRef.objects.create(workunit=wu, file=f, ordinal=i)
    refs = file_refs_with_inputs([wu.id], ModelColumns(WorkunitFileRef, "fr"), ModelColumns(InputFile, "f"))
    expected = WorkunitFileRef.objects.select_related("file").filter(workunit=wu).order_by("ordinal", "id")
    assert [(_fields(r), _fields(r.file)) for r in refs] == [(_fields(r), _fields(r.file)) for r in expected]
    result = ResultFactory(workunit=wu)
    OutputFileFactory(result=result, name="b", ordinal=1)
    OutputFileFactory(result=result, name="a", ordinal=0)
    outputs = output_files_of_results([result.id], ModelColumns(OutputFile, "o"))
    assert [_fields(o) for o in outputs] == [
        _fields(o) for o in OutputFile.objects.filter(result=result).order_by("ordinal", "id")
    ]


def test_assignments_for_host_equal_the_orm_filter() -> None:
    host = HostFactory()
    project, account = host.project, host.account
    app = AppFactory(project=project)

    def assign(target: TargetType, target_id: int, **workunit: object) -> Assignment:
        wu = WorkunitFactory(app=app, **workunit)
        multi = target is TargetType.NONE
        return Assignment.objects.create(
            project=project, workunit=wu, target_type=target, target_id=target_id, multi=multi
        )

    assign(TargetType.NONE, 0)
    assign(TargetType.HOST, host.id)
    assign(TargetType.HOST, host.id + 1000)  # another host's
    assign(TargetType.USER, account.id)
    assign(TargetType.NONE, 0, error_mask=4)  # failed
    done = assign(TargetType.USER, account.id, target_nresults=1)
    ResultFactory(workunit=done.workunit, server_state=IN_PROGRESS)  # all its results out
    mine = assign(TargetType.NONE, 0)
    ResultFactory(workunit=mine.workunit, host=host)  # the host has one already
    orphan = Assignment.objects.create(
        project=project, workunit=None, target_type=TargetType.NONE, multi=True
    )
    found = assignments_for_host(project.id, host.id, account.id, account.team_id, 64)
    # The ORM version, one assignment at a time.
    targets = {
        TargetType.NONE: 0,
        TargetType.HOST: host.id,
        TargetType.USER: account.id,
        TargetType.TEAM: account.team_id or 0,
    }
    still_open = Q(server_state__in=[ServerState.INACTIVE, ServerState.UNSENT, IN_PROGRESS]) | (
        Q(server_state=ServerState.OVER, outcome=Outcome.SUCCESS) & ~Q(validate_state=ValidateState.INVALID)
    )
    expected = []
    for a in Assignment.objects.filter(project=project).select_related("workunit").order_by("id"):
        wu = a.workunit
        if a.target_id != targets[TargetType(a.target_type)]:
            continue
        if wu is not None and (
            wu.error_mask
            or wu.canonical_result_id
            or wu.need_validate
            or Result.objects.filter(workunit=wu, host=host).exists()
            or (not a.multi and wu.target_nresults <= Result.objects.filter(still_open, workunit=wu).count())
        ):
            continue
        expected.append(a.id)
    assert [row[0] for row in found] == expected
    assert len(expected) == 4  # all hosts, this host, its user, the orphan
    assert [row[0] for row in found if row[3] is None] == [orphan.id]
    assignments_delete([orphan.id])
    assert not Assignment.objects.filter(id=orphan.id).exists()


def test_workunit_reads_of_assigned_work_equal_the_orm() -> None:
    host = HostFactory()
    wus = [WorkunitFactory(app=AppFactory(project=host.project)) for _ in range(3)]
    ResultFactory(workunit=wus[0], host=host)
    ResultFactory(workunit=wus[1])
    ids = [wu.id for wu in wus]
    assert workunits_with_results_on_host(host.id, ids) == set(
        Result.objects.filter(host=host, workunit_id__in=ids).values_list("workunit_id", flat=True)
    )
    found = workunits_by_id(ids, ModelColumns(Workunit, "w"), lock=False)
    assert {i: _fields(wu) for i, wu in found.items()} == {
        wu.id: _fields(wu) for wu in Workunit.objects.filter(id__in=ids)
    }
    assert sorted(result_states_of_workunits(ids)) == sorted(
        Result.objects.filter(workunit_id__in=ids).values_list(
            "workunit_id", "name", "host_id", "server_state", "outcome", "validate_state"
        )
    )


def test_upload_target_and_mark_uploaded_equal_the_orm() -> None:
    f = OutputFileFactory()
    row = upload_target_row(f.result.project_id, f.name)
    o = OutputFile.objects.select_related("result__workunit").get(id=f.id)
    assert row is not None
    assert list(row[:6]) == [o.id, o.upload, o.max_nbytes, o.uploaded, o.nbytes, o.md5_cksum]
    assert list(row[6:11]) == [
        o.result.name,
        o.result.server_state,
        o.result.outcome,
        o.result.file_delete_state,
        o.result.workunit.error_mask,
    ]
    assert upload_target_row(f.result.project_id, "no-such-file") is None
    now = timezone.now()
    assert output_file_mark_uploaded(output_id=f.id, nbytes=9, md5_cksum="m", now=now)
    assert OutputFile.objects.filter(id=f.id).values_list(
        "uploaded", "nbytes", "md5_cksum", "upload_time"
    ).get() == (
        True,
        9,
        "m",
        now,
    )

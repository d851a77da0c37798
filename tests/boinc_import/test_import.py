"""import_boinc on a real MariaDB holding a BOINC project: what arrives, what is refused,
and that runs can be repeated, interrupted and rehearsed.

Marked postgres: on PostgreSQL the import writes with COPY and moves identity sequences,
on SQLite with INSERTs and sqlite_sequence, so each test runs on both."""

from __future__ import annotations

import re
from datetime import UTC, datetime

import pytest
import time_machine

from apps.applications.models import App, AppFile, AppVersion
from apps.boinc_import.models import BoincImport, ImportIssue, ImportTable
from apps.boinc_import.services.run import boinc_import_run
from apps.core.domain.signing import verify_md5_signature
from apps.credit.models import TeamAppCredit, UserAppCredit
from apps.hosts.models import DeletedHost, Host, HostAppVersion
from apps.projects.models import Platform, Project
from apps.protocol.filenames import partial_upload_name
from apps.submit.models import Batch, UserSubmit, UserSubmitApp
from apps.volunteers.models import Account, DeletedAccount, Team
from apps.work.domain.assignments import TargetType
from apps.work.domain.states import Outcome, ServerState
from apps.work.models import Assignment, InputFile, OutputFile, Result, Workunit, WorkunitFileRef
from tests.boinc_import.boinc_db import BoincDb
from tests.boinc_import.conftest import (
    APP_BYTES,
    APP_FILE,
    INPUT_BYTES,
    INPUT_FILE,
    add_host,
    add_user,
    hier,
    import_boinc,
    md5,
    result_doc,
    write,
)
from tests.factories import AccountFactory, AppFactory, HostFactory, ProjectFactory

pytestmark = [pytest.mark.django_db, pytest.mark.mysql, pytest.mark.slow, pytest.mark.postgres]


# Every table the import writes, in the order it writes them.
IMPORTED_MODELS = (
    Project,
    Platform,
    App,
    AppVersion,
    AppFile,
    Team,
    Account,
    UserAppCredit,
    TeamAppCredit,
    DeletedAccount,
    Host,
    HostAppVersion,
    DeletedHost,
    UserSubmit,
    UserSubmitApp,
    Batch,
    Workunit,
    InputFile,
    WorkunitFileRef,
    Result,
    OutputFile,
    Assignment,
)


def imported_rows() -> dict[str, list[dict[str, object]]]:
    """Every column of every row the import writes (credit totals, recent averages and
    their times, authenticators and password hashes, host ids, CPIDs and RPC sequence
    numbers, workunit and result states, file records), and the files it placed."""
    rows: dict[str, list[dict[str, object]]] = {
        model.__name__: list(model.objects.order_by("pk").values()) for model in IMPORTED_MODELS
    }
    for project in Project.objects.order_by("pk"):
        for area in (project.download_dir, project.upload_dir):
            files = sorted(area.iterdir()) if area.is_dir() else []
            rows[str(area)] = [{"name": f.name, "bytes": f.read_bytes()} for f in files]
    return rows


def stored_issues() -> list[tuple[str, int, bool, str]]:
    return list(
        ImportIssue.objects.order_by("table", "source_id", "reason").values_list(
            "table", "source_id", "refused", "reason"
        )
    )


def progress_records() -> list[tuple[object, ...]]:
    return list(
        ImportTable.objects.order_by("table").values_list("table", "last_source_id", "imported", "done")
    )


# --- what arrives -----------------------------------------------------------------------------


def test_the_project_takes_its_name_keys_settings_and_master_url_from_the_project_dir(
    boinc_db, standard, project_dir, keys
):
    import_boinc(boinc_db, project_dir)
    project = Project.objects.get(slug="oldproj")
    assert (project.name, project.master_url) == ("Old Project", "http://boinc.example.org/oldproj/")
    assert project.code_sign_public_key == keys.code_sign.public_text
    assert project.code_sign_private_key == ""  # kept offline by the BOINC project, as here
    assert (project.upload_public_key, project.upload_private_key) == (
        keys.upload.public_text,
        keys.upload.private_text,
    )
    assert project.daily_result_quota == 50


def test_accounts_keep_authenticators_emails_names_countries_and_cross_project_ids(
    boinc_db, standard, project_dir
):
    import_boinc(boinc_db, project_dir)
    ada = Account.objects.get(email_addr=standard.ada.email)
    assert (ada.pk, ada.authenticator, ada.name, ada.country) == (
        1,
        standard.ada.authenticator,
        "Ada",
        "Iceland",
    )
    assert ada.cross_project_id == f"{1:032x}"
    assert ada.team.name == "Crunchers"
    assert ada.create_time == datetime.fromtimestamp(int(standard.now - 100 * 86400), tz=UTC)


def test_team_keeps_its_founder_url_type_and_credit(boinc_db, standard, project_dir):
    import_boinc(boinc_db, project_dir)
    team = Team.objects.get()
    assert (team.pk, team.founder.email_addr, team.type) == (1, standard.ada.email, 6)
    assert team.url == "http://crunchers.example.org"  # BOINC keeps what volunteers typed
    assert (team.total_credit, team.expavg_credit, team.expavg_time) == (
        5000.0,
        120.5,
        standard.now - 2 * 86400,
    )


def test_host_keeps_its_id_cpid_hardware_seqno_and_credit(boinc_db, standard, project_dir):
    import_boinc(boinc_db, project_dir)
    host = Host.objects.get()
    assert (host.pk, host.account.email_addr, host.host_cpid, host.rpc_seqno) == (
        7,
        standard.ada.email,
        "c" * 32,
        42,
    )
    assert (host.p_model, host.p_ncpus, host.p_fpops, host.os_name) == (
        "Intel(R) Core(TM) i5",
        4,
        3e9,
        "Linux Debian",
    )
    assert (host.total_credit, host.expavg_credit, host.expavg_time) == (2500.0, 90.75, standard.now - 86400)


def test_host_app_version_keeps_its_statistics_and_quota(boinc_db, standard, project_dir):
    import_boinc(boinc_db, project_dir)
    hav = HostAppVersion.objects.get()
    assert (hav.host_id, hav.app_version.version_num) == (7, 100)
    assert (hav.pfc_n, hav.pfc_avg, hav.et_n, hav.max_jobs_per_day, hav.n_jobs_today) == (30, 2.4, 30, 40, 2)
    assert (hav.consecutive_valid, hav.error_rate, hav.scale_probation) == (12, 0.02, False)


def test_per_app_credit_of_users_and_teams(boinc_db, standard, project_dir):
    import_boinc(boinc_db, project_dir)
    user_credit, team_credit = UserAppCredit.objects.get(), TeamAppCredit.objects.get()
    assert (user_credit.account.email_addr, user_credit.njobs, user_credit.total) == (
        standard.ada.email,
        20,
        3000.0,
    )
    assert (team_credit.team.name, team_credit.njobs, team_credit.expavg) == ("Crunchers", 35, 120.5)


def test_app_version_files_are_placed_in_the_download_area_with_their_signature(
    boinc_db, standard, project_dir, keys
):
    import_boinc(boinc_db, project_dir)
    project = Project.objects.get()
    version = AppVersion.objects.get()
    file = AppFile.objects.get()
    assert (version.app.name, version.platform.name, version.version_num, version.pfc_n) == (
        "worker",
        "x86_64-pc-linux-gnu",
        100,
        500,
    )
    assert (file.file_name, file.main_program, file.nbytes) == (APP_FILE, True, len(APP_BYTES))
    assert (project.download_dir / APP_FILE).read_bytes() == APP_BYTES
    assert verify_md5_signature(keys.code_sign.public_text, file.md5_cksum, file.file_signature) is True


def test_homogeneous_redundancy_and_app_version_commitments_are_kept(boinc_db, standard, project_dir):
    boinc_db.execute("UPDATE app SET homogeneous_redundancy = 2, homogeneous_app_version = 1 WHERE id = 1")
    boinc_db.execute("UPDATE workunit SET hr_class = 258, app_version_id = 1 WHERE name = 'wu_running'")
    import_boinc(boinc_db, project_dir)
    app = App.objects.get()
    assert (app.homogeneous_redundancy, app.homogeneous_app_version) == (2, True)
    running = Workunit.objects.get(name="wu_running")
    assert (running.hr_class, running.app_version.version_num) == (258, 100)


def test_only_work_in_progress_is_imported_with_its_files(boinc_db, standard, project_dir):
    import_boinc(boinc_db, project_dir)
    project = Project.objects.get()
    assert sorted(Workunit.objects.values_list("name", flat=True)) == ["wu_fresh", "wu_running"]
    running = Result.objects.get(name=standard.running_result)
    assert (running.server_state, running.host_id, running.account.email_addr) == (
        ServerState.IN_PROGRESS,
        7,
        standard.ada.email,
    )
    assert (running.platform, running.version_num, running.app_version.version_num) == (
        "x86_64-pc-linux-gnu",
        100,
        100,
    )
    output = OutputFile.objects.get(result=running)
    assert (output.name, output.open_name, output.max_nbytes, output.uploaded) == (
        standard.running_output,
        "out",
        10_000,
        False,
    )
    ref = WorkunitFileRef.objects.get(workunit__name="wu_running")
    assert (ref.file.name, ref.open_name) == (INPUT_FILE, "in")
    assert (project.download_dir / INPUT_FILE).read_bytes() == INPUT_BYTES
    wu = Workunit.objects.get(name="wu_fresh")
    assert wu.output_files[0]["open_name"] == "out"
    assert wu.output_files[0]["max_nbytes"] == 10_000


def test_assignments_of_work_in_progress_keep_their_targets(boinc_db, standard, project_dir):
    boinc_db.add("assignment", id=1, target_type=1, target_id=standard.host_id, workunitid=11)
    boinc_db.add("assignment", id=2, target_type=3, target_id=standard.team_id, multi=1, workunitid=12)
    boinc_db.add("assignment", id=3, target_type=2, target_id=standard.ada.id, workunitid=13)  # assimilated
    import_boinc(boinc_db, project_dir)
    assert sorted(Assignment.objects.values_list("workunit__name", "target_type", "target_id", "multi")) == [
        ("wu_fresh", TargetType.TEAM, standard.team_id, True),
        ("wu_running", TargetType.HOST, standard.host_id, False),
    ]


def test_an_assignment_whose_target_was_not_imported_is_refused(boinc_db, standard, project_dir):
    boinc_db.add("assignment", id=1, target_type=1, target_id=999, workunitid=11)
    import_boinc(boinc_db, project_dir)
    assert Assignment.objects.count() == 0
    assert ("assignment", 1, True, "its target host 999 was not imported") in stored_issues()


def test_a_reported_results_upload_to_the_old_server_is_received_here(boinc_db, standard, project_dir):
    data = b"42\n"
    write(hier(project_dir / "upload", "wu_fresh_0_r1_0"), data)
    reported = (
        f"<file_info><name>wu_fresh_0_r1_0</name><nbytes>{len(data)}</nbytes><max_nbytes>10000</max_nbytes>"
        f"<md5_cksum>{md5(data)}</md5_cksum></file_info>"
    )
    boinc_db.execute(
        "UPDATE result SET server_state = 5, outcome = 1, client_state = 5, xml_doc_out = %s WHERE id = 22",
        [reported],
    )
    import_boinc(boinc_db, project_dir)
    output = OutputFile.objects.get(name="wu_fresh_0_r1_0")
    assert (output.uploaded, output.nbytes, output.md5_cksum) == (True, 3, md5(data))
    assert (Project.objects.get().upload_dir / "wu_fresh_0_r1_0").read_bytes() == data


def test_a_reported_upload_that_does_not_match_the_report_is_left_behind(boinc_db, standard, project_dir):
    write(hier(project_dir / "upload", "wu_fresh_0_r1_0"), b"partial")
    other = md5(b"42")
    reported = (
        f"<file_info><name>wu_fresh_0_r1_0</name><nbytes>7</nbytes><md5_cksum>{other}</md5_cksum></file_info>"
    )
    boinc_db.execute(
        "UPDATE result SET server_state = 5, outcome = 1, xml_doc_out = %s WHERE id = 22", [reported]
    )
    output = import_boinc(boinc_db, project_dir, "-v", "2")
    assert "changed result 22: uploaded file wu_fresh_0_r1_0 is not what the client reported" in output
    assert OutputFile.objects.get(name="wu_fresh_0_r1_0").uploaded is False
    assert not (Project.objects.get().upload_dir / "wu_fresh_0_r1_0").exists()


def test_an_upload_of_a_task_in_progress_is_kept_both_whole_and_for_resuming(boinc_db, standard, project_dir):
    write(hier(project_dir / "upload", standard.running_output), b"4")
    import_boinc(boinc_db, project_dir)
    area = Project.objects.get().upload_dir
    assert (area / standard.running_output).read_bytes() == b"4"
    assert (area / partial_upload_name(standard.running_output)).read_bytes() == b"4"
    assert OutputFile.objects.get(name=standard.running_output).uploaded is False


def test_volunteers_without_stats_export_consent_are_not_exported(boinc_db, standard, project_dir):
    boinc_db.add("consent_type", id=2, shortname="STATSEXPORT", enabled=1)
    boinc_db.add("consent", userid=1, consent_type_id=2, consent_time=100, consent_flag=1)
    boinc_db.add("consent", userid=1, consent_type_id=2, consent_time=200, consent_flag=0)
    boinc_db.add("consent", userid=2, consent_type_id=2, consent_time=100, consent_flag=1)
    import_boinc(boinc_db, project_dir)
    assert dict(Account.objects.values_list("pk", "stats_export_consent")) == {1: False, 2: True}


# --- repeated, interrupted and rehearsed runs ----------------------------------------------------


def add_history(db: BoincDb) -> None:
    """What a long-running BOINC project also has: deleted volunteers and hosts, and a job
    whose quorum was reached (a canonical result) but which is not assimilated yet."""
    db.add("user_deleted", userid=5, public_cross_project_id="e" * 32, create_time=1_650_000_000)
    db.add("host_deleted", hostid=6, public_cross_project_id="f" * 32, create_time=1_650_000_000)
    db.add(
        "result",
        id=24,
        workunitid=11,
        appid=1,
        name="wu_running_1",
        server_state=5,
        outcome=1,
        validate_state=1,
        hostid=7,
        userid=1,
        app_version_id=1,
        granted_credit=12.5,
        create_time=1_650_000_000,
        sent_time=1_650_000_100,
        received_time=1_650_000_200,
        xml_doc_in=result_doc("wu_running_1"),
    )
    db.execute("UPDATE workunit SET canonical_resultid = 24, canonical_credit = 12.5 WHERE id = 11")


def test_a_second_run_changes_nothing(boinc_db, standard, project_dir):
    add_history(boinc_db)
    add_user(boinc_db, 3, name="<b>x</b>")
    import_boinc(boinc_db, project_dir)
    before = (imported_rows(), stored_issues(), progress_records())
    assert Workunit.objects.get(name="wu_running").canonical_result.name == "wu_running_1"
    assert (DeletedAccount.objects.count(), DeletedHost.objects.count()) == (1, 1)
    # A day later, so that anything recomputed from the clock (recent averages decayed to
    # now, creation times) would show.
    with time_machine.travel(standard.now + 86400, tick=True):
        output = import_boinc(boinc_db, project_dir)
    assert (imported_rows(), stored_issues(), progress_records()) == before
    assert "refused user 3: name '<b>x</b>': user name may not contain HTML tags" in output


def test_a_second_run_keeps_what_changed_here_and_takes_no_change_made_in_boinc(
    boinc_db, standard, project_dir
):
    """Rows already imported are never read again: the project lives on in Cobblestone (credit
    granted, an RPC, a task reported) and a later run, to take rows fixed in BOINC, keeps
    that; what changed in the BOINC database meanwhile is not taken."""
    add_history(boinc_db)
    add_user(boinc_db, 3, email_addr="not an email")
    import_boinc(boinc_db, project_dir)
    Account.objects.filter(pk=1).update(total_credit=3050.0, expavg_credit=101.0)
    Team.objects.filter(pk=1).update(total_credit=5050.0)
    Host.objects.filter(pk=7).update(rpc_seqno=43, total_credit=2550.0)
    Result.objects.filter(name=standard.running_result).update(
        server_state=ServerState.OVER, outcome=Outcome.SUCCESS
    )
    after_life_here = imported_rows()
    boinc_db.execute(
        "UPDATE user SET total_credit = 9999, expavg_credit = 1, authenticator = %s WHERE id = 1", ["z" * 32]
    )
    boinc_db.execute("UPDATE team SET total_credit = 9999, userid = 2 WHERE id = 1")
    boinc_db.execute(
        "UPDATE host SET host_cpid = %s, rpc_seqno = 99, total_credit = 9999 WHERE id = 7", ["d" * 32]
    )
    boinc_db.execute("UPDATE host_app_version SET n_jobs_today = 39 WHERE host_id = 7")
    boinc_db.execute("UPDATE credit_user SET total = 9999 WHERE userid = 1")
    boinc_db.execute("UPDATE result SET server_state = 5, outcome = 3 WHERE id = 21")
    boinc_db.execute("UPDATE workunit SET transition_time = 1 WHERE id = 12")
    boinc_db.execute("UPDATE user SET email_addr = 'carol@example.org' WHERE id = 3")
    import_boinc(boinc_db, project_dir)
    after = imported_rows()
    taken = [(a["id"], a["email_addr"]) for a in after["Account"] if a["id"] == 3]
    after["Account"] = [a for a in after["Account"] if a["id"] != 3]
    assert (after, taken) == (after_life_here, [(3, "carol@example.org")])


def test_a_run_stopped_half_way_goes_on_where_it_stopped(boinc_db, standard, project_dir):
    for i in range(10, 30):
        add_user(boinc_db, i)

    def stop_after_first_user_batch(table: str, done: int, total: int) -> None:
        if table == "user":
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        boinc_import_run(
            slug="oldproj",
            mysql_url=boinc_db.url,
            project_dir=project_dir,
            batch_size=5,
            progress=stop_after_first_user_batch,
        )
    assert Account.objects.count() == 5
    assert ImportTable.objects.get(table="user").last_source_id == 12
    assert BoincImport.objects.get().finished is None
    output = import_boinc(boinc_db, project_dir, "--batch-size", "5")
    assert sorted(Account.objects.values_list("pk", flat=True)) == [1, 2, *range(10, 30)]
    assert Host.objects.count() == 1
    assert BoincImport.objects.get().finished is not None
    # The rows the stopped run wrote count as read: the next batch brings the user table to 10.
    user_lines = [(done, total) for table, done, total in progress_lines(output) if table == "user"]
    assert (user_lines[0], user_lines[-1]) == ((10, 22), (22, 22))
    assert ("team", 1, 1) in progress_lines(output)  # finished by the stopped run


PROGRESS_LINE = re.compile(r"^  (\S.*?) +([\d,]+) of ([\d,]+)$")
TABLES_IN_ORDER = [
    "platform",
    "app",
    "app_version",
    "team",
    "user",
    "team founder",
    "credit_user",
    "credit_team",
    "user_deleted",
    "host",
    "host_app_version",
    "host_deleted",
    "user_submit",
    "user_submit_app",
    "batch",
    "workunit",
    "result",
    "canonical result",
    "assignment",
]


def progress_lines(output: str) -> list[tuple[str, int, int]]:
    """The command's progress lines: (table, rows read, rows in the table)."""
    return [
        (m[1], int(m[2].replace(",", "")), int(m[3].replace(",", "")))
        for m in map(PROGRESS_LINE.match, output.splitlines())
        if m
    ]


def test_the_operator_sees_progress_per_table_then_a_summary(boinc_db, standard, project_dir):
    for i in range(10, 30):
        add_user(boinc_db, i)
    add_user(boinc_db, 3, email_addr="not an email")
    output = import_boinc(boinc_db, project_dir, "--batch-size", "5")
    progress = progress_lines(output)
    assert list(dict.fromkeys(table for table, _, _ in progress)) == TABLES_IN_ORDER
    last = {table: (done, total) for table, done, total in progress}
    assert last == {
        **dict.fromkeys(TABLES_IN_ORDER, (1, 1)),
        "user": (23, 23),
        "user_deleted": (0, 0),
        "host_deleted": (0, 0),
        "workunit": (2, 2),
        "result": (2, 2),
        "canonical result": (0, 0),
        "assignment": (0, 0),
    }
    # The first batch is shown at once, then a line every few seconds and the last.
    user = [done for table, done, _ in progress if table == "user"]
    assert user[0] == 5
    assert user == sorted(user)

    lines = output.splitlines()
    header = lines.index(next(line for line in lines if line.split()[:2] == ["table", "read"]))
    assert header > max(i for i, line in enumerate(lines) if PROGRESS_LINE.match(line))
    assert lines[header].split() == ["table", "read", "imported", "refused", "changed", "seconds", "rows/s"]
    summary = {line.split()[0]: line.split()[1:5] for line in lines[header + 1 : header + 20]}
    assert summary["user"] == ["23", "22", "1", "20"]  # the 20 new users have no password
    assert summary["host"] == ["1", "1", "0", "0"]
    assert summary["result"] == ["2", "2", "0", "0"]
    assert re.fullmatch(r"total \d+\.\d s", lines[header + 20])
    assert "refused user 3: email_addr 'not an email': not a valid email address" in lines
    assert "20 rows imported with a change (-v 2 lists them)" in lines
    assert lines[-1] == "Project oldproj: http://boinc.example.org/oldproj/"


def test_a_dry_run_reports_what_it_would_import_and_refuse_and_writes_nothing(
    boinc_db, standard, project_dir
):
    add_host(boinc_db, 8, 99)
    output = import_boinc(boinc_db, project_dir, "--dry-run")
    assert "refused host 8: its user 99 was not imported" in output
    assert "Dry run: nothing was written." in output
    lines = {line.split()[0]: line.split()[1:] for line in output.splitlines() if line[:1].isalpha()}
    assert lines["user"][:3] == ["2", "2", "0"]
    assert lines["host"][:3] == ["2", "1", "1"]
    assert lines["result"][:2] == ["2", "2"]
    assert (Project.objects.exists(), Platform.objects.exists()) == (False, False)


def test_a_dry_run_after_a_stopped_run_reports_what_is_left_and_writes_nothing(
    boinc_db, standard, project_dir
):
    def stop_at_hosts(table: str, done: int, total: int) -> None:
        if table == "host":
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        boinc_import_run(
            slug="oldproj", mysql_url=boinc_db.url, project_dir=project_dir, progress=stop_at_hosts
        )
    add_user(boinc_db, 5)
    before = (imported_rows(), stored_issues(), progress_records())
    output = import_boinc(boinc_db, project_dir, "--dry-run")
    assert "refused user 5: added to the BOINC database after this import began" in output
    assert (imported_rows(), stored_issues(), progress_records()) == before
    assert [line.split()[:3] for line in output.splitlines() if line.startswith(("host ", "result "))] == [
        ["host", "0", "0"],  # read before the stop
        ["result", "2", "2"],
    ]


# --- bad input ---------------------------------------------------------------------------------


def test_a_row_breaking_a_rule_is_refused_and_reported_and_the_rest_imported(boinc_db, standard, project_dir):
    add_user(boinc_db, 3, email_addr="not an email")
    add_host(boinc_db, 9, 3)
    output = import_boinc(boinc_db, project_dir)
    assert "refused user 3: email_addr 'not an email': not a valid email address" in output
    assert "refused host 9: its user 3 was not imported" in output
    assert Account.objects.count() == 2
    assert list(Host.objects.values_list("pk", flat=True)) == [7]
    assert ("user", 3, True, "email_addr 'not an email': not a valid email address") in stored_issues()


def test_a_refused_row_fixed_in_boinc_is_imported_by_the_next_run(boinc_db, standard, project_dir):
    add_user(boinc_db, 3, email_addr="not an email")
    add_host(boinc_db, 9, 3)
    import_boinc(boinc_db, project_dir)
    boinc_db.execute("UPDATE user SET email_addr = 'carol@example.org' WHERE id = 3")
    import_boinc(boinc_db, project_dir)
    assert Account.objects.get(pk=3).email_addr == "carol@example.org"
    assert Host.objects.get(pk=9).account_id == 3
    assert not ImportIssue.objects.filter(refused=True).exists()


def test_dates_in_the_future_and_impossible_quorums_are_refused(boinc_db, standard, project_dir):
    boinc_db.add("team", id=2, name="Future", create_time=int(standard.now + 10 * 86400))
    boinc_db.add("workunit", id=14, appid=1, name="wu_bad", min_quorum=3, target_nresults=2, create_time=100)
    output = import_boinc(boinc_db, project_dir)
    assert "refused team 2: create_time" in output
    assert "is in the future" in output
    assert "refused workunit 14: target_nresults must be at least min_quorum" in output
    assert not Workunit.objects.filter(name="wu_bad").exists()


def test_unknown_password_hashes_and_bad_preferences_are_dropped_with_a_note(boinc_db, standard, project_dir):
    boinc_db.execute(
        "UPDATE user SET passwd_hash = 'sha1:abc', project_prefs = '<project_preferences>' WHERE id = 1"
    )
    output = import_boinc(boinc_db, project_dir, "-v", "2")
    ada = Account.objects.get(pk=1)
    assert (ada.passwd_hash, ada.project_prefs) == ("", "")
    assert "changed user 1: password hash in an unknown format dropped" in output
    assert "changed user 1: project_prefs are not valid XML" in output


def test_an_app_version_of_an_unknown_plan_class_is_refused_and_its_tasks_still_come(
    boinc_db, standard, project_dir
):
    boinc_db.execute("UPDATE app_version SET plan_class = 'custom_gpu' WHERE id = 1")
    output = import_boinc(boinc_db, project_dir)
    assert "refused app_version 1: unknown plan class 'custom_gpu'" in output
    assert "refused host_app_version 7/1: app version 1 was not imported" in output
    running = Result.objects.get(name=standard.running_result)
    assert (running.app_version_id, running.host_id) == (None, 7)


def test_an_authenticator_of_another_project_is_refused(boinc_db, standard, project_dir):
    AccountFactory(project=ProjectFactory(slug="other"), authenticator=standard.bob.authenticator)
    output = import_boinc(boinc_db, project_dir)
    assert (
        "refused user 2: its authenticator is already the account key of an account of another project"
        in output
    )
    imported = Account.objects.filter(project__slug="oldproj")
    assert list(imported.values_list("email_addr", flat=True)) == [standard.ada.email]


# --- ids already taken by other projects ------------------------------------------------------


def test_host_ids_taken_by_another_project_are_shifted_and_mapped(boinc_db, standard, project_dir):
    other = ProjectFactory(slug="other")
    HostFactory(id=7, project=other, account=AccountFactory(project=other))
    import_boinc(boinc_db, project_dir)
    project = Project.objects.get(slug="oldproj")
    host = Host.objects.get(project=project)
    assert host.pk == 7 + project.boinc_hostid_offset
    assert project.boinc_hostid_offset > 0
    assert project.host_id_from_client(7) == host.pk
    assert Result.objects.get(name=standard.running_result).host_id == host.pk
    # New rows get ids above the imported range.
    assert HostFactory(project=other, account=AccountFactory(project=other)).pk > host.pk


def test_new_rows_after_the_import_get_ids_above_the_imported_ones(boinc_db, standard, project_dir):
    import_boinc(boinc_db, project_dir)
    project = Project.objects.get()
    assert AccountFactory(project=project).pk > 2
    assert HostFactory(project=project, account=Account.objects.get(pk=1)).pk > 7


# --- batches and submitters -------------------------------------------------------------------


def test_batches_and_submitters_arrive_and_workunits_keep_their_batch(boinc_db, standard, project_dir):
    import_boinc(boinc_db, project_dir)
    batch = Batch.objects.get()
    assert (batch.pk, batch.name, batch.owner.email_addr, batch.app.name) == (
        5,
        "sweep",
        standard.ada.email,
        "worker",
    )
    assert (batch.state, batch.njobs, batch.fraction_done, batch.credit_canonical) == (1, 3, 0.25, 12.5)
    assert batch.expire_time is None
    assert set(Workunit.objects.values_list("batch", flat=True)) == {5}
    submitter = UserSubmit.objects.get()
    assert (submitter.account.email_addr, submitter.quota, submitter.manage_all) == (
        standard.ada.email,
        2.0,
        True,
    )
    assert submitter.max_jobs_in_progress == 100
    assert list(UserSubmitApp.objects.values_list("app__name", "manage")) == [("worker", True)]


def test_batch_ids_taken_by_another_project_are_shifted_with_their_workunits(boinc_db, standard, project_dir):
    other = ProjectFactory(slug="other")
    Batch.objects.create(
        id=5, project=other, owner=AccountFactory(project=other), app=AppFactory(project=other), name="x"
    )
    import_boinc(boinc_db, project_dir)
    batch = Batch.objects.get(project__slug="oldproj")
    assert batch.pk > 5
    assert set(Workunit.objects.filter(project=batch.project).values_list("batch", flat=True)) == {batch.pk}


def test_batches_with_one_name_or_none_get_names_of_their_own(boinc_db, standard, project_dir):
    boinc_db.add("batch", id=6, user_id=standard.ada.id, app_id=1, name="sweep", create_time=1_600_000_000)
    boinc_db.add("batch", id=7, user_id=standard.ada.id, app_id=1, name="", create_time=1_600_000_000)
    import_boinc(boinc_db, project_dir)
    assert list(Batch.objects.order_by("pk").values_list("name", flat=True)) == [
        "sweep",
        "sweep#6",
        "batch 7",
    ]


def test_a_batch_of_a_user_not_imported_is_refused(boinc_db, standard, project_dir):
    boinc_db.add("batch", id=6, user_id=99, app_id=1, name="orphan", create_time=1_600_000_000)
    import_boinc(boinc_db, project_dir)
    assert ("batch", 6, True, "its user 99 was not imported") in stored_issues()
    assert list(Batch.objects.values_list("pk", flat=True)) == [5]

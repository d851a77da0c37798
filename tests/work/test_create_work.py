import hashlib
import io
from datetime import UTC, datetime
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from apps.applications.services import app_create
from apps.projects.services import project_create
from apps.work.domain.states import ServerState
from apps.work.models import InputFile, OutputFile, Result, Workunit
from apps.work.services.create import JobSpec, workunits_create

pytestmark = pytest.mark.django_db

WU_TEMPLATE = """<input_template>
  <file_info><number>0</number></file_info>
  <workunit>
    <file_ref><file_number>0</file_number><open_name>in.txt</open_name><copy_file/></file_ref>
    <command_line>--fast</command_line>
    <rsc_fpops_est>2e12</rsc_fpops_est>
    <rsc_fpops_bound>2e14</rsc_fpops_bound>
    <min_quorum>2</min_quorum>
    <target_nresults>2</target_nresults>
    <max_total_results>5</max_total_results>
  </workunit>
</input_template>"""

RESULT_TEMPLATE = """<output_template>
  <file_info><name><OUTFILE_0/></name><generated_locally/><upload_when_present/>
    <max_nbytes>5000</max_nbytes><url><UPLOAD_URL/></url></file_info>
  <result><file_ref><file_name><OUTFILE_0/></file_name><open_name>result.dat</open_name><copy_file/></file_ref></result>
</output_template>"""


@pytest.fixture
def project():
    project = project_create(slug="cw", name="Create Work").project
    app_create(project=project, name="sim")
    return project


@pytest.fixture
def files(tmp_path: Path):
    (tmp_path / "wu.xml").write_text(WU_TEMPLATE)
    (tmp_path / "res.xml").write_text(RESULT_TEMPLATE)
    (tmp_path / "a.txt").write_text("alpha\n")
    (tmp_path / "b.txt").write_text("beta\n")
    return tmp_path


def create(*args: str, stdin: str | None = None, monkeypatch=None) -> str:
    out = StringIO()
    call_command("create_work", "--project", "cw", "--appname", "sim", *args, stdout=out)
    return out.getvalue()


def test_create_work_with_templates_creates_the_workunit_and_its_results(project, files):
    create(
        "--wu_name",
        "job1",
        "--wu_template",
        str(files / "wu.xml"),
        "--result_template",
        str(files / "res.xml"),
        str(files / "a.txt"),
    )
    wu = Workunit.objects.get(name="job1")
    assert (wu.min_quorum, wu.target_nresults, wu.rsc_fpops_est, wu.command_line) == (2, 2, 2e12, "--fast")
    assert Result.objects.filter(workunit=wu, server_state=ServerState.UNSENT).count() == 2
    assert wu.file_refs.get().open_name == "in.txt"
    output = OutputFile.objects.filter(result__workunit=wu).first()
    assert (output.open_name, output.max_nbytes) == ("result.dat", 5000)


def test_a_result_template_without_open_names_is_accepted(project, files):
    # BOINC allows a <file_ref> without <open_name>: the client opens the file by its name.
    (files / "res.xml").write_text(RESULT_TEMPLATE.replace("<open_name>result.dat</open_name>", ""))
    create("--wu_name", "job2", "--result_template", str(files / "res.xml"))
    output = OutputFile.objects.get(result__workunit__name="job2", result__name="job2_0")
    assert output.open_name == ""


def test_input_files_are_copied_to_the_download_area_with_md5_and_size(project, files):
    create("--wu_name", "job1", str(files / "a.txt"))
    staged = InputFile.objects.get(name="a.txt")
    assert (staged.nbytes, staged.md5_cksum) == (6, hashlib.md5(b"alpha\n").hexdigest())
    assert (project.download_dir / "a.txt").read_text() == "alpha\n"


def test_command_line_options_override_the_template(project, files):
    create(
        "--wu_name",
        "job1",
        "--wu_template",
        str(files / "wu.xml"),
        "--rsc_fpops_est",
        "7e12",
        str(files / "a.txt"),
    )
    assert Workunit.objects.get(name="job1").rsc_fpops_est == 7e12


def test_stdin_creates_many_jobs_in_one_call(project, files, monkeypatch):
    lines = f"--wu_name j1 {files / 'a.txt'}\n--wu_name j2 --priority 5 {files / 'b.txt'}\n"
    monkeypatch.setattr("sys.stdin", io.StringIO(lines))
    create("--stdin", "--wu_template", str(files / "wu.xml"))
    assert sorted(Workunit.objects.values_list("name", "priority")) == [("j1", 0), ("j2", 5)]


def test_bad_stdin_line_creates_nothing(project, files, monkeypatch):
    lines = f"--wu_name j1 {files / 'a.txt'}\n--wu_name j2 --rsc_fpops_est -1 {files / 'b.txt'}\n"
    monkeypatch.setattr("sys.stdin", io.StringIO(lines))
    with pytest.raises(CommandError, match="must be a non-negative number"):
        create("--stdin")
    assert Workunit.objects.count() == 0


def test_unknown_app_is_a_clear_error(project):
    with pytest.raises(CommandError, match="no app named 'ghost'"):
        call_command("create_work", "--project", "cw", "--appname", "ghost", stdout=StringIO())


def test_missing_input_file_creates_nothing_and_copies_nothing(project, files):
    with pytest.raises(CommandError, match="input file not found"):
        create("--wu_name", "job1", str(files / "a.txt"), str(files / "absent.txt"))
    assert Workunit.objects.count() == 0
    assert not (project.download_dir / "a.txt").exists()


def test_negative_bound_is_refused(project, files):
    with pytest.raises(CommandError, match="must be a non-negative number"):
        create("--wu_name", "job1", "--delay_bound", "-100")
    assert Workunit.objects.count() == 0


def test_bound_below_estimate_is_refused(project):
    with pytest.raises(CommandError, match="rsc_fpops_bound must be at least rsc_fpops_est"):
        create("--wu_name", "job1", "--rsc_fpops_est", "1e13", "--rsc_fpops_bound", "1e12")


def test_template_file_count_must_match_the_input_files(project, files):
    with pytest.raises(CommandError, match="has 1 file"):
        create("--wu_template", str(files / "wu.xml"), str(files / "a.txt"), str(files / "b.txt"))


def test_a_different_file_with_the_same_name_is_refused(project, files, tmp_path):
    create("--wu_name", "job1", str(files / "a.txt"))
    other = tmp_path / "other"
    other.mkdir()
    (other / "a.txt").write_text("different\n")
    with pytest.raises(CommandError, match=r"a different file named 'a\.txt'"):
        create("--wu_name", "job2", str(other / "a.txt"))


def test_duplicate_workunit_name_is_refused(project, files):
    create("--wu_name", "job1")
    with pytest.raises(CommandError, match="already exists"):
        create("--wu_name", "job1")
    assert Workunit.objects.count() == 1


def test_locality_file_names_with_double_underscore_are_refused(project, files):
    project.locality_scheduling = True
    project.save()
    (files / "big__file.dat").write_text("data")
    with pytest.raises(CommandError, match="contains '__'"):
        create("--wu_name", "big__file.dat__1", str(files / "big__file.dat"))
    assert Workunit.objects.count() == 0


def test_locality_workunit_makes_its_large_file_sticky_and_report_on_rpc(project, files):
    project.locality_scheduling = True
    project.save()
    (files / "h1_0100.dat").write_text("large data")
    create("--wu_name", "h1_0100.dat__0001", str(files / "h1_0100.dat"))
    staged = InputFile.objects.get(name="h1_0100.dat")
    assert (staged.sticky, staged.report_on_rpc) == (True, True)
    assert Workunit.objects.get().locality_file_name == "h1_0100.dat"


def test_locality_workunit_without_its_named_file_is_refused(project, files):
    project.locality_scheduling = True
    project.save()
    with pytest.raises(CommandError, match=r"must use an input file named 'h1_0200\.dat'"):
        create("--wu_name", "h1_0200.dat__0001", str(files / "a.txt"))


def test_cancel_jobs_by_batch_withdraws_unsent_results(project, files):
    create("--wu_name", "j1", "--batch", "7")
    create("--wu_name", "j2", "--batch", "8")
    call_command("cancel_jobs", "--project", "cw", "--batch", "7", stdout=StringIO())
    assert Workunit.objects.get(name="j1").is_cancelled is True
    assert Workunit.objects.get(name="j2").is_cancelled is False
    assert Result.objects.get(workunit__name="j1").server_state == ServerState.OVER


def test_cancel_jobs_unknown_name_is_an_error(project):
    with pytest.raises(CommandError, match="no such workunit"):
        call_command("cancel_jobs", "--project", "cw", "--wu_name", "nope", stdout=StringIO())


def test_gzip_input_gets_a_gz_companion_for_gzipped_download(project, files):
    import gzip

    from apps.work.services import InputSpec, JobSpec, workunit_create

    workunit_create(
        project=project,
        app=project.apps.get(),
        job=JobSpec(name="gz", inputs=(InputSpec(path=files / "a.txt", gzip=True),)),
    )
    assert gzip.decompress((project.download_dir / "a.txt.gz").read_bytes()) == b"alpha\n"


def _planner_has_statistics(table: str) -> bool:
    from django.db import connection

    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            cursor.execute("SELECT name FROM sqlite_master WHERE name = 'sqlite_stat1'")
            if cursor.fetchone() is None:
                return False
            cursor.execute("SELECT count(*) FROM sqlite_stat1 WHERE tbl = %s", [table])
        else:
            cursor.execute("SELECT count(*) FROM pg_stats WHERE tablename = %s", [table])
        return cursor.fetchone()[0] > 0


def test_a_large_batch_refreshes_the_planner_statistics(project, monkeypatch):
    # Without them the scheduler's dispatch query fell back to full scans after a bulk load.
    from django.db import connection

    from apps.work.services import JobSpec, workunits_create
    from apps.work.services import create as create_module

    if connection.vendor == "sqlite":
        # Statistics an earlier test left behind go, within this test's transaction.
        with connection.cursor() as cursor:
            if _planner_has_statistics("work_result"):
                cursor.execute("DELETE FROM sqlite_stat1 WHERE tbl IN ('work_result', 'work_workunit')")
        assert not _planner_has_statistics("work_result")
    monkeypatch.setattr(create_module, "ANALYZE_AFTER", 3)
    app = project.apps.get(name="sim")
    workunits_create(project=project, app=app, jobs=[JobSpec(name=f"bulk_{i}") for i in range(3)])
    assert _planner_has_statistics("work_result")
    assert _planner_has_statistics("work_workunit")


def test_a_workunit_is_created_at_the_creating_services_clock(project):
    # The purge ages workunits by create_time, against the clock its daemons are given.
    earlier = datetime(2025, 3, 1, 8, 30, tzinfo=UTC)
    app = project.apps.get(name="sim")
    [wu] = workunits_create(project=project, app=app, jobs=[JobSpec(name="old")], now=earlier)
    wu.refresh_from_db()
    assert wu.create_time == earlier


TWO_INPUTS = """<input_template>
  <file_info><number>0</number></file_info>
  <file_info><number>1</number></file_info>
  <workunit>
    <file_ref><file_number>0</file_number><open_name>first</open_name></file_ref>
    <file_ref><file_number>1</file_number><open_name>second</open_name></file_ref>
  </workunit>
</input_template>"""
REMOTE_MD5 = hashlib.md5(b"kept elsewhere\n").hexdigest()


@pytest.mark.parametrize("remote_first", [True, False])
def test_remote_file_takes_its_place_among_the_input_files_in_command_line_order(
    project, files, remote_first
):
    (files / "two.xml").write_text(TWO_INPUTS)
    remote = ["--remote_file", "https://data.example.org/k.bin", "15", REMOTE_MD5.upper()]
    local = [str(files / "a.txt")]
    create(
        "--wu_name",
        "mixed",
        "--wu_template",
        str(files / "two.xml"),
        *(remote + local if remote_first else local + remote),
    )
    refs = {r.open_name: r.file for r in Workunit.objects.get(name="mixed").file_refs.all()}
    remote_role, local_role = ("first", "second") if remote_first else ("second", "first")
    assert (refs[remote_role].name, refs[remote_role].remote_url) == (
        f"jf_{REMOTE_MD5}",
        "https://data.example.org/k.bin",
    )
    assert (refs[local_role].name, refs[local_role].remote_url) == ("a.txt", "")
    assert not (project.download_dir / f"jf_{REMOTE_MD5}").exists()


@pytest.mark.parametrize(
    ("nbytes", "url", "message"),
    [
        ("15.5", "https://data.example.org/k.bin", "is not a whole number"),
        ("many", "https://data.example.org/k.bin", "is not a number"),
        ("15", "ftp://data.example.org/k.bin", "bad URL"),
    ],
)
def test_a_bad_remote_file_is_refused_and_creates_nothing(project, nbytes, url, message):
    with pytest.raises(CommandError, match=message):
        create("--wu_name", "bad", "--remote_file", url, nbytes, REMOTE_MD5)
    assert not Workunit.objects.exists()
    assert not InputFile.objects.exists()


def test_stdin_lines_take_remote_files_too(project, monkeypatch):
    lines = f"--wu_name r1 --remote_file https://data.example.org/k.bin 15 {REMOTE_MD5}\n"
    monkeypatch.setattr("sys.stdin", io.StringIO(lines))
    create("--stdin")
    assert Workunit.objects.get(name="r1").file_refs.get().file.remote_url == "https://data.example.org/k.bin"


def test_a_bad_remote_file_on_a_stdin_line_creates_nothing(project, monkeypatch):
    lines = f"--wu_name r1 --remote_file https://data.example.org/k.bin 1.5 {REMOTE_MD5}\n"
    monkeypatch.setattr("sys.stdin", io.StringIO(lines))
    with pytest.raises(CommandError, match=r"stdin line 1: .*not a whole number"):
        create("--stdin")
    assert not Workunit.objects.exists()

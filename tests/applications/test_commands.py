from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from apps.applications.models import App, AppFile, AppVersion
from apps.core.domain.signing import sign_md5_hex, verify_md5_signature
from apps.projects.services import project_create

pytestmark = pytest.mark.django_db


@pytest.fixture
def project():
    return project_create(slug="proj", name="Project").project


@pytest.fixture
def worker(tmp_path: Path) -> Path:
    path = tmp_path / "worker.sh"
    path.write_text("#!/bin/sh\necho 0 > boinc_finish_called\n")
    return path


def add_version(*args: str) -> str:
    out = StringIO()
    call_command("add_app_version", *args, stdout=out)
    return out.getvalue()


def test_add_app_creates_the_app_with_its_replication_options(project):
    call_command(
        "add_app",
        "--project",
        "proj",
        "sim",
        "--min_quorum",
        "2",
        "--target_nresults",
        "3",
        "--user_friendly_name",
        "Simulator",
        stdout=StringIO(),
    )
    app = App.objects.get(project=project, name="sim")
    assert (app.min_quorum, app.target_nresults, app.user_friendly_name) == (2, 3, "Simulator")


def test_add_app_with_unknown_project_fails_clearly():
    with pytest.raises(CommandError, match="no project with slug 'nope'"):
        call_command("add_app", "--project", "nope", "sim", stdout=StringIO())


def test_add_app_with_negative_bound_fails_and_creates_nothing(project):
    with pytest.raises(CommandError, match="must not be negative"):
        call_command("add_app", "--project", "proj", "sim", "--delay_bound", "-5", stdout=StringIO())
    assert not App.objects.exists()


def test_add_app_refuses_quorum_above_target(project):
    with pytest.raises(CommandError, match="target_nresults must be at least min_quorum"):
        call_command(
            "add_app",
            "--project",
            "proj",
            "sim",
            "--min_quorum",
            "3",
            "--target_nresults",
            "2",
            stdout=StringIO(),
        )


def test_update_app_changes_only_the_settings_given(project):
    call_command(
        "add_app",
        "--project",
        "proj",
        "sim",
        "--min_quorum",
        "2",
        "--target_nresults",
        "2",
        stdout=StringIO(),
    )
    out = StringIO()
    call_command("update_app", "--project", "proj", "sim", "--target_nresults", "3", stdout=out)
    app = App.objects.get(project=project, name="sim")
    assert (app.min_quorum, app.target_nresults) == (2, 3)
    assert "target_nresults=3" in out.getvalue()


def test_update_app_refuses_an_inconsistent_quorum_and_keeps_the_old_one(project):
    call_command("add_app", "--project", "proj", "sim", stdout=StringIO())
    with pytest.raises(CommandError, match="target_nresults must be at least min_quorum"):
        call_command("update_app", "--project", "proj", "sim", "--min_quorum", "4", stdout=StringIO())
    assert App.objects.get(project=project, name="sim").min_quorum == 1


def test_update_app_of_an_unknown_app_fails_clearly(project):
    with pytest.raises(CommandError, match="no app 'nope' in project proj"):
        call_command("update_app", "--project", "proj", "nope", "--min_quorum", "1", stdout=StringIO())


def test_update_app_with_nothing_to_change_says_so(project):
    call_command("add_app", "--project", "proj", "sim", stdout=StringIO())
    with pytest.raises(CommandError, match="nothing to change"):
        call_command("update_app", "--project", "proj", "sim", stdout=StringIO())


def test_update_app_turns_adaptive_replication_on_and_off(project):
    call_command(
        "add_app",
        "--project",
        "proj",
        "sim",
        "--min_quorum",
        "2",
        "--target_nresults",
        "2",
        stdout=StringIO(),
    )
    call_command("update_app", "--project", "proj", "sim", "--adaptive_replication", "1", stdout=StringIO())
    assert App.objects.get(project=project, name="sim").adaptive_replication is True
    call_command("update_app", "--project", "proj", "sim", "--adaptive_replication", "0", stdout=StringIO())
    assert App.objects.get(project=project, name="sim").adaptive_replication is False


def test_adaptive_replication_without_a_replicated_count_is_refused(project):
    call_command("add_app", "--project", "proj", "sim", stdout=StringIO())
    with pytest.raises(CommandError, match="adaptive_replication needs target_nresults of at least 2"):
        call_command(
            "update_app", "--project", "proj", "sim", "--adaptive_replication", "1", stdout=StringIO()
        )
    assert App.objects.get(project=project, name="sim").adaptive_replication is False


def test_update_app_sets_homogeneous_redundancy_and_app_version(project):
    call_command("add_app", "--project", "proj", "sim", "--homogeneous_app_version", stdout=StringIO())
    call_command("update_app", "--project", "proj", "sim", "--homogeneous_redundancy", "2", stdout=StringIO())
    app = App.objects.get(project=project, name="sim")
    assert (app.homogeneous_redundancy, app.homogeneous_app_version) == (2, True)
    call_command(
        "update_app", "--project", "proj", "sim", "--homogeneous_app_version", "0", stdout=StringIO()
    )
    assert App.objects.get(project=project, name="sim").homogeneous_app_version is False


def test_update_app_refuses_an_unknown_homogeneous_redundancy_type(project):
    call_command("add_app", "--project", "proj", "sim", stdout=StringIO())
    with pytest.raises(CommandError, match="homogeneous_redundancy: Value 3 is not a valid choice"):
        call_command(
            "update_app", "--project", "proj", "sim", "--homogeneous_redundancy", "3", stdout=StringIO()
        )
    assert App.objects.get(project=project, name="sim").homogeneous_redundancy == 0


def test_update_app_refuses_a_switch_that_is_not_on_or_off(project):
    call_command("add_app", "--project", "proj", "sim", stdout=StringIO())
    with pytest.raises(CommandError, match="invalid 0 or 1 value: 'maybe'"):
        call_command(
            "update_app", "--project", "proj", "sim", "--homogeneous_app_version", "maybe", stdout=StringIO()
        )


def test_add_app_version_copies_and_signs_the_main_program(project, worker):
    call_command("add_app", "--project", "proj", "sim", stdout=StringIO())
    add_version(
        "--project",
        "proj",
        "--appname",
        "sim",
        "--version_num",
        "100",
        "--platform",
        "x86_64-pc-linux-gnu",
        "--file",
        str(worker),
    )
    app_file = AppFile.objects.get()
    assert app_file.main_program is True
    assert (project.download_dir / app_file.file_name).read_bytes() == worker.read_bytes()
    assert verify_md5_signature(project.code_sign_public_key, app_file.md5_cksum, app_file.file_signature)


def test_add_app_version_resolves_a_standard_gpu_plan_class(project, worker):
    call_command("add_app", "--project", "proj", "sim", stdout=StringIO())
    add_version(
        "--project",
        "proj",
        "--appname",
        "sim",
        "--version_num",
        "101",
        "--platform",
        "x86_64-pc-linux-gnu",
        "--plan_class",
        "cuda",
        "--file",
        str(worker),
    )
    version = AppVersion.objects.get()
    assert (version.proc_type, version.gpu_usage, version.plan_class) == ("NVIDIA", 1.0, "cuda")


def test_add_app_version_mt_class_is_multi_threaded(project, worker):
    call_command("add_app", "--project", "proj", "sim", stdout=StringIO())
    add_version(
        "--project",
        "proj",
        "--appname",
        "sim",
        "--version_num",
        "102",
        "--platform",
        "x86_64-pc-linux-gnu",
        "--plan_class",
        "mt",
        "--file",
        str(worker),
    )
    assert AppVersion.objects.get().multi_thread is True


def test_add_app_version_for_unknown_app_fails_and_copies_nothing(project, worker):
    with pytest.raises(CommandError, match="no app named 'ghost'"):
        add_version(
            "--project",
            "proj",
            "--appname",
            "ghost",
            "--version_num",
            "100",
            "--platform",
            "x86_64-pc-linux-gnu",
            "--file",
            str(worker),
        )
    assert list(project.download_dir.iterdir()) == []


def test_add_app_version_with_missing_file_fails_and_creates_nothing(project, tmp_path):
    call_command("add_app", "--project", "proj", "sim", stdout=StringIO())
    with pytest.raises(CommandError, match="file not found"):
        add_version(
            "--project",
            "proj",
            "--appname",
            "sim",
            "--version_num",
            "100",
            "--platform",
            "x86_64-pc-linux-gnu",
            "--file",
            str(tmp_path / "absent"),
        )
    assert not AppVersion.objects.exists()


def test_add_app_version_with_unknown_plan_class_names_the_known_ones(project, worker):
    call_command("add_app", "--project", "proj", "sim", stdout=StringIO())
    with pytest.raises(CommandError, match=r"unknown plan class 'quantum'.*cuda_fermi"):
        add_version(
            "--project",
            "proj",
            "--appname",
            "sim",
            "--version_num",
            "100",
            "--platform",
            "x86_64-pc-linux-gnu",
            "--plan_class",
            "quantum",
            "--file",
            str(worker),
        )
    assert not AppVersion.objects.exists()


def test_add_app_version_accepts_an_offline_signature(worker, tmp_path):
    created = project_create(slug="offline", name="Offline", keep_private_key=False)
    call_command("add_app", "--project", "offline", "sim", stdout=StringIO())
    from apps.core.domain.signing import file_md5_hex

    sig = tmp_path / "worker.sig"
    sig.write_text(sign_md5_hex(created.code_sign_private_key, file_md5_hex(worker)))
    add_version(
        "--project",
        "offline",
        "--appname",
        "sim",
        "--version_num",
        "100",
        "--platform",
        "x86_64-pc-linux-gnu",
        "--file",
        str(worker),
        "--signature",
        str(sig),
    )
    app_file = AppFile.objects.get()
    assert verify_md5_signature(
        created.project.code_sign_public_key, app_file.md5_cksum, app_file.file_signature
    )


def test_add_app_version_without_key_or_signature_is_refused(worker):
    project_create(slug="offline", name="Offline", keep_private_key=False)
    call_command("add_app", "--project", "offline", "sim", stdout=StringIO())
    with pytest.raises(CommandError, match="no signature given"):
        add_version(
            "--project",
            "offline",
            "--appname",
            "sim",
            "--version_num",
            "100",
            "--platform",
            "x86_64-pc-linux-gnu",
            "--file",
            str(worker),
        )


def test_add_app_version_refuses_a_duplicate_version(project, worker):
    call_command("add_app", "--project", "proj", "sim", stdout=StringIO())
    args = (
        "--project",
        "proj",
        "--appname",
        "sim",
        "--version_num",
        "100",
        "--platform",
        "x86_64-pc-linux-gnu",
        "--file",
        str(worker),
    )
    add_version(*args)
    with pytest.raises(CommandError, match="already exists"):
        add_version(*args)
    assert AppVersion.objects.count() == 1

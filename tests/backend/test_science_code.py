"""A project's own science code: Python and script validators, the script assimilator, and
their failures (a crashing or hanging command is retried later, the others go on)."""

from __future__ import annotations

import sys
from datetime import timedelta
from pathlib import Path

import pytest

from apps.hosts.models import HostAppVersion
from apps.work.domain.states import AssimilateState, ErrorMask, Outcome, ValidateState
from apps.work.models import Workunit
from apps.work.services import (
    comparisons,
    scripts,
    validator,
    workunits_assimilate,
    workunits_transition,
    workunits_validate,
)
from apps.work.services.claims import CLAIM_LEASE
from tests.backend import science
from tests.backend.conftest import make_wu, refresh, report, results_of, send

pytestmark = pytest.mark.django_db

VALID, INVALID, INCONCLUSIVE = ValidateState.VALID, ValidateState.INVALID, ValidateState.INCONCLUSIVE

# The init script: exit 1 unless every file holds one number; the compare script: exit 0 if
# the numbers of the two results agree within 1 %. Both log their arguments.
INIT = """
import sys
open(sys.argv[1], "a").write(" ".join(sys.argv[2:]) + "\\n")
try:
    [float(open(p).read()) for p in sys.argv[2:] if p.startswith("/") and "upload" in p]
except ValueError:
    sys.exit(1)
"""
COMPARE = """
import sys
open(sys.argv[1], "a").write(" ".join(sys.argv[2:]) + "\\n")
a, b = (float(open(p).read()) for p in sys.argv[2:] if p.startswith("/") and "upload" in p)
sys.exit(0 if abs(a - b) <= 0.01 * max(abs(a), abs(b)) else 1)
"""
HANG_OR_CRASH = """
import os, signal, sys, time
text = open(sys.argv[1]).read()
if text.startswith("hang"):
    time.sleep(60)
if text.startswith("crash"):
    os.kill(os.getpid(), signal.SIGKILL)
"""
RECORD = """
import sys
open(sys.argv[1], "a").write(" ".join(sys.argv[2:]) + "\\n")
sys.exit(int(sys.argv[2] == "fail"))
"""


def _script(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / f"{name}.py"
    path.write_text(text)
    return f"{sys.executable} {path}"


@pytest.fixture
def script_app(app, tmp_path):
    """The app validated by the init and compare scripts; their calls logged in tmp_path."""
    app.init_script = f"{_script(tmp_path, 'init', INIT)} {tmp_path / 'init.log'} files result_id runtime"
    app.compare_script = (
        f"{_script(tmp_path, 'compare', COMPARE)} {tmp_path / 'compare.log'} "
        "files result_id runtime files2 result_id2 runtime2"
    )
    app.save()
    return app


@pytest.fixture
def python_app(app):
    app.validator = "tests.backend.science.NumberValidator"
    app.save()
    return app


def _reported(project, app, version, hosts, now, outputs, name="wu", **wu_kw):
    wu = make_wu(project, app, now, name=name, **wu_kw)
    for i, (r, out) in enumerate(zip(results_of(wu), outputs, strict=False)):
        send(r, hosts[i], version, now)
        report(r, now + timedelta(minutes=10), output=out, elapsed=100.0 + i)
    workunits_transition(project=project, now=now + timedelta(minutes=11))
    return wu


def _validated(project, app, version, hosts, now, outputs, **wu_kw):
    wu = _reported(project, app, version, hosts, now, outputs, **wu_kw)
    workunits_validate(project=project, now=now + timedelta(minutes=12))
    return wu


def _states(wu):
    return [ValidateState(r.validate_state) for r in results_of(wu)]


def _third_decides(project, app, version, hosts, now):
    wu = _validated(project, app, version, hosts, now, [b"1.0", b"2.0"])
    assert _states(wu) == [INCONCLUSIVE, INCONCLUSIVE]
    workunits_transition(project=project, now=now + timedelta(minutes=13))
    third = results_of(wu)[2]
    send(third, hosts[2], version, now + timedelta(minutes=14))
    report(third, now + timedelta(minutes=20), output=b"2.001")
    workunits_transition(project=project, now=now + timedelta(minutes=21))
    workunits_validate(project=project, now=now + timedelta(minutes=22))
    (wu,) = refresh(wu)
    return wu


# --- script validator


def test_script_validator_rejects_a_malformed_output(project, script_app, version, hosts, now):
    wu = _validated(project, script_app, version, hosts, now, [b"not a number", b"1.0"])
    bad = results_of(wu)[0]
    assert (bad.outcome, bad.validate_state) == (Outcome.VALIDATE_ERROR, INVALID)


def test_script_validator_accepts_two_outputs_within_the_tolerance(project, script_app, version, hosts, now):
    wu = _validated(project, script_app, version, hosts, now, [b"1.000", b"1.005"])
    (wu,) = refresh(wu)
    assert _states(wu) == [VALID, VALID]
    assert wu.canonical_result_id == results_of(wu)[0].id


def test_script_validator_leaves_a_third_replica_to_decide_a_disagreement(
    project, script_app, version, hosts, now
):
    wu = _third_decides(project, script_app, version, hosts, now)
    assert _states(wu) == [INVALID, VALID, VALID]
    assert wu.canonical_result_id == results_of(wu)[1].id


def test_script_validator_passes_the_keywords(project, script_app, version, hosts, now, tmp_path):
    wu = _validated(project, script_app, version, hosts, now, [b"1.0", b"1.0"])
    first, second = results_of(wu)
    path = project.upload_dir / first.output_files.get().name
    path2 = project.upload_dir / second.output_files.get().name
    assert (tmp_path / "init.log").read_text().splitlines()[0] == f"{path} {first.id} 100.000000"
    assert (tmp_path / "compare.log").read_text().splitlines() == [
        f"{path} {first.id} 100.000000 {path2} {second.id} 101.000000"
    ]


def test_the_scripts_run_before_the_batch_locks_its_rows(
    project, script_app, version, hosts, now, monkeypatch
):
    """A script may take long: the scheduler RPCs of the batch's hosts must not wait for it."""
    events = []
    run, lock = scripts.script_run, validator.host_app_versions_lock_for_workunits

    def script_run(*args, **kwargs):  # type: ignore[no-untyped-def]
        events.append("script")
        return run(*args, **kwargs)

    def locked(*args, **kwargs):  # type: ignore[no-untyped-def]
        events.append("lock")
        return lock(*args, **kwargs)

    monkeypatch.setattr(comparisons, "script_run", script_run)
    monkeypatch.setattr(validator, "host_app_versions_lock_for_workunits", locked)
    wu = _validated(project, script_app, version, hosts, now, [b"1.0", b"1.0"])
    assert _states(wu) == [VALID, VALID]
    assert events == ["script", "script", "script", "lock"]  # two inits and one comparison, then the lock


def test_a_command_of_the_program_alone_gets_the_file_paths(project, app, version, hosts, now, tmp_path):
    record = tmp_path / "record.sh"
    record.write_text(f'#!/bin/sh\necho "$@" >> {tmp_path / "args.log"}\n')
    record.chmod(0o755)
    app.compare_script = str(record)
    app.save()
    wu = _validated(project, app, version, hosts, now, [b"1.0", b"1.0"])
    paths = [str(project.upload_dir / r.output_files.get().name) for r in results_of(wu)]
    assert (tmp_path / "args.log").read_text().splitlines() == [" ".join(paths)]


def test_a_result_missing_its_output_is_invalid_without_running_the_scripts(
    project, script_app, version, hosts, now, tmp_path
):
    wu = _reported(project, script_app, version, hosts, now, [b"1.0", b"1.0"])
    missing = results_of(wu)[1]
    (project.upload_dir / missing.output_files.get().name).unlink()
    workunits_validate(project=project, now=now + timedelta(minutes=12))
    (missing,) = refresh(missing)
    assert (missing.outcome, missing.validate_state) == (Outcome.VALIDATE_ERROR, INVALID)
    assert [line.split()[1] for line in (tmp_path / "init.log").read_text().splitlines()] == [
        str(results_of(wu)[0].id)
    ]


def test_an_invalid_result_counts_against_its_hosts_error_rate(project, script_app, version, hosts, now):
    wu = _reported(project, script_app, version, hosts, now, [b"garbage", b"1.0"])
    hav = HostAppVersion.objects.get(host=hosts[0], app_version=version)
    hav.consecutive_valid = 5
    hav.save()
    workunits_validate(project=project, now=now + timedelta(minutes=12))
    (hav,) = refresh(hav)
    assert results_of(wu)[0].validate_state == INVALID
    assert hav.consecutive_valid == 0
    assert hav.error_rate > 0.1


# --- Python validator


def test_python_validator_rejects_a_malformed_output(project, python_app, version, hosts, now):
    wu = _validated(project, python_app, version, hosts, now, [b"1.0", b"NaN?"])
    bad = results_of(wu)[1]
    assert (bad.outcome, bad.validate_state) == (Outcome.VALIDATE_ERROR, INVALID)


def test_python_validator_accepts_two_outputs_within_the_tolerance(project, python_app, version, hosts, now):
    wu = _validated(project, python_app, version, hosts, now, [b"1.000", b"1.005"])
    assert _states(wu) == [VALID, VALID]


def test_python_validator_leaves_a_third_replica_to_decide_a_disagreement(
    project, python_app, version, hosts, now
):
    wu = _third_decides(project, python_app, version, hosts, now)
    assert _states(wu) == [INVALID, VALID, VALID]
    assert wu.canonical_result_id == results_of(wu)[1].id


def test_python_validator_cleans_up_every_result_it_read(project, python_app, version, hosts, now):
    science.CLEANED.clear()
    wu = _validated(project, python_app, version, hosts, now, [b"1.0", b"1.0"])
    assert sorted(science.CLEANED) == [r.id for r in results_of(wu)]


def test_a_check_set_chooses_the_canonical_result_and_the_valid_ones(project, app, version, hosts, now):
    app.validator = "tests.backend.science.Largest"
    app.save()
    wu = _validated(project, app, version, hosts, now, [b"1.0", b"3.0"])
    (wu,) = refresh(wu)
    assert _states(wu) == [INVALID, VALID]
    assert wu.canonical_result_id == results_of(wu)[1].id


# --- failures: retried later, never holding up the others


@pytest.fixture
def fragile_app(app, tmp_path, monkeypatch):
    """The init script hangs on outputs starting with "hang", crashes on "crash"."""
    monkeypatch.setattr(scripts, "SCRIPT_TIMEOUT_SECONDS", 1.0)
    app.init_script = f"{_script(tmp_path, 'fragile', HANG_OR_CRASH)} files"
    app.save()
    return app


@pytest.mark.parametrize("output", [b"hang", b"crash"])
def test_a_hanging_or_crashing_script_is_retried_later_without_holding_up_others(
    project, fragile_app, version, hosts, now, output
):
    bad = _reported(project, fragile_app, version, hosts, now, [output, output], name="bad")
    good = _reported(project, fragile_app, version, hosts, now, [b"1", b"1"], name="good")

    outcome = workunits_validate(project=project, now=now + timedelta(minutes=12))

    bad, good = refresh(bad, good)
    assert (outcome.items, outcome.errors) == (1, 1)
    assert good.canonical_result_id is not None
    assert _states(bad) == [ValidateState.INIT, ValidateState.INIT]
    # Its claim's lease runs out: the transitioner flags it again, and it is validated then.
    for path in (project.upload_dir / r.output_files.get().name for r in results_of(bad)):
        path.write_bytes(b"2")
    later = now + timedelta(minutes=12) + CLAIM_LEASE + timedelta(seconds=5)
    workunits_transition(project=project, now=later)
    assert Workunit.objects.get(id=bad.id).need_validate is True
    workunits_validate(project=project, now=later)
    assert _states(bad) == [VALID, VALID]


def test_a_validator_that_raises_is_retried_later(project, app, version, hosts, now):
    app.validator = "tests.backend.science"  # its compare raises for outputs starting with b"boom"
    app.save()
    bad = _validated(project, app, version, hosts, now, [b"boom", b"boom"])
    (bad,) = refresh(bad)
    assert _states(bad) == [ValidateState.INIT, ValidateState.INIT]
    assert bad.need_validate is False
    assert bad.transition_time < now + timedelta(minutes=12) + CLAIM_LEASE + timedelta(seconds=2)


# --- script assimilator


def _assimilated(project, app, version, hosts, now, outputs, name="wu"):
    wu = _validated(project, app, version, hosts, now, outputs, name=name, batch=7)
    outcome = workunits_assimilate(project=project, now=now + timedelta(minutes=13))
    (wu,) = refresh(wu)
    return wu, outcome


def test_script_assimilator_receives_every_keyword(project, app, version, hosts, now, tmp_path):
    log = tmp_path / "assimilate.log"
    app.assimilate_script = (
        f"{_script(tmp_path, 'record', RECORD)} {log} files files2 wu_id wu_name result_id runtime batch_id"
    )
    app.save()
    wu, _ = _assimilated(project, app, version, hosts, now, [b"1", b"1"])
    canonical = results_of(wu)[0]
    output = canonical.output_files.get()
    path = project.upload_dir / output.name
    assert wu.assimilate_state == AssimilateState.DONE
    assert log.read_text().splitlines() == [
        f"{path} {path} {output.open_name or output.name} {wu.id} {wu.name} {canonical.id} 100.000000 7"
    ]


def test_script_assimilator_gets_error_for_a_failed_workunit(project, app, version, hosts, now, tmp_path):
    log = tmp_path / "assimilate.log"
    app.assimilate_script = f"{_script(tmp_path, 'record', RECORD)} {log} wu_id files"
    app.save()
    wu = make_wu(project, app, now, name="failed", batch=3)
    Workunit.objects.filter(id=wu.id).update(
        error_mask=ErrorMask.TOO_MANY_ERROR_RESULTS, assimilate_state=AssimilateState.READY
    )
    workunits_assimilate(project=project, now=now)
    (wu,) = refresh(wu)
    assert wu.assimilate_state == AssimilateState.DONE
    assert log.read_text().splitlines() == [
        f"--error {int(ErrorMask.TOO_MANY_ERROR_RESULTS)} failed {wu.id} 3"
    ]


def test_a_failing_assimilate_script_is_retried_later_and_the_others_go_on(
    project, app, version, hosts, now, tmp_path
):
    app.assimilate_script = f"{_script(tmp_path, 'record', RECORD)} {tmp_path / 'assimilate.log'} wu_name"
    app.save()
    failing = _validated(project, app, version, hosts, now, [b"x", b"x"], name="fail")
    fine = _validated(project, app, version, hosts, now, [b"y", b"y"], name="fine")
    outcome = workunits_assimilate(project=project, now=now + timedelta(minutes=13))
    failing, fine = refresh(failing, fine)
    assert (outcome.items, outcome.errors) == (1, 1)
    assert fine.assimilate_state == AssimilateState.DONE
    assert failing.assimilate_state == AssimilateState.READY
    assert failing.assimilate_retry_time == now + timedelta(minutes=14)
    assert "exited with status 1" in failing.assimilate_error

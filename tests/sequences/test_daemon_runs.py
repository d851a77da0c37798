"""The sequence-deadline daemon as its task runs it: one recorded pass per project that has not
paused it, and a sequence whose refresh raises does not stop the others."""

from __future__ import annotations

from datetime import timedelta

import pytest
import time_machine

from apps.applications.services import AppFileSpec, app_create, app_version_add
from apps.projects.models import DaemonRun
from apps.projects.services import project_create
from apps.sequences.models import WorkSequence
from apps.sequences.services import SequenceSpec, sequence_create
from apps.sequences.services import deadlines as deadlines_module
from apps.volunteers.models import Account, make_passwd_hash
from apps.work.domain.states import SequenceState
from apps.work.services.daemons import daemon_run
from tests.scheduler.conftest import PLATFORM
from tests.sequences.conftest import DAY, Computer, step_job

pytestmark = pytest.mark.django_db

LATE = timedelta(days=30)  # past every first step's deadline (12 days) and the grace period


def _sequence_on_a_silent_host(project, app, authenticator, name, now):
    """A sequence whose host fetched its first step and then stopped responding."""
    spec = SequenceSpec(name=name, job=step_job(), max_result_time=4 * DAY, length=5)
    seq = sequence_create(project=project, app=app, spec=spec, now=now)
    Computer(project, authenticator, f"{name}-host").rpc(now)
    seq.refresh_from_db()
    assert seq.state == SequenceState.ASSIGNED
    return seq


@pytest.fixture
def other_project(worker):
    """A second project with an app and a volunteer."""
    project = project_create(slug="other", name="Other").project
    app_create(project=project, name="cpuapp", user_friendly_name="CPU app")
    app_version_add(
        project=project,
        app_name="cpuapp",
        version_num=100,
        platform_name=PLATFORM,
        files=[AppFileSpec(path=worker)],
    )
    Account.objects.create(
        project=project, name="Vol", email_addr="other@example.com", passwd_hash=make_passwd_hash(None)
    )
    return project


def _other_sequence(other_project, now):
    app = other_project.apps.get(name="cpuapp")
    account = Account.objects.get(project=other_project)
    return _sequence_on_a_silent_host(other_project, app, account.authenticator, "other_seq", now)


def _run_pass(when):
    with time_machine.travel(when, tick=False):
        return daemon_run("sequence_deadlines")


def test_a_project_that_paused_the_daemon_keeps_its_late_sequences(
    project, cpu_app, account, other_project, now
):
    paused = _sequence_on_a_silent_host(project, cpu_app, account.authenticator, "paused_seq", now)
    running = _other_sequence(other_project, now)
    project.paused_daemons = ["sequence_deadlines"]
    project.save(update_fields=["paused_daemons"])

    _run_pass(now + LATE)

    paused.refresh_from_db()
    running.refresh_from_db()
    assert (paused.state, paused.n_relocations) == (SequenceState.ASSIGNED, 0)
    assert (running.state, running.n_relocations) == (SequenceState.UNASSIGNED, 1)


@pytest.fixture
def broken_refresh(monkeypatch):
    """sequence_refresh raises for the sequence named "bad" (a bug in one sequence's rows)."""
    real = deadlines_module.sequence_refresh

    def refresh(*, sequence_id, **kw):
        if WorkSequence.objects.filter(id=sequence_id, name="bad").exists():
            raise RuntimeError("corrupt chain")
        return real(sequence_id=sequence_id, **kw)

    monkeypatch.setattr(deadlines_module, "sequence_refresh", refresh)


def test_a_sequence_whose_refresh_raises_does_not_stop_the_others(
    broken_refresh, project, cpu_app, account, other_project, now
):
    names = ("bad", "first_good", "second_good")
    for name in names:
        _sequence_on_a_silent_host(project, cpu_app, account.authenticator, name, now)
    other = _other_sequence(other_project, now)

    outcome = _run_pass(now + LATE)

    assert (outcome.items, outcome.errors) == (3, 1)
    states = dict(WorkSequence.objects.filter(name__in=names).values_list("name", "state"))
    assert states == {
        "bad": SequenceState.ASSIGNED,
        "first_good": SequenceState.UNASSIGNED,
        "second_good": SequenceState.UNASSIGNED,
    }
    other.refresh_from_db()
    assert other.state == SequenceState.UNASSIGNED


def test_the_daemon_run_names_the_sequence_whose_refresh_raised(
    broken_refresh, project, cpu_app, account, now
):
    _sequence_on_a_silent_host(project, cpu_app, account.authenticator, "bad", now)
    _sequence_on_a_silent_host(project, cpu_app, account.authenticator, "good", now)

    _run_pass(now + LATE)

    run = DaemonRun.objects.get(project=project, daemon="sequence_deadlines")
    assert (run.items, run.errors) == (1, 1)
    assert run.message == "sequence bad: RuntimeError: corrupt chain"


def test_the_validator_pass_moves_the_sequence_on_by_itself(project, cpu_app, account, now):
    # No sequence-deadline pass runs here: the validator moves the head as the step validates.
    spec = SequenceSpec(name="quick", job=step_job(), max_result_time=4 * DAY, length=5)
    seq = sequence_create(project=project, app=cpu_app, spec=spec, now=now)
    host = Computer(project, account.authenticator, "quick-host")
    host.rpc(now)
    later = now + timedelta(days=1)
    host.rpc(later, finish=("quick_s0_0",))
    with time_machine.travel(later, tick=False):
        daemon_run("transitioner")
        assert daemon_run("validator").items == 1
    seq.refresh_from_db()
    assert (seq.first_unvalidated.sequence_index, seq.last_progress_time) == (1, later)

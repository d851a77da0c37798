"""The stock client computes a work sequence: each step reads the state the previous one left on it."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from django.core.management import call_command

from apps.core import clock
from apps.projects.models import Project
from apps.sequences.services.create import SequenceSpec, sequence_create
from apps.work.domain.states import Outcome, SequenceState, ServerState, ValidateState
from apps.work.models import OutputFile, Result
from apps.work.services import InputSpec, JobSpec, OutputSpec
from tests.e2e.conftest import make_e2e_project, wait_until

pytestmark = [pytest.mark.boinc_client, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

SEQ_WORKER = Path(__file__).with_name("seq_worker.sh")
LENGTH = 3


def _chain_spec(name: str, scratch: Path, *, max_result_time: float, restartable_every: int) -> SequenceSpec:
    """LENGTH steps of seq_worker.sh, the first reading an initial state of one line."""
    initial = scratch / f"{name}_initial_state.txt"
    initial.write_text("initial state\n")
    return SequenceSpec(
        name=name,
        job=JobSpec(
            outputs=(
                OutputSpec(open_name="state.txt", max_nbytes=10_000, sequence_state=True),
                OutputSpec(open_name="out.txt", max_nbytes=10_000),
            ),
            rsc_fpops_est=1e9,
            rsc_fpops_bound=1e12,
        ),
        max_result_time=max_result_time,
        length=LENGTH,
        restartable_every=restartable_every,
        first_inputs=(InputSpec(path=initial, name=initial.name, open_name="prev_state.txt"),),
    )


def _assimilated(result: Result, open_name: str) -> str:
    # The default assimilator copied each step's canonical outputs into the results area.
    output = OutputFile.objects.get(result=result, open_name=open_name)
    return (Path(result.workunit.assimilated_path) / output.name).read_text()


def _step_results(seq, **filters) -> list[Result]:
    return list(
        Result.objects.filter(workunit__sequence_id=seq.id, **filters)
        .select_related("workunit")
        .order_by("workunit__sequence_index", "id")
    )


def test_the_client_chains_state_files_through_a_sequence(boinc_client, base_url, tmp_path):
    e2e = make_e2e_project(slug="seq", script=SEQ_WORKER)
    spec = _chain_spec("chain", tmp_path, max_result_time=3600, restartable_every=2)
    seq = sequence_create(project=e2e.project, app=e2e.app, spec=spec)
    client = boinc_client()
    client.start("--attach_project", e2e.master_url, e2e.account.authenticator)

    def all_reported() -> bool:
        call_command("run_daemons", "--once")  # validates steps and makes the next ones sendable
        if (
            Result.objects.filter(workunit__sequence_id=seq.id, server_state=ServerState.OVER).count()
            < LENGTH
        ):
            client.update(e2e.master_url)
            return False
        return True

    wait_until(all_reported, timeout=150, what=f"the {LENGTH} steps' reports", client=client)

    call_command("run_daemons", "--once")
    results = _step_results(seq)
    assert [r.outcome for r in results] == [Outcome.SUCCESS] * LENGTH
    # Each step saw its predecessor's state: the report of step k counts k + 2 lines.
    assert [_assimilated(r, "out.txt").strip() for r in results] == [str(k + 2) for k in range(LENGTH)]
    # The final step uploads the full state, which holds every step's line.
    assert _assimilated(results[-1], "state.txt") == "initial state\n" + "step done\n" * LENGTH
    seq.refresh_from_db()
    assert seq.state == SequenceState.ENDED


def test_a_sequence_moves_to_a_second_client_when_the_first_vanishes(boinc_client, base_url, tmp_path):
    e2e = make_e2e_project(slug="reloc", script=SEQ_WORKER)
    Project.objects.filter(pk=e2e.project.pk).update(report_grace_period=0)
    # Each step uploads its state; a step's deadline is 3 x 10 s after it is sent.
    spec = _chain_spec("moving", tmp_path, max_result_time=10, restartable_every=1)
    seq = sequence_create(project=e2e.project, app=e2e.app, spec=spec)

    # The first computer does step 0, then hangs in step 1 (its previous state has 2 lines).
    first = boinc_client()
    first.start(
        "--attach_project",
        e2e.master_url,
        e2e.account.authenticator,
        fetch_minimal_work=False,
        env={"SEQ_WORKER_STALL_AT": "2"},
    )

    def step_1_held() -> Result | None:
        call_command("run_daemons", "--once")  # validates step 0
        step_0_done = Result.objects.filter(
            workunit__sequence_id=seq.id, workunit__sequence_index=0, validate_state=ValidateState.VALID
        ).exists()
        held = Result.objects.filter(
            workunit__sequence_id=seq.id, workunit__sequence_index=1, server_state=ServerState.IN_PROGRESS
        ).first()
        return held if step_0_done and held else None

    held = wait_until(step_1_held, timeout=90, what="step 0 validated and step 1 sent", client=first)
    first_host = held.host_id
    first.stop()  # the computer vanishes with step 1

    # Past step 1's deadline the back end deassigns the sequence; step 1 restarts from step 0's state.
    time.sleep(max(0.0, (held.report_deadline - clock.now()).total_seconds()) + 1)
    call_command("run_daemons", "--once")
    seq.refresh_from_db()
    assert (seq.state, seq.assigned_host_id) == (SequenceState.UNASSIGNED, None)

    second = boinc_client()
    second.start("--attach_project", e2e.master_url, e2e.account.authenticator, fetch_minimal_work=False)

    def ended() -> bool:
        call_command("run_daemons", "--once")
        seq.refresh_from_db()
        if seq.state != SequenceState.ENDED:
            second.update(e2e.master_url)
            return False
        return True

    wait_until(ended, timeout=150, what="the sequence to end on the second computer", client=second)
    done = _step_results(seq, outcome=Outcome.SUCCESS)
    assert [(r.workunit.sequence_index, r.host_id == first_host) for r in done] == [
        (0, True),
        (1, False),
        (2, False),
    ]
    # On the first computer: step 0 done, step 1 timed out, and a step 2 it may have been sent
    # ahead was withdrawn.
    on_first = [(r.workunit.sequence_index, r.outcome) for r in _step_results(seq, host_id=first_host)]
    assert on_first[:2] == [(0, Outcome.SUCCESS), (1, Outcome.NO_REPLY)]
    assert on_first[2:] in ([], [(2, Outcome.DIDNT_NEED)])
    # The second computer started from the state the first one uploaded, so the final state
    # holds every step's line once.
    assert _assimilated(done[-1], "state.txt") == "initial state\n" + "step done\n" * LENGTH

"""The stock client computes a work sequence: each step reads the state the previous one left on it."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.core.management import call_command

from apps.work.domain.states import Outcome, SequenceState, ServerState
from apps.work.models import OutputFile, Result
from apps.work.services import InputSpec, JobSpec, OutputSpec
from apps.work.services.sequence_create import SequenceSpec, sequence_create
from tests.e2e.conftest import make_e2e_project, wait_until

pytestmark = [pytest.mark.boinc_client, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

SEQ_WORKER = Path(__file__).with_name("seq_worker.sh")
LENGTH = 3


def test_the_client_chains_state_files_through_a_sequence(boinc_client, base_url, tmp_path):
    e2e = make_e2e_project(slug="seq", script=SEQ_WORKER)
    initial = tmp_path / "initial_state.txt"
    initial.write_text("initial state\n")
    spec = SequenceSpec(
        name="chain",
        job=JobSpec(
            outputs=(
                OutputSpec(open_name="state.txt", max_nbytes=10_000, sequence_state=True),
                OutputSpec(open_name="out.txt", max_nbytes=10_000),
            ),
            rsc_fpops_est=1e9,
            rsc_fpops_bound=1e12,
        ),
        max_result_time=3600,
        length=LENGTH,
        restartable_every=2,
        first_inputs=(InputSpec(path=initial, name="chain_initial_state.txt", open_name="prev_state.txt"),),
    )
    seq = sequence_create(project=e2e.project, app=e2e.app, spec=spec)
    client = boinc_client()
    client.start("--attach_project", e2e.master_url, e2e.account.authenticator)

    def all_reported() -> bool:
        call_command("run_daemons", "--once")  # validates steps and makes the next ones sendable
        if Result.objects.filter(workunit__sequence=seq, server_state=ServerState.OVER).count() < LENGTH:
            client.update(e2e.master_url)
            return False
        return True

    wait_until(all_reported, timeout=150, what=f"the {LENGTH} steps' reports", client=client)

    call_command("run_daemons", "--once")
    results = list(
        Result.objects.filter(workunit__sequence=seq)
        .select_related("workunit")
        .order_by("workunit__sequence_index")
    )
    assert [r.outcome for r in results] == [Outcome.SUCCESS] * LENGTH

    def assimilated(result: Result, open_name: str) -> str:
        # The default assimilator copied each step's canonical outputs into the results area.
        output = OutputFile.objects.get(result=result, open_name=open_name)
        return (Path(result.workunit.assimilated_path) / output.name).read_text()

    # Each step saw its predecessor's state: the report of step k counts k + 2 lines.
    assert [assimilated(r, "out.txt").strip() for r in results] == [str(k + 2) for k in range(LENGTH)]
    # The final step uploads the full state, which holds every step's line.
    assert assimilated(results[-1], "state.txt") == "initial state\n" + "step done\n" * LENGTH
    seq.refresh_from_db()
    assert seq.state == SequenceState.ENDED

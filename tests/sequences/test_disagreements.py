"""Replica chains that disagree at a checkpoint, driven through the scheduler and the daemons:
honest hosts keep asking for work and the back end's round runs between their requests."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timedelta

import pytest

from apps.sequences.models import WorkSequence
from apps.sequences.services import SequenceSpec, sequence_create
from apps.work.domain.states import SequenceState
from tests.sequences.conftest import DAY, Computer, daemons, step_job

pytestmark = pytest.mark.django_db

ROUND = timedelta(days=3)  # one step's computing time on every host
OVER = (SequenceState.ENDED, SequenceState.ERROR)


@dataclass
class Fleet:
    """Hosts that each report their running step and ask for more once a round; then the daemons."""

    project: object
    hosts: list[Computer]
    chains: list[WorkSequence]
    now: datetime
    glitches: Counter[tuple[str, int]]  # shared by the hosts: whoever computes the step errs
    requests: int = 0
    gone: set[str] = field(default_factory=set)  # hosts that stopped contacting the project

    def start(self) -> None:
        for host in self.hosts:
            self._rpc(host)
        daemons(self.now, self.project.slug)

    def round(self) -> None:
        self.now += ROUND
        for host in self.hosts:
            if host.name not in self.gone:
                self._rpc(host, finish=tuple(host.tasks[:1]))
        daemons(self.now, self.project.slug)

    def run(self, *, rounds: int, each_round=None) -> int:
        """Rounds until every chain is over (at most ``rounds``); returns how many it took."""
        for n in range(1, rounds + 1):
            self.round()
            if each_round is not None:
                each_round(self)
            if all(head.state in OVER for head in self.heads()):
                return n
        return rounds + 1

    def heads(self) -> list[WorkSequence]:
        return list(WorkSequence.objects.filter(id__in=[c.id for c in self.chains]).order_by("id"))

    def holder(self, chain: WorkSequence) -> Computer | None:
        host_id = WorkSequence.objects.get(id=chain.id).assigned_host_id
        return next((h for h in self.hosts if host_id is not None and h.hostid == host_id), None)

    def _rpc(self, host: Computer, finish: tuple[str, ...] = ()) -> None:
        host.rpc(self.now, finish=finish)
        self.requests += 1


@pytest.fixture
def fleet(project, cpu_app, computer, now):
    """A sequence with redundancy whose full state is uploaded every 3rd step."""
    cpu_app.sequence_redundancy = True
    cpu_app.save(update_fields=["sequence_redundancy"])

    def make(*, chains: int = 2, hosts: int = 3, length: int = 6) -> Fleet:
        spec = SequenceSpec(
            name="r",
            job=step_job(),
            max_result_time=4 * DAY,
            length=length,
            restartable_every=3,
            replicas=chains,
        )
        primary = sequence_create(project=project, app=cpu_app, spec=spec, now=now)
        heads = [primary, *WorkSequence.objects.filter(replica_of=primary).order_by("id")]
        glitches: Counter[tuple[str, int]] = Counter()
        computers = [computer(f"host{i}") for i in range(hosts)]
        for host in computers:
            host.glitches = glitches
        fleet = Fleet(project, computers, heads, now, glitches)
        fleet.start()
        return fleet

    return make


def test_chains_that_disagree_at_their_first_checkpoint_end_within_thirteen_rounds(fleet):
    # Six steps, checkpoints after steps 2 and 5; host1 computes step 2 of its chain wrong once.
    f = fleet()
    f.glitches[("r_r1", 2)] = 1
    rounds = f.run(rounds=16)
    heads = f.heads()
    assert [(h.state, h.n_disagreements) for h in heads] == [(SequenceState.ENDED, 1)] * 2
    assert (rounds, f.requests) == (13, 42)


def test_the_chains_restart_from_the_initial_state_on_a_host_that_ran_neither(fleet):
    f = fleet()
    f.glitches[("r_r1", 2)] = 1
    for _ in range(3):
        f.round()
    assert [(h.state, h.first_undispatched.sequence_index) for h in f.heads()] == [
        (SequenceState.UNASSIGNED, 0),
        (SequenceState.UNASSIGNED, 0),
    ]
    f.round()
    primary = f.heads()[0]
    assert (primary.state, f.holder(primary).name) == (SequenceState.ASSIGNED, "host2")
    assert f.hosts[2].tasks[:1] == ["r_s0_1"]  # step 0 again, from the sequence's input files


# The matrix: where the chains disagree (nine steps: checkpoints after steps 2, 5 and 8), how many
# chains, and what happens next. docs/failure-paths.md lists the rounds each cell takes.
POSITIONS = {"first": 2, "middle": 5, "final": 8}
CASES = ("once", "host_vanishes", "disagrees_again", "too_often")
# Three chains: the outvoted one continues after the agreed state while the other two run ahead.
# Outvoted at the final checkpoint, it has nothing left to re-run; outvoted at the middle one, the
# others end before its re-run reaches the final checkpoint. Those cells cannot occur.
NO_RERUN = {("final", 3, "host_vanishes"), ("final", 3, "disagrees_again"), ("middle", 3, "disagrees_again")}
CELLS = [
    (position, chains, case)
    for position in POSITIONS
    for chains in (2, 3)
    for case in CASES
    if (position, chains, case) not in NO_RERUN
]


@dataclass
class Rerun:
    """Who takes each chain once the chains disagreed; ``vanish``: that host of ``chain`` stops
    contacting the project after its first round with it."""

    chain: WorkSequence
    vanish: bool = False
    takers: dict[str, list[str]] = field(default_factory=dict)  # chain -> hosts, in order

    def __call__(self, f: Fleet) -> None:
        for head in f.heads():
            if head.n_disagreements == 0 and head.n_relocations == 0:
                continue
            holder = f.holder(head)
            taken = self.takers.setdefault(head.name, [])
            if holder is None or (taken and taken[-1] == holder.name):
                continue
            taken.append(holder.name)
            if self.vanish and head.id == self.chain.id and not f.gone:
                f.gone.add(holder.name)


# (rounds until every chain is over, scheduler requests in all), as docs/failure-paths.md shows.
MEASURED: dict[tuple[str, int, str], tuple[int, int]] = {
    ("first", 2, "once"): (13, 56),
    ("first", 2, "host_vanishes"): (22, 74),
    ("first", 2, "disagrees_again"): (20, 84),
    ("first", 2, "too_often"): (7, 32),
    ("first", 3, "once"): (9, 50),
    ("first", 3, "host_vanishes"): (9, 45),
    ("first", 3, "disagrees_again"): (9, 50),
    ("first", 3, "too_often"): (10, 55),
    ("middle", 2, "once"): (13, 56),
    ("middle", 2, "host_vanishes"): (22, 77),
    ("middle", 2, "disagrees_again"): (20, 84),
    ("middle", 2, "too_often"): (10, 44),
    ("middle", 3, "once"): (9, 50),
    ("middle", 3, "host_vanishes"): (9, 48),
    ("middle", 3, "too_often"): (13, 70),
    ("final", 2, "once"): (13, 56),
    ("final", 2, "host_vanishes"): (22, 80),
    ("final", 2, "disagrees_again"): (20, 84),
    ("final", 2, "too_often"): (13, 56),
    ("final", 3, "once"): (9, 50),
    ("final", 3, "too_often"): (16, 85),
}


@pytest.mark.slow
@pytest.mark.parametrize(("position", "chains", "case"), CELLS)
def test_disagreement_matrix(project, fleet, position, chains, case):
    step = POSITIONS[position]
    if case == "too_often":
        project.sequence_max_disagreements = 1
        project.save(update_fields=["sequence_max_disagreements"])
    f = fleet(chains=chains, hosts=chains + 2, length=9)
    wrong = f.chains[1]
    f.glitches[(wrong.name, step)] = 1
    if case == "disagrees_again":
        # Two chains both restart before step k and compute it again; an outvoted third
        # continues after k, so its re-run errs at the next checkpoint.
        f.glitches[(wrong.name, step if chains == 2 else step + 3)] += 1
    if case == "too_often":
        for chain in f.chains[1:]:
            f.glitches[(chain.name, step)] = 2  # with three chains no two agree, twice: no quorum
    rerun = Rerun(wrong, vanish=case == "host_vanishes")
    rounds = f.run(rounds=40, each_round=rerun)
    heads = f.heads()
    assert rounds <= 40, [(h.name, SequenceState(h.state).name) for h in heads]
    if case == "too_often":
        reason = f"the replica chains disagreed at step {step} (2 times; the project allows 1 restarts)"
        assert any(h.error_reason == reason for h in heads), [h.error_reason for h in heads]
        assert {h.state for h in heads} == {SequenceState.ERROR}
    else:
        assert {h.state for h in heads} == {SequenceState.ENDED}
    if (position, chains) != ("final", 3):
        # The re-run of the wrong chain goes first to a host that ran none of the chains.
        assert rerun.takers[wrong.name][0] in {h.name for h in f.hosts[chains:]}, rerun.takers
    if case == "host_vanishes":
        assert f.gone, rerun.takers
    assert sum(f.glitches.values()) == 0  # every planned error happened
    assert (rounds, f.requests) == MEASURED[(position, chains, case)]


def _waiting(admin_client, project, chain: WorkSequence) -> dict:
    return admin_client.get(f"/api/v1/projects/{project.slug}/sequences/{chain.name}/").json()["waiting"]


def test_the_api_and_the_admin_say_which_chain_checkpoint_and_host_a_sequence_waits_for(
    admin_client, project, fleet
):
    f = fleet()
    f.glitches[("r_r1", 2)] = 1
    primary, replica = f.chains
    for _ in range(4):  # they disagree in the third round; host2 takes chain r in the fourth
        f.round()
    wait = _waiting(admin_client, project, replica)
    assert (wait["reason"], wait["chain"], wait["step"], wait["host"]) == ("host_to_take", "r_r1", 0, None)
    assert wait["fresh_host_until"] is not None  # host0 and host1 computed invalid results
    while _waiting(admin_client, project, primary)["reason"] != "chain_at_checkpoint":
        f.round()
        assert f.requests < 40
    # Chain r computed checkpoint 2 again; r_r1, re-run by host0 once the wait for a fresh host
    # ended, is behind it.
    wait = _waiting(admin_client, project, primary)
    assert (wait["chain"], wait["step"], wait["host"]) == ("r_r1", 2, f.hosts[0].hostid)
    page = admin_client.get(f"/admin/sequences/worksequence/{primary.id}/change/").content.decode()
    assert f"waiting at checkpoint step 2 for chain r_r1 (host {f.hosts[0].hostid}) to reach it" in page


def test_an_assigned_sequence_waits_for_its_host_to_report_the_next_step(admin_client, project, fleet):
    f = fleet()
    wait = _waiting(admin_client, project, f.chains[0])
    assert (wait["reason"], wait["chain"], wait["step"], wait["host"]) == (
        "host_to_report",
        "r",
        0,
        f.hosts[0].hostid,
    )
    assert wait["text"] == f"waiting for host {f.hosts[0].hostid} to report step 0 of chain r"

"""The validator (BOINC sched/validator.cpp): compare results, choose the canonical one, grant credit.

One pass, per app of the project, in batches of at most ``BATCH`` workunits:

1. Claim a batch of workunits with need_validate set in one conditional UPDATE (PostgreSQL:
   ``FOR UPDATE SKIP LOCKED``, so two validators take different workunits), clearing
   need_validate and setting a transition_time not yet due to a short lease
   (apps.work.services.claims): if this worker dies before it commits, the transitioner
   flags the workunits again then.
2. Before any lock, read the batch's workunits and results and, for the results each
   workunit would compare, run the app's validator on their outputs (``init_result``, and
   for a project's own validator the comparisons too: apps.work.services.comparisons):
   files are read and scripts run while nothing waits for this batch.
3. In one transaction for the batch: lock the host_app_versions of the results to judge (a
   scheduler RPC locks them before its results and host), then the batch's results (id order,
   as the transitioner does), and read the workunits and their apps again; what is to judge is
   decided again from these rows, and outputs step 2 did not read (a result reported since)
   are read now. ``plan_validation`` (apps.work.domain.validation) decides for each workunit
   with the app's comparison: case A (a canonical result exists) compares each new success
   with it; case B runs ``check_set`` for a quorum. A result whose outputs are missing or
   unreadable gets the VALIDATE_ERROR outcome.
4. ``credit_grant_batch`` grants the newly valid results their credit (host, user, team, app
   version; case A: the canonical result's credit) and counts the invalid ones against their
   host_app_version, workunit after workunit in id order, as one call per workunit would.
5. Write the results (validate state, outcome, claimed and granted credit), the unsent
   siblings no longer needed, and the workunits (canonical result, assimilation, error bits,
   target_nresults, transition_time), one statement per table for the whole batch.
6. After the commit, a step of a work sequence moves its sequence on (docs/sequences.md).

A workunit whose outputs cannot be read now (the upload area unreadable, or the validator
says so) is left out of its batch: need_validate stays off and the transitioner flags it
again within 6 hours, as BOINC does. One whose validator fails (a script that crashes or
times out, Python code that raises) is left out too, and to its claim's lease: the
transitioner flags it again when the lease runs out. If the batch raises, it is rolled back
and its workunits are validated again one per transaction, so one failing workunit never
holds up the others; the one that fails again is logged, and the transitioner flags it
again when the claim's lease runs out. A pass that
loses its database connection stops, and its process releases the claims it had not
handled at its next pass (apps.work.services.claims).
"""

from __future__ import annotations

import contextlib
import itertools
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import transaction

from apps.applications.models import App
from apps.core import clock
from apps.core.db import (
    ModelColumns,
    db_datetime,
    update_rows,
)
from apps.credit.domain.quota import JobOutcome
from apps.credit.services import CreditJob, CreditWorkunit, JudgedWorkunit, credit_grant_batch
from apps.projects.models import Project
from apps.projects.services import DaemonPass
from apps.work.domain.states import TRANSITION_NEVER, FileDeleteState, Outcome, ServerState
from apps.work.domain.states import ValidateState as VS
from apps.work.domain.validation import (
    ValidationCandidate,
    ValidationPlan,
    ValidationWorkunit,
    plan_validation,
    transient_retry_time,
)
from apps.work.models import Result, Workunit
from apps.work.queries import (
    apps_with_projects,
    results_of_workunits_locked,
    results_unsent_withdraw,
    workunit_and_results_early,
    workunits_claim_validation,
    workunits_in_order,
    workunits_transition_time_set,
    workunits_validation_write,
)
from apps.work.services.claims import CLAIM_LEASE as CLAIM_LEASE
from apps.work.services.claims import (
    LeaseClock,
    TimeClaim,
    batch_run,
    claims_abandon,
    claims_release,
    lease_until,
    transition_claims_release,
)
from apps.work.services.comparisons import (
    Comparison,
    Payload,
    TransientValidationError,
    ValidatorFailed,
    comparison_for,
    output_files_of,
    payloads_read,
)
from apps.work.services.extensions import step_validated
from apps.work.services.host_outcomes import host_app_versions_lock_for_workunits, host_outcomes

logger = logging.getLogger(__name__)

# What validation changes on a result row: written in one statement per batch.
RESULT_FIELDS = [
    "validate_state",
    "outcome",
    "claimed_credit",
    "granted_credit",
    "credit_approx",
    "runtime_outlier",
]

# Workunits per claim and transaction. The statements of a batch do not depend on its size;
# its transaction holds the locks of the batch's hosts, so a scheduler RPC of one of them
# waits for the batch (a few tenths of a second at this size).
BATCH = 200

# The successes still to judge: their host_app_versions are locked before the results.
_JUDGED = "r.server_state = %s AND r.outcome = %s AND r.validate_state IN (%s, %s)"
_JUDGED_PARAMS = [int(ServerState.OVER), int(Outcome.SUCCESS), int(VS.INIT), int(VS.INCONCLUSIVE)]

# The statements of a batch are written by hand (apps.work.queries), reading only the columns used.
_RESULT = ModelColumns(
    Result,
    "r",
    [
        "id",
        "name",
        "workunit",
        "app",
        "server_state",
        "outcome",
        "validate_state",
        "file_delete_state",
        "host",
        "account",
        "app_version",
        "anonymous_proc_type",
        "sent_time",
        "report_deadline",
        "received_time",
        "flops_estimate",
        "elapsed_time",
        *RESULT_FIELDS[2:],
    ],
)
_WORKUNIT = ModelColumns(
    Workunit,
    "w",
    [
        "id",
        "project",
        "app",
        "rsc_fpops_est",
        "rsc_fpops_bound",
        "delay_bound",
        "min_quorum",
        "target_nresults",
        "max_success_results",
        "canonical_result",
        "transition_time",
        "error_mask",
        "sequence_id",
    ],
)
# What decides the outputs a batch reads before its locks (_Outputs.read_early).
_EARLY_WORKUNIT = ModelColumns(Workunit, "w", ["id", "app", "canonical_result", "error_mask"])
_EARLY_RESULT = ModelColumns(
    Result,
    "r",
    [
        "id",
        "name",
        "workunit",
        "host",
        "elapsed_time",
        "server_state",
        "outcome",
        "validate_state",
        "file_delete_state",
    ],
)
_APP = ModelColumns(App, "a")
_PROJECT = ModelColumns(Project, "p")


@dataclass(frozen=True, slots=True)
class ValidationOutcome:
    workunit_id: int
    valid: int = 0
    invalid: int = 0
    inconclusive: int = 0
    canonical_result_id: int | None = None
    sequence_id: int | None = None

    @property
    def changed(self) -> bool:
        return bool(self.valid or self.invalid or self.inconclusive or self.canonical_result_id)


@dataclass(frozen=True, slots=True)
class Claimed:
    """A claimed workunit, with the transition time it had before the claim's lease."""

    id: int
    transition_time: datetime | None


def workunits_validate(
    *, project: Project, now: datetime | None = None, limit: int | None = None
) -> DaemonPass:
    """One validator pass over the project's workunits that need validation (module doc)."""
    now = now or clock.now()
    claims_release("validator", _claims_release)
    at = LeaseClock(now)
    remaining = limit or settings.COBBLESTONE_DAEMON_BATCH
    total = DaemonPass()
    for app_id in App.objects.filter(project=project).order_by("id").values_list("id", flat=True):
        while remaining > 0:
            wanted = min(remaining, BATCH)
            lease = lease_until(at())
            claimed = workunits_claim(app_id=app_id, now=now, limit=wanted, lease=lease)
            remaining -= len(claimed)
            if claimed:
                done, abandoned = _validate_claimed(claimed, now)
                total += done
                if abandoned:
                    # The database is away: the next pass releases these once it answers again.
                    claims_abandon(
                        "validator", [TimeClaim(c.id, lease, c.transition_time) for c in abandoned]
                    )
                    return total
            if len(claimed) < wanted:
                break  # the app has no more (or another validator holds them)
    return total


def _claims_release(claims: list[TimeClaim]) -> None:
    transition_claims_release(claims, need_validate=True)


def workunits_claim(
    *, app_id: int, now: datetime, limit: int, lease: datetime | None = None
) -> list[Claimed]:
    """Claim up to ``limit`` of the app's workunits that need validation, lowest ids first:
    clear need_validate and set transition_time to a lease (default: one from ``now``), so
    should this worker die before committing their validation, the transitioner flags them
    again then. A transition time already due stays; any later one is replaced, a
    transitioner's own lease too, or that transitioner's commit would write its planned time
    over the claim and leave nobody to flag the workunit again. The claim commits at once;
    workunits another validator holds or has claimed are skipped."""
    claimed = workunits_claim_validation(app_id, now, limit, lease or lease_until(now))
    return sorted((Claimed(wu.id, wu.transition_time) for wu in claimed), key=lambda c: c.id)


@dataclass(slots=True)
class _BatchOutcome:
    outcomes: list[ValidationOutcome] = field(default_factory=list)
    transient: dict[int, str] = field(default_factory=dict)  # workunit id -> why
    failed: dict[int, str] = field(default_factory=dict)  # the validator failed: workunit id -> why


def _validate_claimed(claimed: Sequence[Claimed], now: datetime) -> tuple[DaemonPass, list[Claimed]]:
    """Validate claimed workunits in one transaction; if it raises, one per transaction. A
    workunit that fails on its own keeps need_validate off: the claim's lease has the
    transitioner flag it again. Setting it back at once made a workunit that always fails
    come first in every pass, and ``limit`` of them stopped validation for good. Also the
    claims left unhandled because the database connection was lost."""
    done = batch_run("validator", claimed, lambda cs: _validate_batch([c.id for c in cs], now), _name)
    transient: dict[int, str] = {}
    failed: dict[int, str] = {}
    handled = 0
    for batch in done.results:
        transient.update(batch.transient)
        failed.update(batch.failed)
        for outcome in batch.outcomes:
            handled += outcome.changed
            if outcome.changed and outcome.sequence_id is not None:
                _sequence_progress(outcome.workunit_id, now)
    if transient:
        for wu_id, why in transient.items():
            logger.warning("validator: workunit %s: %s; retrying later", wu_id, why)
        _retry_later([c for c in claimed if c.id in transient], now)
    for wu_id, why in failed.items():
        # Left to the claim's lease: the transitioner flags it again when the lease runs out.
        logger.error("validator: workunit %s: %s; validated again later", wu_id, why)
    errors = len(done.failed) + len(done.abandoned) + len(transient) + len(failed)
    return DaemonPass(items=handled, errors=errors), done.abandoned


def _name(claimed: Claimed) -> str:
    return f"workunit {claimed.id}"


def _sequence_progress(wu_id: int, now: datetime) -> None:
    """A validated step moves its work sequence on (after the validator's commit).
    A failure here is left to the sequence-deadline daemon, which catches heads behind."""
    try:
        step_validated(workunit_id=wu_id, now=now)
    except Exception:
        logger.exception("validator: sequence progress of workunit %s failed", wu_id)


def _retry_later(claimed: Sequence[Claimed], now: datetime) -> None:
    """BOINC's transient-error retry, min(transition time, now + 6 h), from the transition
    time each workunit had before the claim's short lease replaced it."""
    times = []
    for c in claimed:
        current = int(c.transition_time.timestamp()) if c.transition_time is not None else TRANSITION_NEVER
        times.append((c.id, clock.from_unix(transient_retry_time(current, now.timestamp()))))
    workunits_transition_time_set(times)


def workunit_validate(*, workunit_id: int, now: datetime) -> ValidationOutcome:
    """Validate one workunit and grant credit, in one transaction (steps 2-4 of the pass,
    for a workunit claimed or not). Raises TransientValidationError if its outputs cannot be
    read now."""
    batch = _validate_batch([workunit_id], now)
    if batch.transient:
        raise TransientValidationError(batch.transient[workunit_id])
    if batch.failed:
        raise ValidatorFailed(batch.failed[workunit_id])
    return batch.outcomes[0]


@dataclass(slots=True)
class _Judging:
    """One workunit of a batch while it is validated."""

    wu: Workunit
    rows: list[Result]
    candidates: list[Result] = field(default_factory=list)  # case B; case A: the new successes
    canonical: Result | None = None  # case A
    plan: ValidationPlan | None = None
    too_late: bool = False  # case A, the canonical output is gone

    @property
    def case_a(self) -> bool:
        return self.wu.canonical_result_id is not None


def _validate_batch(wu_ids: Sequence[int], now: datetime) -> _BatchOutcome:
    """Steps 2-5 of the pass for workunits of one app: the outputs read first, then one
    transaction."""
    batch = _BatchOutcome()
    outputs = _Outputs.read_early(wu_ids)
    try:
        with transaction.atomic():
            host_app_versions_lock_for_workunits(wu_ids, _JUDGED, _JUDGED_PARAMS)
            wus, judging = _judging(wu_ids)
            if judging:
                if outputs.comparison is None:
                    outputs.comparison = comparison_for(wus[0].app)
                _plan_each(judging, outputs, now, batch)
                judging = [
                    j for j in judging if j.wu.id not in batch.transient and j.wu.id not in batch.failed
                ]
                _apply(judging, now)
            judged = {j.wu.id: j for j in judging}
            left = batch.transient.keys() | batch.failed.keys()
            batch.outcomes = [_outcome(wu, judged.get(wu.id)) for wu in wus if wu.id not in left]
    finally:
        outputs.cleanup()
    return batch


def _plan_each(judging: list[_Judging], outputs: _Outputs, now: datetime, batch: _BatchOutcome) -> None:
    """Plan each workunit's validation; one that cannot be judged now, or whose validator
    fails, is noted in ``batch`` and left out."""
    for j in judging:
        try:
            _plan(j, outputs, now)
        except TransientValidationError as exc:
            batch.transient[j.wu.id] = str(exc)
        except ValidatorFailed as exc:
            batch.failed[j.wu.id] = str(exc)


def _judging(wu_ids: Sequence[int]) -> tuple[list[Workunit], list[_Judging]]:
    """The workunits, and what there is to judge in them, from their results, locked."""
    rows = _locked_results(wu_ids)
    wus = _workunits(wu_ids)
    if len({wu.app_id for wu in wus}) > 1:
        raise ValueError("a validator batch holds the workunits of one app")
    by_wu: dict[int, list[Result]] = {wu.id: [] for wu in wus}
    for r in rows:
        by_wu[r.workunit_id].append(r)
    return wus, [j for wu in wus if (j := _to_judge(wu, by_wu[wu.id])) is not None]


class _Outputs:
    """The outputs a batch compares, by result id.

    Read before the batch locks anything (``read_early``): reading files may take long (a
    network file system, large outputs), and the locks of the batch's host_app_versions
    and results hold up the scheduler RPCs of its hosts meanwhile. A result's outputs do not
    change once it is reported, and one whose files are deleted since (a canonical result)
    has its file_delete_state, read under the lock, say so; outputs the batch needs and
    did not read early (a result reported in between) are read under the lock.
    """

    def __init__(
        self,
        comparison: Comparison | None = None,
        payloads: dict[int, Payload] | None = None,
        failed: dict[int, str] | None = None,
    ) -> None:
        self.comparison = comparison
        self.payloads = payloads or {}
        # Results whose init_result failed early: not run again under the lock (a script that
        # timed out would hold the locks for its whole timeout).
        self.failed = failed or {}

    @classmethod
    def read_early(cls, wu_ids: Sequence[int]) -> _Outputs:
        """The outputs the batch would compare now. The rows are read without locks, only
        the columns that decide what is to judge, in one statement."""
        wus: dict[int, Workunit] = {}
        by_wu: dict[int, list[Result]] = {}
        for wu, result in workunit_and_results_early(wu_ids, _EARLY_WORKUNIT, _EARLY_RESULT):
            wus[wu.id] = wu
            by_wu.setdefault(wu.id, []).append(result)
        judging = [j for wu in wus.values() if (j := _to_judge(wu, by_wu[wu.id])) is not None]
        if not judging:
            return cls()
        app = App.objects.select_related("project").get(id=judging[0].wu.app_id)
        try:
            comparison = comparison_for(app)
        except ValidatorFailed:
            return cls()  # reported, workunit by workunit, under the lock
        names = output_files_of([r.id for r in _to_read(judging)]) if comparison.reads_files else {}
        payloads: dict[int, Payload] = {}
        failed: dict[int, str] = {}
        for j in judging:
            # One that cannot be read now is read again, and reported, under the lock.
            with contextlib.suppress(TransientValidationError):
                try:
                    payloads.update(payloads_read(app.project, _to_read([j]), comparison, names))
                    if not comparison.builtin:
                        _compare_early(j, payloads, comparison)
                except ValidatorFailed as exc:
                    failed.update((r.id, str(exc)) for r in _to_read([j]))
        return cls(comparison, payloads, failed)

    def read(self, project: Project, results: Sequence[Result]) -> dict[int, Payload]:
        assert self.comparison is not None
        for r in results:
            if r.id in self.failed:
                raise ValidatorFailed(self.failed[r.id])
        missing = [r for r in results if r.id not in self.payloads]
        if missing:
            names = output_files_of([r.id for r in missing]) if self.comparison.reads_files else {}
            self.payloads.update(payloads_read(project, missing, self.comparison, names))
        return {r.id: self.payloads[r.id] for r in results}

    def cleanup(self) -> None:
        if self.comparison is not None:
            self.comparison.cleanup(list(self.payloads.values()))


def _compare_early(j: _Judging, payloads: dict[int, Payload], comparison: Comparison) -> None:
    """The comparisons the workunit will need, made before the locks (the comparison
    remembers them): each pair of candidates, or each candidate against the canonical result."""
    ids = [r.id for r in j.candidates if r.id in payloads]
    if not j.case_a:
        pairs = list(itertools.combinations(ids, 2))
    elif j.canonical is not None and j.canonical.id in payloads:
        pairs = [(j.canonical.id, i) for i in ids]
    else:
        pairs = []
    for x, y in pairs:
        comparison.compare(payloads[x], payloads[y])


def _to_judge(wu: Workunit, rows: list[Result]) -> _Judging | None:
    """What there is to judge in the workunit: None if nothing."""
    if wu.error_mask:
        return None  # errored: the transitioner marks results NO_CHECK
    successes = [r for r in rows if r.server_state == ServerState.OVER and r.outcome == Outcome.SUCCESS]
    if wu.canonical_result_id is not None:
        new = [r for r in successes if r.validate_state == VS.INIT and r.id != wu.canonical_result_id]
        canonical = next((r for r in rows if r.id == wu.canonical_result_id), None)
        return _Judging(wu, rows, new, canonical) if new else None
    candidates = [r for r in successes if r.validate_state in (VS.INIT, VS.INCONCLUSIVE)]
    return _Judging(wu, rows, candidates) if candidates else None


def _locked_results(wu_ids: Sequence[int]) -> list[Result]:
    """The workunits' results, locked FOR UPDATE in id order, as the transitioner locks them
    (SQLite has no row locks: its IMMEDIATE transactions hold the database's write lock)."""
    return results_of_workunits_locked(wu_ids, _RESULT)


def _workunits(wu_ids: Sequence[int]) -> list[Workunit]:
    """The workunits in id order, each with its app and project (credit reads app.project)."""
    wus = workunits_in_order(wu_ids, _WORKUNIT)
    if len(wus) < len(set(wu_ids)):
        missing = sorted(set(wu_ids) - {wu.id for wu in wus})
        raise Workunit.DoesNotExist(f"workunits {missing} do not exist")
    apps = apps_with_projects(sorted({wu.app_id for wu in wus}), _APP, _PROJECT)
    for wu in wus:
        wu.app = apps[wu.app_id]
        # The app's project is the workunit's row.
        wu.project = (
            wu.app.project if wu.app.project_id == wu.project_id else Project.objects.get(id=wu.project_id)
        )
    return wus


def _to_read(judging: list[_Judging]) -> list[Result]:
    """The results whose outputs the batch may compare (not a canonical one whose files are
    deleted)."""
    return [r for j in judging for r in j.candidates] + [
        j.canonical
        for j in judging
        if j.canonical is not None and j.canonical.file_delete_state != FileDeleteState.DONE
    ]


def _plan(j: _Judging, outputs: _Outputs, now: datetime) -> None:
    """Plan the workunit's validation (case A or B) on its outputs."""
    wu = j.wu
    assert outputs.comparison is not None
    compare = outputs.comparison.compare
    if not j.case_a:
        payloads = outputs.read(wu.project, j.candidates)
        j.plan = plan_validation(
            _validation_workunit(wu),
            [ValidationCandidate(r.id, payloads[r.id], VS(r.validate_state)) for r in j.candidates],
            compare=compare,
            init=_readable,
            now=now.timestamp(),
            choose=outputs.comparison.choose(wu.min_quorum),
        )
        return
    canonical, canonical_payload = j.canonical, None
    if canonical is not None and canonical.file_delete_state != FileDeleteState.DONE:
        canonical_payload = outputs.read(wu.project, [canonical])[canonical.id]
    if canonical is None or canonical_payload is None:
        j.too_late = True  # the canonical output is gone: the late results can no longer be checked
        return
    payloads = outputs.read(wu.project, j.candidates)
    reference: ValidationCandidate[Payload] = ValidationCandidate(canonical.id, canonical_payload, VS.VALID)
    j.plan = plan_validation(
        _validation_workunit(wu),
        [ValidationCandidate(r.id, payloads[r.id]) for r in j.candidates],
        compare=compare,
        init=_readable,
        now=now.timestamp(),
        canonical=reference,
    )


def _readable(candidate: ValidationCandidate[Payload]) -> bool:
    return candidate.payload is not None


def _validation_workunit(wu: Workunit) -> ValidationWorkunit:
    return ValidationWorkunit(
        id=wu.id,
        min_quorum=wu.min_quorum,
        target_nresults=wu.target_nresults,
        max_success_results=wu.max_success_results,
        canonical_result_id=wu.canonical_result_id,
        transition_time=int(wu.transition_time.timestamp()) if wu.transition_time else TRANSITION_NEVER,
    )


def _apply(judging: list[_Judging], now: datetime) -> None:
    """Set the batch's new result states, grant credit, and write results and workunits."""
    changed: dict[int, Result] = {}
    grants: list[JudgedWorkunit] = []
    valid_rows: list[list[Result]] = []
    for j in judging:
        if j.too_late:
            for r in j.candidates:
                r.validate_state = VS.TOO_LATE
                changed[r.id] = r
            continue
        assert j.plan is not None
        by_id = {r.id: r for r in j.rows}
        outcome = j.plan.outcome
        # The rows are locked: their new states and credit are set here and written together
        # in one statement below (RESULT_FIELDS).
        for result_id, state in outcome.validate_states:
            by_id[result_id].validate_state = state
            changed[result_id] = by_id[result_id]
        for result_id in outcome.validate_error_result_ids:
            by_id[result_id].outcome, by_id[result_id].validate_state = Outcome.VALIDATE_ERROR, VS.INVALID
            changed[result_id] = by_id[result_id]
        valid = [by_id[i] for i, s in outcome.validate_states if s == VS.VALID]
        invalid = [by_id[i] for i, s in outcome.validate_states if s == VS.INVALID]
        grants.append(_judged_workunit(j, valid, invalid))
        valid_rows.append(valid)
    credits = credit_grant_batch(workunits=grants, now=now, app=judging[0].wu.app) if grants else []
    for rows, row_credits in zip(valid_rows, credits, strict=True):
        for r, c in zip(rows, row_credits, strict=True):
            r.claimed_credit, r.granted_credit = c.claimed_credit, c.granted_credit
            r.credit_approx, r.runtime_outlier = c.credit_approx, c.runtime_outlier
    _unsent_withdraw([j.wu.id for j in judging if j.plan is not None and j.plan.unsent_didnt_need])
    update_rows(Result, [changed[i] for i in sorted(changed)], RESULT_FIELDS)
    _workunits_write(judging, {c.result_id: c.granted_credit for row_credits in credits for c in row_credits})


def _judged_workunit(j: _Judging, valid: list[Result], invalid: list[Result]) -> JudgedWorkunit:
    wu = j.wu
    assert j.plan is not None
    canonical_credit = j.canonical.granted_credit if j.case_a and j.canonical is not None else None
    return JudgedWorkunit(
        workunit=CreditWorkunit(
            app_id=wu.app_id,
            fpops_est=wu.rsc_fpops_est,
            fpops_bound=wu.rsc_fpops_bound,
            delay_bound=wu.delay_bound,
            unreplicated=wu.min_quorum <= 1,
            canonical_granted_credit=canonical_credit,
        ),
        valid=[
            CreditJob(
                result_id=r.id,
                host_id=r.host_id,
                account_id=r.account_id,
                app_version_id=r.app_version_id,
                anonymous_proc_type=r.anonymous_proc_type,
                elapsed_time=r.elapsed_time,
                flops_estimate=r.flops_estimate,
                sent_time=clock.to_unix(r.sent_time),
                received_time=clock.to_unix(r.received_time),
            )
            for r in valid
        ],
        invalid=host_outcomes(invalid, outcome=JobOutcome.INVALID, delay_bound=wu.delay_bound),
    )


def _unsent_withdraw(wu_ids: list[int]) -> None:
    """At consensus the workunits' unsent siblings are no longer needed."""
    results_unsent_withdraw(wu_ids)


def _outcome(wu: Workunit, j: _Judging | None) -> ValidationOutcome:
    if j is None:
        return ValidationOutcome(wu.id)
    if j.too_late:
        return ValidationOutcome(wu.id, invalid=len(j.candidates), sequence_id=wu.sequence_id)
    assert j.plan is not None
    states = [s for _, s in j.plan.outcome.validate_states]
    return ValidationOutcome(
        wu.id,
        valid=states.count(VS.VALID),
        invalid=states.count(VS.INVALID),
        inconclusive=states.count(VS.INCONCLUSIVE),
        canonical_result_id=j.plan.canonical_result_id,
        sequence_id=wu.sequence_id,
    )


def _workunits_write(judging: list[_Judging], granted: dict[int, float]) -> None:
    """Every judged workunit's changes in one statement."""
    workunits_validation_write([_workunit_values(j, granted) for j in judging])


def _workunit_values(j: _Judging, granted: dict[int, float]) -> list[Any]:
    wu, plan = j.wu, j.plan
    if plan is None:  # too late: need_validate off, nothing else
        return [wu.id, None, None, False, 0, None, False, None]
    when = plan.transition_time
    if plan.canonical_result_id is not None:
        # BOINC sets "never" here; a replica still in progress keeps its time-out so the
        # transitioner can still close it (and file deletion waits for it).
        grace = wu.project.report_grace_period
        pending = [
            int(r.report_deadline.timestamp()) + grace
            for r in j.rows
            if r.server_state == ServerState.IN_PROGRESS and r.report_deadline
        ]
        when = min(pending, default=TRANSITION_NEVER)
    new_time = None if when is None or when >= TRANSITION_NEVER else clock.from_unix(when)
    return [
        wu.id,
        plan.canonical_result_id,
        granted[plan.canonical_result_id] if plan.canonical_result_id is not None else None,
        plan.assimilate_ready,
        int(plan.error_mask_set),
        plan.target_nresults,
        when is not None,
        db_datetime(new_time),
    ]

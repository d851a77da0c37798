"""The validator (BOINC sched/validator.cpp): compare results, choose the canonical one, grant credit.

One pass, per app of the project:

1. Pick up to ``limit`` workunits with need_validate set.
2. Claim each by clearing need_validate with a conditional UPDATE; a workunit another
   worker cleared first is skipped. The same UPDATE lowers transition_time to a 10-minute
   lease, so if this worker dies before it commits the transitioner flags the workunit again.
3. In one transaction per workunit: lock the host_app_versions of the results to judge (a
   scheduler RPC locks them before results and host), then the results (id order, as the
   transitioner does), read the output files of the results to check from the upload area,
   and let ``plan_validation`` (apps.work.domain.validation) decide with the app's comparison:
   case A (a canonical result exists) compares each new success with it; case B runs
   ``check_set`` for a quorum. A result whose outputs are missing or unreadable gets the
   VALIDATE_ERROR outcome.
4. For the newly valid results call ``credit_grant`` (host, user, team, app version; case A:
   the canonical result's credit), then write each changed result's validate state, outcome
   and claimed and granted credit in one statement; invalid results count against their
   host_app_version. Each table is read and written once per workunit, whatever its number
   of results (the statements run for every workunit are written by hand).
5. Write the workunit last: canonical result, assimilation, error bits, target_nresults,
   transition_time.
6. After the commit, a step of a work sequence moves its sequence on (seed 001).

A transient failure (the upload area cannot be read at all) puts need_validate back off and
lets the transitioner flag the workunit again within 6 hours, as BOINC does; any other
failure rolls back, and the transitioner flags the workunit again when the claim's lease
runs out (10 minutes), so one failing workunit never holds up the others.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Model

from apps.applications.models import App
from apps.core import clock
from apps.core.db import ModelColumns, execute, fetch_rows, placeholders, update_rows
from apps.credit.domain.quota import JobOutcome
from apps.credit.services import CreditJob, CreditWorkunit, ResultCredit, credit_grant
from apps.projects.models import Project
from apps.projects.services import DaemonPass
from apps.work.domain.states import TRANSITION_NEVER, AssimilateState, FileDeleteState, Outcome, ServerState
from apps.work.domain.states import ValidateState as VS
from apps.work.domain.validation import (
    ValidationCandidate,
    ValidationPlan,
    ValidationWorkunit,
    bitwise_equal,
    plan_validation,
    tolerant_numeric_equal,
    transient_retry_time,
)
from apps.work.models import OutputFile, Result, Workunit
from apps.work.services.extensions import step_validated
from apps.work.services.host_outcomes import judged_host_app_versions_sql, results_record_outcome

logger = logging.getLogger(__name__)

# What validation changes on a result row: written in one statement per workunit.
RESULT_FIELDS = [
    "validate_state",
    "outcome",
    "claimed_credit",
    "granted_credit",
    "credit_approx",
    "runtime_outlier",
]

CLAIM_LEASE = timedelta(minutes=10)
Payload = tuple[bytes, ...] | None  # one bytes per uploaded output file; None = unreadable
Compare = Callable[[Payload, Payload], bool]


# The statements run for every workunit are written by hand (apps.core.db): building them
# with the ORM cost more than running them.
_RESULT = ModelColumns(Result, "r")
_WORKUNIT = ModelColumns(Workunit, "w")
_APP = ModelColumns(App, "a")
_PROJECT = ModelColumns(Project, "p")
_OUTPUT = ModelColumns(OutputFile, "f", ["id", "result", "name", "ordinal", "optional"])


def _table(model: type[Model]) -> str:
    return connection.ops.quote_name(model._meta.db_table)


def _db_time(value: datetime) -> object:
    """A datetime as the ORM would send it (SQLite stores text)."""
    return Workunit._meta.get_field("transition_time").get_db_prep_save(value, connection)


class TransientValidationError(Exception):
    """The outputs cannot be read now (upload area missing or failing); retry later."""


@dataclass(frozen=True, slots=True)
class Comparison:
    """How an app's results are compared; ``reads_files`` False skips reading outputs."""

    compare: Compare
    reads_files: bool = True


def _pairwise(equal: Callable[[bytes, bytes], bool]) -> Compare:
    def compare(a: Payload, b: Payload) -> bool:
        if a is None or b is None or len(a) != len(b):
            return False
        return all(equal(x, y) for x, y in zip(a, b, strict=True))

    return compare


def _bitwise(app: App) -> Comparison:
    return Comparison(_pairwise(bitwise_equal))


def _tolerant(app: App) -> Comparison:
    rel, abs_ = app.validator_rel_tol, app.validator_abs_tol
    return Comparison(_pairwise(lambda x, y: tolerant_numeric_equal(x, y, rel_tol=rel, abs_tol=abs_)))


def _trivial(app: App) -> Comparison:
    # BOINC's sample_trivial_validator: every result that reported success is valid.
    return Comparison(lambda a, b: True, reads_files=False)


# App.validator -> comparison. A project adds its own with ``comparison_register``.
COMPARISONS: dict[str, Callable[[App], Comparison]] = {
    App.Validator.BITWISE: _bitwise,
    App.Validator.TOLERANT_NUMERIC: _tolerant,
    App.Validator.TRIVIAL: _trivial,
}


def comparison_register(name: str, factory: Callable[[App], Comparison]) -> None:
    """Make ``name`` usable as App.validator (a project's own compare_results)."""
    COMPARISONS[name] = factory


def comparison_for(app: App) -> Comparison:
    return COMPARISONS.get(app.validator, _bitwise)(app)


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


def workunits_validate(
    *, project: Project, now: datetime | None = None, limit: int | None = None
) -> DaemonPass:
    """One validator pass over the project's workunits that need validation (module doc)."""
    now = now or clock.now()
    remaining = limit or settings.COBBLESTONE_DAEMON_BATCH
    handled = errors = 0
    for app_id in App.objects.filter(project=project).order_by("id").values_list("id", flat=True):
        if remaining <= 0:
            break
        rows = list(
            Workunit.objects.filter(app_id=app_id, need_validate=True)
            .order_by("id")
            .values_list("id", "transition_time")[:remaining]
        )
        remaining -= len(rows)
        for wu_id, transition_time in rows:
            if not _claim(wu_id, now):
                continue  # another validator has it
            try:
                outcome = workunit_validate(workunit_id=wu_id, now=now)
            except TransientValidationError as exc:
                logger.warning("validator: workunit %s: %s; retrying later", wu_id, exc)
                _retry_later(wu_id, now, transition_time)
                errors += 1
            except Exception:
                # Rolled back. need_validate stays off: the claim's lease has the transitioner
                # flag the workunit again within 10 minutes. Setting it back at once made a
                # workunit that always fails come first in every pass, and ``limit`` of them
                # stopped validation for good.
                logger.exception("validator: workunit %s failed; retried after the lease", wu_id)
                errors += 1
            else:
                handled += outcome.changed
                if outcome.changed and outcome.sequence_id is not None:
                    _sequence_progress(wu_id, now)
    return DaemonPass(items=handled, errors=errors)


def _sequence_progress(wu_id: int, now: datetime) -> None:
    """Seed 001: a validated step moves its work sequence on (after the validator's commit).
    A failure here is left to the sequence-deadline daemon, which catches heads behind."""
    try:
        step_validated(workunit_id=wu_id, now=now)
    except Exception:
        logger.exception("validator: sequence progress of workunit %s failed", wu_id)


def _claim(wu_id: int, now: datetime) -> bool:
    """Clear need_validate if still set. transition_time is lowered to a lease: should this
    worker die before committing, the transitioner flags the workunit again then."""
    lease = _db_time(now + CLAIM_LEASE)
    sql = (
        f"UPDATE {_table(Workunit)} SET need_validate = %s, transition_time = CASE WHEN "
        "transition_time IS NULL OR transition_time > %s THEN %s ELSE transition_time END "
        "WHERE id = %s AND need_validate = %s"
    )
    return bool(execute(sql, [False, lease, lease, wu_id, True]))


def _retry_later(wu_id: int, now: datetime, before_claim: datetime | None) -> None:
    """BOINC's transient-error retry, min(transition time, now + 6 h), from the transition
    time the workunit had before the claim's short lease replaced it."""
    current = int(before_claim.timestamp()) if before_claim is not None else TRANSITION_NEVER
    retry = clock.from_unix(transient_retry_time(current, now.timestamp()))
    Workunit.objects.filter(id=wu_id).update(transition_time=retry)


def workunit_validate(*, workunit_id: int, now: datetime) -> ValidationOutcome:
    """Validate one workunit and grant credit, in one transaction (steps 3-5 of the pass)."""
    with transaction.atomic():
        rows = _locked_results(workunit_id)
        wu = _workunit(workunit_id)
        if wu.error_mask:
            return ValidationOutcome(wu.id)  # errored: the transitioner marks results NO_CHECK
        comparison = comparison_for(wu.app)
        successes = [r for r in rows if r.server_state == ServerState.OVER and r.outcome == Outcome.SUCCESS]
        if wu.canonical_result_id is not None:
            return _case_a(wu, rows, successes, comparison, now)
        candidates = [r for r in successes if r.validate_state in (VS.INIT, VS.INCONCLUSIVE)]
        if not candidates:
            return ValidationOutcome(wu.id)
        payloads = _payloads(wu.project, candidates, comparison)
        plan = plan_validation(
            _validation_workunit(wu),
            [ValidationCandidate(r.id, payloads[r.id], VS(r.validate_state)) for r in candidates],
            compare=comparison.compare,
            init=_readable,
            now=now.timestamp(),
        )
        return _apply(wu, rows, plan, now, canonical_credit=None)


def _locked_results(workunit_id: int) -> list[Result]:
    """The workunit's results, locked FOR UPDATE in id order, as the transitioner locks them
    (SQLite has no row locks: its IMMEDIATE transactions hold the database's write lock).

    On PostgreSQL the same statement first locks the host_app_versions of the successes to
    judge (their hosts are credited or judged below), in a scheduler RPC's lock order; the
    CTE is materialized and read by a one-time filter, so it runs before any result is locked.
    """
    sql = f"SELECT {_RESULT.sql()} FROM {_table(Result)} r WHERE r.workunit_id = %s"
    params: list[object] = [workunit_id]
    if connection.features.has_select_for_update:
        judged = judged_host_app_versions_sql(
            "r.server_state = %s AND r.outcome = %s AND r.validate_state IN (%s, %s)"
        )
        sql = f"WITH judged AS MATERIALIZED ({judged}) {sql} AND (SELECT count(*) FROM judged) >= 0"
        sql += " ORDER BY r.id FOR UPDATE OF r"
        judged_params = [int(ServerState.OVER), int(Outcome.SUCCESS), int(VS.INIT), int(VS.INCONCLUSIVE)]
        params = [workunit_id, *judged_params, *params]
    else:
        sql += " ORDER BY r.id"
    return [_RESULT.build(row) for row in fetch_rows(sql, params)]


def _workunit(workunit_id: int) -> Workunit:
    """The workunit with its app and project; the app's project is the workunit's row (credit
    reads app.project)."""
    sql = (
        f"SELECT {_WORKUNIT.sql()}, {_APP.sql()}, {_PROJECT.sql()} FROM {_table(Workunit)} w "
        f"JOIN {_table(App)} a ON a.id = w.app_id JOIN {_table(Project)} p ON p.id = w.project_id "
        "WHERE w.id = %s"
    )
    rows = fetch_rows(sql, [workunit_id])
    if not rows:
        raise Workunit.DoesNotExist(f"workunit {workunit_id} does not exist")
    wu = _WORKUNIT.build(rows[0])
    wu.app = _APP.build(rows[0], _WORKUNIT.width)
    wu.project = _PROJECT.build(rows[0], _WORKUNIT.width + _APP.width)
    if wu.app.project_id == wu.project_id:
        wu.app.project = wu.project
    return wu


def _case_a(
    wu: Workunit, rows: list[Result], successes: list[Result], comparison: Comparison, now: datetime
) -> ValidationOutcome:
    canonical = next((r for r in rows if r.id == wu.canonical_result_id), None)
    new = [r for r in successes if r.validate_state == VS.INIT and r.id != wu.canonical_result_id]
    if not new:
        return ValidationOutcome(wu.id)
    canonical_payload: Payload = None
    if canonical is not None and canonical.file_delete_state != FileDeleteState.DONE:
        canonical_payload = _payloads(wu.project, [canonical], comparison)[canonical.id]
    if canonical is None or canonical_payload is None:
        # The canonical output is gone: the late results can no longer be checked.
        Result.objects.filter(id__in=[r.id for r in new]).update(validate_state=VS.TOO_LATE)
        Workunit.objects.filter(id=wu.id).update(need_validate=False)
        return ValidationOutcome(wu.id, invalid=len(new), sequence_id=wu.sequence_id)
    payloads = _payloads(wu.project, new, comparison)
    plan = plan_validation(
        _validation_workunit(wu),
        [ValidationCandidate(r.id, payloads[r.id]) for r in new],
        compare=comparison.compare,
        init=_readable,
        now=now.timestamp(),
        canonical=ValidationCandidate(canonical.id, canonical_payload, VS.VALID),
    )
    return _apply(wu, rows, plan, now, canonical_credit=canonical.granted_credit)


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


def _payloads(project: Project, results: Sequence[Result], comparison: Comparison) -> dict[int, Payload]:
    """Each result's uploaded outputs, in ordinal order, read from the upload area."""
    if not comparison.reads_files:
        return {r.id: () for r in results}
    upload_dir = project.upload_dir
    if not upload_dir.is_dir():
        raise TransientValidationError(f"upload area {upload_dir} is not readable")
    files: dict[int, list[OutputFile]] = {r.id: [] for r in results}
    sql = (
        f"SELECT {_OUTPUT.sql()} FROM {_table(OutputFile)} f "
        f"WHERE f.result_id IN ({placeholders(list(files))}) AND f.upload = %s ORDER BY f.result_id, f.ordinal"
    )
    for row in fetch_rows(sql, [*files, True]):
        f = _OUTPUT.build(row)
        files[f.result_id].append(f)
    return {result_id: _read(upload_dir, outputs) for result_id, outputs in files.items()}


def _read(upload_dir: Path, outputs: list[OutputFile]) -> Payload:
    contents: list[bytes] = []
    for f in outputs:
        path = upload_dir / f.name
        try:
            contents.append(path.read_bytes())
        except FileNotFoundError:
            if not f.optional:
                return None
            contents.append(b"")
        except (IsADirectoryError, PermissionError):
            return None  # not a file the client uploaded: permanent
        except OSError as exc:
            raise TransientValidationError(f"{path}: {exc}") from exc
    return tuple(contents)


def _apply(
    wu: Workunit, rows: list[Result], plan: ValidationPlan, now: datetime, *, canonical_credit: float | None
) -> ValidationOutcome:
    outcome = plan.outcome
    states = dict(outcome.validate_states)
    by_id = {r.id: r for r in rows}
    # The rows are locked: their new states and credit are set here and written together
    # in one statement below (RESULT_FIELDS), not one UPDATE per state and one for credit.
    for result_id, state in states.items():
        by_id[result_id].validate_state = state
    for result_id in outcome.validate_error_result_ids:
        by_id[result_id].outcome, by_id[result_id].validate_state = Outcome.VALIDATE_ERROR, VS.INVALID
    if plan.unsent_didnt_need:
        execute(
            f"UPDATE {_table(Result)} SET server_state = %s, outcome = %s "
            "WHERE workunit_id = %s AND server_state IN (%s, %s)",
            [
                int(ServerState.OVER),
                int(Outcome.DIDNT_NEED),
                wu.id,
                int(ServerState.UNSENT),
                int(ServerState.INACTIVE),
            ],
        )
    valid = [by_id[i] for i, s in states.items() if s == VS.VALID]
    invalid = [by_id[i] for i, s in states.items() if s == VS.INVALID]
    credits = _grant(wu, valid, now, canonical_credit)
    changed = sorted({*states, *outcome.validate_error_result_ids})
    update_rows(Result, [by_id[i] for i in changed], RESULT_FIELDS)
    _record_invalid(wu, invalid, now)
    _write_workunit(wu, rows, plan, credits, now)
    return ValidationOutcome(
        wu.id,
        valid=len(valid),
        invalid=len(invalid),
        inconclusive=sum(1 for s in states.values() if s == VS.INCONCLUSIVE),
        canonical_result_id=plan.canonical_result_id,
        sequence_id=wu.sequence_id,
    )


def _grant(
    wu: Workunit, valid: list[Result], now: datetime, canonical_credit: float | None
) -> dict[int, ResultCredit]:
    if not valid:
        return {}
    credits = credit_grant(
        workunit=CreditWorkunit(
            app_id=wu.app_id,
            fpops_est=wu.rsc_fpops_est,
            fpops_bound=wu.rsc_fpops_bound,
            delay_bound=wu.delay_bound,
            unreplicated=wu.min_quorum <= 1,
            canonical_granted_credit=canonical_credit,
        ),
        jobs=[
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
        now=now,
        app=wu.app,
    )
    for r, c in zip(valid, credits, strict=True):  # written by _apply with the states
        r.claimed_credit, r.granted_credit = c.claimed_credit, c.granted_credit
        r.credit_approx, r.runtime_outlier = c.credit_approx, c.runtime_outlier
    return {c.result_id: c for c in credits}


def _record_invalid(wu: Workunit, invalid: list[Result], now: datetime) -> None:
    results_record_outcome(
        invalid, outcome=JobOutcome.INVALID, delay_bound=wu.delay_bound, now=now, app=wu.app
    )


def _write_workunit(
    wu: Workunit, rows: list[Result], plan: ValidationPlan, credits: dict[int, ResultCredit], now: datetime
) -> None:
    sets, params = ["need_validate = %s"], [False]
    if plan.canonical_result_id is not None:
        sets += ["canonical_result_id = %s", "canonical_credit = %s"]
        params += [plan.canonical_result_id, credits[plan.canonical_result_id].granted_credit]
    if plan.assimilate_ready:
        sets.append("assimilate_state = CASE WHEN assimilate_state = %s THEN %s ELSE assimilate_state END")
        params += [int(AssimilateState.INIT), int(AssimilateState.READY)]
    if plan.error_mask_set:
        sets.append("error_mask = error_mask | %s")
        params.append(int(plan.error_mask_set))
    if plan.target_nresults is not None:
        sets.append("target_nresults = %s")
        params.append(plan.target_nresults)
    when = plan.transition_time
    if plan.canonical_result_id is not None:
        # BOINC sets "never" here; a replica still in progress keeps its time-out so the
        # transitioner can still close it (and file deletion waits for it).
        grace = wu.project.report_grace_period
        pending = [
            int(r.report_deadline.timestamp()) + grace
            for r in rows
            if r.server_state == ServerState.IN_PROGRESS and r.report_deadline
        ]
        when = min(pending, default=TRANSITION_NEVER)
    if when is not None:
        sets.append("transition_time = %s")
        params.append(None if when >= TRANSITION_NEVER else _db_time(clock.from_unix(when)))
    where = "id = %s AND canonical_result_id IS NULL" if plan.canonical_result_id is not None else "id = %s"
    execute(f"UPDATE {_table(Workunit)} SET {', '.join(sets)} WHERE {where}", [*params, wu.id])

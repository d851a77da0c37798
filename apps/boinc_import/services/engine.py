"""The loop every big BOINC table goes through: read a batch, map each row, write the batch
with its checkpoint in one transaction, report progress.

A table whose Cobblestone ids follow BOINC's first gets its id plan (kept or shifted, see
domain.ids) and its target range reserved. Rows refused by an earlier run are tried again
first (the operator may have fixed them); then reading resumes after the checkpoint.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from django.db import models, transaction

from apps.boinc_import.domain import IdMap, Mapped, Row, RowRefused, VersionRef, plan_ids
from apps.boinc_import.models import BoincImport, ImportIssue, ImportTable
from apps.boinc_import.queries import sequence_reserve
from apps.boinc_import.services.source import BoincSource, TableQuery
from apps.boinc_import.services.target import id_range_taken, next_free_id
from apps.projects.models import Project

Progress = Callable[[str, int, int], None]  # (table, rows read by this run and earlier ones, rows to read)


@dataclass(frozen=True, slots=True)
class Issue:
    """A row refused, or imported with a change (for the report and ImportIssue)."""

    table: str
    source_id: int
    source_key: int
    refused: bool
    reason: str


@dataclass(slots=True)
class TableStats:
    table: str
    read: int = 0
    imported: int = 0
    refused: int = 0
    changed: int = 0
    seconds: float = 0.0

    @property
    def rows_per_second(self) -> float:
        return self.read / self.seconds if self.seconds > 0 else 0.0


@dataclass(slots=True)
class ImportRun:
    """Everything one run of the import shares: the source, the target project, the id maps."""

    source: BoincSource
    project: Project
    record: BoincImport | None  # None only in a dry run of a project that does not exist yet
    project_dir: Path
    fanout: int
    now: datetime
    dry_run: bool
    batch_size: int
    progress: Progress
    stats: dict[str, TableStats] = field(default_factory=dict)
    issues: list[Issue] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    platforms: dict[int, int] = field(default_factory=dict)
    apps: dict[int, int] = field(default_factory=dict)
    versions: dict[int, VersionRef] = field(default_factory=dict)
    teams: IdMap = field(default_factory=IdMap)
    users: IdMap = field(default_factory=IdMap)
    hosts: IdMap = field(default_factory=IdMap)
    workunits: IdMap = field(default_factory=IdMap)
    batches: IdMap = field(default_factory=IdMap)

    @property
    def now_unix(self) -> float:
        return self.now.timestamp()

    def table_stats(self, table: str) -> TableStats:
        return self.stats.setdefault(table, TableStats(table))

    @property
    def writes(self) -> bool:
        """Whether this run writes (not a dry run; a dry run reads what earlier runs wrote)."""
        return self.record is not None and not self.dry_run

    def table_state(self, table: str) -> ImportTable:
        """The table's progress; a dry run works on an unsaved copy."""
        if self.record is None:
            return ImportTable(table=table)
        if self.dry_run:
            return ImportTable.objects.filter(boinc_import=self.record, table=table).first() or ImportTable(
                table=table
            )
        state, _ = ImportTable.objects.get_or_create(boinc_import=self.record, table=table)
        return state

    def record_issues(self, issues: list[Issue]) -> None:
        """Keep this run's issues for the report (stored by the caller's transaction)."""
        self.issues.extend(issues)
        stats = self.table_stats(issues[0].table) if issues else None
        for issue in issues:
            assert stats is not None
            if issue.refused:
                stats.refused += 1
            else:
                stats.changed += 1


Writer = Callable[[list[tuple[Row, Mapped]]], None]
Checker = Callable[[list[tuple[Row, Mapped]]], dict[int, str]]


@dataclass(slots=True)
class KeyedTable:
    """One BOINC table read in key order.

    ``model``/``ids``: the Cobblestone table whose ids follow BOINC's, and the map of its
    imported rows (``track`` False: only the offset is kept, for tables nothing refers to).
    ``check`` refuses rows after mapping by looking at the batch as a whole (source key →
    reason). ``write`` stores the accepted rows of a batch.
    """

    table: str
    query: TableQuery
    map_row: Callable[[Row], Mapped]
    write: Writer
    model: type[models.Model] | None = None
    ids: IdMap | None = None
    check: Checker | None = None
    track: bool = True


def project_rows(run: ImportRun, rows: list[tuple[Row, Mapped]], ids: IdMap) -> list[dict[str, object]]:
    """The mapped rows of a table whose ids follow BOINC's, with their ids and project."""
    return [{**m.values, "id": row["id"] + ids.offset, "project_id": run.project.pk} for row, m in rows]


def table_import(run: ImportRun, spec: KeyedTable) -> None:
    """Import one table: plan ids, retry earlier refusals, then read on from the checkpoint."""
    started = time.monotonic()
    stats = run.table_stats(spec.table)
    state = run.table_state(spec.table)
    total = int(run.source.scalar(spec.query.count_sql()) or 0)
    if spec.model is not None:
        _plan(run, spec, state)
    # Progress counts the rows up to the checkpoint as read: earlier runs read them.
    done = (
        int(run.source.scalar(spec.query.count_upto_sql(), [state.last_source_id]) or 0)
        if state.last_source_id
        else 0
    )
    reported = run.record is not None and _retry_refused(run, spec, state, done, total)
    for rows, last in run.source.batches(spec.query, after=state.last_source_id, size=run.batch_size):
        _batch(run, spec, state, rows, last=last)
        done += len(rows)
        run.progress(spec.table, done, total)
        reported = True
    if not reported:  # an empty table, or one an earlier run finished: shown all the same
        run.progress(spec.table, done, total)
    state.done = True
    if run.writes:
        state.save(update_fields=["done"])
    stats.seconds += time.monotonic() - started


def _plan(run: ImportRun, spec: KeyedTable, state: ImportTable) -> None:
    """The id plan (decided once, on the first run) and the rows already imported."""
    assert spec.model is not None
    assert spec.ids is not None
    if state.reserved_max_id == 0 and state.last_source_id == 0:
        bounds = run.source.rows(spec.query.range_sql())[0]
        lo, hi = int(bounds["lo"] or 0), int(bounds["hi"] or 0)
        plan = plan_ids(
            source_min=lo,
            source_max=hi,
            range_taken=hi > 0 and id_range_taken(spec.model, lo, hi),
            next_free=next_free_id(spec.model),
        )
        state.id_offset, state.reserved_max_id = plan.offset, plan.reserved_max_id
        if run.writes:
            sequence_reserve(spec.model, plan.last_target_id)
            state.save(update_fields=["id_offset", "reserved_max_id"])
    spec.ids.offset = state.id_offset
    if spec.track and run.project.pk is not None and state.reserved_max_id:
        imported = spec.model._default_manager.filter(
            project_id=run.project.pk, pk__lte=state.reserved_max_id + state.id_offset
        ).values_list("pk", flat=True)
        spec.ids.imported = {pk - state.id_offset for pk in imported.iterator(chunk_size=20_000)}


def _retry_refused(run: ImportRun, spec: KeyedTable, state: ImportTable, done: int, total: int) -> bool:
    """Read the rows earlier runs refused again and import those that now pass; whether
    there were any (and progress was reported)."""
    pairs = set(
        ImportIssue.objects.filter(boinc_import=run.record, table=spec.table, refused=True).values_list(
            "source_id", "source_key"
        )
    )
    if not pairs:
        return False
    rows = run.source.rows_with_keys(spec.query, sorted({pair[0] for pair in pairs}))
    rows = [row for row in rows if _keys(spec, row) in pairs]
    # A batch never splits the rows of one first key: its refusals are replaced together.
    batch: list[Row] = []
    for row in rows:
        if len(batch) >= run.batch_size and _keys(spec, row)[0] != _keys(spec, batch[-1])[0]:
            _batch(run, spec, state, batch, last=None, retry=True)
            batch = []
        batch.append(row)
    if batch:
        _batch(run, spec, state, batch, last=None, retry=True)
    run.progress(spec.table, done, total)
    return True


def _keys(spec: KeyedTable, row: Row) -> tuple[int, int]:
    key2 = spec.query.key2.split(".")[-1] if spec.query.key2 else ""
    return int(row[spec.query.key_alias]), int(row[key2]) if key2 else 0


def _batch(
    run: ImportRun,
    spec: KeyedTable,
    state: ImportTable,
    rows: list[Row],
    *,
    last: int | None,
    retry: bool = False,
) -> None:
    accepted: list[tuple[Row, Mapped]] = []
    refusals: dict[tuple[int, int], str] = {}
    for row in rows:
        keys = _keys(spec, row)
        if spec.model is not None and keys[0] > state.reserved_max_id:
            refusals[keys] = (
                f"added to the BOINC database after this import began (ids were reserved up to "
                f"{state.reserved_max_id}); import into a new project to take it"
            )
            continue
        try:
            accepted.append((row, spec.map_row(row)))
        except RowRefused as exc:
            refusals[keys] = str(exc)
    if spec.check is not None and accepted:
        late = spec.check(accepted)
        if late:
            refusals.update(
                {
                    _keys(spec, row): late[_keys(spec, row)[0]]
                    for row, _ in accepted
                    if _keys(spec, row)[0] in late
                }
            )
            accepted = [(row, m) for row, m in accepted if _keys(spec, row)[0] not in late]
    issues = [Issue(spec.table, k[0], k[1], True, reason) for k, reason in refusals.items()]
    issues += [
        Issue(spec.table, *_keys(spec, row), False, note) for row, mapped in accepted for note in mapped.notes
    ]
    if not run.dry_run:
        with transaction.atomic():
            spec.write(accepted)
            _store_issues(
                run, spec.table, issues, retried={_keys(spec, r)[0] for r in rows} if retry else set()
            )
            if last is not None:
                state.last_source_id = last
            state.imported += len(accepted)
            state.save(update_fields=["last_source_id", "imported"])
    elif last is not None:
        state.last_source_id = last
    if spec.ids is not None and spec.track:
        for row, _ in accepted:
            spec.ids.add(_keys(spec, row)[0])
    stats = run.table_stats(spec.table)
    stats.read += len(rows)
    stats.imported += len(accepted)
    run.record_issues(issues)


def _store_issues(run: ImportRun, table: str, issues: list[Issue], *, retried: set[int]) -> None:
    """Record this batch's issues; the earlier refusals of retried rows are replaced."""
    assert run.record is not None
    if retried:
        ImportIssue.objects.filter(
            boinc_import=run.record, table=table, refused=True, source_id__in=retried
        ).delete()
    ImportIssue.objects.bulk_create(_stored(run, i) for i in issues)


def _stored(run: ImportRun, issue: Issue) -> ImportIssue:
    return ImportIssue(
        boinc_import=run.record,
        table=issue.table,
        source_id=issue.source_id,
        source_key=issue.source_key,
        refused=issue.refused,
        reason=issue.reason,
    )


def issues_replace(run: ImportRun, table: str, issues: list[Issue]) -> None:
    """The issues of a table read whole on every run: what is already recorded stays as it is,
    what no longer applies goes, what is new is added."""
    run.record_issues(issues)
    if not run.writes:
        return
    wanted = {(i.source_id, i.source_key, i.refused, i.reason) for i in issues}
    stored = ImportIssue.objects.filter(boinc_import=run.record, table=table)
    have = {(i.source_id, i.source_key, i.refused, i.reason): i.pk for i in stored}
    with transaction.atomic():
        stale = [pk for key, pk in have.items() if key not in wanted]
        if stale:
            ImportIssue.objects.filter(pk__in=stale).delete()
        ImportIssue.objects.bulk_create(
            _stored(run, Issue(table, *key)) for key in sorted(wanted - set(have))
        )

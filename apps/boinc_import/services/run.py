"""One run of the import: check the schema, open the project, import every table in order.

A pass:

1. reads the project directory (config.xml, keys, db_revision) and the database's tables
   and columns, and refuses a schema it does not know;
2. creates the Cobblestone project (first run) or finds the one an earlier run made;
3. imports, in dependency order, platforms, apps and app versions (with files), teams,
   users, team founders, per-app credit, deleted users, hosts, host_app_version records,
   deleted hosts, submitters (user_submit, user_submit_app), batches, workunits still in
   progress (with input files and their batch), their results (with
   output files, and canonical results) and their assignments (targeted and broadcast jobs);
4. marks the import finished and refreshes the planner's statistics.

Each table resumes after its checkpoint and retries the rows an earlier run refused, so a
second run after a complete one reads no new row and writes nothing new. A dry run does
every read and check and writes nothing: it reports what would be imported and refused.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from apps.boinc_import.domain import schema_refusal
from apps.boinc_import.models import BoincImport
from apps.boinc_import.services import accounts, applications, hosts, submit, work
from apps.boinc_import.services.engine import ImportRun, Issue, Progress, TableStats
from apps.boinc_import.services.project import BoincImportError, project_files_read, project_open
from apps.boinc_import.services.source import BoincSource, SourceError, parse_source_url
from apps.core import clock
from apps.core.db import analyze_tables
from apps.hosts.models import Host, HostAppVersion
from apps.projects.models import Project
from apps.volunteers.models import Account
from apps.work.models import OutputFile, Result, Workunit

STEPS: tuple[Callable[[ImportRun], None], ...] = (
    applications.platforms_import,
    applications.apps_import,
    applications.app_versions_import,
    accounts.teams_import,
    accounts.users_import,
    accounts.team_founders_import,
    lambda run: accounts.app_credit_import(run, table="credit_user"),
    lambda run: accounts.app_credit_import(run, table="credit_team"),
    accounts.deleted_users_import,
    hosts.hosts_import,
    hosts.host_app_versions_import,
    hosts.deleted_hosts_import,
    submit.submitters_import,
    submit.batches_import,
    work.workunits_import,
    work.results_import,
    work.assignments_import,
)


@dataclass(frozen=True, slots=True)
class ImportSummary:
    project: Project
    dry_run: bool
    tables: list[TableStats]
    issues: list[Issue]
    warnings: list[str]
    seconds: float


def boinc_import_run(
    *,
    slug: str,
    mysql_url: str,
    project_dir: Path,
    dry_run: bool = False,
    batch_size: int = 5000,
    progress: Progress | None = None,
    now: datetime | None = None,
) -> ImportSummary:
    """Import (or go on importing) the BOINC project into the Cobblestone project ``slug``."""
    started = time.monotonic()
    now = now or clock.now()
    if not project_dir.is_dir():
        raise BoincImportError(f"{project_dir} is not a directory")
    if batch_size < 1:
        raise BoincImportError("the batch size must be at least 1")
    files = project_files_read(project_dir)
    try:
        source = BoincSource(mysql_url)
    except SourceError as exc:
        raise BoincImportError(str(exc)) from None
    with source:
        try:
            refusal = schema_refusal(source.columns(), files.db_revision)
            if refusal:
                raise BoincImportError(refusal)
            opened = project_open(
                slug=slug,
                files=files,
                source=parse_source_url(mysql_url).display,
                project_dir=project_dir,
                now=now,
                dry_run=dry_run,
            )
            run = ImportRun(
                source=source,
                project=opened.project,
                record=opened.record,
                project_dir=project_dir,
                fanout=files.config.uldl_dir_fanout,
                now=now,
                dry_run=dry_run,
                batch_size=batch_size,
                progress=progress or (lambda table, done, total: None),
                warnings=list(opened.warnings),
            )
            for step in STEPS:
                step(run)
        except SourceError as exc:
            raise BoincImportError(str(exc)) from None
    if not dry_run:
        BoincImport.objects.filter(pk=opened.record.pk).update(finished=clock.now())  # type: ignore[union-attr]  # a real run has one
        analyze_tables(Account, Host, HostAppVersion, Workunit, Result, OutputFile)
    return ImportSummary(
        project=opened.project,
        dry_run=dry_run,
        tables=list(run.stats.values()),
        issues=run.issues,
        warnings=run.warnings,
        seconds=time.monotonic() - started,
    )

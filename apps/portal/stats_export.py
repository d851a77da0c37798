"""BOINC's db_dump: the statistics files third-party sites read.

Writes ``user.gz``, ``host.gz``, ``team.gz`` (gzipped ``<users>``/``<hosts>``/``<teams>``
with BOINC's record fields, see apps.portal.records), ``user_deleted.gz`` and
``host_deleted.gz`` (``<users_deleted>``/``<hosts_deleted>``: the id and cross-project id
of each exported user or host deleted in the last DELETED_KEEP_DAYS, so stats sites drop
them), ``badge_user.gz`` and ``badge_team.gz`` (``<badge_users>``/``<badge_teams>``: who
holds which badge) and ``tables.xml`` (update time, totals and the list of badges) into ``<data_dir>/<slug>/stats/``,
served at ``/<slug>/stats/<file>``.

Only users who consented to the statistics export are written (BOINC's STATSEXPORT
consent), and only their hosts and badges; deleted accounts never are: a host's host_cpid would let a stats site link it back to
its owner across projects. Teams are public on the project's pages and are all written.
"""

from __future__ import annotations

import gzip
import itertools
import os
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import IO, Any, TypeVar

from django.db.models import Model, QuerySet

from apps.hosts.models import DeletedHost, Host
from apps.portal.records import (
    HOST_EXPORT_COLUMNS,
    TEAM_EXPORT_COLUMNS,
    USER_EXPORT_COLUMNS,
    host_export_record,
    team_export_record,
    user_export_record,
)
from apps.projects.models import Project
from apps.projects.services import DaemonPass
from apps.protocol.stats_dump import dump_chunks
from apps.protocol.stats_xml import Record, render_record
from apps.volunteers.models import Account, Badge, BadgeAward, DeletedAccount, Team

DAEMON = "db_dump"
# Rows per query: each is an index range scan from the last id, so a bigger batch costs the
# database nothing more per row and saves round trips.
BATCH = 5000
# gzip's own default level, which BOINC's db_dump gets by piping through gzip; zlib's
# level 9 takes 1.7 times as long for files 4 % smaller.
GZIP_LEVEL = 6
# Records joined before each write to the compressor: a call per record costs more than it
# compresses.
WRITE_RECORDS = 256
# How long a deleted user or host stays in the *_deleted files: long enough for every
# stats site's daily fetch to see it, even after an outage of weeks.
DELETED_KEEP_DAYS = 60
# The files and how they are served; nothing else in the directory is ever served.
STATS_FILES: dict[str, str] = {
    "tables.xml": "text/xml; charset=utf-8",
    "user.gz": "application/gzip",
    "host.gz": "application/gzip",
    "team.gz": "application/gzip",
    "user_deleted.gz": "application/gzip",
    "host_deleted.gz": "application/gzip",
    "badge_user.gz": "application/gzip",
    "badge_team.gz": "application/gzip",
}

M = TypeVar("M", bound=Model)


def stats_dir(project: Project) -> Path:
    return project.data_dir / "stats"


def _chunked(queryset: QuerySet[M], batch: int) -> Iterator[M]:
    """Rows in id order, ``batch`` at a time (keyset paging: no OFFSET, no open cursor)."""
    last_id = 0
    while True:
        chunk = list(queryset.filter(id__gt=last_id).order_by("id")[:batch])
        yield from chunk
        if len(chunk) < batch:
            return
        last_id = chunk[-1].pk


def _chunked_rows(queryset: QuerySet[Any, Any], columns: tuple[str, ...], batch: int) -> Iterator[Any]:
    """Named tuples of ``columns`` (the first is ``id``) in id order, ``batch`` at a time."""
    last_id = 0
    while True:
        chunk = list(queryset.filter(id__gt=last_id).order_by("id").values_list(*columns, named=True)[:batch])
        yield from chunk
        if len(chunk) < batch:
            return
        last_id = chunk[-1].id


def _write_atomic(path: Path, write: Callable[[IO[bytes]], None]) -> None:
    """Write a temporary file beside ``path`` and rename it over ``path``: a reader (or the
    web server) sees the old file or the new one, never a half-written one."""
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as out:
            write(out)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(tmp_name, 0o644)  # mkstemp makes it private; the files are public
        os.replace(tmp_name, path)
    except BaseException:
        Path(tmp_name).unlink(missing_ok=True)
        raise


def _write_bytes(out: IO[bytes], data: bytes) -> None:
    out.write(data)


@dataclass
class _Tally:
    count: int = 0
    credit: float = 0.0


def _counted(records: Iterator[tuple[Record, float]], tally: _Tally) -> Iterator[Record]:
    for record, credit in records:
        tally.count += 1
        tally.credit += credit
        yield record


def _write_dump(
    directory: Path, name: str, root_tag: str, records: Iterator[tuple[Record, float]], mtime: int
) -> _Tally:
    tally = _Tally()

    def write(out: IO[bytes]) -> None:
        # The name inside the archive is what ``gzip user`` would record, as BOINC's db_dump.
        with gzip.GzipFile(
            filename=name.removesuffix(".gz"), mode="wb", fileobj=out, mtime=mtime, compresslevel=GZIP_LEVEL
        ) as gz:
            chunks = dump_chunks(root_tag, _counted(records, tally))
            while batch := list(itertools.islice(chunks, WRITE_RECORDS)):
                gz.write(b"".join(batch))

    _write_atomic(directory / name, write)
    return tally


def _users(project: Project, batch: int) -> Iterator[tuple[Record, float]]:
    accounts = Account.objects.filter(project=project, stats_export_consent=True, deleted_time__isnull=True)
    for row in _chunked_rows(accounts, USER_EXPORT_COLUMNS, batch):
        yield user_export_record(row), row.total_credit


def _hosts(project: Project, batch: int) -> Iterator[tuple[Record, float]]:
    hosts = Host.objects.filter(project=project, account__stats_export_consent=True)
    for row in _chunked_rows(hosts, HOST_EXPORT_COLUMNS, batch):
        yield host_export_record(row), row.total_credit


def _teams(project: Project, batch: int) -> Iterator[tuple[Record, float]]:
    for row in _chunked_rows(Team.objects.filter(project=project), TEAM_EXPORT_COLUMNS, batch):
        yield team_export_record(row), row.total_credit


def _users_deleted(project: Project, batch: int) -> Iterator[tuple[Record, float]]:
    for gone in _chunked(DeletedAccount.objects.filter(project=project), batch):
        yield Record("user", (("id", gone.userid), ("cpid", gone.cpid))), 0.0


def _hosts_deleted(project: Project, batch: int) -> Iterator[tuple[Record, float]]:
    for gone in _chunked(DeletedHost.objects.filter(project=project), batch):
        yield Record("host", (("id", gone.hostid), ("host_cpid", gone.host_cpid))), 0.0


def _badge_award(tag: str, owner: tuple[str, int | None], award: BadgeAward) -> Record:
    """A <badge_user> or <badge_team>: who holds the badge, which one, since when."""
    when = int(award.create_time.timestamp())
    return Record(tag, (owner, ("badge_id", award.badge_id), ("create_time", when)))


def _badge_users(project: Project, batch: int) -> Iterator[tuple[Record, float]]:
    awards = BadgeAward.objects.filter(
        badge__project=project,
        account__stats_export_consent=True,
        account__deleted_time__isnull=True,
    )
    for award in _chunked(awards, batch):
        yield _badge_award("badge_user", ("user_id", award.account_id), award), 0.0


def _badge_teams(project: Project, batch: int) -> Iterator[tuple[Record, float]]:
    for award in _chunked(BadgeAward.objects.filter(badge__project=project, team__isnull=False), batch):
        yield _badge_award("badge_team", ("team_id", award.team_id), award), 0.0


def _badge_list(project: Project) -> Record:
    """tables.xml's <badges>: every badge the files above refer to."""
    badges = Badge.objects.filter(project=project).order_by("id")
    return Record(
        "badges",
        (),
        children=tuple(
            Record("badge", (("id", b.pk), ("name", b.name), ("title", b.title), ("image_url", "")))
            for b in badges
        ),
    )


def deleted_records_expire(*, project: Project, now: datetime) -> int:
    """Forget users and hosts deleted more than DELETED_KEEP_DAYS ago; how many went."""
    cutoff = now - timedelta(days=DELETED_KEEP_DAYS)
    users, _ = DeletedAccount.objects.filter(project=project, create_time__lt=cutoff).delete()
    hosts, _ = DeletedHost.objects.filter(project=project, create_time__lt=cutoff).delete()
    return users + hosts


def stats_export_write(*, project: Project, now: datetime, batch: int = BATCH) -> DaemonPass:
    """One db_dump pass for the project.

    1. Stream consenting users, their hosts, and all teams, ``batch`` rows at a time, each
       into its gzipped file (written beside it, then renamed over it).
    2. Forget deletions older than DELETED_KEEP_DAYS and write the deleted users and hosts.
    3. Write tables.xml last, with the totals of what was written: its update_time marks
       a complete set.
    """
    if not project.stats_export:
        return DaemonPass(message="stats export is off for this project")
    directory = stats_dir(project)
    directory.mkdir(parents=True, exist_ok=True)
    mtime = int(now.timestamp())
    users = _write_dump(directory, "user.gz", "users", _users(project, batch), mtime)
    hosts = _write_dump(directory, "host.gz", "hosts", _hosts(project, batch), mtime)
    teams = _write_dump(directory, "team.gz", "teams", _teams(project, batch), mtime)
    deleted_records_expire(project=project, now=now)
    users_deleted = _write_dump(
        directory, "user_deleted.gz", "users_deleted", _users_deleted(project, batch), mtime
    )
    hosts_deleted = _write_dump(
        directory, "host_deleted.gz", "hosts_deleted", _hosts_deleted(project, batch), mtime
    )
    _write_dump(directory, "badge_user.gz", "badge_users", _badge_users(project, batch), mtime)
    _write_dump(directory, "badge_team.gz", "badge_teams", _badge_teams(project, batch), mtime)
    tables = render_record(
        Record(
            "tables",
            (
                ("update_time", mtime),
                ("nusers_total", users.count),
                ("nteams_total", teams.count),
                ("nhosts_total", hosts.count),
                ("nusers_deleted_total", users_deleted.count),
                ("nhosts_deleted_total", hosts_deleted.count),
                ("total_credit", users.credit),
            ),
            children=(_badge_list(project),),
        )
    )
    _write_atomic(directory / "tables.xml", lambda out: _write_bytes(out, tables))
    return DaemonPass(
        items=users.count + hosts.count + teams.count,
        message=f"{users.count} users, {hosts.count} hosts, {teams.count} teams",
    )


def stats_file_path(project: Project, name: str) -> Path | None:
    """The file to serve for ``/<slug>/stats/<name>``; None for any other name.

    Only the names above are served, so no request path can reach another file.
    """
    if name not in STATS_FILES or not project.stats_export:
        return None
    return stats_dir(project) / name

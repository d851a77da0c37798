"""Back up a Cobblestone server and restore it: the database, the data areas, the keys.

A backup is a directory:

* ``manifest.json``: when, from which database engine, the migrations applied, the projects,
  and each file's size and SHA-256 (restore checks them before it writes anything);
* ``database.pgdump`` (``pg_dump --format=custom``, one consistent snapshot of a running
  PostgreSQL database) or ``database.sqlite3`` (SQLite's online backup API);
* ``data.tar``: COBBLESTONE_DATA_DIR, every project's download, upload, results and archive
  areas (taken after the database: a file written meanwhile is included, one the file
  deleter removed meanwhile belonged to a finished workunit);
* ``keys/<slug>/``: each project's code-signing and upload keys in BOINC's text format. They
  are in the database as well; as files they can be kept offline, and without the code-signing
  private key no new app version can be signed. A project that signs offline has no private
  key on the server: keep that one yourself.

Restore writes into an empty database (``migrate`` not yet run) of the same engine and an
empty data directory, then checks the restored keys against the key files.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import subprocess
import tarfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

from django.conf import settings
from django.db import connection
from django.db.migrations.recorder import MigrationRecorder

from apps.core import clock
from apps.core.private_files import private_directory, private_touch, private_write, sqlite_files_private
from apps.core.progress import Progress
from apps.ops.health import code_migrations
from apps.projects.models import Project

FORMAT = 1
KEY_FIELDS = ("code_sign_public_key", "code_sign_private_key", "upload_public_key", "upload_private_key")
KEY_FILES = {
    "code_sign_public_key": "code_sign_public",
    "code_sign_private_key": "code_sign_private",
    "upload_public_key": "upload_public",
    "upload_private_key": "upload_private",
}
Write = Callable[[str], object]


class BackupError(RuntimeError):
    """A backup or restore step failed or was refused; nothing more is written."""


@dataclass(frozen=True, slots=True)
class RestoreOutcome:
    projects: list[str]
    files: int
    pending_migrations: int


def backup_create(*, output: Path, include_data: bool = True, write: Write = print) -> Path:
    """Write a backup into ``output`` (a new directory); returns it."""
    if output.exists() and any(output.iterdir()):
        raise BackupError(f"{output} exists and is not empty")
    # Everything in it is private: the database holds every account's key and the keys/ files
    # the projects' private keys. The directory is 0700 and each file 0600, whatever the umask.
    private_directory(output)
    vendor = connection.vendor
    write(f"backup to {output}")
    database_file = _dump_database(output, vendor, write)
    projects = list(Project.objects.order_by("slug"))
    keys = _write_keys(private_directory(output / "keys"), projects)
    write(f"keys: {len(keys)} file(s) for {len(projects)} project(s)")
    data_file = _archive_data(output / "data.tar", write) if include_data else None
    files = [database_file, *keys, *([data_file] if data_file else [])]
    manifest = {
        "format": FORMAT,
        "created": clock.now().isoformat(),
        "engine": vendor,
        "database": database_file.name,
        "data": data_file.name if data_file else None,
        "projects": [p.slug for p in projects],
        "migrations": sorted(
            f"{app}.{name}" for app, name in MigrationRecorder(connection).applied_migrations()
        ),
        "files": {
            str(f.relative_to(output)): {"bytes": f.stat().st_size, "sha256": _sha256(f)} for f in files
        },
    }
    private_write(output / "manifest.json", json.dumps(manifest, indent=2) + "\n")
    write(f"backup complete: {len(files)} file(s), {sum(f.stat().st_size for f in files) / 2**20:.1f} MB")
    return output


def backup_restore(*, source: Path, include_data: bool = True, write: Write = print) -> RestoreOutcome:
    """Restore the backup in ``source`` into the configured (empty) database and data directory."""
    manifest = _manifest_read(source)
    if manifest["engine"] != connection.vendor:
        raise BackupError(
            f"the backup is of a {manifest['engine']} database and DATABASE_URL names a {connection.vendor} one"
        )
    if connection.introspection.table_names():
        raise BackupError("the database is not empty: restore into a new database (before migrate)")
    data_dir = Path(settings.COBBLESTONE_DATA_DIR)
    if include_data and manifest["data"] and data_dir.exists() and any(data_dir.iterdir()):
        raise BackupError(f"the data directory {data_dir} is not empty")
    _verify_files(source, manifest, write)
    _restore_database(source / manifest["database"], write)
    files = (
        _extract_data(source / manifest["data"], data_dir, write) if include_data and manifest["data"] else 0
    )
    projects = list(Project.objects.order_by("slug"))
    mismatched = [p.slug for p in projects if _keys_differ(source / "keys" / p.slug, p)]
    if mismatched:
        raise BackupError(f"restored keys differ from the backup's key files for {', '.join(mismatched)}")
    applied = set(MigrationRecorder(connection).applied_migrations())
    pending = len(code_migrations() - applied)
    write(f"restored {len(projects)} project(s), {files} data file(s); keys match the key files")
    return RestoreOutcome(projects=[p.slug for p in projects], files=files, pending_migrations=pending)


# --- database ------------------------------------------------------------------------------


def _dump_database(output: Path, vendor: str, write: Write) -> Path:
    started = time.monotonic()
    if vendor == "postgresql":
        target = private_touch(output / "database.pgdump")  # pg_dump writes into it, keeping the mode
        _run(
            [
                "pg_dump",
                "--format=custom",
                "--no-owner",
                "--no-privileges",
                "--file",
                str(target),
                "--dbname",
                _libpq_url(),
            ]
        )
    elif vendor == "sqlite":
        target = private_touch(output / "database.sqlite3")
        _sqlite_copy(Path(connection.settings_dict["NAME"]), target)
    else:
        raise BackupError(f"no backup method for a {vendor} database")
    write(f"database: {target.stat().st_size / 2**20:.1f} MB in {time.monotonic() - started:.1f} s")
    return target


def _restore_database(dump: Path, write: Write) -> None:
    started = time.monotonic()
    connection.close()
    if connection.vendor == "postgresql":
        _run(
            [
                "pg_restore",
                "--no-owner",
                "--no-privileges",
                "--exit-on-error",
                "--dbname",
                _libpq_url(),
                str(dump),
            ]
        )
    else:
        target = Path(connection.settings_dict["NAME"])
        _sqlite_copy(dump, private_touch(target))
        sqlite_files_private(target)
    write(f"database restored: {dump.stat().st_size / 2**20:.1f} MB in {time.monotonic() - started:.1f} s")


def _sqlite_copy(source_path: Path, target_path: Path) -> None:
    """SQLite's online backup: a consistent copy even while other processes write."""
    source = sqlite3.connect(source_path)
    target = sqlite3.connect(target_path)
    try:
        source.backup(target)
    finally:
        target.close()
        source.close()


def _libpq_url() -> str:
    """The database as a libpq connection URI (pg_dump and pg_restore take it as --dbname)."""
    db = connection.settings_dict
    auth = quote(db.get("USER") or "", safe="")
    if db.get("PASSWORD"):
        auth += ":" + quote(db["PASSWORD"], safe="")
    host = db.get("HOST") or ""
    port = f":{db['PORT']}" if db.get("PORT") else ""
    ssl = {k: v for k, v in (db.get("OPTIONS") or {}).items() if k.startswith("ssl")}
    query = f"?{urlencode(ssl)}" if ssl else ""
    return f"postgresql://{auth}{'@' if auth else ''}{host}{port}/{quote(db['NAME'], safe='')}{query}"


def _run(command: list[str]) -> None:
    try:
        done = subprocess.run(command, capture_output=True, text=True, check=False)
    except FileNotFoundError as exc:
        raise BackupError(f"{command[0]} is not installed (Debian: postgresql-client)") from exc
    if done.returncode != 0:
        raise BackupError(f"{command[0]} failed: {done.stderr.strip()[-2000:]}")


# --- data areas and keys ---------------------------------------------------------------------


def _archive_data(target: Path, write: Write) -> Path:
    root = Path(settings.COBBLESTONE_DATA_DIR)
    progress = Progress("data", write=write, unit="bytes")
    with tarfile.open(private_touch(target), "w") as tar:
        if root.exists():
            for path in sorted(root.rglob("*")):
                if path.is_file() and not path.is_symlink():
                    tar.add(path, arcname=str(path.relative_to(root)), recursive=False)
                    progress.advance(path.stat().st_size)
    progress.finish()
    return target


def _extract_data(archive: Path, root: Path, write: Write) -> int:
    root.mkdir(parents=True, exist_ok=True)
    progress = Progress("data restored", write=write, unit="bytes")
    count = 0
    with tarfile.open(archive, "r") as tar:
        for member in tar:
            tar.extract(member, root, filter="data")  # no absolute paths, links or '..' out of root
            if member.isfile():
                count += 1
                progress.advance(member.size)
    progress.finish()
    return count


def _write_keys(directory: Path, projects: list[Project]) -> list[Path]:
    written = []
    for project in projects:
        for field, name in KEY_FILES.items():
            text = getattr(project, field)
            if text:
                path = private_directory(directory / project.slug) / name
                written.append(private_write(path, text))
    return written


def _keys_differ(directory: Path, project: Project) -> bool:
    for field, name in KEY_FILES.items():
        path = directory / name
        stored = path.read_text() if path.exists() else ""
        if stored != getattr(project, field):
            return True
    return False


# --- manifest ----------------------------------------------------------------------------------


def _manifest_read(source: Path) -> dict[str, Any]:
    path = source / "manifest.json"
    if not path.exists():
        raise BackupError(f"{source} is not a backup (no manifest.json)")
    manifest = json.loads(path.read_text())
    if manifest.get("format") != FORMAT:
        raise BackupError(f"unknown backup format {manifest.get('format')!r}")
    return manifest


def _verify_files(source: Path, manifest: dict[str, Any], write: Write) -> None:
    files = manifest["files"]
    for name, expected in files.items():
        path = source / name
        if not path.exists():
            raise BackupError(f"{name} is missing from the backup")
        if path.stat().st_size != expected["bytes"] or _sha256(path) != expected["sha256"]:
            raise BackupError(f"{name} does not match its checksum: the backup is damaged")
    write(f"backup {source}: {len(files)} file(s) verified")


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def backup_default_dir() -> Path:
    stamp = clock.now().strftime("%Y%m%dT%H%M%SZ")
    return Path(settings.VAR_DIR) / "backups" / f"cobblestone-{stamp}"

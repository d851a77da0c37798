"""Files only their owner may read: keys, database copies, the SQLite database.

Each is created with its final mode (0600, a directory 0700) rather than written first and
chmod-ed after, so there is no moment at which the caller's umask (often 022) lets another
user open it.
"""

from __future__ import annotations

import os
from pathlib import Path

FILE_MODE = 0o600
DIRECTORY_MODE = 0o700
# What SQLite writes beside a database: the write-ahead log, its index, the rollback journal.
SQLITE_COMPANIONS = ("-wal", "-shm", "-journal")


def private_directory(path: Path) -> Path:
    """``path`` as a directory only its owner may enter (missing parents get the umask's mode)."""
    path.mkdir(mode=DIRECTORY_MODE, parents=True, exist_ok=True)
    path.chmod(DIRECTORY_MODE)  # mkdir's mode is filtered by the umask; an existing one kept its own
    return path


def private_touch(path: Path) -> Path:
    """``path`` made 0600, created empty if missing, its content kept: for a file another
    program (sqlite3, pg_dump, tarfile) then writes into."""
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT, FILE_MODE)
    try:
        os.fchmod(descriptor, FILE_MODE)
    finally:
        os.close(descriptor)
    return path


def private_write(path: Path, data: str | bytes) -> Path:
    """Write ``data`` into ``path`` (replacing its content), readable by the owner only."""
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, FILE_MODE)
    with os.fdopen(descriptor, "wb") as handle:
        os.fchmod(descriptor, FILE_MODE)
        handle.write(data.encode() if isinstance(data, str) else data)
    return path


def sqlite_files_private(database: Path) -> None:
    """Make an SQLite database and the files SQLite keeps beside it 0600 (those that exist).

    SQLite gives a new journal the database file's mode, so once the database is 0600 the
    files it creates later are too.
    """
    for path in (database, *(Path(f"{database}{suffix}") for suffix in SQLITE_COMPANIONS)):
        try:
            if path.stat().st_mode & 0o077:
                path.chmod(FILE_MODE)
        except FileNotFoundError:
            continue

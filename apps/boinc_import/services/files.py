"""Finding a file in a BOINC project's download or upload area and placing it in Cobblestone's.

BOINC spreads both areas over hashed subdirectories (dir_hier_path, ``uldl_dir_fanout``);
Cobblestone keeps them flat. A file is hard-linked when both areas are on one file system
(no copy, no extra space), else copied.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from collections.abc import Sequence
from pathlib import Path
from urllib.parse import unquote, urlsplit

from apps.boinc_import.domain import hier_dir


class FileClash(Exception):
    """Cobblestone's area already holds a different file of that name."""


def boinc_file(area: Path, name: str, *, fanout: int, urls: Sequence[str] = ()) -> Path | None:
    """The file's path in a BOINC area (hashed subdirectory, flat, or where its URL points)."""
    candidates = [area / hier_dir(name, fanout) / name, area / name]
    for url in urls:
        path = unquote(urlsplit(url).path)
        marker = f"/{area.name}/"
        if marker in path:
            candidates.append(area / path.split(marker, 1)[1])
    for candidate in candidates:
        if candidate.name == name and candidate.is_file():
            return candidate
    return None


def md5_of(path: Path) -> str:
    digest = hashlib.md5()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def file_place(source: Path, target: Path) -> None:
    """Put ``source`` at ``target`` (a hard link, or a copy across file systems). A target
    that already exists must be the same file (same inode, or same size and MD5)."""
    if target.exists():
        same = os.path.samefile(source, target) or (
            target.stat().st_size == source.stat().st_size and md5_of(target) == md5_of(source)
        )
        if not same:
            raise FileClash(f"{target} already exists with other contents")
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(source, target)
    except OSError:
        file_copy(source, target)


def file_copy(source: Path, target: Path) -> None:
    """A copy of ``source`` at ``target`` (for a file that will be written to)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f".{target.name}.importing")
    shutil.copyfile(source, partial)
    os.replace(partial, target)

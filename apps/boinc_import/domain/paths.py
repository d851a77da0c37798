"""Where a BOINC project keeps a file: its download and upload areas are hashed into
subdirectories (sched_util_basic.cpp's dir_hier_path) unless the fanout is 0."""

from __future__ import annotations

import hashlib


def hier_dir(name: str, fanout: int) -> str:
    """The subdirectory of ``name`` in a download or upload area ("" for a flat area):
    hex of (the md5 of the name, hex digits 2-8) modulo the fanout."""
    if fanout <= 0:
        return ""
    digest = hashlib.md5(name.encode()).hexdigest()
    return f"{int(digest[1:8], 16) % fanout:x}"

"""Workunit names and large-file names under locality scheduling (docs/locality.md).

Workunit names have the form ``FILENAME__anything``: the large input file is everything
before the first double underscore. A file name is therefore usable only if cutting a
workunit name built from it gives the same name back.
"""

from __future__ import annotations

SEPARATOR = "__"


def file_name_of_workunit(wu_name: str) -> str | None:
    """The large file a workunit uses, or None if the name does not follow FILENAME__*."""
    file_name, sep, _ = wu_name.partition(SEPARATOR)
    if not sep or not file_name:
        return None
    return file_name


def workunit_name_prefix(file_name: str) -> str:
    """``FILENAME__``: every workunit of the file starts with it (for prefix queries)."""
    return validate_locality_file_name(file_name) + SEPARATOR


def workunit_name(file_name: str, suffix: str) -> str:
    """A workunit name for ``file_name``; the suffix is free (it may itself contain ``__``)."""
    if not suffix:
        raise ValueError("workunit name suffix must not be empty")
    return workunit_name_prefix(file_name) + suffix


def validate_locality_file_name(name: str) -> str:
    """Return ``name`` if it can be a locality large file; raise ValueError otherwise."""
    if not name:
        raise ValueError("locality file name must not be empty")
    if SEPARATOR in name:
        raise ValueError(
            f"locality file name {name!r} contains '__'; workunit names are cut at the first "
            "'__', so the file could never be found from its workunits"
        )
    if name.endswith("_"):
        # "a_" + "__x" reads back as "a": the trailing underscore joins the separator.
        raise ValueError(f"locality file name {name!r} ends with '_', which merges into the '__' separator")
    if "/" in name or "\\" in name:
        raise ValueError(f"locality file name {name!r} contains a path separator")
    if name in {".", ".."}:
        raise ValueError(f"locality file name {name!r} is a directory reference")
    if any(ord(char) < 32 or ord(char) == 127 for char in name):
        raise ValueError(f"locality file name {name!r} contains a control character")
    return name

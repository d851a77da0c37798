"""The project preferences an app declares: extra settings a volunteer sets on the project
preferences page, stored and sent to the client inside ``<project_specific>``.

Declared one per line as ``name: label``; ``name`` is the element the app's job reads (a
lowercase XML name), ``label`` the question the page asks. Values are short text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

NAME_RE = re.compile(r"[a-z_][a-z0-9_]{0,49}")
# Names BOINC itself uses inside <project_specific> (the app selection).
RESERVED_NAMES = frozenset({"apps_selected", "app_id", "allow_non_preferred_apps"})
MAX_LABEL = 200
MAX_VALUE = 200


@dataclass(frozen=True, slots=True)
class PrefField:
    name: str
    label: str


def parse_pref_fields(text: str) -> tuple[list[PrefField], list[str]]:
    """The declared fields and, for each line that is not one, what is wrong with it."""
    declared: list[PrefField] = []
    problems: list[str] = []
    seen: set[str] = set()
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        name, sep, label = line.partition(":")
        name, label = name.strip(), label.strip()
        if not sep or not label:
            problems.append(f"line {number}: write it as name: label")
        elif not NAME_RE.fullmatch(name) or name.lower().startswith("xml"):
            problems.append(f"line {number}: {name[:50]!r} is not a name (a-z, 0-9, _; at most 50)")
        elif name in RESERVED_NAMES:
            problems.append(f"line {number}: {name} is BOINC's own")
        elif name in seen:
            problems.append(f"line {number}: {name} is declared twice")
        elif len(label) > MAX_LABEL:
            problems.append(f"line {number}: the label is longer than {MAX_LABEL} characters")
        else:
            seen.add(name)
            declared.append(PrefField(name=name, label=label))
    return declared, problems

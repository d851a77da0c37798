"""The app settings that add_app and update_app take, with BOINC's option names."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.core.management.base import CommandError


def switch(text: str) -> bool:
    """An on/off setting: 1/0, yes/no, true/false, on/off."""
    value = text.strip().lower()
    if value in ("1", "yes", "true", "on"):
        return True
    if value in ("0", "no", "false", "off"):
        return False
    raise ValueError(text)


switch.__name__ = "0 or 1"  # argparse names the converter in its error message

# (option, type, help); each option names the App field it sets. A switch given alone is on.
APP_OPTIONS: list[tuple[str, Callable[[str], Any], str]] = [
    ("user_friendly_name", str, "the name volunteers see"),
    ("min_quorum", int, "valid results needed to decide a workunit"),
    ("target_nresults", int, "results created at first"),
    ("max_error_results", int, "error results before the workunit fails"),
    ("max_total_results", int, "results before the workunit fails"),
    ("max_success_results", int, "successful results without consensus before the workunit fails"),
    ("delay_bound", float, "seconds a host has to return a result"),
    ("adaptive_replication", switch, "1: one result per workunit on trusted hosts, min_quorum on others"),
    ("validator", str, "bitwise, tolerant_numeric, trivial, or DOTTED.PATH of your validator"),
    ("init_script", str, '"CMD ARGS" checking one result (script validator; exit 0 = valid)'),
    ("compare_script", str, '"CMD ARGS" comparing two results (script validator; exit 0 = equivalent)'),
    ("assimilate_script", str, '"CMD ARGS" run for each finished workunit (script assimilator)'),
    ("assimilator", str, "DOTTED.PATH of an assimilator hook"),
    (
        "homogeneous_redundancy",
        int,
        "0 off, 1 fine, 2 coarse: a workunit's instances go to hosts of one class",
    ),
    ("homogeneous_app_version", switch, "a workunit's instances all run the version its first was sent with"),
]


def add_app_options(parser: Any) -> None:
    for name, kind, help_text in APP_OPTIONS:
        if kind is switch:
            parser.add_argument(f"--{name}", type=kind, nargs="?", const=True, help=help_text)
        else:
            parser.add_argument(f"--{name}", type=kind, help=help_text)


def app_fields(opts: dict[str, Any]) -> dict[str, Any]:
    """The App fields the command line sets; refuses negative numbers."""
    fields = {name: opts.get(name) for name, _kind, _help in APP_OPTIONS}
    for key, value in fields.items():
        if isinstance(value, int | float) and not isinstance(value, bool) and value < 0:
            raise CommandError(f"--{key} must not be negative")
    return fields

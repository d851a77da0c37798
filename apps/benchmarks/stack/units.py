"""deploy/'s files as a launcher reads them: the environment file and the systemd units.

The launcher starts each process with the command lines of its unit (ExecStartPre, then
ExecStart), expanded the way systemd expands them, with the checkout and its virtualenv in
place of /srv/cobblestone, so a test runs what an operator's machine runs.
"""

from __future__ import annotations

import re
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path

from apps.core.private_files import private_write

BASE_DIR = Path(__file__).resolve().parents[3]
DEPLOY_DIR = BASE_DIR / "deploy"
ENV_EXAMPLE = DEPLOY_DIR / "cobblestone.env.example"
UNITS_DIR = DEPLOY_DIR / "systemd"
# Where the units expect the checkout and its virtualenv on a server.
UNIT_CHECKOUT = "/srv/cobblestone"
UNIT_VENV_BIN = f"{UNIT_CHECKOUT}/.venv/bin"

_LINE = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)$")
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)")


def env_file_read(path: Path) -> dict[str, str]:
    """KEY=value lines of a systemd EnvironmentFile (comments and blank lines skipped;
    one pair of surrounding quotes removed)."""
    values: dict[str, str] = {}
    for number, raw in enumerate(path.read_text().splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        match = _LINE.match(line)
        if match is None:
            raise ValueError(f"{path}:{number}: not KEY=value: {raw!r}")
        key, value = match.groups()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        values[key] = value
    return values


def env_file_write(path: Path, values: dict[str, str]) -> None:
    """Write ``values`` as an EnvironmentFile (readable by the owner only: it holds secrets)."""
    for key, value in values.items():
        if re.search(r"[\s'\"$`\\]", value):
            raise ValueError(f"{key}: the value must be a shell-safe word, got {value!r}")
    private_write(path, "".join(f"{k}={v}\n" for k, v in values.items()))


@dataclass(frozen=True, slots=True)
class UnitCommands:
    """A unit's commands, expanded: ``pre`` run in order before ``start``."""

    pre: tuple[tuple[str, ...], ...]
    start: tuple[str, ...]
    unset_environment: tuple[str, ...]


def unit_commands(unit: str, env: dict[str, str], *, instance: str = "") -> UnitCommands:
    """The ExecStartPre/ExecStart lines of ``deploy/systemd/<unit>``, expanded as systemd does
    (``%i``, ``%%``, ``$VAR`` and ``${VAR}`` from ``env``) and pointed at this checkout."""
    pre: list[tuple[str, ...]] = []
    start: tuple[str, ...] = ()
    unset: list[str] = []
    for raw in (UNITS_DIR / unit).read_text().splitlines():
        key, sep, value = raw.strip().partition("=")
        if not sep:
            continue
        if key in ("ExecStartPre", "ExecStart"):
            words = tuple(_expand(value.lstrip("-@+!"), env, instance))
            if key == "ExecStart":
                start = words
            else:
                pre.append(words)
        elif key == "UnsetEnvironment":
            unset.extend(value.split())
    if not start:
        raise ValueError(f"{unit}: no ExecStart")
    return UnitCommands(pre=tuple(pre), start=start, unset_environment=tuple(unset))


def _expand(line: str, env: dict[str, str], instance: str) -> list[str]:
    line = line.replace("%%", "\0").replace("%i", instance)
    if "%" in line:
        raise ValueError(f"unsupported systemd specifier in {line!r}")
    line = line.replace("\0", "%")
    words = []
    for word in shlex.split(line):
        word = _VAR.sub(lambda m: env.get(m.group(1) or m.group(2), ""), word)
        words.append(_local_path(word))
    return words


def _local_path(word: str) -> str:
    """/srv/cobblestone/.venv/bin/X is this interpreter's X; /srv/cobblestone is the checkout."""
    if word.startswith(UNIT_VENV_BIN + "/"):
        return str(Path(sys.executable).parent / word[len(UNIT_VENV_BIN) + 1 :])
    if word == UNIT_CHECKOUT or word.startswith(UNIT_CHECKOUT + "/"):
        return str(BASE_DIR) + word[len(UNIT_CHECKOUT) :]
    return word

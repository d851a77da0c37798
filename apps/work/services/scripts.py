"""Running a project's commands (script validator and assimilator) as BOINC's script_* daemons do.

A command is configured as one string, split as a shell would split it (``shlex``) but run
without a shell. Its words that are keywords (``files``, ``result_id``...) are replaced by
their values; the others are passed as they are. The command runs with a scrubbed
environment (only PATH, LANG and TZ: the server's secrets and database settings stay out)
and a timeout; on timeout its whole process group is killed, so a script that started
children of its own does not leave them holding its pipes.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

from apps.work.domain.science import ValidatorFailed

SCRIPT_TIMEOUT_SECONDS = 60.0
OUTPUT_TAIL = 2000  # characters of a failed command's output kept for the log

# BOINC's VAL_RESULT_TRANSIENT_ERROR: a validator script exiting with it asks for a retry.
TRANSIENT_EXIT_STATUS = 3


class ScriptFailed(ValidatorFailed):
    """The command could not run, crashed (killed by a signal) or outlasted its timeout."""


def command_words(command: str) -> list[str]:
    """The words of a configured command; ValueError for an empty or badly quoted one."""
    words = shlex.split(command)
    if not words:
        raise ValueError("the command is empty")
    return words


def expand(words: Sequence[str], values: Mapping[str, Sequence[str]], default: Sequence[str]) -> list[str]:
    """The argument list: the program, then each word replaced by its keyword's values. A
    command of the program alone gets ``default`` keywords (BOINC's rule)."""
    program, *args = words
    if not args:
        args = list(default)
    argv = [program]
    for word in args:
        argv.extend(values.get(word, [word]))
    return argv


def _environment() -> dict[str, str]:
    return {
        "PATH": os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin"),
        "LANG": "C.UTF-8",
        "TZ": "UTC",
    }


def script_run(
    argv: Sequence[str], *, cwd: Path | None = None, timeout: float | None = None
) -> tuple[int, str]:
    """Run ``argv``; its exit status and the end of its output (stdout and stderr). Raises ScriptFailed if it cannot be started,
    is killed by a signal, or runs longer than ``timeout`` (default SCRIPT_TIMEOUT_SECONDS)."""
    limit = SCRIPT_TIMEOUT_SECONDS if timeout is None else timeout
    try:
        process = subprocess.Popen(
            list(argv),
            cwd=cwd if cwd is not None and cwd.is_dir() else None,
            env=_environment(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group, killed whole on timeout
        )
    except OSError as exc:
        raise ScriptFailed(f"cannot run {argv[0]!r}: {exc}") from exc
    try:
        output, _ = process.communicate(timeout=limit)
    except subprocess.TimeoutExpired:
        _kill_group(process)
        raise ScriptFailed(f"{shlex.join(argv)} ran longer than {limit:g} s and was killed") from None
    if process.returncode < 0:
        raise ScriptFailed(f"{shlex.join(argv)} was killed by signal {-process.returncode}: {_tail(output)}")
    return process.returncode, _tail(output)


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.communicate()


def _tail(output: bytes | None) -> str:
    return (output or b"").decode("utf-8", "replace")[-OUTPUT_TAIL:]


def script_check(argv: Sequence[str], *, cwd: Path | None = None) -> None:
    """Run a command whose non-zero exit is a failure (the assimilator's); raises ScriptFailed
    with the end of its output."""
    status, output = script_run(argv, cwd=cwd)
    if status != 0:
        raise ScriptFailed(f"{shlex.join(argv)} exited with status {status}: {output}")

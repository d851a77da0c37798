"""How the validator judges an app's results: the app's validator behind one interface.

``App.validator`` names a built-in validator (bitwise, as BOINC's sample_bitwise_validator;
tolerant numeric; trivial: every success is valid) or a project's own by its dotted path
(the interface of BOINC's validate_util2, described in apps.work.domain.science); an app
with ``init_script`` or ``compare_script`` uses BOINC's script validator. The built-in ones
implement the same interface.

A result's outputs are its uploaded files in ordinal order. A missing output file (not
optional), or one that is not a file, makes the result invalid (a validate error); an upload
area that cannot be read at all is a transient error, retried later, as is
``TransientValidationError`` raised by a validator. A validator that fails (a script that
crashes or times out, Python code that raises) raises ValidatorFailed: its workunit is left
to its claim's lease and validated again later.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from apps.applications.models import App, science_object_load
from apps.projects.models import Project
from apps.work.domain.science import (
    InvalidResult,
    OutputFileInfo,
    ResultOutput,
    TransientValidationError,
    ValidatorFailed,
)
from apps.work.domain.validation import bitwise_equal, tolerant_numeric_equal
from apps.work.queries import output_names_by_result
from apps.work.services.scripts import TRANSIENT_EXIT_STATUS, command_words, expand, script_run

logger = logging.getLogger(__name__)

OutputNames = list[tuple[str, bool, str]]  # a result's uploaded output files: (name, optional, open name)
Choose = Callable[[Sequence[Any]], tuple[int | None, Sequence[int]]]

__all__ = ["TransientValidationError", "ValidatorFailed"]


@dataclass(frozen=True, slots=True)
class Checked:
    """A result whose outputs ``init_result`` accepted, with what it returned."""

    result: ResultOutput
    data: Any


Payload = Checked | None  # None: the result is invalid (output missing, or init_result refused it)


class Comparison:
    """An app's validator, called the way BOINC's validate_util2 calls it.

    ``reads_files`` False (the trivial validator) skips reading the output file list. A
    project's validator (not ``builtin``) gets only results whose outputs are all there (a
    missing one is a validate error; the built-in ones find out as they read), without the
    optional files the client did not send, and its
    answers are remembered, so that comparisons made before the batch's locks (a script may
    take long) are not made again under them."""

    def __init__(self, validator: Any, *, reads_files: bool = True, builtin: bool = False) -> None:
        self._init = validator.init_result
        self._compare = validator.compare_results
        self._check_set = getattr(validator, "check_set", None)
        self._cleanup = getattr(validator, "cleanup_result", None)
        self.reads_files = reads_files
        self.builtin = builtin
        self._answers: dict[tuple[int, int], bool] = {}

    def init(self, result: ResultOutput) -> Payload:
        if not self.builtin:
            present = tuple(f for f in result.files if f.path.is_file())
            if any(not f.optional for f in result.files if f not in present):
                return None
            if len(present) < len(result.files):  # optional files the client did not send
                result = replace(result, files=present)
        try:
            return Checked(result, self._init(result))
        except InvalidResult as exc:
            logger.info("validator: result %s is invalid: %s", result.id, exc)
            return None
        except (TransientValidationError, ValidatorFailed):
            raise
        except Exception as exc:  # the project's code may raise anything
            raise ValidatorFailed(f"init_result of result {result.id} raised {exc!r}") from exc

    def compare(self, a: Payload, b: Payload) -> bool:
        if a is None or b is None:
            return False
        if self.builtin:
            return self._compare(a.result, a.data, b.result, b.data)
        key = (a.result.id, b.result.id)
        known = self._answers.get(key)
        if known is not None:
            return known
        try:
            answer = bool(self._compare(a.result, a.data, b.result, b.data))
        except (TransientValidationError, ValidatorFailed):
            raise
        except Exception as exc:
            raise ValidatorFailed(
                f"compare_results of results {a.result.id}, {b.result.id} raised {exc!r}"
            ) from exc
        self._answers[key] = self._answers[key[::-1]] = answer  # compare_results is symmetric
        return answer

    def choose(self, min_quorum: int) -> Choose | None:
        """The project's ``check_set`` over the readable candidates, if it has one."""
        check_set = self._check_set
        if check_set is None:
            return None

        def choose(candidates: Sequence[Any]) -> tuple[int | None, Sequence[int]]:
            pairs = [(c.payload.result, c.payload.data) for c in candidates]
            try:
                decision = check_set(pairs, min_quorum)
            except (TransientValidationError, ValidatorFailed):
                raise
            except Exception as exc:
                raise ValidatorFailed(f"check_set raised {exc!r}") from exc
            if decision is None:
                return None, ()
            canonical, valid = decision
            if canonical is not None and canonical not in {c.id for c in candidates}:
                raise ValidatorFailed(f"check_set chose {canonical!r}, not one of the results given")
            return canonical, tuple(valid)

        return choose

    def cleanup(self, payloads: Sequence[Payload]) -> None:
        """``cleanup_result`` for each result ``init_result`` accepted; a failure is logged."""
        if self._cleanup is None:
            return
        for payload in payloads:
            if payload is None:
                continue
            try:
                self._cleanup(payload.result, payload.data)
            except Exception:
                logger.exception("validator: cleanup_result of result %s failed", payload.result.id)


class FileContents:
    """The built-in validators' ``init_result``: the outputs' bytes, in order."""

    def init_result(self, result: ResultOutput) -> tuple[bytes, ...]:
        contents: list[bytes] = []
        for f in result.files:
            try:
                contents.append(f.path.read_bytes())
            except FileNotFoundError:
                if not f.optional:
                    raise InvalidResult(f"{f.path.name} is missing") from None
                contents.append(b"")
            except (IsADirectoryError, PermissionError) as exc:
                raise InvalidResult(f"{f.path.name} is not a file the client uploaded") from exc
            except OSError as exc:
                raise TransientValidationError(f"{f.path}: {exc}") from exc
        return tuple(contents)


class BitwiseValidator(FileContents):
    """BOINC's sample_bitwise_validator: outputs must be byte-for-byte identical."""

    def compare_results(self, r1: ResultOutput, data1: Any, r2: ResultOutput, data2: Any) -> bool:
        return len(data1) == len(data2) and all(map(bitwise_equal, data1, data2))


class TolerantNumericValidator(FileContents):
    """Numbers equal within a tolerance, other words exactly (``tolerant_numeric_equal``)."""

    def __init__(self, rel_tol: float, abs_tol: float) -> None:
        self.rel_tol, self.abs_tol = rel_tol, abs_tol

    def compare_results(self, r1: ResultOutput, data1: Any, r2: ResultOutput, data2: Any) -> bool:
        if len(data1) != len(data2):
            return False
        return all(
            tolerant_numeric_equal(x, y, rel_tol=self.rel_tol, abs_tol=self.abs_tol)
            for x, y in zip(data1, data2, strict=True)
        )


class TrivialValidator:
    """BOINC's sample_trivial_validator: every result that reported success is valid."""

    def init_result(self, result: ResultOutput) -> None:
        return None

    def compare_results(self, r1: ResultOutput, data1: Any, r2: ResultOutput, data2: Any) -> bool:
        return True


class ScriptValidator:
    """BOINC's script validator: ``init_script`` checks one result, ``compare_script`` two.

    Keywords: ``files``, ``result_id``, ``runtime`` and, for the compare command's second
    result, ``files2``, ``result_id2``, ``runtime2``; a command of the program alone gets the
    file paths (``files``; ``files files2``). Exit status 0 means valid / equivalent,
    TRANSIENT_EXIT_STATUS (3) asks for a retry, any other says invalid / different."""

    def __init__(self, init_script: str, compare_script: str, cwd: Path) -> None:
        self.init_words = command_words(init_script) if init_script.strip() else None
        self.compare_words = command_words(compare_script) if compare_script.strip() else None
        self.cwd = cwd

    def init_result(self, result: ResultOutput) -> None:
        if self.init_words is None:
            return
        argv = expand(self.init_words, _keywords(result, ""), ["files"])
        status, output = script_run(argv, cwd=self.cwd)
        if status == TRANSIENT_EXIT_STATUS:
            raise TransientValidationError(f"init script asked for a retry: {output}")
        if status != 0:
            raise InvalidResult(f"init script exited with status {status}: {output}")

    def compare_results(self, r1: ResultOutput, data1: Any, r2: ResultOutput, data2: Any) -> bool:
        if self.compare_words is None:
            return True
        values = {**_keywords(r1, ""), **_keywords(r2, "2")}
        status, output = script_run(expand(self.compare_words, values, ["files", "files2"]), cwd=self.cwd)
        if status == TRANSIENT_EXIT_STATUS:
            raise TransientValidationError(f"compare script asked for a retry: {output}")
        return status == 0


def _keywords(result: ResultOutput, suffix: str) -> dict[str, list[str]]:
    return {
        f"files{suffix}": [str(p) for p in result.paths],
        f"result_id{suffix}": [str(result.id)],
        f"runtime{suffix}": [f"{result.runtime:f}"],  # BOINC's %f
    }


def comparison_for(app: App) -> Comparison:
    """The app's validator: its scripts, a built-in one, or the project's by dotted path."""
    if app.init_script.strip() or app.compare_script.strip():
        return Comparison(ScriptValidator(app.init_script, app.compare_script, app.project.data_dir))
    if app.validator in ("", App.Validator.BITWISE):
        return Comparison(BitwiseValidator(), builtin=True)
    if app.validator == App.Validator.TOLERANT_NUMERIC:
        return Comparison(
            TolerantNumericValidator(app.validator_rel_tol, app.validator_abs_tol), builtin=True
        )
    if app.validator == App.Validator.TRIVIAL:
        return Comparison(TrivialValidator(), reads_files=False, builtin=True)
    try:
        validator = science_object_load(app.validator)
    except Exception as exc:
        raise ValidatorFailed(f"cannot load validator {app.validator!r}: {exc!r}") from exc
    return Comparison(validator() if isinstance(validator, type) else validator)


def output_files_of(result_ids: Sequence[int]) -> dict[int, OutputNames]:
    """The uploaded output files of these results, in ordinal order, in one statement."""
    files: dict[int, OutputNames] = {i: [] for i in result_ids}
    if not files:
        return files
    for result_id, name, optional, open_name in output_names_by_result(list(files)):
        files[result_id].append((name, bool(optional), open_name))
    return files


def result_output(
    upload_dir: Path,
    result_id: int,
    name: str,
    workunit_id: int,
    host_id: int | None,
    runtime: float,
    outputs: OutputNames,
) -> ResultOutput:
    files = tuple(
        OutputFileInfo(upload_dir / n, open_name or n, optional) for n, optional, open_name in outputs
    )
    return ResultOutput(result_id, name, workunit_id, host_id, runtime, files)


def payloads_read(
    project: Project, results: Sequence[Any], comparison: Comparison, outputs: dict[int, OutputNames]
) -> dict[int, Payload]:
    """Each result's ``init_result`` on its uploaded outputs (``outputs``: ``output_files_of``;
    ``results``: rows with id, name, workunit_id, host_id and elapsed_time). Raises
    TransientValidationError if the upload area cannot be read now, ValidatorFailed if the
    validator fails."""
    upload_dir = project.upload_dir
    if comparison.reads_files and not upload_dir.is_dir():
        raise TransientValidationError(f"upload area {upload_dir} is not readable")
    payloads: dict[int, Payload] = {}
    for r in results:
        files = outputs.get(r.id, []) if comparison.reads_files else []
        output = result_output(upload_dir, r.id, r.name, r.workunit_id, r.host_id, r.elapsed_time, files)
        payloads[r.id] = comparison.init(output)
    return payloads

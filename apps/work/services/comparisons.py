"""How the validator compares an app's results, and reads their outputs from the upload area.

``App.validator`` names the comparison: bitwise (BOINC's sample_bitwise_validator), tolerant
numeric, trivial (every success is valid), or a project's own, added with
``comparison_register``. A result's outputs are its uploaded files' contents in ordinal order;
a missing or unreadable output makes the result's payload None (a validate error), while an
upload area that cannot be read at all is a transient error, retried later.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from apps.applications.models import App
from apps.core.db import any_of, fetch_rows, quoted_table
from apps.projects.models import Project
from apps.work.domain.validation import bitwise_equal, tolerant_numeric_equal
from apps.work.models import OutputFile

Payload = tuple[bytes, ...] | None  # one bytes per uploaded output file; None = unreadable
Compare = Callable[[Payload, Payload], bool]
OutputNames = list[tuple[str, bool]]  # a result's uploaded output files: (name, optional)


class TransientValidationError(Exception):
    """The outputs cannot be read now (upload area missing or failing); retry later."""


@dataclass(frozen=True, slots=True)
class Comparison:
    """How an app's results are compared; ``reads_files`` False skips reading outputs."""

    compare: Compare
    reads_files: bool = True


def _pairwise(equal: Callable[[bytes, bytes], bool]) -> Compare:
    def compare(a: Payload, b: Payload) -> bool:
        if a is None or b is None or len(a) != len(b):
            return False
        return all(equal(x, y) for x, y in zip(a, b, strict=True))

    return compare


def _bitwise(app: App) -> Comparison:
    return Comparison(_pairwise(bitwise_equal))


def _tolerant(app: App) -> Comparison:
    rel, abs_ = app.validator_rel_tol, app.validator_abs_tol
    return Comparison(_pairwise(lambda x, y: tolerant_numeric_equal(x, y, rel_tol=rel, abs_tol=abs_)))


def _trivial(app: App) -> Comparison:
    # BOINC's sample_trivial_validator: every result that reported success is valid.
    return Comparison(lambda a, b: True, reads_files=False)


# App.validator -> comparison. A project adds its own with ``comparison_register``.
COMPARISONS: dict[str, Callable[[App], Comparison]] = {
    App.Validator.BITWISE: _bitwise,
    App.Validator.TOLERANT_NUMERIC: _tolerant,
    App.Validator.TRIVIAL: _trivial,
}


def comparison_register(name: str, factory: Callable[[App], Comparison]) -> None:
    """Make ``name`` usable as App.validator (a project's own compare_results)."""
    COMPARISONS[name] = factory


def comparison_for(app: App) -> Comparison:
    return COMPARISONS.get(app.validator, _bitwise)(app)


def output_files_of(result_ids: Sequence[int]) -> dict[int, OutputNames]:
    """The uploaded output files of these results, in ordinal order, in one statement."""
    files: dict[int, OutputNames] = {i: [] for i in result_ids}
    if not files:
        return files
    cond, params = any_of("f.result_id", sorted(files), "bigint")
    sql = (
        f"SELECT f.result_id, f.name, f.optional FROM {quoted_table(OutputFile)} f "
        f"WHERE {cond} AND f.upload = %s ORDER BY f.result_id, f.ordinal"
    )
    for result_id, name, optional in fetch_rows(sql, [*params, True]):
        files[result_id].append((name, bool(optional)))
    return files


def payloads_read(
    project: Project, result_ids: Sequence[int], comparison: Comparison, outputs: dict[int, OutputNames]
) -> dict[int, Payload]:
    """Each result's uploaded outputs (``outputs``: ``output_files_of``), read from the upload
    area; raises TransientValidationError if they cannot be read now."""
    if not comparison.reads_files:
        return {i: () for i in result_ids}
    upload_dir = project.upload_dir
    if not upload_dir.is_dir():
        raise TransientValidationError(f"upload area {upload_dir} is not readable")
    return {i: _read(upload_dir, outputs[i]) for i in result_ids}


def _read(upload_dir: Path, outputs: OutputNames) -> Payload:
    contents: list[bytes] = []
    for name, optional in outputs:
        path = upload_dir / name
        try:
            contents.append(path.read_bytes())
        except FileNotFoundError:
            if not optional:
                return None
            contents.append(b"")
        except (IsADirectoryError, PermissionError):
            return None  # not a file the client uploaded: permanent
        except OSError as exc:
            raise TransientValidationError(f"{path}: {exc}") from exc
    return tuple(contents)

"""What a project's own validator sees and raises (BOINC's validate_util2 interface).

A validator is a module, or an object, with these functions (App.validator names it by its
dotted path):

* ``init_result(result: ResultOutput) -> data``: read and check one result's output files;
  the value returned is handed back to the other functions. Raise ``InvalidResult`` for
  an output that is malformed (the result gets the VALIDATE_ERROR outcome and is invalid),
  ``TransientValidationError`` for one that cannot be judged now (the workunit is
  validated again later).
* ``compare_results(r1, data1, r2, data2) -> bool``: are the two results equivalent? It
  must be symmetric.
* optional ``check_set(results: list[tuple[ResultOutput, data]], min_quorum: int)``: choose
  the canonical result from the readable results of a workunit that has none yet; return
  ``None`` (no decision: all stay inconclusive and another replica is made) or
  ``(canonical_id, valid_ids)`` (the others become invalid). Without it, a result that
  agrees with ``min_quorum`` results (itself included) becomes canonical.
* optional ``cleanup_result(result, data)``: free what ``init_result`` made.

Any other exception, from any of them, is taken for a fault of the validator: the workunit
is left as it was and validated again later, the others of its batch go on.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


class InvalidResult(Exception):
    """Raised by ``init_result``: the result's output is malformed."""


class TransientValidationError(Exception):
    """The outputs cannot be judged now (upload area unreadable...); retry later."""


class ValidatorFailed(Exception):
    """The validator itself failed (a script crashed or timed out, Python code raised)."""


@dataclass(frozen=True, slots=True)
class OutputFileInfo:
    """One uploaded output file: where it is and the name the application wrote it as."""

    path: Path
    logical_name: str
    optional: bool = False


@dataclass(frozen=True, slots=True)
class ResultOutput:
    """One result as a validator sees it."""

    id: int
    name: str
    workunit_id: int
    host_id: int | None
    runtime: float  # elapsed seconds, as the client reported
    files: tuple[OutputFileInfo, ...]

    @property
    def paths(self) -> list[Path]:
        return [f.path for f in self.files]

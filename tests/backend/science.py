"""Validators the tests name by dotted path, as a project names its own (App.validator)."""

from __future__ import annotations

from typing import Any

from apps.work.domain.science import InvalidResult, ResultOutput

TOLERANCE = 0.01
CLEANED: list[int] = []


class NumberValidator:
    """Each output holds one number; two results agree within TOLERANCE (relative)."""

    def init_result(self, result: ResultOutput) -> float:
        text = result.paths[0].read_text()
        try:
            return float(text)
        except ValueError:
            raise InvalidResult(f"not a number: {text[:40]!r}") from None

    def compare_results(self, r1: ResultOutput, data1: float, r2: ResultOutput, data2: float) -> bool:
        return abs(data1 - data2) <= TOLERANCE * max(abs(data1), abs(data2))

    def cleanup_result(self, result: ResultOutput, data: float) -> None:
        CLEANED.append(result.id)


def init_result(result: ResultOutput) -> bytes:
    """A module-level validator whose compare raises for outputs starting with b"boom"."""
    return result.paths[0].read_bytes()


def compare_results(r1: ResultOutput, data1: bytes, r2: ResultOutput, data2: bytes) -> bool:
    if data1.startswith(b"boom"):
        raise ValueError("validator bug")
    return data1 == data2


class Largest:
    """check_set: the largest number is canonical and alone valid, once two results are in."""

    init_result = NumberValidator.init_result
    compare_results = NumberValidator.compare_results

    def check_set(
        self, results: list[tuple[ResultOutput, Any]], min_quorum: int
    ) -> tuple[int, list[int]] | None:
        if len(results) < min_quorum:
            return None
        best = max(results, key=lambda pair: pair[1])[0]
        return best.id, [best.id]

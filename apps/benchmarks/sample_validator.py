"""The Python validator ``bench_validators`` measures: a typical project validator that parses
each output (a name and a hexadecimal number per line) and compares the parsed values."""

from __future__ import annotations

from apps.work.domain.science import InvalidResult, ResultOutput


def init_result(result: ResultOutput) -> list[tuple[str, int]]:
    lines = []
    for path in result.paths:
        for line in path.read_text().splitlines():
            name, _, value = line.partition(" ")
            try:
                lines.append((name, int(value, 16)))
            except ValueError:
                raise InvalidResult(f"{path.name}: not a name and a number: {line[:40]!r}") from None
    return lines


def compare_results(
    r1: ResultOutput, data1: list[tuple[str, int]], r2: ResultOutput, data2: list[tuple[str, int]]
) -> bool:
    return data1 == data2

"""Progress lines for long commands: "creating workunits: 1200/3000 (40 %, 310/s, 6 s left)".

A line is written at most every ``every`` seconds, so a fast run prints only its summary and
a slow one shows it is moving. Commands write it to stderr, keeping stdout for results.
"""

from __future__ import annotations

import time
from collections.abc import Callable


class Progress:
    def __init__(
        self,
        label: str,
        *,
        total: int | None = None,
        write: Callable[[str], object],
        every: float = 2.0,
        unit: str = "",
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.label = label
        self.total = total
        self.write = write
        self.every = every
        self.unit = unit
        self.clock = clock
        self.count = 0
        self.started = clock()
        self.last = self.started

    def advance(self, n: int = 1) -> None:
        self.count += n
        now = self.clock()
        if now - self.last >= self.every:
            self.last = now
            self.write(self.line(now))

    def finish(self) -> None:
        """The summary line: how many, in how long."""
        seconds = self.clock() - self.started
        self.write(f"{self.label}: {self._amount(self.count)} in {seconds:.1f} s")

    def line(self, now: float) -> str:
        elapsed = max(now - self.started, 1e-9)
        rate = self.count / elapsed
        text = f"{self.label}: {self._amount(self.count)}"
        if self.total:
            text += (
                f"/{self._amount(self.total)} ({100 * self.count / self.total:.0f} %, {self._amount(rate)}/s"
            )
            if rate > 0:
                text += f", {max(self.total - self.count, 0) / rate:.0f} s left"
            return text + ")"
        return text + f" ({self._amount(rate)}/s)"

    def _amount(self, value: float) -> str:
        if self.unit == "bytes":
            for factor, suffix in ((2**30, "GB"), (2**20, "MB"), (2**10, "KB")):
                if value >= factor:
                    return f"{value / factor:.1f} {suffix}"
            return f"{value:.0f} B"
        return f"{value:,.0f}"

"""A progress bar for long sweeps: done/total, ETA and the best result so
far (of the group, e.g. the op, that the latest result belongs to). Redrawn in place on a terminal; on a pipe or file, one line per
tenth of the sweep (and at the end), so logs stay short."""

from __future__ import annotations

import sys
import time
from typing import TextIO


def _clock(seconds: float) -> str:
    seconds = int(round(seconds))
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


class Progress:
    def __init__(self, total: int, label: str = "tuning", stream: TextIO | None = None,
                 enabled: bool = True, width: int = 24):
        self.total = total
        self.label = label
        self.stream = stream or sys.stderr
        self.enabled = enabled and total > 0
        self.width = width
        self.done = self.failed = 0
        self.bests: dict[str, tuple[int, str]] = {}
        self.group = ""
        self.start = time.monotonic()
        self._tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        self._next_line = 0.0

    def update(self, cycles: int | None, what: str = "", group: str = "") -> None:
        self.done += 1
        self.group = group
        best = self.bests.get(group)
        if cycles is None:
            self.failed += 1
        elif best is None or cycles < best[0]:
            self.bests[group] = (cycles, what)
        self.draw()

    def line(self) -> str:
        elapsed = time.monotonic() - self.start
        filled = self.width * self.done // max(1, self.total)
        bar = "#" * filled + "." * (self.width - filled)
        eta = elapsed / self.done * (self.total - self.done) if self.done else 0.0
        mine = self.bests.get(self.group)
        where = f" of {self.group}" if self.group else ""
        best = f"best{where} {mine[0]} cycles: {mine[1]}" if mine else "best -"
        failed = f", {self.failed} failed" if self.failed else ""
        return (f"{self.label} [{bar}] {self.done}/{self.total}{failed} "
                f"elapsed {_clock(elapsed)} ETA {_clock(eta)} {best}")

    def draw(self) -> None:
        if not self.enabled:
            return
        if self._tty:
            self.stream.write("\r\033[K" + self.line())
            if self.done >= self.total:
                self.stream.write("\n")
        elif self.done >= self._next_line or self.done >= self.total:
            self.stream.write(self.line() + "\n")
            self._next_line = self.done + max(1, self.total // 10)
        self.stream.flush()

"""The one exception the simulator raises, formatted like an MLIR diagnostic.

`str(SimulationError)` is one line, `file:line:col: error: <kind>: <message>`,
so tools print it as is and tests compare it exactly.
"""

from __future__ import annotations

from mlir import ir

from npu import diagnostics

# Fault kinds, in the order the issue lists them.
BOUNDS = "bounds"
CAPACITY = "capacity"
ALIGNMENT = "alignment"
UNINITIALIZED = "uninitialized"
FLAG = "flag"
DEADLOCK = "deadlock"
RACE = "race"
UNSUPPORTED = "unsupported"
INVALID = "invalid"


def where_of(loc: ir.Location | None) -> str:
    """`file:line:col` of a location (the tool's display name for unnamed input)."""
    if loc is None:
        return diagnostics.current().display_name
    filename, line, col = diagnostics._location_parts(loc)  # noqa: SLF001 (shared helper)
    if filename == "-":
        filename = diagnostics.current().display_name
    return f"{filename}:{line}:{col}" if line else filename


class Locator:
    """`where_of` remembering the last location it was asked for: a decode
    asks for every op's, and neighbouring ops mostly share one (a fused
    node's); comparing two locations is one C call, unwrapping one was 4%
    of a timing-only BERT-12 on 32 cores. One per decode (it keeps the last
    location, and so its context, alive)."""

    def __init__(self) -> None:
        self.loc: ir.Location | None = None
        self.where = ""

    def __call__(self, loc: ir.Location | None) -> str:
        if loc is not None and self.loc is not None and loc == self.loc:
            return self.where
        if loc is None:
            return where_of(loc)
        filename, line, col = diagnostics._location_parts(loc)  # noqa: SLF001
        if filename == "-":  # the display name is the caller's: not kept
            return where_of(loc)
        self.loc, self.where = loc, f"{filename}:{line}:{col}" if line else filename
        return self.where


class SimulationError(Exception):
    """A fault of the simulated program (or IR the simulator cannot run)."""

    def __init__(self, kind: str, message: str, where: str):
        super().__init__(f"{where}: error: {kind}: {message}")
        self.kind = kind
        self.message = message
        self.where = where

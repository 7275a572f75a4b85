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


class SimulationError(Exception):
    """A fault of the simulated program (or IR the simulator cannot run)."""

    def __init__(self, kind: str, message: str, where: str):
        super().__init__(f"{where}: error: {kind}: {message}")
        self.kind = kind
        self.message = message
        self.where = where

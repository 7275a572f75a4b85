"""Diagnostics in MLIR's `file:line:col: severity: message` form.

MLIR's own diagnostics (parse and IRDL verifier errors) and the ones our
Python verifiers and passes raise all end up in one `DiagnosticEngine`, so
the tools print them uniformly and `--verify-diagnostics` sees all of them.
"""

from __future__ import annotations

import contextlib
import contextvars
import re
import sys
from dataclasses import dataclass, field
from typing import Iterator, TextIO

from mlir import ir

SEVERITIES = ("error", "warning", "remark", "note")


@dataclass(frozen=True)
class Diagnostic:
    severity: str
    message: str
    filename: str = "-"
    line: int = 0
    col: int = 0
    notes: tuple["Diagnostic", ...] = ()
    # A remark a `remarks` option (npu-lower's `*-remarks`) asked for: shown
    # by npu.compile and npu-run, which keep the lowerings' others quiet.
    asked: bool = field(default=False, compare=False)

    def format(self) -> str:
        where = f"{self.filename}:{self.line}:{self.col}: " if self.line else f"{self.filename}: "
        text = f"{where}{self.severity}: {self.message}"
        for note in self.notes:
            text += "\n" + note.format()
        return text


def _location_parts(loc: ir.Location) -> tuple[str, int, int]:
    """(filename, line, col) of a location, looking through name/callsite/fused wrappers."""
    seen = 0
    while seen < 8:
        seen += 1
        if loc.is_a_file():
            return loc.filename, loc.start_line, loc.start_col
        if loc.is_a_name():
            loc = loc.child_loc
        elif loc.is_a_callsite():
            loc = loc.caller
        elif loc.is_a_fused() and loc.locations:
            loc = loc.locations[0]
        else:
            break
    return "-", 0, 0


_SEVERITY_NAMES = {
    ir.DiagnosticSeverity.ERROR: "error",
    ir.DiagnosticSeverity.WARNING: "warning",
    ir.DiagnosticSeverity.REMARK: "remark",
    ir.DiagnosticSeverity.NOTE: "note",
}


@dataclass
class DiagnosticEngine:
    """Collects diagnostics for one input file; `display_name` replaces "-"."""

    display_name: str = "-"
    diagnostics: list[Diagnostic] = field(default_factory=list)
    _seen: set[Diagnostic] = field(default_factory=set, repr=False)

    def emit(self, severity: str, message: str, loc: ir.Location | None = None,
             notes: tuple[Diagnostic, ...] = (), asked: bool = False) -> Diagnostic:
        filename, line, col = _location_parts(loc) if loc is not None else ("-", 0, 0)
        if filename == "-":
            filename = self.display_name
        diag = Diagnostic(severity, message, filename, line, col, notes, asked)
        if diag in self._seen:
            # One op lowered to many (all at its location) repeats a message
            # many times; once says it.
            return diag
        self._seen.add(diag)
        self.diagnostics.append(diag)
        return diag

    def emit_mlir(self, d, message: str | None = None) -> Diagnostic:
        """Record a diagnostic object coming from the MLIR C++ side (with
        `message` instead of its own, when given)."""
        notes = tuple(self._convert(n) for n in d.notes if not _is_op_dump(n.message))
        return self.emit(_SEVERITY_NAMES.get(d.severity, "error"), message or d.message,
                         d.location, notes)

    def _convert(self, d) -> Diagnostic:
        filename, line, col = _location_parts(d.location)
        if filename == "-":
            filename = self.display_name
        return Diagnostic(_SEVERITY_NAMES.get(d.severity, "note"), d.message, filename, line, col)

    @property
    def has_errors(self) -> bool:
        return any(d.severity == "error" for d in self.diagnostics)

    def print(self, stream: TextIO | None = None) -> None:
        stream = stream or sys.stderr  # looked up late: tests and tools may redirect it
        for d in self.diagnostics:
            print(d.format(), file=stream)

    def __iter__(self) -> Iterator[Diagnostic]:
        return iter(self.diagnostics)


def int_ranges(values: list[int]) -> str:
    """Sorted ints as runs, for messages and labels: [0, 1, 2, 5] -> '0-2, 5'."""
    runs: list[list[int]] = []
    for v in values:
        if runs and v == runs[-1][1] + 1:
            runs[-1][1] = v
        else:
            runs.append([v, v])
    return ", ".join(f"{a}-{b}" if b > a else f"{a}" for a, b in runs)


def _is_op_dump(message: str) -> bool:
    # MLIR attaches "see current operation: ..." notes that only repeat the op.
    return message.startswith("see current operation")


_current: contextvars.ContextVar[DiagnosticEngine] = contextvars.ContextVar("npu_diagnostics")


def current() -> DiagnosticEngine:
    """The engine of the tool invocation in progress (a fresh one if none)."""
    try:
        return _current.get()
    except LookupError:
        engine = DiagnosticEngine()
        _current.set(engine)
        return engine


def install(engine: DiagnosticEngine) -> contextvars.Token:
    return _current.set(engine)


@contextlib.contextmanager
def collecting(engine: DiagnosticEngine | None = None) -> Iterator[DiagnosticEngine]:
    """The block's diagnostics go to `engine` (a fresh one by default), then
    the caller's engine is current again: a caller that decides what of a
    step's diagnostics to pass on (npu.compile, a test) sees them alone."""
    engine = engine if engine is not None else DiagnosticEngine()
    token = _current.set(engine)
    try:
        yield engine
    finally:
        _current.reset(token)


def attach_to_context(ctx: ir.Context) -> None:
    """Route diagnostics MLIR emits outside of parsing into the current engine."""

    def handler(d) -> bool:
        current().emit_mlir(d)
        return True

    ctx.attach_diagnostic_handler(handler)


class CompileError(Exception):
    """A user-facing error with a location; tools print it and exit 1."""

    def __init__(self, message: str, loc: ir.Location | None = None):
        super().__init__(message)
        self.message = message
        self.loc = loc


class PassError(Exception):
    """A user-facing pass failure at an op's location. Raised by the passes
    and by the cost models and kernel builders they call (which sit below
    `npu.passes`); `npu.passes.base` re-exports it. `loc` instead of the
    op's: an error about the options rather than the input says so with
    `ir.Location.unknown()` (the input's name, no line)."""

    def __init__(self, message: str, op: ir.Operation | ir.OpView | None = None,
                 loc: ir.Location | None = None):
        super().__init__(message)
        self.message = message
        self.op = op.operation if op is not None else None
        self.loc = loc if loc is not None else self.op.location if self.op is not None else None


def emit_error(message: str, loc: ir.Location | None = None) -> Diagnostic:
    return current().emit("error", message, loc)


def emit_remark(message: str, loc: ir.Location | None = None, asked: bool = False) -> Diagnostic:
    return current().emit("remark", message, loc, asked=asked)


# npu-lower's own remarks and the core split's: said whether asked or not.
ALWAYS_SHOWN = ("npu-split-cores:", "npu-lower:")


def shown_by_compile(d: Diagnostic) -> bool:
    """Whether npu.compile passes `d` on: every error and warning, the
    remarks an option asked for and `ALWAYS_SHOWN`'s; the tiling remarks
    each lowering makes unasked are npu-opt's (and the report's) to show."""
    return d.severity != "remark" or d.asked or d.message.startswith(ALWAYS_SHOWN)


def emit_warning(message: str, loc: ir.Location | None = None) -> Diagnostic:
    return current().emit("warning", message, loc)


# --- `--verify-diagnostics` -------------------------------------------------

_EXPECT_RE = re.compile(
    r"expected-(error|warning|remark|note)\s*(?:@(above|below|[+-]\d+|\d+))?\s*\{\{(.*?)\}\}")


@dataclass
class Expectation:
    severity: str
    line: int
    message: str
    source_line: int
    source_col: int = 1
    matched: bool = False


def parse_expectations(text: str, first_line: int = 1) -> list[Expectation]:
    """Expectations in `text`, whose first line is line `first_line` of the file.

    `@+N`/`@-N` are relative to the comment's line, `@above`/`@below` mean
    -1/+1, `@N` is an absolute line number, no suffix means the same line.
    """
    found = []
    for i, src in enumerate(text.splitlines()):
        lineno = first_line + i
        for m in _EXPECT_RE.finditer(src):
            sev, where, msg = m.groups()
            target = lineno
            if where == "above":
                target = lineno - 1
            elif where == "below":
                target = lineno + 1
            elif where and where[0] in "+-":
                target = lineno + int(where)
            elif where:
                target = int(where)
            found.append(Expectation(sev, target, msg, lineno, m.start() + 1))
    return found


def check_expectations(expectations: list[Expectation], diagnostics: list[Diagnostic],
                       filename: str) -> list[str]:
    """Messages for every unmatched diagnostic or expectation (empty = success).

    As in MLIR, notes are checked like any other diagnostic, and each
    expectation matches one diagnostic whose message contains its text.
    """
    problems = []
    flat: list[Diagnostic] = []
    for d in diagnostics:
        flat.append(d)
        flat.extend(d.notes)
    for d in flat:
        for e in expectations:
            if not e.matched and e.severity == d.severity and e.line == d.line and e.message in d.message:
                e.matched = True
                break
        else:
            where = f"{d.filename}:{d.line}:{d.col}" if d.line else d.filename
            problems.append(f"{where}: error: unexpected {d.severity}: {d.message}")
    for e in expectations:
        if not e.matched:
            problems.append(f"{filename}:{e.source_line}:{e.source_col}: error: "
                            f"expected {e.severity} \"{e.message}\" was not produced")
    return problems

"""What npu-opt's `--mlir-print-ir-before/after(=NAME)`, `--mlir-timing` and
`--mlir-pass-statistics` see of our passes, npu-lower's stages included.

npu-lower runs its sub-passes itself (it retries, re-lowers for one core,
halves a UB share), so the upstream pass manager sees one pass. Every
`Pass.run` goes through `instrumented` instead: with an `Instrumentation`
installed (npu-opt installs one when a flag asks for it) each run, at any
depth, is a `Record` in a tree, may print the IR before and after it in
mlir-opt's dump format, and counts the module's ops for the statistics.
Without one, a run costs one context-variable lookup.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import sys
import time
from dataclasses import dataclass, field
from typing import Callable, Iterator, TextIO

from mlir import ir

ALL = "*"  # in `print_before` / `print_after`: every pass


@dataclass
class Record:
    """One run of a pass; `children` are the passes it ran itself."""

    name: str
    seconds: float = 0.0
    ops_before: int = 0
    ops_after: int = 0
    children: list["Record"] = field(default_factory=list)


@dataclass
class Instrumentation:
    print_before: frozenset[str] = frozenset()
    print_after: frozenset[str] = frozenset()
    # With `--mlir-print-ir-*-all` the upstream pass manager prints the
    # top-level passes itself: only nested runs are ours to print.
    upstream_prints_all: bool = False
    debuginfo: bool = False
    statistics: bool = False
    stream: TextIO | None = None  # None: sys.stderr when printing
    roots: list[Record] = field(default_factory=list)
    _stack: list[Record] = field(default_factory=list)

    def _wants(self, names: frozenset[str], name: str) -> bool:
        if name in names:
            return True
        return ALL in names and (bool(self._stack) or not self.upstream_prints_all)

    def around(self, name: str, op: ir.Operation, run: Callable[[], None],
               title: str | None = None) -> None:
        """`name`: the pass's flag; `title`: its class, which mlir-opt's dump
        header names first (`IR Dump After CSE (cse)`)."""
        record = Record(name)
        (self._stack[-1].children if self._stack else self.roots).append(record)
        if self._wants(self.print_before, name):
            self.dump("Before", name, op, title)
        if self.statistics:
            record.ops_before = _count_ops(op)
        self._stack.append(record)
        start = time.perf_counter()
        try:
            run()
        finally:
            record.seconds = time.perf_counter() - start
            self._stack.pop()
        if self.statistics:
            record.ops_after = _count_ops(op)
        if self._wants(self.print_after, name):
            self.dump("After", name, op, title)

    def dump(self, when: str, name: str, op: ir.Operation, title: str | None = None) -> None:
        """mlir-opt's header and the whole module, as `--mlir-print-ir-*` do."""
        stream = self.stream or sys.stderr
        stream.write(f"// -----// IR Dump {when} {title or name} ({name}) //----- //\n")
        stream.write(op.get_asm(enable_debug_info=self.debuginfo) + "\n\n")
        stream.flush()


_current: contextvars.ContextVar[Instrumentation | None] = contextvars.ContextVar(
    "npu_pass_instrumentation", default=None)


def active() -> Instrumentation | None:
    return _current.get()


@contextlib.contextmanager
def installed(instrumentation: Instrumentation) -> Iterator[Instrumentation]:
    token = _current.set(instrumentation)
    try:
        yield instrumentation
    finally:
        _current.reset(token)


def instrumented(run: Callable) -> Callable:
    """`Pass.run` seen by the installed instrumentation, if any."""
    @functools.wraps(run)
    def wrapper(self, op: ir.Operation) -> None:
        instrumentation = _current.get()
        if instrumentation is None:
            return run(self, op)
        return instrumentation.around(self.name, op, lambda: run(self, op), type(self).__name__)

    wrapper.instrumented = True
    return wrapper


def _count_ops(op: ir.Operation) -> int:
    count = 0

    def visit(_: ir.Operation) -> ir.WalkResult:
        nonlocal count
        count += 1
        return ir.WalkResult.ADVANCE

    op.walk(visit)
    return count


# --- reports (mlir-opt's layout) --------------------------------------------

RULE = "===" + "-" * 73 + "==="


def _banner(title: str) -> list[str]:
    return [RULE, f"{'... ' + title + ' ...':^80}".rstrip(), RULE]


def timing_report(roots: list[Record]) -> str:
    """Our passes' wall time, a pass's own runs indented under it (npu-lower's
    stages), summed over repeated runs of one pass at one place."""
    merged = _merge(roots)
    total = sum(r.seconds for r in merged) or 1e-12
    lines = _banner("npu pass execution time report (nested stages indented)")
    lines += [f"  Total Execution Time: {total:.4f} seconds", "",
              "  ----Wall Time----  ----Name----"]

    def walk(records: list[_Merged], depth: int) -> None:
        for r in records:
            lines.append(f"  {r.seconds:8.4f} ({100 * r.seconds / total:5.1f}%)  {'  ' * depth}{r.name}")
            walk(r.children, depth + 1)

    walk(merged, 0)
    lines.append(f"  {total:8.4f} (100.0%)  Total")
    return "\n".join(lines) + "\n"


def statistics_report(roots: list[Record]) -> str:
    """Per pass (nested under the pass that ran it): how often it ran and the
    module's op count before its first run and after its last."""
    lines = _banner("Pass statistics report")

    def walk(records: list[_Merged], depth: int) -> None:
        for r in records:
            pad = "  " * depth
            lines.append(f"{pad}{r.name}")
            lines.append(f"{pad}  (S) {r.runs} runs       - Times the pass ran here")
            lines.append(f"{pad}  (S) {r.ops_before} ops-before - Operations in the module before it")
            lines.append(f"{pad}  (S) {r.ops_after} ops-after  - Operations in the module after it")
            walk(r.children, depth + 1)

    walk(_merge(roots), 0)
    return "\n".join(lines) + "\n"


@dataclass
class _Merged:
    name: str
    runs: int
    seconds: float
    ops_before: int
    ops_after: int
    children: list["_Merged"]


def _merge(records: list[Record]) -> list[_Merged]:
    """Consecutive and repeated runs of one pass under one parent, as one
    line (npu-lower retries a lowering, or re-lowers for one core)."""
    out: dict[str, _Merged] = {}
    kids: dict[str, list[Record]] = {}
    for r in records:
        m = out.get(r.name)
        if m is None:
            out[r.name] = _Merged(r.name, 1, r.seconds, r.ops_before, r.ops_after, [])
            kids[r.name] = list(r.children)
        else:
            m.runs += 1
            m.seconds += r.seconds
            m.ops_after = r.ops_after
            kids[r.name] += r.children
    for name, m in out.items():
        m.children = _merge(kids[name])
    return list(out.values())

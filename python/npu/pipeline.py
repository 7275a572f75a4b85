"""Textual pass pipelines mixing our Python passes with upstream MLIR passes.

`builtin.module(npu-lower-matmul{strategy=os},canonicalize,func.func(cse))`
is split at the top level; our registered passes become Python passes added
with `PassManager.add(callable)`, everything else is handed to MLIR's own
pipeline parser, all in one `PassManager`.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
import tempfile
from dataclasses import dataclass
from typing import Iterator

from mlir import ir
from mlir.passmanager import PassManager

from npu.passes import OptionError, Pass, registry
from npu.passes.instrument import Instrumentation
from npu.target import Target


class PipelineError(ValueError):
    pass


@dataclass(frozen=True)
class PipelineElement:
    name: str
    options: str = ""
    text: str = ""  # the element as written, for upstream passes


def _split_top_level(text: str) -> list[str]:
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch in "({":
            depth += 1
        elif ch in ")}":
            depth -= 1
            if depth < 0:
                raise PipelineError(f"unbalanced ')' in pass pipeline '{text}'")
        elif ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    if depth != 0:
        raise PipelineError(f"unbalanced brackets in pass pipeline '{text}'")
    parts.append(text[start:])
    return [p.strip() for p in parts if p.strip()]


def parse_pipeline(text: str) -> list[PipelineElement]:
    """Elements of `builtin.module(...)` (or of a bare comma-separated list)."""
    text = text.strip()
    if text.startswith("builtin.module(") and text.endswith(")"):
        text = text[len("builtin.module("):-1]
    elements = []
    for part in _split_top_level(text):
        name = part
        options = ""
        if "{" in part and part.endswith("}") and "(" not in part.split("{", 1)[0]:
            name, options = part.split("{", 1)
            options = options[:-1]
        elements.append(PipelineElement(name.strip(), options, part))
    return elements


def with_lower_option(text: str, option: str) -> str:
    """The pipeline `text` with `option` (`key=value`) added to its npu-lower."""
    elements = parse_pipeline(text)
    if not any(e.name == "npu-lower" for e in elements):
        raise PipelineError(f"needs npu-lower in the pipeline ('{text}')")
    parts = [f"npu-lower{{{e.options} {option}}}" if e.name == "npu-lower" else e.text
             for e in elements]
    return "builtin.module(" + ",".join(parts) + ")"


def instantiate(element: PipelineElement, target: Target) -> Pass | None:
    """Our pass for `element`, or None if it names an upstream pass."""
    cls = registry().get(element.name)
    if cls is None:
        return None
    try:
        return cls.from_option_string(element.options, target)
    except OptionError as e:
        raise PipelineError(str(e)) from None


def build_pass_manager(elements: list[PipelineElement], ctx: ir.Context, target: Target,
                       print_before_all: bool = False, print_after_all: bool = False,
                       timing: bool = False, seen: Instrumentation | None = None,
                       statistics: bool = False, debuginfo: bool = False) -> PassManager:
    """`seen`: npu-opt's instrumentation; it sees our passes' runs itself, and
    an upstream pass named in its print sets through a printing pass beside it."""
    with ctx:
        pm = PassManager("builtin.module")
        upstream = False
        for element in elements:
            ours = instantiate(element, target)
            if ours is not None:
                pm.add(ours.to_callable(), name=type(ours).__name__, argument=ours.name,
                       description=ours.summary)
                continue
            upstream = True
            _check_anchor(element)
            if seen is not None and element.name in seen.print_before:
                pm.add(_printer(seen, "Before", element), name="print-ir",
                       argument="print-ir", description="npu-opt's IR dump")
            with _captured_native_stderr() as native:
                try:
                    pm.add(element.text)
                    failure = None
                except (ValueError, ir.MLIRError) as e:
                    failure = str(e)
            if failure is not None:
                raise PipelineError(_upstream_error(element.text, failure + "\n" + native.text()))
            if seen is not None and element.name in seen.print_after:
                pm.add(_printer(seen, "After", element), name="print-ir",
                       argument="print-ir", description="npu-opt's IR dump")
        if print_before_all or print_after_all:
            # MLIR refuses to print IR from a multi-threaded pass manager.
            ctx.enable_multithreading(False)
            pm.enable_ir_printing(print_before_all=print_before_all,
                                  print_after_all=print_after_all, print_module_scope=True,
                                  enable_debug_info=debuginfo)
        if timing:
            pm.enable_timing()
        if statistics and upstream:  # ours: npu-opt's own report (npu.passes.instrument)
            pm.enable_statistics()
    return pm


def _printer(seen: Instrumentation, when: str, element: PipelineElement):
    title = upstream_title(element.text)

    def run(op, pass_) -> None:
        seen.dump(when, element.name, op.operation, title)

    return run


def upstream_title(text: str) -> str | None:
    """The name mlir-opt's dump header gives an upstream pass ("Canonicalizer"
    for `canonicalize`), read off MLIR's own IR printing of the pass run on
    a module with one empty function; None if it cannot be read."""
    ctx = ir.Context()
    with ctx:
        ctx.enable_multithreading(False)  # MLIR prints IR from one thread only
        module = ir.Module.parse("func.func @f() { return }")
        pm = PassManager("builtin.module")
        with _captured_native_stderr() as native:
            try:
                pm.add(text)
                pm.enable_ir_printing(print_after_all=True)
                pm.run(module.operation)
            except (ValueError, ir.MLIRError):
                return None
    m = re.search(r"IR Dump After (\S+) \(", native.text())
    return m.group(1) if m else None


# Ops a nested pipeline can run on in our programs (isolated from above).
NESTED_ANCHORS = ("func.func", "builtin.module", "any")


def _check_anchor(element: PipelineElement) -> None:
    """`gpu.module(cse)` is valid MLIR but would silently never run here."""
    anchor, nested, _ = element.text.partition("(")
    anchor = anchor.strip()
    if nested and "{" not in anchor and anchor not in NESTED_ANCHORS:
        raise PipelineError(f"nested pipeline '{element.text}' runs on '{anchor}' ops, which our "
                            f"programs do not have (anchors: {', '.join(NESTED_ANCHORS)})")


class _NativeStderr:
    """What LLVM wrote straight to file descriptor 2 (pass-option errors)."""

    def __init__(self) -> None:
        self._file = tempfile.TemporaryFile(mode="w+b")

    def text(self) -> str:
        self._file.seek(0)
        return self._file.read().decode("utf-8", "replace")


@contextlib.contextmanager
def _captured_native_stderr() -> Iterator[_NativeStderr]:
    """Redirect fd 2 while MLIR parses pass options: LLVM's option parser
    prints its complaints there instead of returning them."""
    captured = _NativeStderr()
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        os.dup2(captured._file.fileno(), 2)
        yield captured
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def _upstream_error(element: str, raw: str) -> str:
    """One line out of MLIR's multi-line pipeline-parser / option-parser output."""
    unknown = re.search(r"'([^']+)' does not refer to a registered pass", raw)
    if unknown:
        name = unknown.group(1)
        if name in registry():
            return (f"pass '{name}' is a Python pass and must appear at the top level of "
                    f"builtin.module(...), not nested in '{element}'")
        return f"unknown pass '{name}'" + (f" in '{element}'" if element != name else "")
    parser_error = re.search(r"PassPipeline Parser:\d+:\d+: error: (.*)", raw)
    if parser_error:
        return f"bad pass pipeline '{element}': {parser_error.group(1).strip()}"
    details = []
    for line in raw.splitlines():
        line = line.strip().lstrip(":").strip()
        if not line or line.startswith("failed to add") or line.startswith("^"):
            continue
        line = line.replace("<Pass-Options-Parser>: ", "")
        if line not in details:
            details.append(line)
    return f"bad options in '{element}'" + (f": {'; '.join(details)}" if details else "")


def is_upstream_pass(name: str, ctx: ir.Context) -> bool:
    with ctx, _captured_native_stderr():
        try:
            PassManager.parse(f"builtin.module({name})")
            return True
        except (ValueError, ir.MLIRError):
            return False


def run_pipeline(module: ir.Module, pipeline_text: str, target: Target) -> None:
    """Run `pipeline_text` over `module` in place (the API tests and npu-run use).

    Raises `PipelineError` with the diagnostics' text when a pass fails.
    """
    from npu import diagnostics

    engine = diagnostics.current()
    before = len(engine.diagnostics)
    pm = build_pass_manager(parse_pipeline(pipeline_text), module.context, target)
    try:
        pm.run(module.operation)
    except ir.MLIRError as e:
        for d in e.error_diagnostics:
            engine.emit_mlir(d)
        errors = [d.format() for d in engine.diagnostics[before:] if d.severity == "error"]
        raise PipelineError("\n".join(errors) or "pass pipeline failed") from None

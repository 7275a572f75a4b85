"""`npu-run`: compile (if needed), simulate, check and report one kernel.

    npu-run prog.mlir [--entry NAME] [--target PRESET] [--seed N | --inputs in.npz]
                      [--check] [--json] [--trace t.json] [--serialize] [--no-numerics]
                      [--tuning-record record.json] [--cores N] [-o out.npz]

A module with `ascend` ops is compiled through the default pipeline
(`npu-lower`, to `hivm`; `--emit cce` stops at `cce`) first; a `cce` module
is simulated as it is, or lowered to `hivm` with `--emit hivm`; `--check` compares every argument's final value with the
numpy reference evaluation of the ORIGINAL (ascend-level) program. Exit code
1 on a fault, a failed check or bad input; 2 on bad usage.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

# numpy, MLIR and the compiler are imported where used: `npu-run --help` and
# bad command lines never pay for them.
from npu.tools.common import (read_input, report_internal_error, usage_error,
                              write_output_atomically)

DEFAULT_PIPELINE = "npu-lower"

# Tolerances per output element type: |got - want| <= atol * scale + rtol * |want|,
# with scale = max(1, max |want|). fp16 results carry ~1e-3 relative rounding
# per op; fp32 results of fp16 products accumulate in fp32 in an order that
# differs from numpy's; integers must match exactly. max_rel_err is taken over
# the elements with |expected| >= 1e-3 * scale (relative error of ~0 is noise).
TOLERANCES = {"float16": (1e-2, 1e-3), "float32": (1e-3, 1e-4)}


@dataclass
class CheckResult:
    passed: bool
    max_abs_err: float
    max_rel_err: float
    failure: str | None = None

    def as_dict(self) -> dict:
        d = {"passed": self.passed, "max_abs_err": self.max_abs_err, "max_rel_err": self.max_rel_err}
        if self.failure:
            d["failure"] = self.failure
        return d


def make_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="npu-run", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("input", help="ONNX model (.onnx), MLIR file (linalg on tensors, ascend-, "
                   "cce- or hivm-level) or a hivm binary (npu-as), '-' for stdin")
    p.add_argument("--entry", default=None, help="function to run (default: the only one)")
    p.add_argument("--target", default=None, help="target preset (default: ascend910)")
    src = p.add_mutually_exclusive_group()
    src.add_argument("--seed", type=int, default=None, help="random inputs from this seed (default 0)")
    src.add_argument("--inputs", default=None, help=".npz with one array per argument "
                     "(keys arg0, arg1, ... or in argument order; for a model: its input names)")
    p.add_argument("--check", action="store_true",
                   help="compare every argument with the numpy reference of the original program "
                   "(a model: its outputs with onnxruntime, or with numpy for a linalg module)")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.add_argument("--trace", default=None, help="write a Chrome/Perfetto trace to this file")
    p.add_argument("--serialize", action="store_true",
                   help="every instruction waits for all earlier ones (code without sync)")
    p.add_argument("--no-numerics", dest="numerics", action="store_false",
                   help="timing only: skip the arithmetic (addresses, checks and cycles as in a "
                   "full run; the outputs are not computed)")
    p.add_argument("--no-strict", dest="strict", action="store_false",
                   help="report races and uninitialised reads as hazards instead of failing")
    p.add_argument("--pipeline", default=DEFAULT_PIPELINE,
                   help=f"pipeline for ascend-level input (default: {DEFAULT_PIPELINE})")
    p.add_argument("--tuning-record", default=None,
                   help="per-op options chosen by npu-tune (JSON), passed to npu-lower")
    p.add_argument("--cores", type=int, default=None,
                   help="AI cores: an ascend program is split over up to this many "
                   "(npu-lower cores=N; 1: one core); a compiled kernel must have been split for "
                   "exactly this many")
    p.add_argument("--emit", choices=("cce", "hivm"), default=None,
                   help="the level to simulate (default: hivm for ascend input, else the input's)")
    p.add_argument("-o", "--output", default=None, help="save the final arguments to this .npz")
    return p


def with_lower_option(pipeline: str, option: str, flag: str) -> str:
    """`pipeline` with `option` (`key=value`) added to its npu-lower."""
    from npu.pipeline import parse_pipeline

    elements = parse_pipeline(pipeline)
    if not any(e.name == "npu-lower" for e in elements):
        raise ToolError(f"npu-run: error: {flag} needs npu-lower in the pipeline "
                        f"('{pipeline}')")
    parts = [f'npu-lower{{{e.options} {option}}}' if e.name == "npu-lower" else e.text
             for e in elements]
    return "builtin.module(" + ",".join(parts) + ")"


class ToolError(Exception):
    """A user-facing error already formatted as `file:line:col: error: ...`."""


def _input_args(func_op) -> list:
    """The arguments the caller provides: all but the GM workspace (scratch the
    simulator allocates itself) and a multi-core kernel's block index."""
    from npu import ir as npu_ir

    scratch = npu_ir.workspace_args(func_op) + [npu_ir.block_idx_arg(func_op)]
    return [a for i, a in enumerate(func_op.regions[0].blocks[0].arguments) if i not in scratch]


def random_inputs(func_op, seed: int) -> list[np.ndarray]:
    import numpy as np

    from npu import ir as npu_ir

    rng = np.random.default_rng(seed)
    arrays = []
    for arg in _input_args(func_op):
        shape = tuple(npu_ir.memref_shape(arg.type))
        dtype = npu_ir.memref_element(arg.type)
        if dtype in ("f16", "f32"):
            arrays.append(rng.uniform(-1, 1, shape).astype(npu_ir.NUMPY_DTYPES[dtype]))
        elif dtype == "i8":
            arrays.append(rng.integers(-8, 8, shape).astype(np.int8))
        else:
            arrays.append(rng.integers(-64, 64, shape).astype(npu_ir.NUMPY_DTYPES.get(dtype, np.int32)))
    return arrays


def load_inputs(path: str, func_op, filename: str) -> list[np.ndarray]:
    import numpy as np

    from npu import ir as npu_ir

    try:
        data = np.load(path)
    except (OSError, ValueError) as e:
        raise ToolError(f"{filename}: error: cannot read inputs '{path}': {e}") from None
    args = _input_args(func_op)
    keys = [f"arg{i}" for i in range(len(args))]
    names = keys if all(k in data.files for k in keys) else list(data.files)
    if len(names) != len(args):
        raise ToolError(f"{filename}: error: '{path}' holds {len(data.files)} arrays; the entry takes "
                        f"{len(args)} arguments")
    arrays = []
    for i, (name, arg) in enumerate(zip(names, args)):
        arr = data[name]
        shape = tuple(npu_ir.memref_shape(arg.type))
        dtype = np.dtype(npu_ir.NUMPY_DTYPES[npu_ir.memref_element(arg.type)])
        if arr.shape != shape or arr.dtype != dtype:
            raise ToolError(f"{filename}: error: input '{name}' is {arr.dtype}{list(arr.shape)}; "
                            f"argument #{i} needs {dtype}{list(shape)}")
        arrays.append(arr)
    return arrays


def compare(outputs: list[np.ndarray], expected: list[np.ndarray],
            tolerances: dict | None = None) -> CheckResult:
    """Element-wise comparison; names the first output and element that differ.
    `tolerances` (dtype name -> (rtol, atol)) replaces TOLERANCES."""
    import numpy as np

    max_abs = max_rel = 0.0
    failure = None
    for i, (got, want) in enumerate(zip(outputs, expected)):
        want = np.asarray(want)
        if got.shape != want.shape:
            failure = failure or f"output #{i}: shape {list(got.shape)} != reference {list(want.shape)}"
            continue
        g, w = got.astype(np.float64), want.astype(np.float64)
        both_nan = np.isnan(g) & np.isnan(w)
        diff = np.where(both_nan, 0.0, np.abs(g - w))
        diff = np.where(np.isnan(diff), np.inf, diff)
        if diff.size:
            max_abs = max(max_abs, float(diff.max()))
        rtol, atol = (tolerances or TOLERANCES).get(str(want.dtype), (0.0, 0.0))
        finite_w = np.abs(w[np.isfinite(w)])
        scale = max(1.0, float(finite_w.max())) if finite_w.size else 1.0
        if diff.size:
            # Relative error where it means something: |expected| >= 1e-3 * scale.
            sizeable = np.abs(w) >= 1e-3 * scale
            if sizeable.any():
                max_rel = max(max_rel, float((diff[sizeable] / np.abs(w[sizeable])).max()))
        bad = diff > atol * scale + rtol * np.abs(w)
        if bad.any() and failure is None:
            idx = np.unravel_index(int(np.argmax(bad)), bad.shape)
            failure = (f"output #{i} (argument #{i}) differs at element {list(map(int, idx))}: got "
                       f"{got[idx].item()!r}, expected {want[idx].item()!r} ({int(bad.sum())} of {bad.size} elements "
                       f"outside |err| <= {atol:g}*{scale:g} + {rtol:g}*|expected|)")
    return CheckResult(failure is None, max_abs, max_rel, failure)


def run(args, filename: str, text: str) -> int:
    import numpy as np

    from npu import diagnostics
    from npu import ir as npu_ir
    from npu.ir import ParseError, make_context, parse_module
    from npu.simulator import SimulationError, simulate
    from npu.simulator.core import find_entry
    from npu.target import UnknownTargetError, get_target

    t_start = time.perf_counter()
    try:
        target = get_target(args.target)
    except UnknownTargetError as e:
        raise ToolError(f"npu-run: error: {e}") from None
    engine = diagnostics.DiagnosticEngine(display_name=filename)
    diagnostics.install(engine)
    ctx = make_context()
    try:
        module = parse_module(text, ctx)
    except ParseError:
        engine.print()
        return 1
    try:
        func_op = find_entry(module, args.entry)
    except SimulationError as e:
        raise ToolError(str(e)) from None
    entry = npu_ir.symbol_name(func_op)
    # Only the entry runs, so only it is compiled: another function of the
    # file (one that cannot be a kernel, say) must not stop it.
    for other in npu_ir.functions(module):
        if other != func_op.operation:
            other.erase()
    if args.inputs:
        inputs = load_inputs(args.inputs, func_op, filename)
    else:
        inputs = random_inputs(func_op, args.seed if args.seed is not None else 0)

    original = None
    compiled = bool(npu_ir.ops_in_dialect(module, "ascend"))
    if compiled:
        original = parse_module(text, ctx)  # the reference runs on the program as written
        pipeline = args.pipeline
        if pipeline == DEFAULT_PIPELINE and args.emit == "cce":
            pipeline = f"{DEFAULT_PIPELINE}{{emit=cce}}"
        if args.tuning_record:
            pipeline = with_lower_option(pipeline, f'tuning-record="{args.tuning_record}"',
                                         "--tuning-record")
        if args.cores is not None:
            pipeline = with_lower_option(pipeline, f"cores={args.cores}", "--cores")
        compile_module(module, pipeline, target, filename)
        func_op = find_entry(module, entry)
    if args.emit == "hivm" and npu_ir.ops_in_dialect(module, "cce"):
        compile_module(module, "npu-lower-cce-to-hivm", target, filename)
    elif args.emit == "cce" and npu_ir.ops_in_dialect(module, "hivm"):
        raise ToolError(f"{filename}: error: --emit cce: the program is already at the hivm "
                        "level")
    if not compiled and args.check:
        raise ToolError(f"{filename}: error: --check needs an ascend-level program: the numpy "
                        "reference (npu.reference) evaluates ascend ops, and this module has none")

    result = None
    try:
        result = simulate(module, inputs, entry=entry, target=target, strict=args.strict,
                          serialize=args.serialize, numerics=args.numerics,
                          cores=None if compiled else args.cores)
    except SimulationError as e:
        if args.json:
            print(json.dumps({"error": str(e), "kind": e.kind}, indent=2))
        print(str(e), file=sys.stderr)
        return 1
    report = dict(result.report)
    report["compiled"] = compiled
    report["level"] = "hivm" if npu_ir.ops_in_dialect(module, "hivm") else "cce"
    status = 0 if not result.hazards else 1
    if args.check:
        expected = reference_outputs(original, entry, inputs, filename)
        check = compare(result.outputs, expected)
        report["check"] = check.as_dict()
        if not check.passed:
            print(f"{filename}: error: check failed: {check.failure}", file=sys.stderr)
            status = 1
    else:
        report["check"] = None
    if args.trace:
        write_output_atomically(args.trace, json.dumps(result.chrome_trace()))
    if args.output:
        np.savez(args.output, **{f"arg{i}": a for i, a in enumerate(result.outputs)})
    report["wall_seconds"] = round(time.perf_counter() - t_start, 4)
    report["simulate_seconds"] = round(result.wall_seconds, 4)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        from npu.simulator.report import format_text
        print(format_text(report))
    for h in result.hazards:
        print(f"{h['location']}: error: {h['kind']}: {h['message']}", file=sys.stderr)
    return status


def compile_module(module, pipeline: str, target, filename: str) -> None:
    from npu.passes import registry
    from npu.pipeline import PipelineError, parse_pipeline, run_pipeline

    known = registry()
    for element in parse_pipeline(pipeline):
        if element.name.startswith("npu-") and element.name not in known:
            raise ToolError(f"{filename}: error: the input has 'ascend' ops, but the pass "
                            f"'{element.name}' of the lowering pipeline '{pipeline}' is not "
                            "registered yet (see passes/__init__.py)")
    try:
        run_pipeline(module, pipeline, target)
    except PipelineError as e:
        raise ToolError(str(e)) from None


def reference_outputs(original, entry: str, inputs, filename: str) -> list[np.ndarray]:
    import numpy as np

    from npu.simulator.core import find_entry

    try:
        from npu.reference import evaluate
    except ImportError as e:
        raise ToolError(f"{filename}: error: --check needs npu.reference ({e})") from None
    try:
        return evaluate(find_entry(original, entry), [np.array(a) for a in inputs])
    except Exception as e:  # EvaluationError carries its own location
        raise ToolError(str(e) if "error:" in str(e) else f"{filename}: error: reference: {e}") from None


def read_program(path: str, parser) -> tuple[str, str]:
    """(name, MLIR text) of the input; a hivm binary is decoded to text that
    keeps each op's location (`file:1:<byte offset of its instruction>`)."""
    from npu.hivm_binary import MAGIC, BinaryError

    if path != "-" and os.path.isfile(path):
        with open(path, "rb") as f:
            head = f.read(len(MAGIC))
        if head == MAGIC:
            from npu.hivm_disasm import decode
            from npu.ir import make_context

            with open(path, "rb") as f:
                data = f.read()
            try:
                module = decode(data, path, make_context())
            except BinaryError as e:
                raise ToolError(f"{path}: error: corrupt binary {e}") from None
            return path, module.operation.get_asm(enable_debug_info=True)
    return read_input(path, parser)


def main(argv: list[str] | None = None) -> int:
    parser = make_parser()
    args = parser.parse_args(argv)
    if args.cores is not None and args.cores < 1:
        usage_error(parser, f"--cores {args.cores}: needs at least one core")
    if args.check and not args.numerics:
        usage_error(parser, "--check compares the outputs, which --no-numerics does not compute")
    for given in (args.inputs, args.tuning_record):
        if given and not os.path.exists(given):
            usage_error(parser, f"cannot read '{given}': no such file")
    from npu.tools.run_model import is_model, run_model

    filename = args.input
    try:
        if args.input.endswith(".onnx"):
            if not os.path.exists(args.input):
                usage_error(parser, f"cannot read '{args.input}': no such file")
            text = None
        else:
            filename, text = read_program(args.input, parser)
        if is_model(filename, text):
            return run_model(args, filename, text)
        return run(args, filename, text)
    except ToolError as e:
        print(str(e), file=sys.stderr)
        return 1
    except BrokenPipeError:  # e.g. `npu-run ... | head`
        return 1
    except Exception as e:  # a bug in the tool: never a traceback by default
        return report_internal_error(filename, "internal error", e)


if __name__ == "__main__":
    sys.exit(main())

"""`npu-run` on a model: an ONNX file or a module of upstream linalg on tensors.

Compiles through the frontend (`npu.compile`), simulates, and with `--check`
compares with onnxruntime (ONNX) or with the numpy evaluation of the linalg
module. `--inputs` arrays are keyed by the model's input names, `-o` writes
the outputs keyed by its output names (only when everything succeeded).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile

import numpy as np

# Cube matmuls take f16 operands (f32 accumulation): results carry about
# 2^-11 relative error per operand times sqrt(reduction length); vector-only
# f32 programs are f32 throughout.
CUBE_TOLERANCES = {"float32": (2e-2, 1e-2), "float16": (2e-2, 2e-2)}
VECTOR_TOLERANCES = {"float32": (1e-4, 1e-4), "float16": (1e-2, 1e-3)}


def is_model(path: str, text: str | None) -> bool:
    if path.endswith(".onnx"):
        return True
    return text is not None and "linalg." in text and "ascend." not in text and "cce." not in text


# Options of the kernel-level path that a model run (ONNX or linalg input,
# compiled and simulated through npu.compile) does not honour yet: refused up
# front rather than silently ignored.  Each maps to its flag's spelling.
MODEL_UNSUPPORTED = {"csv": "--csv", "serialize": "--serialize", "emit": "--emit"}


def refuse_model_options(args) -> None:
    """Raise CommandLineError naming the first kernel-only option given for a model."""
    from npu.tools.common import CommandLineError

    given = [flag for attr, flag in MODEL_UNSUPPORTED.items() if getattr(args, attr, None)]
    if given:
        raise CommandLineError(
            f"{given[0]}: not supported for a model (ONNX or linalg) input yet; lower it to an "
            "ascend module first (npu-opt [--npu-import-onnx] --npu-linalg-to-ascend) and run that")


def run_model(args, path: str, text: str | None) -> int:
    from npu.frontend.compile import CompileError, InputError, UsageError, compile as npu_compile
    from npu.simulator import SimulationError
    from npu.tools.common import CommandLineError
    from npu.simulator.run_check import compare
    from npu.simulator.run_inputs import RunError

    from npu import diagnostics

    engine = diagnostics.DiagnosticEngine(display_name=path)
    diagnostics.install(engine)
    source = path if text is None else text
    try:
        kernel = npu_compile(source, target=args.target, pipeline=args.pipeline, where=path,
                             input_shapes=getattr(args, "input_shape", None))
    except UsageError as e:
        raise CommandLineError(str(e)) from None
    except CompileError as e:
        raise RunError(str(e)) from None
    engine.print()  # the compile's warnings
    inputs = model_inputs(kernel, args, path)
    try:
        outputs, report = kernel(*inputs, strict=args.strict, numerics=args.numerics)
    except SimulationError as e:  # a fault the inputs cause (an out-of-range gather id)
        raise RunError(str(e)) from None
    except InputError as e:  # an int64 value outside i32
        raise RunError(f"{path}: error: {e}") from None
    trace, page = report.pop("trace"), report.pop("html")
    status = 0
    if args.check:
        expected, steps = reference(kernel, source, path, inputs)
        uses_cube = any(f"ascend.{op}" in kernel.stages["ascend"] for op in ("matmul", "batch_matmul", "conv2d"))
        check = compare(outputs, expected, CUBE_TOLERANCES if uses_cube else VECTOR_TOLERANCES,
                        "quantised outputs within one step of their grid" if any(steps) else None,
                        steps)
        report["check"] = check.as_dict()
        if not check.passed:
            names = kernel.output_names
            print(f"{path}: error: check failed: {_named(check.failure, names)}", file=sys.stderr)
            status = 1
    if args.trace and status == 0:
        from npu.tools.common import write_output_atomically
        write_output_atomically(args.trace, json.dumps(trace()))
    if args.html and status == 0:
        from npu.tools.common import write_output_atomically
        write_output_atomically(args.html, page())
    if args.output and status == 0:
        save_npz(args.output, dict(zip(kernel.output_names, outputs)))
    if args.json:
        print(json.dumps(report, indent=2, default=str))
    else:
        print(format_report(report))
    return status


def _named(failure: str, names: list[str]) -> str:
    for i, name in enumerate(names):
        failure = failure.replace(f"output #{i} (argument #{i})", f"output '{name}'")
    return failure


def model_inputs(kernel, args, path: str) -> list[np.ndarray]:
    from npu.simulator.run_inputs import RunError

    ports = kernel.interface.inputs
    if args.inputs:
        from npu.simulator.run_inputs import extra_arrays, read_npz

        data = read_npz(args.inputs, path)
        names = [port.name for port in ports]
        arrays = []
        for port in ports:
            if port.name not in data:
                raise RunError(f"{path}: error: '{args.inputs}' has no array '{port.name}' "
                                f"(it holds {', '.join(data) or 'nothing'})")
            a = data[port.name]
            if tuple(a.shape) != port.shape or a.dtype != port.numpy_dtype:
                raise RunError(f"{path}: error: input '{port.name}' is {a.dtype}{list(a.shape)}; the "
                                f"model needs {port.numpy_dtype}{list(port.shape)}")
            arrays.append(a)
        extra_arrays(args.inputs, path, data, names, f"the model's inputs are {', '.join(names)}")
        return arrays
    rng = np.random.default_rng(args.seed if args.seed is not None else 0)
    bounds = _gather_bounds(kernel)
    return [(rng.uniform(-1, 1, p.shape) if p.dtype.startswith("f")
             else rng.integers(0, 2, p.shape) if p.boolean
             else rng.integers(-bounds.get(k, 8), bounds.get(k, 8), p.shape)).astype(p.numpy_dtype)
            for k, p in enumerate(ports)]


def _gather_bounds(kernel) -> dict[int, int]:
    """Input number -> the size of the smallest axis it indexes as gather ids
    (random ids must be in range), at most 8 (the default integer range)."""
    text = kernel.stages.get("ascend", "")
    if "ascend.gather" not in text:
        return {}
    from npu.ir import functions, make_context, parse_module
    from npu.simulator.run_inputs import index_bounds

    module = parse_module(text, make_context())
    by_arg = index_bounds(functions(module)[0])
    args = [i for i, role in enumerate(kernel.interface.roles) if role == "input"]
    return {k: max(1, min(8, by_arg[a])) for k, a in enumerate(args) if a in by_arg}


def reference(kernel, source, path: str, inputs) -> tuple[list[np.ndarray], list[float | None]]:
    """onnxruntime for an ONNX model; the numpy linalg evaluation otherwise.
    With the outputs, each one's quantisation step where a DequantizeLinear
    computes it (an ONNX model's, `onnx_qdq.output_steps`; else None):
    onnxruntime dequantises and sums in float where the int8 cube's sums are
    exact integers, so a requantised value near a rounding boundary may land
    one step away (docs/int8.md)."""
    if str(path).endswith(".onnx"):
        return onnx_reference(kernel, path, inputs)
    from npu.passes.linalg_to_ascend.linalg_eval import evaluate
    from npu.ir import functions, make_context, parse_module

    module = parse_module(source, make_context())
    return evaluate(functions(module)[0], inputs), [None] * len(kernel.output_names)


def onnx_reference(kernel, path: str, inputs) -> tuple[list[np.ndarray], list[float | None]]:
    """onnxruntime's outputs for the model as the compiler read it (absent
    trailing inputs dropped), its own warnings kept off stderr, and the
    outputs' quantisation steps; a model it cannot load or run is one
    located error, not an internal one."""
    import onnx
    import onnxruntime

    from npu.frontend.onnx_import import drop_absent_trailing_inputs
    from npu.frontend.onnx_qdq import QUANTIZATION_OPS, output_steps
    from npu.simulator.run_inputs import RunError

    model = onnx.load(path)
    drop_absent_trailing_inputs(model)
    options = onnxruntime.SessionOptions()
    options.log_severity_level = 4  # fatal only: its errors come back as exceptions, in our line
    if any(n.op_type in QUANTIZATION_OPS for n in model.graph.node):
        # Node by node, as ONNX defines the model: optimised, onnxruntime fuses
        # QDQ groups into its own int8 kernels, whose results depend on the
        # host CPU (a quantize_static MLP: 5 output steps from the unfused
        # run on one machine).
        options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_DISABLE_ALL
    from npu.tools.ort_compat import ReferenceUnavailable, open_session

    try:
        readable = open_session(model, options)
    except ReferenceUnavailable as e:
        raise RunError(f"{path}: error: --check: onnxruntime cannot run this model ({e}); "
                       "without --check it is compiled and simulated") from None
    try:
        outputs = readable.session.run(kernel.output_names, dict(zip(kernel.input_names, inputs)))
    except Exception as e:  # onnxruntime raises its own Fail/NotImplemented/... types
        reason = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise RunError(f"{path}: error: --check: onnxruntime cannot run this model ({reason}); "
                       "without --check it is compiled and simulated") from None
    return outputs, output_steps(model, kernel.output_names)


def save_npz(path: str, arrays: dict) -> None:
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".npu-tmp-", suffix=".npz")
    os.close(fd)
    try:
        np.savez(tmp, **arrays)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def format_report(report: dict) -> str:
    from npu.simulator.report import format_text

    lines = [format_text(report), "per source op, in model order (exclusive: each cycle counted "
             "once, the column sums to the run; span: first start to last end):",
             f"  {'op':<36} {'instr':>7} {'exclusive':>10} {'span':>9} {'bound':>8} {'MFLOP':>9} "
             f"{'TFLOP/s':>8} {'GB/s':>7}  unit"]
    for row in report["per_op"]:
        lines.append(f"  {row['op'][:36]:<36} {row['instructions']:>7} {row['exclusive_cycles']:>10.0f} "
                     f"{row['span_cycles']:>9} {row['bound_cycles']:>8} {row['flops'] / 1e6:>9.2f} "
                     f"{row['tflops']:>8.2f} {row['gbps']:>7.0f}  {row['bound_unit']}")
        if row["members"]:
            lines.append(f"    fused: {', '.join(row['members'])}")
    lines.append(f"  sum of per-op bounds: {report['per_op_bound_cycles']} cycles")
    if report.get("gm_workspace"):
        lines.append(f"GM workspace: {report['gm_workspace']}")
    return "\n".join(lines)

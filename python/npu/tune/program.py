"""The tuner's input: a program, and the ops in it as stand-alone kernels.

`load_program` is the one input step: it reads `ascend`-level MLIR, or an
ONNX model that the frontend imports to the `ascend` module it
produced. `extract_ops` cuts the program into one kernel per distinct op
signature, which is what per-op tuning compiles and simulates.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from mlir import ir
from mlir.dialects import func

from npu import ir as nir
from npu.passes.tuning_record import op_signature

KERNEL_ENTRY = "tune_kernel"


class ProgramError(ValueError):
    """Input the tuner cannot take (already formatted as `file: error: ...`)."""


@dataclass(frozen=True)
class Program:
    """An `ascend`-level module as text, and the name used in diagnostics."""

    filename: str
    text: str


def load_program(path: str, input_shapes: dict | None = None) -> Program:
    """Read the program to tune: ascend-level MLIR, or an ONNX model imported
    through the frontend (ONNX -> linalg -> ascend) so its ops can be tuned,
    with `input_shapes` pinning its dynamic input dims (as npu-run's)."""
    from npu.ir.parsing import SourceError, read_source

    ext = os.path.splitext(path)[1]
    if path != "-" and ext == ".onnx":
        return _import_onnx(path, input_shapes)
    if path != "-" and ext != ".mlir" and ext:
        raise ProgramError(f"{path}: error: npu-tune reads an ONNX model (.onnx) or ascend-level "
                           f"MLIR (.mlir), not '{ext}'")
    try:
        filename, text = read_source(path)
    except SourceError as e:
        raise ProgramError(f"npu-tune: error: {e}") from None
    return Program(filename, text)


def _import_onnx(path: str, input_shapes: dict | None = None) -> Program:
    """The model's ascend module as text; the frontend's located errors as ProgramError."""
    from npu.frontend.compile import CompileError, UsageError, import_linalg, linalg_to_ascend_text
    from npu.ir import make_context

    if not os.path.exists(path):
        raise ProgramError(f"npu-tune: error: cannot read '{path}': no such file")
    try:
        linalg, in_names, out_names, locate = import_linalg(path, make_context(), path,
                                                            input_shapes)
        if linalg is None:
            raise ProgramError(f"{path}: error: the model computes nothing (no ops to tune)")
        text = linalg_to_ascend_text(linalg, in_names, out_names, locate, path)
    except (CompileError, UsageError) as e:
        text = str(e)
        raise ProgramError(text if "error:" in text else f"{path}: error: {text}") from None
    return Program(path, text)


@dataclass(frozen=True)
class OpOperand:
    shape: tuple[int, ...]
    dtype: str  # f16, f32, i8, ...


@dataclass(frozen=True)
class OpTask:
    """One distinct op of the program: what per-op tuning works on."""

    signature: str
    op_name: str
    family: str  # the lowering that handles it, e.g. npu-lower-matmul
    kernel: str  # a module whose @tune_kernel runs the op alone
    count: int  # ops of the program with this signature
    operands: tuple[OpOperand, ...]


def lowering_of() -> dict[str, str]:
    """ascend op name -> the flag of the lowering that handles it."""
    from npu.passes import registry

    return {name: flag for flag, cls in registry().items() for name in cls.handles}


def parse_program(filename: str, text: str):
    """(module, diagnostics engine) of `text`, with diagnostics named after
    `filename`; ProgramError with the located errors if it does not parse."""
    from npu import diagnostics

    engine = diagnostics.DiagnosticEngine(display_name=filename)
    diagnostics.install(engine)
    try:
        module = nir.parse_module(text, nir.make_context())
    except nir.ParseError:
        raise ProgramError("\n".join(d.format() for d in engine.diagnostics
                                     if d.severity == "error")) from None
    return module, engine


def extract_ops(program: Program) -> list[OpTask]:
    """The program's ascend ops, one task per signature, in program order."""
    module, engine = parse_program(program.filename, program.text)
    ctx = module.context
    families = lowering_of()
    tasks: dict[str, OpTask] = {}
    for op in nir.ops_in_dialect(module.operation, "ascend"):
        sig = op_signature(op)
        if sig in tasks:
            old = tasks[sig]
            tasks[sig] = OpTask(old.signature, old.op_name, old.family, old.kernel,
                                old.count + 1, old.operands)
            continue
        if op.name not in families:
            raise ProgramError(engine.emit("error", f"no lowering handles '{op.name}', so it "
                                           "cannot be tuned", op.location).format())
        operands = tuple(OpOperand(tuple(nir.memref_shape(v)), nir.memref_element(v))
                         for v in op.operands if nir.is_memref(v.type))
        tasks[sig] = OpTask(sig, op.name, families[op.name], kernel_of(op, ctx), 1, operands)
    if not tasks:
        raise ProgramError(f"{program.filename}: error: the program has no ascend ops to tune")
    return list(tasks.values())


def kernel_of(op: ir.Operation, ctx: ir.Context) -> str:
    """A module running `op` alone: one argument per distinct operand value."""
    distinct: list[ir.Value] = []
    for v in op.operands:
        if v not in distinct:
            distinct.append(v)
    with ctx, op.location:
        module = ir.Module.create()
        with ir.InsertionPoint(module.body):
            f = func.FuncOp(KERNEL_ENTRY, ir.FunctionType.get([v.type for v in distinct], []))
            block = f.add_entry_block()
            with ir.InsertionPoint(block):
                clone = op.clone()
                for i, v in enumerate(op.operands):
                    clone.operands[i] = block.arguments[distinct.index(v)]
                func.ReturnOp([])
    return module.operation.get_asm(enable_debug_info=True)

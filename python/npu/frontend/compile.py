"""`npu.compile`: a model (ONNX proto or path), a linalg module (text, path or
`ir.Module`) in; a `Kernel` that runs on the simulator out.

    kernel = npu.compile("model.onnx", target="ascend910")
    outputs, report = kernel(x)            # numpy arrays in model input order

Stages (each visible as text in `kernel.stages`): `linalg` (import),
`ascend` (conversion and layout choice, constants laid out on the host) and
`lowered` (the `npu-lower` pipeline, which starts with `npu-plan-gm`).
"""

from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass, field, replace
from typing import Mapping, Sequence

import numpy as np
from mlir import ir

from npu import diagnostics
from npu.frontend import host_memory, host_types, onnx_weights
from npu.frontend.host_types import InputError  # noqa: F401 - part of this module's API
from npu.frontend.node_locations import NodeLocations
from npu.frontend.stages import Stages
from npu.passes.linalg_to_ascend.structure import UnsupportedOp
from npu.ir import (NUMPY_DTYPES, functions, is_memref, make_context, memref_element, memref_shape,
                    parse_module)

DEFAULT_PIPELINE = "npu-lower"


class CompileError(ValueError):
    """One user-facing line (`file:line:col: error: ...` or `model: error: node ...`)."""


class UsageError(CompileError):
    """An argument that does not fit the model (`input_shapes`): npu-run's exit 2."""


@dataclass
class Port:
    name: str
    shape: tuple[int, ...]
    dtype: str
    boolean: bool = False  # an ONNX bool held as i8 0/1 (`npu.bool`): numpy bool outside
    host_type: str = ""    # the model's type when the device holds another (`npu.host_type`)

    @property
    def numpy_dtype(self) -> np.dtype:
        if self.boolean:
            return np.dtype(np.bool_)
        return host_types.host_dtype(self.host_type) if self.host_type else self.storage_dtype

    @property
    def storage_dtype(self) -> np.dtype:
        return np.dtype(NUMPY_DTYPES[self.dtype])

    def narrowed(self, array: np.ndarray) -> np.ndarray:
        """`array` (of `numpy_dtype`) as the device holds it; values outside
        i32 are an `InputError` naming the input and the element."""
        if self.host_type:
            return host_types.to_device(array, self.host_type, self.storage_dtype, f"input '{self.name}'")
        return array.astype(self.storage_dtype, copy=False)

    def widened(self, array: np.ndarray) -> np.ndarray:
        """A device result as the caller gets it: booleans, or the model's
        type (`InputError` if i32 arithmetic left its range, where the
        model's narrower type would have wrapped, or a value is not one of
        a narrow type's: `host_types.to_host`)."""
        if self.boolean:
            return array != 0
        if self.host_type:
            return host_types.to_host(array, self.host_type, f"output '{self.name}'")
        return array


@dataclass
class Interface:
    """The compiled function's arguments: model inputs, outputs, host constants."""
    inputs: list[Port]
    outputs: list[Port]
    roles: list[str]                       # per argument: input / output / constant
    constants: dict[int, np.ndarray]       # argument index -> data

    def arguments(self, inputs: Sequence[np.ndarray], extra_args: Sequence[ir.Value] = ()) -> list[np.ndarray]:
        arrays, it_in, it_out, ports = [], iter(inputs), iter(self.outputs), iter(self.inputs)
        for i, role in enumerate(self.roles):
            if role == "input":
                arrays.append(next(ports).narrowed(np.asarray(next(it_in))))
                if arrays[-1].dtype == np.bool_:
                    arrays[-1] = arrays[-1].astype(np.int8)
            elif role == "output":
                port = next(it_out)
                arrays.append(np.zeros(port.shape, port.storage_dtype))
            else:
                arrays.append(self.constants[i])
        for value in extra_args:  # e.g. the GM workspace npu-plan-gm adds
            arrays.append(np.zeros(memref_shape(value.type), NUMPY_DTYPES[memref_element(value.type)]))
        return arrays


def read_interface(func_op: ir.Operation) -> Interface:
    """Recover the interface from the `npu.input/output/constant` argument
    attributes. Arguments the pipeline appends for the caller to provide
    (the GM workspace) end it: `Interface.arguments` makes them."""
    from npu.ir import BLOCK_IDX_ATTR, WORKSPACE_ATTR, constant_data

    inputs, outputs, roles, constants = [], [], [], {}
    arg_attrs = func_op.attributes["arg_attrs"] if "arg_attrs" in func_op.attributes else []
    for i, (arg, attrs) in enumerate(zip(func_op.regions[0].blocks[0].arguments, arg_attrs)):
        attrs = ir.DictAttr(attrs)
        if WORKSPACE_ATTR in attrs or BLOCK_IDX_ATTR in attrs:
            break  # the block index (the launch provides it), then the workspace
        port = Port("", tuple(memref_shape(arg.type)), memref_element(arg.type), "npu.bool" in attrs,
                    ir.StringAttr(attrs["npu.host_type"]).value if "npu.host_type" in attrs else "")
        if "npu.constant" in attrs:
            roles.append("constant")
            constants[i] = constant_data(attrs["npu.constant"], port.shape, port.dtype)
        elif "npu.output" in attrs:
            port.name = ir.StringAttr(attrs["npu.output"]).value
            roles.append("output")
            outputs.append(port)
        else:
            port.name = ir.StringAttr(attrs["npu.input"]).value if "npu.input" in attrs else f"arg{i}"
            roles.append("input")
            inputs.append(port)
    return Interface(inputs, outputs, roles, constants)


def linalg_to_ascend_text(module: ir.Module, input_names=None, output_names=None,
                          locate=None, where: str = "-") -> str:
    """Convert the one function of a linalg module; located errors as CompileError."""
    return _convert(module, input_names, output_names, locate, where).convert()


def linalg_to_ascend(module: ir.Module, input_names, output_names, locate, where: str,
                     ctx: ir.Context, weights: dict | None = None) -> ir.Module:
    """`linalg_to_ascend_text` parsed, its large constants attached after the parse, not in the
    text; `weights`: the data of the module's detached constants (`import_linalg`)."""
    from npu.passes.linalg_to_ascend.emitter import attach_constants

    converter = _convert(module, input_names, output_names, locate, where, detach_constants=True,
                         weights=weights)
    ascend = _parse(converter.convert(), ctx, where)
    attach_constants(functions(ascend)[0].operation, converter.em.detached)
    return ascend


def _convert(module: ir.Module, input_names, output_names, locate, where: str, **options):
    """A `Converter` (with `options`) whose `convert()` reports unsupported ops as CompileError."""
    from npu.passes.linalg_to_ascend.convert import Converter

    funcs = functions(module)
    if len(funcs) != 1:
        raise CompileError(f"{where}: error: expected one func.func, found {len(funcs)}")

    class Located(Converter):
        def convert(self) -> str:
            try:
                text = super().convert()
            except UnsupportedOp as e:
                raise CompileError(_located(e, locate, where)) from None
            for op, message in self.warnings:
                _warn(op, message, locate, where)
            return text

    return Located(funcs[0], input_names, output_names, locate=locate, **options)


def _warn(op, message: str, locate, where: str) -> None:
    """A conversion warning into the caller's diagnostics engine, at the
    ONNX node (`model: warning: node 'n' (Op): ...`) or the op's location."""
    op = op.operation if hasattr(op, "operation") else op
    engine = diagnostics.DiagnosticEngine(display_name=where)
    node = locate.describe(op.location) if locate is not None else None
    d = engine.emit("warning", f"{node}: {message}" if node else message, None if node else op.location)
    diagnostics.current().diagnostics.append(d)


def _located(e: UnsupportedOp, locate, where: str) -> str:
    op = e.op.operation if hasattr(e.op, "operation") else e.op
    name = getattr(op, "name", "op")
    if locate is not None and locate.describe(op.location):
        return f"{where}: error: {locate.describe(op.location)}: cannot compile '{name}': {e.reason}"
    d = diagnostics.DiagnosticEngine(display_name=where).emit(
        "error", f"cannot convert '{name}' to ascend: {e.reason}", op.location)
    return d.format()


@dataclass
class Kernel:
    """A compiled model: call it with numpy arrays in input order."""
    module: ir.Module
    interface: Interface
    target: object
    stages: Mapping[str, str] = field(default_factory=dict)  # a `Stages` from `compile`
    compile_seconds: float = 0.0
    source_names: dict[str, str] = field(default_factory=dict)   # where -> op label
    workspace: dict | None = None
    stage_seconds: dict[str, float] = field(default_factory=dict)   # import, to_ascend, lower
    model_constant_bytes: int | None = None  # an ONNX model's data (`problem.constant_bytes`)

    @property
    def input_names(self) -> list[str]:
        return [p.name for p in self.interface.inputs]

    @property
    def output_names(self) -> list[str]:
        return [p.name for p in self.interface.outputs]

    def check_inputs(self, arrays: Sequence[np.ndarray]) -> list[np.ndarray]:
        ports = self.interface.inputs
        if len(arrays) != len(ports):
            raise ValueError(f"the kernel takes {len(ports)} inputs "
                             f"({', '.join(p.name for p in ports)}), got {len(arrays)}")
        out = []
        for port, a in zip(ports, arrays):
            a = np.asarray(a)
            if tuple(a.shape) != port.shape:
                raise ValueError(f"input '{port.name}' must have shape {list(port.shape)}, got {list(a.shape)}")
            out.append(host_types.from_caller(a, port.host_type, f"input '{port.name}'") if port.host_type
                       else a.astype(port.numpy_dtype, copy=False))
        return out

    def __call__(self, *arrays: np.ndarray, strict: bool = True, numerics: bool = True):
        from npu.frontend.problem import model_chip
        from npu.frontend.report import per_op_breakdown
        from npu.ir import fused_members
        from npu.simulator.html_report import html_report as html_page
        from npu.simulator import SimulationError, simulate

        inputs = self.check_inputs(arrays)
        func = functions(self.module)[0]
        extra = [a for a in list(func.regions[0].blocks[0].arguments)[len(self.interface.roles):]
                 if is_memref(a.type)]  # not the block index: the launch provides it
        args = self.interface.arguments(inputs, extra)
        try:
            result = simulate(self.module, args, target=self.target, strict=strict, numerics=numerics)
        except SimulationError as e:  # a data-dependent fault (a gather's id): name the node
            label = self.source_names.get(e.where)
            if label is None:
                raise
            raise SimulationError(e.kind, f"node {label}: {e.message}", e.where) from None
        outputs = [result.outputs[i] for i, r in enumerate(self.interface.roles) if r == "output"]
        outputs = [p.widened(o) for o, p in zip(outputs, self.interface.outputs)]
        report = dict(result.report)
        if self.model_constant_bytes is not None and report.get("chip"):
            report["chip"] = model_chip(report, self.interface.inputs + self.interface.outputs,
                                        self.model_constant_bytes, self.target)
        report["per_op"] = per_op_breakdown(result, self.target, self.source_names,
                                            fused_members(self.module.operation))
        # hotspots by ONNX node (name and type), not only `model.onnx:<node number>:1`
        report["hotspots"] = [dict(h, node=self.source_names[h["location"]])
                              if h.get("location") in self.source_names else h
                              for h in report.get("hotspots", [])]
        report["per_op_bound_cycles"] = sum(r["bound_cycles"] for r in report["per_op"])
        report["compile_seconds"] = round(self.compile_seconds, 3)
        report["compile_stage_seconds"] = self.stage_seconds
        if self.workspace is not None:
            report["gm_workspace"] = self.workspace
        report["trace"] = result.chrome_trace
        report["html"] = lambda: html_page(result, {k: v for k, v in report.items()
                                                    if k not in ("trace", "html")})
        return outputs, report


def import_linalg(source, ctx: ir.Context, where: str, input_shapes: dict | None = None, weights=None):
    """(linalg module, input names, output names, NodeLocations | None) from
    any source; `input_shapes` pins an ONNX model's dynamic input dims. With `weights` (a dict),
    an ONNX model's large constants stay detached: their data goes there, for `linalg_to_ascend`."""
    from npu.frontend.onnx_import import ImportError_, import_onnx
    from npu.frontend.onnx_shapes import InputShapeError

    is_onnx = not (isinstance(source, ir.Module) or (isinstance(source, str) and _looks_like_mlir(source))
                   or (isinstance(source, (str, os.PathLike)) and not os.fspath(source).endswith(".onnx")))
    if input_shapes and not is_onnx:
        raise UsageError("input shapes apply to ONNX models only: a linalg module's shapes are "
                         "its own")
    if isinstance(source, ir.Module):
        return parse_module(str(source), ctx), None, None, None
    if isinstance(source, str) and _looks_like_mlir(source):
        return _parse(source, ctx, where), None, None, None
    if isinstance(source, (str, os.PathLike)):
        if not os.path.exists(source):
            raise CompileError(f"{where}: error: no such file")
        if not os.fspath(source).endswith(".onnx"):
            with open(source) as f:
                return _parse(f.read(), ctx, where), None, None, None
    try:
        imported = import_onnx(source, where, detach_weights=True, input_shapes=input_shapes)
    except InputShapeError as e:
        raise UsageError(str(e)) from None
    except ImportError_ as e:
        raise CompileError(str(e)) from None
    locate = NodeLocations(os.path.basename(where), imported.node_types)
    locate.empty = imported.empty
    locate.constant_bytes = imported.constant_bytes
    if not imported.mlir:  # every output known on the host: no device program
        return None, [], [], locate
    module = _parse(imported.mlir, ctx, where)
    if weights is None:
        onnx_weights.attach_weights(module, imported.weights)
    else:
        weights.update(imported.weights)
    names = imported.input_names, imported.output_names
    del imported  # the importer's context, which holds the weights it made
    host_memory.release_after(source)
    return module, *names, locate


def _looks_like_mlir(text: str) -> bool:
    return "\n" in text or text.lstrip().startswith(("module", "func.func", "#", "//"))


def _parse(text: str, ctx: ir.Context, where: str) -> ir.Module:
    from npu.ir import ParseError

    with diagnostics.collecting(diagnostics.DiagnosticEngine(display_name=where)) as engine:
        try:
            return parse_module(text, ctx)
        except ParseError:
            raise CompileError("\n".join(d.format() for d in engine.diagnostics
                                         if d.severity == "error")
                               or f"{where}: error: cannot parse") from None


def compile(source, target: str | None = "ascend910", pipeline: str = DEFAULT_PIPELINE,
            where: str | None = None, input_shapes: dict | None = None,
            cores: int | None = None) -> Kernel:
    """Compile an ONNX model (proto / path / bytes) or a linalg module (text / path / ir.Module),
    for every core of the target unless `cores` says how many (1: one; 0: all).
    `input_shapes` ({input name: dims}) pins an ONNX model's dynamic input
    dims; a name or shape that does not fit the model raises `UsageError`."""
    from npu.pipeline import PipelineError, run_pipeline, with_lower_option
    from npu.target import Target, get_target

    t0 = time.perf_counter()
    tgt = target if isinstance(target, Target) else get_target(target)
    if cores is not None:
        pipeline = with_lower_option(pipeline, f"cores={int(cores)}")
    if where is None:
        is_text = isinstance(source, ir.Module) or (isinstance(source, str) and _looks_like_mlir(source))
        where = ("<module>" if is_text else os.fspath(source)
                 if isinstance(source, (str, os.PathLike)) else "<model>")
    ctx = make_context()
    stages = Stages()
    seconds: dict[str, float] = {}
    # The linalg module lives in a context of its own: MLIR keeps every
    # attribute (the weights, as the importer made them) until its context
    # dies, and nothing needs them once the ascend module exists.
    weights: dict = {}  # given to the conversion, never attached to the linalg module
    linalg, in_names, out_names, locate = import_linalg(source, make_context(), where,
                                                        input_shapes, weights)
    from npu.frontend.empty_kernel import wrap

    if linalg is None:
        return wrap(locate.empty, None, tgt)
    seconds["import"] = time.perf_counter() - t0
    stages["linalg"] = onnx_weights.as_attached(_short(linalg))  # its detached weights shown as attached
    module = linalg_to_ascend(linalg, in_names, out_names, locate, where, ctx, weights)
    del linalg, weights  # the weights' views kept the importer's context alive
    host_memory.release_after(source)
    seconds["to_ascend"] = time.perf_counter() - t0 - sum(seconds.values())
    stages["ascend"] = _short(module)
    check_size(module, tgt, where, locate)
    with diagnostics.collecting(diagnostics.DiagnosticEngine(display_name=where)) as engine:
        try:
            run_pipeline(module, pipeline, tgt)
        except PipelineError as e:
            raise CompileError(_by_node(str(e), locate, where)) from None
    for d in engine.diagnostics:  # warnings, and what the chip split chose, reach the caller
        if not diagnostics.shown_by_compile(d):
            continue  # the tiling and fusion remarks not asked for are npu-opt's to show
        node = locate.node_at(d.filename, d.line) if locate else None
        diagnostics.current().diagnostics.append(d if node is None else replace(
            d, message=f"{node}: {d.message}", filename=where, line=0, col=0))
    seconds["lower"] = time.perf_counter() - t0 - sum(seconds.values())
    stages.later("lowered", lambda: _short(module))  # printed when read
    # The pipeline may change the constants (npu-fuse-horizontal concatenates weights).
    interface = read_interface(functions(module)[0])
    check_size(module, tgt, where, locate)
    names = locate.by_where if locate else {}
    return wrap(locate.empty if locate else None,
                Kernel(module, interface, tgt, stages, time.perf_counter() - t0, names, gm_plan(module),
                       {k: round(v, 3) for k, v in seconds.items()},
                       locate.constant_bytes if locate else None), tgt)


def _by_node(text: str, locate, where: str) -> str:
    """Errors at `model.onnx:<node number>:1` name the ONNX node instead."""
    for name, line in (locate.order.items() if locate else ()):
        text = re.sub(rf"(?m)^\S*{re.escape(locate.model)}:{line}:1: error:",
                      f"{where}: error: node '{name}' ({locate.types[name]}):".replace("\\", "\\\\"),
                      text)
    return text


def check_size(module: ir.Module, target, where: str, locate) -> None:
    """The arguments (weights, inputs, outputs and, once planned, the GM
    workspace) must fit the target's global memory; the error names the op
    whose constant is the largest."""
    from npu.ir import element_bytes

    func = functions(module)[0]
    args = [a for a in func.regions[0].blocks[0].arguments if is_memref(a.type)]
    sizes = [int(np.prod(memref_shape(a.type), dtype=np.int64)) * element_bytes(memref_element(a.type))
             for a in args]
    total = sum(sizes)
    if total <= target.gm_bytes:
        return
    largest = max(range(len(args)), key=lambda i: sizes[i])
    loc = args[largest].location
    who = (locate.describe(loc) if locate else None) or diagnostics.DiagnosticEngine(
        display_name=where).emit("error", "", loc).format().removesuffix(" error: ").rstrip(":")
    raise CompileError(f"{where}: error: {who}: the model needs {total} bytes of global memory "
                       f"(its largest buffer {sizes[largest]} bytes), more than the "
                       f"{target.gm_bytes} bytes of target '{target.name}'")


def gm_plan(module: ir.Module) -> dict | None:
    """The GM workspace plan `npu-plan-gm` (run by `npu-lower`) recorded:
    workspace bytes against the lower bound (peak live) and the sum of sizes."""
    func = functions(module)[0]
    if "npu.gm_plan" not in func.attributes:
        return None
    plan = ir.DictAttr(func.attributes["npu.gm_plan"])
    return {k: _attr_value(plan[k]) for k in ("allocated", "lower_bound", "sum", "tensors", "algorithm")
            if k in plan}


def _attr_value(attr):
    if isinstance(attr, ir.IntegerAttr):
        return attr.value
    if isinstance(attr, ir.StringAttr):
        return attr.value
    return str(attr)


def _short(module: ir.Module) -> str:
    """Module text with large constants elided (the stages are for reading)."""
    return module.operation.get_asm(large_elements_limit=16, enable_debug_info=False)

"""ONNX -> upstream `linalg` on tensors, through torch-mlir.

The whole dependency on torch-mlir lives here: another importer (an FX
exporter, IREE's ONNX importer) can replace this module as long as it returns
the same thing, MLIR text of one `func.func` on tensors in `linalg`, `tensor`,
`arith` and `math`, whose op locations are the ONNX node names.

Before torch-mlir sees the model we check what we can name precisely: that the
file is a model, that every node is an operator we compile, and that every
shape is static. Each failure is one `ImportError` line naming the node (its
ONNX name and op type) and the reason.
"""

from __future__ import annotations

import os
import sys
import re
from dataclasses import dataclass, field

from npu.frontend import host_memory, torch_pipeline
from npu.frontend.onnx_skeleton import infer_shapes, take_inferred
from npu.frontend.onnx_weights import dense_context_cache, detach_weights

SUPPORTED_OPS = frozenset({
    "MatMul", "Gemm", "Add", "Sub", "Mul", "Div", "Pow", "Relu", "Gelu", "Erf", "Tanh",
    "Sigmoid", "Exp", "Log", "Sqrt", "Reciprocal", "Neg", "Abs", "Softmax",
    "LayerNormalization", "ReduceSum", "ReduceMean", "ReduceMax", "Transpose", "Reshape",
    "Flatten", "Squeeze", "Unsqueeze", "Cast", "Clip", "Max", "Min", "Where", "Constant",
    "Identity", "Greater", "Less", "Equal", "GreaterOrEqual", "LessOrEqual", "ReduceSumSquare",
    "Gather", "GatherElements", "GatherND", "Slice", "Split", "Concat", "Expand", "Trilu",
    "And", "Or", "Not", "Xor", "IsNaN", "IsInf",
    "Conv",
    "MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool",
    "MatMulInteger",  # left only where it runs on the int8 cube (onnx_matmul_integer)
    "ConvInteger",  # likewise (onnx_conv_integer)
})

# ONNX elem_type -> numpy dtype name for the types the NPU holds.
ONNX_DTYPES = {1: "float32", 10: "float16", 6: "int32", 3: "int8", 9: "bool"}

class ImportError_(ValueError):
    """One user-facing line: `<model>: error: node 'n' (Op): reason`."""


@dataclass
class ImportedModel:
    """The linalg module text and the model's interface, in argument order."""
    mlir: str
    input_names: list[str]
    output_names: list[str]
    node_types: dict[str, str] = field(default_factory=dict)  # node name -> op type
    # With `detach_weights`: key -> data of the large `arith.constant`s, whose
    # text carries a zero splat and `npu.weight = "<key>"` instead.
    weights: dict[str, object] = field(default_factory=dict)
    # `onnx_empty.EmptyPlan` when values are zero-size (known on the host);
    # with no device outputs left, `mlir` is empty.
    empty: object = None
    # `problem.constant_bytes` of the model as given: the chip ideal's constant data
    constant_bytes: int | None = None


def _error(where: str, message: str) -> ImportError_:
    return ImportError_(f"{where}: error: {message}")


def _failer(where: str):
    """`message -> ImportError_` at `where`: what the checks in
    `npu.frontend.onnx_checks` raise."""
    return lambda message: _error(where, message)


def load_model(model_or_path, where: str):
    """An `onnx.ModelProto` from a proto, a path or bytes; a one-line error otherwise."""
    import onnx

    if isinstance(model_or_path, onnx.ModelProto):
        return model_or_path
    try:
        if isinstance(model_or_path, (bytes, bytearray)):
            model = onnx.load_from_string(bytes(model_or_path))
        else:
            model = _load_file(os.fspath(model_or_path))
    except Exception as e:  # protobuf raises several types for garbage
        raise _error(where, f"not an ONNX model ({type(e).__name__}: {str(e).splitlines()[0] if str(e) else 'unreadable'})") from None
    if not model.graph.node and not model.graph.output:
        raise _error(where, "not an ONNX model (no graph)")
    return model


def _load_file(path: str):
    """`onnx.load(path)`, a binary `.onnx` parsed from the mapped file: reading
    it into a bytes object first was half of the load's 0.46 CPU s on BERT-12
    (340 MB), and that copy sat beside the proto the parse makes."""
    import mmap

    import onnx
    from google.protobuf.message import DecodeError
    from onnx.external_data_helper import load_external_data_for_model

    if not path.endswith(".onnx") or not os.path.isfile(path) or not os.path.getsize(path):
        return onnx.load(path)  # text formats by extension, and what mmap cannot map
    model = onnx.ModelProto()
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
        with memoryview(mapped) as view:
            decoded = model.ParseFromString(view)  # the parse copies what it keeps
            size = len(view)
    if decoded is not None and decoded != size:  # as onnx.load checks
        raise DecodeError(f"Protobuf decoding consumed too few bytes: {decoded} out of {size}")
    load_external_data_for_model(model, os.path.dirname(path))
    return model


def _name_nodes(model) -> dict[str, str]:
    """Give every node a unique name (locations and errors need one)."""
    seen: set[str] = set()
    types = {}
    for i, node in enumerate(model.graph.node):
        name = node.name or f"{node.op_type}_{i}"
        while name in seen:
            name = f"{name}_{i}"
        node.name = name
        seen.add(name)
        types[name] = node.op_type
    return types


def drop_absent_trailing_inputs(model) -> None:
    """An optional input written as '' is absent (ONNX's convention); a
    trailing one is the same node without it. onnxruntime crashed on some
    (LayerNormalization with its bias given as '': a segfault), so the
    reference of `npu-run --check` runs the model without them too."""
    for node in model.graph.node:
        while node.input and node.input[-1] == "":
            node.input.pop()


def _static_shape(value_info) -> list[int] | None:
    tt = value_info.type.tensor_type
    if not tt.HasField("shape"):
        return None
    dims = []
    for d in tt.shape.dim:
        if not d.HasField("dim_value") or d.dim_value <= 0:
            return None
        dims.append(d.dim_value)
    return dims


def strict_shapes(model, where: str):
    """The model with every value's type, by strict shape inference; a model
    it refuses (a Reshape to another element count, ...) is a located error."""
    try:
        return infer_shapes(model, strict_mode=True)
    except Exception as e:
        raise _error(where, f"shape inference failed: {str(e).splitlines()[0]}") from None


def check_model(model, where: str) -> None:
    """Reject what we cannot compile, naming the node and the reason."""
    import onnx

    from npu.frontend import onnx_checks

    fail = _failer(where)
    onnx_checks.check_versions(model, fail)
    check_static_inputs(model, where)  # else the shape plumbing that did not fold is "unsupported"
    check_operators(model, where)
    onnx_checks.check_flags(model, fail)
    onnx_checks.run_checker(model, fail)
    initialized = {t.name for t in model.graph.initializer}
    for value in list(model.graph.input) + list(model.graph.output):
        if value.name in initialized:
            continue
        if _static_shape(value) is None:
            from npu.frontend.onnx_shapes import dynamic_shape_message

            kind = "input" if value in model.graph.input else "output"
            raise _error(where, dynamic_shape_message(value, kind))
        if value.type.tensor_type.elem_type not in ONNX_DTYPES:
            raise _error(where, f"'{value.name}': element type "
                         f"{onnx.TensorProto.DataType.Name(value.type.tensor_type.elem_type)} "
                         "is not supported (f32, f16, i32, i8, bool; int64, int16 and unsigned integers run as i32)")
    from npu.frontend.onnx_conv import check_convs

    check_convs(model, fail)
    inferred = strict_shapes(model, where)
    types = onnx_checks.value_types(inferred)
    onnx_checks.check_sizes(inferred, types, fail)
    onnx_checks.check_axes(inferred, types, fail)
    onnx_checks.check_reshapes(inferred, types, fail)
    shapes = {v.name: v for v in inferred.graph.value_info}
    for node in inferred.graph.node:
        for out in node.output:
            info = shapes.get(out)
            if info is not None and _static_shape(info) is None:
                raise _error(where, f"node '{node.name}' ({node.op_type}): output '{out}' has a "
                             "dynamic shape (only static shapes compile)")


def check_static_inputs(model, where: str) -> None:
    """Every graph input static; the first that is not is named with its
    dynamic dims and the option that pins them."""
    from npu.frontend.onnx_shapes import dynamic_shape_message, graph_inputs

    for value in graph_inputs(model):
        if _static_shape(value) is None:
            raise _error(where, dynamic_shape_message(value, "input"))


def check_operators(model, where: str) -> None:
    """Every node an operator we compile; otherwise one error line per
    missing op type (its count and first node), all at once."""
    missing: dict[tuple[str, str], list[str]] = {}
    for node in model.graph.node:
        if node.domain not in ("", "ai.onnx") or node.op_type not in SUPPORTED_OPS:
            missing.setdefault((node.domain, node.op_type), []).append(node.name)
    lines = []
    for (domain, op), names in missing.items():
        count = f"{len(names)} node{'s' if len(names) > 1 else ''}"
        reason = (f"operator domain '{domain}' is not supported" if domain not in ("", "ai.onnx")
                  else "unsupported operator")
        lines.append(f"{where}: error: node '{names[0]}' ({op}): {reason} ({count})")
    if lines:
        raise ImportError_("\n".join(lines))


def import_onnx(model_or_path, where: str | None = None, detach_weights: bool = False,
                input_shapes: dict | None = None) -> ImportedModel:
    """ONNX model (proto, path or bytes) -> linalg-on-tensors text.

    `detach_weights` keeps the large constants out of the text (see
    `ImportedModel.weights`): printing and re-parsing hundreds of megabytes of
    literals dominated the import of a large model. `input_shapes` (name ->
    dims) pins dynamic input dims first (`onnx_shapes.InputShapeError` when
    it does not fit the model). What is computable at compile time is folded
    (`onnx_fold`) before the operators are checked."""
    where = where or (os.fspath(model_or_path) if isinstance(model_or_path, (str, os.PathLike))
                      else "<model>")
    model = load_model(model_or_path, where)
    from npu.frontend.problem import constant_bytes

    given_bytes = constant_bytes(model)
    if model is model_or_path:  # never touch the caller's proto (one loaded here is ours)
        copy = type(model)()
        copy.CopyFrom(model)
        model = copy
    model.graph.name = function_name(model.graph.name)
    _name_nodes(model)
    drop_absent_trailing_inputs(model)
    from npu.frontend import (onnx_checks, onnx_empty, onnx_fold, onnx_narrow, onnx_shapes,
                              onnx_versions, onnx_wide_types)

    onnx_checks.check_initializers(model, _failer(where))  # before any data is read
    if input_shapes:
        onnx_shapes.pin_input_shapes(model, onnx_shapes.check_input_shapes(input_shapes))
    onnx_checks.check_versions(model, _failer(where))
    onnx_checks.check_arity(model, _failer(where))
    from npu.frontend.onnx_qdq import check_quantized_nodes

    check_quantized_nodes(model, _failer(where))  # before folding reads a scale
    model = onnx_versions.upgrade_old_opset(model)
    from npu.frontend.onnx_qdq_int8 import rewrite_qdq_int8
    from npu.frontend.onnx_qdq_pool import rewrite_qdq_max_pools
    from npu.frontend.onnx_qlinear import expand_qlinear_ops, gemms_as_matmuls

    remark = lambda m: print(f"{where}: remark: {m}", file=sys.stderr)  # noqa: E731
    expand_qlinear_ops(model, remark)
    gemms_as_matmuls(model, remark)
    # The pools first: a conv's requantisation then feeds the pool's integers.
    rewrite_qdq_max_pools(model, remark)
    rewrite_qdq_int8(model, remark)  # before folding turns DQ(W_q) into a float weight
    onnx_fold.fold_constants(model)
    types = onnx_fold.inferred_types(model)  # one inference for the rewrites (names keep their types)
    if types is None:  # the model's own error, before an empty output could hide it
        strict_shapes(model, where)
    empty = onnx_empty.take_empty_values(model, types)  # before rewrites that change a reduction's type
    if empty is not None and not empty.device_outputs:
        return ImportedModel("", [], [], _name_nodes(model), {}, empty)
    from npu.frontend.onnx_rewrites import rewrite_for_import

    rewrite_for_import(model, types, _failer(where), remark)
    onnx_shapes.infer_output_shapes(model)
    host_types = onnx_wide_types.widen_types(model, _failer(where), types)
    host_types.update(onnx_narrow.narrow_integers(model, _failer(where)))
    node_types = _name_nodes(model)  # the nodes left, by their own names
    check_model(model, where)
    initialized = {t.name for t in model.graph.initializer}
    inputs = [v.name for v in model.graph.input if v.name not in initialized]
    outputs = [v.name for v in model.graph.output]
    weights: dict[str, object] | None = {} if detach_weights else None
    owned = [model]
    del model  # `_run_torch_mlir` lets the proto go once torch-mlir holds the weights
    text = _run_torch_mlir(owned, where, node_types, inputs, outputs, weights,
                           [f"{n}={t}" for n, t in sorted(host_types.items())])
    return ImportedModel(text, inputs, outputs, node_types, weights or {}, empty, given_bytes)


def function_name(graph_name: str) -> str:
    """The graph's name as the entry function's symbol: torch-mlir prints it
    bare, so a name with spaces or dashes ('my graph-1.0') made unparsable
    IR. Other characters become '_'; an empty name is `main_graph`."""
    name = re.sub(r"[^A-Za-z0-9_]", "_", graph_name) or "main_graph"
    return name if not name[0].isdigit() else "_" + name


def _run_torch_mlir(owned: list, where: str, node_types: dict[str, str], inputs: list[str],
                    outputs: list[str], weights: dict | None = None,
                    host_types: list[str] = ()) -> str:
    """torch-mlir's import and lowering of the model `owned` holds (its only
    reference: the proto is dropped once imported, so that its weights are
    not alive beside torch-mlir's two copies: BERT-12's 340 MB)."""
    from torch_mlir import ir as tir
    from torch_mlir.dialects import torch as torch_d
    from torch_mlir.extras import onnx_importer
    from torch_mlir.passmanager import PassManager as TorchPassManager

    model = owned.pop()
    try:
        take_inferred(model, infer_shapes(model, data_prop=True))
    except Exception as e:
        raise _error(where, f"shape inference failed: {str(e).splitlines()[0]}") from None
    ctx = tir.Context()
    torch_d.register_dialect(ctx)
    try:
        info = onnx_importer.ModelInfo(model)
        module = info.create_module(context=ctx).operation
        onnx_importer.NodeImporter.define_function(info.main_graph, module, dense_context_cache(
            onnx_importer, ctx)).import_all()
    except onnx_importer.OnnxImportError as e:
        raise _error(where, f"import: {str(e).splitlines()[0]}") from None
    large = host_memory.model_bytes(model) >= host_memory.WORTH_BYTES
    # The importer's model and graph records point at each other: a cycle
    # that held the proto (its weights) until the next collection (BERT-12's
    # compile peaked 1.23 -> 1.55 GB once detach_weights stopped making an
    # OpView an op, whose allocations used to trigger that collection
    # early). Broken here, the proto goes with the last reference, without
    # a full collection (0.06 CPU s).
    info.main_graph = None
    del info, model
    if large:
        host_memory.trim()
    with ctx:
        # torch-mlir's diagnostics are collected, never printed: the user
        # gets one line naming the node (`_lowering_failure`).
        ctx.emit_error_diagnostics = True
        diagnostics: list[str] = []

        def collect(d) -> bool:
            diagnostics.append(f"{d.location}: error: {d.message}")
            return True

        handler = ctx.attach_diagnostic_handler(collect)
        try:
            torch_pipeline.lower_to_linalg(module, tir, TorchPassManager)
        except Exception as e:
            raise _error(where, _lowering_failure("\n".join([*diagnostics, str(e)]),
                                                  node_types)) from None
        finally:
            handler.detach()
        # The model's names travel with the module (`npu.input_names`,
        # `npu.output_names`): the conversion names its arguments after them.
        for op in module.regions[0].blocks[0].operations:
            if op.operation.name == "func.func":
                for attr, names in (("npu.input_names", inputs), ("npu.output_names", outputs),
                                    ("npu.host_types", host_types)):
                    op.operation.attributes[attr] = tir.ArrayAttr.get([tir.StringAttr.get(n) for n in names])
                if weights is not None:
                    detach_weights(op.operation, tir, weights)
    return _pack_bool_hex(module.get_asm(enable_debug_info=True, large_elements_limit=None))


_BOOL_HEX = re.compile(r'dense<"0x([0-9A-Fa-f]+)">(\s*:\s*tensor<((?:\d+x)*)i1>)')


def _pack_bool_hex(text: str) -> str:
    """torch-mlir's MLIR prints an i1 tensor's hex literal one byte per
    element; the MLIR the rest of the compiler parses with packs i1 bits
    (LSB first). GPT-2's causal mask (a 16x16 bool constant) met this."""
    import numpy as np

    def repack(m: re.Match) -> str:
        dims = [int(d) for d in m.group(3).split("x") if d]
        count = int(np.prod(dims, dtype=np.int64))
        if len(m.group(1)) != 2 * count or count <= 1:
            return m.group(0)
        bits = np.frombuffer(bytes.fromhex(m.group(1)), np.uint8) != 0
        packed = np.packbits(bits, bitorder="little").tobytes().hex().upper()
        return f'dense<"0x{packed}">{m.group(2)}'

    return _BOOL_HEX.sub(repack, text) if "i1>" in text else text


def _lowering_failure(message: str, node_types: dict[str, str]) -> str:
    """torch-mlir's diagnostic, reduced to one line naming the node."""
    import re

    lines = [l.strip() for l in message.splitlines() if l.strip()]
    for line in lines:
        m = re.search(r'loc\("([^"]+)"\)', line) or re.search(r'at "([^"]+)"', line)
        if m and m.group(1) in node_types:
            detail = line.split("error:", 1)[-1].strip()
            return f"node '{m.group(1)}' ({node_types[m.group(1)]}): cannot lower: {detail}"
    detail = next((l.split("error:", 1)[-1].strip() for l in lines if "error:" in l), lines[0] if lines else "")
    return f"torch-mlir lowering failed: {detail}"

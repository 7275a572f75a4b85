"""Checks of an ONNX model that must run before anything is allocated or
handed to torch-mlir.

torch-mlir trusts its input: an axis of 2^32 makes its decomposition loop
forever, an initializer with too few bytes is read past its end, and a
dimension of 2^31 makes the constant folder allocate the whole tensor. Each
check here turns such a model into one `ImportError_` line naming the node
(or initializer, or value) and the reason.
"""

from __future__ import annotations

import re

import numpy as np

# The same limit as the `.mlir` path: every tensor's bytes must fit what
# npu-run simulates (a tool limit, not a hardware number):
# `npu.simulator.run_inputs.MAX_ARGUMENT_BYTES`, which a test holds this to.
# Not imported from there: that loads the simulator, 0.3 CPU s of every
# compile that does not simulate.
MAX_TENSOR_BYTES = 1 << 30

# TensorProto element type -> the typed field its values live in, when not
# in raw_data (float16/bfloat16/8-bit/bool values live in int32_data).
_TYPED_FIELD = {1: "float_data", 2: "int32_data", 3: "int32_data", 4: "int32_data", 5: "int32_data",
                6: "int32_data", 7: "int64_data", 9: "int32_data", 10: "int32_data", 11: "double_data",
                12: "uint64_data", 13: "uint64_data", 16: "int32_data", 14: "float_data",
                15: "double_data"}


# Sub-byte types, packed in raw_data: bits per element.
_PACKED_BITS = {21: 4, 22: 4, 23: 4, 25: 2, 26: 2, 27: 6, 28: 6}


def element_bytes(elem_type: int) -> int:
    """Bytes of one element of an ONNX type (1 for the sub-byte and unknown ones)."""
    from onnx import helper

    try:
        return max(1, np.dtype(helper.tensor_dtype_to_np_dtype(elem_type)).itemsize)
    except (KeyError, TypeError, ValueError):
        return 1


def _elements(dims) -> int:
    return int(np.prod([int(d) for d in dims], dtype=object)) if len(dims) else 1


def check_tensor_data(tensor, what: str) -> str | None:
    """Why `tensor`'s stored values do not match its declared shape, or None."""
    import onnx

    if tensor.data_location == onnx.TensorProto.EXTERNAL or tensor.data_type in (0, onnx.TensorProto.STRING):
        return None
    if any(d < 0 for d in tensor.dims):
        return f"{what} has a negative dimension {list(tensor.dims)}"
    count = _elements(tensor.dims)
    itemsize = element_bytes(tensor.data_type)
    if count * itemsize > MAX_TENSOR_BYTES:
        return (f"{what} has shape {list(tensor.dims)} ({count * itemsize} bytes), more than the "
                f"limit of {MAX_TENSOR_BYTES} bytes per tensor")
    if tensor.HasField("raw_data"):
        bits = _PACKED_BITS.get(tensor.data_type)
        need = (count * bits + 7) // 8 if bits else count * itemsize
        have = len(tensor.raw_data)
        if have != need:
            return (f"{what} holds {have} bytes of raw_data; its shape {list(tensor.dims)} "
                    f"needs {need} bytes")
        return None
    field = _TYPED_FIELD.get(tensor.data_type)
    if field is None:
        return None
    have = len(getattr(tensor, field))
    if tensor.data_type in (14, 15):  # complex: two values per element
        have //= 2
    if have != count:
        return f"{what} holds {have} values in {field}; its shape {list(tensor.dims)} needs {count}"
    return None


def check_initializers(model, fail) -> None:
    """Initializers and Constant values: data that matches the declared shape,
    and a size under the limit (checked before any of them is read)."""
    for t in model.graph.initializer:
        reason = check_tensor_data(t, f"initializer '{t.name}'")
        if reason:
            raise fail(reason)
    for node in model.graph.node:
        for attr in node.attribute:
            if attr.HasField("t"):
                reason = check_tensor_data(attr.t, f"attribute '{attr.name}'")
                if reason:
                    raise fail(f"node '{node.name}' ({node.op_type}): {reason}")


def check_versions(model, fail) -> None:
    """A graph with outputs and an opset this onnx (and torch-mlir) knows."""
    import onnx

    if not model.graph.output:
        raise fail("the graph has no outputs")
    newest = onnx.defs.onnx_opset_version()
    for opset in model.opset_import:
        if opset.domain in ("", "ai.onnx") and opset.version > newest:
            raise fail(f"opset {opset.version} of the default domain is newer than the newest "
                       f"known ({newest})")


def check_arity(model, fail) -> None:
    """Every node of the default domain has the inputs its operator requires
    (a required input left as '' or dropped from the end is absent), before a
    rewrite indexes them."""
    import onnx

    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), None)
    if opset is None:
        return
    for node in model.graph.node:
        if node.domain not in ("", "ai.onnx"):
            continue
        try:
            schema = onnx.defs.get_schema(node.op_type, opset, "")
        except Exception:  # noqa: BLE001 - an unknown op: check_operators names it
            continue
        single = onnx.defs.OpSchema.FormalParameterOption.Single
        for k, formal in enumerate(schema.inputs):
            given = k < len(node.input) and node.input[k] != ""
            if formal.option == single and not given:
                raise fail(f"node '{node.name}' ({node.op_type}): invalid: its required input "
                           f"#{k} ('{formal.name}') is missing")


def run_checker(model, fail) -> None:
    """`onnx.checker` with strict shape inference; its refusal as one line.

    It checks the model's skeleton (`onnx_skeleton`): the weights' data was
    checked by `check_initializers`, and the checker reads none of it."""
    import onnx

    from npu.frontend.onnx_skeleton import skeleton

    try:
        onnx.checker.check_model(skeleton(model), full_check=True)
    except Exception as e:  # ValidationError, InferenceError, ...
        raise fail(checker_message(str(e))) from None


def checker_message(message: str) -> str:
    """The checker's (multi-line) refusal as one line, naming the node it names."""
    lines = [l.strip() for l in message.splitlines() if l.strip() and not l.startswith("==>")]
    detail = lines[0] if lines else "invalid model"
    m = re.search(r"Name: (\S+) OpType: (\S+)", message)
    name, op = m.groups() if m else (None, None)
    m = re.search(r"\(op_type:([^,]+), node name: ([^)]*)\)", message)
    if m:
        op, name = m.groups()
        at = detail.find(m.group(0))
        if at >= 0:
            detail = detail[at + len(m.group(0)):].lstrip(": ") or detail
    if name is None:
        return f"invalid model: {detail}"
    return f"node '{name}' ({op}): invalid: {detail}"


def value_types(inferred) -> dict[str, tuple[list[int] | None, int]]:
    """Every value's (static dims or None, element type) after shape inference."""
    types: dict[str, tuple[list[int] | None, int]] = {}
    for t in inferred.graph.initializer:
        types[t.name] = ([int(d) for d in t.dims], t.data_type)
    g = inferred.graph
    for v in list(g.input) + list(g.value_info) + list(g.output):
        tt = v.type.tensor_type
        dims = None
        if tt.HasField("shape") and all(d.HasField("dim_value") for d in tt.shape.dim):
            dims = [int(d.dim_value) for d in tt.shape.dim]
        types.setdefault(v.name, (dims, tt.elem_type))
        if types[v.name][0] is None and dims is not None:
            types[v.name] = (dims, tt.elem_type)
    return types


def check_sizes(inferred, types, fail) -> None:
    """Every declared or inferred value under the byte limit, before the
    constant folder (which allocates whole tensors) can see it."""
    producer = {out: n for n in inferred.graph.node for out in n.output}
    for name, (dims, elem) in types.items():
        if dims is None:
            continue
        size = _elements(dims) * element_bytes(elem)
        if size > MAX_TENSOR_BYTES:
            node = producer.get(name)
            who = f"node '{node.name}' ({node.op_type}): output" if node is not None else "value"
            raise fail(f"{who} '{name}' has shape {dims} ({size} bytes), more than the limit "
                       f"of {MAX_TENSOR_BYTES} bytes per tensor")


# op type -> (attribute or input index holding axes, how the valid range is
# found): "in" -> [-r, r-1] of input 0's rank r; "flatten" -> [-r, r];
# "unsqueeze" -> [-(r+k), r+k-1] with k axes.
_AXES = {"Softmax": ("axis", "in"), "LayerNormalization": ("axis", "in"),
         "Flatten": ("axis", "flatten"), "ReduceSum": ("axes", "in"), "ReduceMean": ("axes", "in"),
         "ReduceMax": ("axes", "in"), "Squeeze": ("axes", "in"), "Unsqueeze": ("axes", "unsqueeze")}


def _constants(model) -> dict[str, np.ndarray]:
    """Integer constants (initializers, Constant nodes) that axes may come from."""
    from onnx import numpy_helper

    out = {}
    for t in model.graph.initializer:
        if t.data_type in (6, 7) and len(t.dims) <= 1:
            out[t.name] = numpy_helper.to_array(t)
    for node in model.graph.node:
        if node.op_type == "Constant" and node.attribute and node.attribute[0].HasField("t"):
            t = node.attribute[0].t
            if t.data_type in (6, 7) and len(t.dims) <= 1:
                out[node.output[0]] = numpy_helper.to_array(t)
    return out


def check_flags(model, fail) -> None:
    """Attributes whose valid values do not depend on shapes (checked before
    `onnx.checker`, whose message for them names no node)."""
    import onnx

    for node in model.graph.node:
        where = f"node '{node.name}' ({node.op_type})"
        attrs = {a.name: a for a in node.attribute}
        if node.op_type == "Cast" and "to" in attrs:
            to = attrs["to"].i
            if to not in onnx.TensorProto.DataType.values() or to in (0, onnx.TensorProto.STRING):
                raise fail(f"{where}: attribute 'to' = {to} is not a tensor element type")
        if node.op_type == "Gemm":
            for flag in ("transA", "transB"):
                if flag in attrs and attrs[flag].i not in (0, 1):
                    raise fail(f"{where}: attribute '{flag}' = {attrs[flag].i} must be 0 or 1")


def check_axes(model, types, fail) -> None:
    """Axis-like attributes (and constant `axes` inputs) within the rank of
    the node's input, `perm` a permutation: out of range values make
    torch-mlir loop forever or fail without a location."""
    import onnx

    consts = _constants(model)
    for node in model.graph.node:
        where = f"node '{node.name}' ({node.op_type})"
        attrs = {a.name: a for a in node.attribute}
        dims = types.get(node.input[0], (None, 0))[0] if node.input else None
        rank = None if dims is None else len(dims)
        if node.op_type == "Transpose" and "perm" in attrs and rank is not None:
            perm = list(attrs["perm"].ints)
            if sorted(perm) != list(range(rank)):
                raise fail(f"{where}: attribute 'perm' = {perm} is not a permutation of the "
                           f"{rank} axes of input '{node.input[0]}'")
        if node.op_type not in _AXES or rank is None:
            continue
        name, kind = _AXES[node.op_type]
        if name in attrs:
            a = attrs[name]
            values, what = ([a.i] if a.type == onnx.AttributeProto.INT else list(a.ints)), f"attribute '{name}'"
        elif len(node.input) > 1 and node.input[1] in consts:
            values, what = [int(v) for v in np.ravel(consts[node.input[1]])], f"input '{node.input[1]}' ({name})"
        else:
            continue
        low, high = -rank, rank - 1
        if kind == "flatten":
            high = rank
        elif kind == "unsqueeze":
            low, high = -(rank + len(values)), rank + len(values) - 1
        bad = [v for v in values if not low <= v <= high]
        if bad:
            raise fail(f"{where}: {what} = {bad[0]} is out of range [{low}, {high}] for the "
                       f"rank-{rank} input '{node.input[0]}'")
        if len({v % (high + 1) for v in values}) != len(values):
            raise fail(f"{where}: {what} = {values} repeats an axis")


def check_reshapes(model, types, fail) -> None:
    """A Reshape keeps its element count. Strict shape inference lets a
    zero-size input through to another count, and torch-mlir then crashes
    (signal 11) instead of refusing it."""
    for node in model.graph.node:
        if node.op_type != "Reshape" or not node.input or not node.output:
            continue
        src = types.get(node.input[0], (None, 0))[0]
        dst = types.get(node.output[0], (None, 0))[0]
        if src is None or dst is None or not all(isinstance(d, int) for d in src + dst):
            continue
        if _elements(src) != _elements(dst):
            raise fail(f"node '{node.name}' ({node.op_type}): cannot reshape '{node.input[0]}' of "
                       f"shape {src} ({_elements(src)} elements) to {dst} ({_elements(dst)} elements)")

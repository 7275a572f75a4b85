"""ConvInteger: on the int8 cube where it can run there, else exactly through the f16 cube.

The int8 conv (`ascend.conv2d`'s int8 form) takes a 2-D ConvInteger with
groups = 1 whose x is int8, whose weight is a constant int8 tensor with a
zero (or absent) zero point, whose x zero point is one constant int8 value
(or absent), and whose pads are symmetric (torch-mlir imports no other). The node is left as it is, only its zero-valued weight
zero point dropped: torch-mlir makes it a `tensor.pad` with x_zp and a
`linalg.conv_2d_nchw_fchw_q`, which `passes/linalg_to_ascend/conv_int8.py`
takes (pad_value = x_zp, the x_zp term as the conv's i32 bias).

Every other ConvInteger with constant zero points runs on the f16 cube, and
so does a stem of C <= 4 input channels: padding them to an int8 block of 32
costs more cube time than the f16 small-channel mode (a 7x7 stem: ceil(49 / 4)
= 13 f16 K-fractals of 4 kernel points x 4 channels against 49 int8 ones of
one kernel point x 32 channels, each taking an f16 fractal's cube cycles).
There (x - x_zp) and (w - w_zp) are integers of magnitude <= 255, exact in
f16, their products exact, and the f32 accumulation exact while every partial
sum stays below 2^24, which C/G * Kh * Kw * max|x - x_zp| * max|w - w_zp| < 2^24
guarantees. Padding with x_zp is padding (x - x_zp) with zeros, so the float
Conv keeps the node's attributes. Beyond the bound, or with a zero point
computed at run time, the node is refused with one line naming it.
"""

from __future__ import annotations

import numpy as np

from npu.frontend.onnx_matmul_integer import INT_RANGES, constant_zero_points, exact_in_f32
from npu.frontend.onnx_qdq import _constants, users_of

INT8, FLOAT, INT32 = 3, 1, 6
# Input channels up to which a conv takes img2col's small-channel mode on the f16 cube.
STEM_CHANNELS = 4


def rewrite_conv_integers(model, types: dict | None, fail, remark) -> list[str]:
    """Leave (normalised) the ConvIntegers the int8 cube takes, rewrite the
    others into Cast/Sub/Conv/Cast; their names."""
    from onnx import helper

    from npu.frontend.onnx_expansion import Expansion

    graph = model.graph
    if not any(n.op_type == "ConvInteger" for n in graph.node):
        return []
    consts = _constants(model)
    types = types or {}
    users, outputs = users_of(graph), {o.name for o in graph.output}
    nodes, done, taken = [], [], set()
    for node in graph.node:
        if id(node) in taken:
            continue
        if node.op_type != "ConvInteger":
            nodes.append(node)
            continue
        where = f"node '{node.name}' (ConvInteger)"
        x_dims, x_t = types.get(node.input[0], (None, 0))
        w_name = node.input[1]
        w_dims, w_t = types.get(w_name, (None, 0))
        if w_name in consts:
            w_dims, w_t = list(consts[w_name].shape), {np.dtype(np.int8): INT8,
                                                       np.dtype(np.uint8): 2}.get(consts[w_name].dtype, 0)
        if x_dims is None or w_dims is None or x_t not in INT_RANGES or w_t not in INT_RANGES:
            raise fail(f"{where}: needs static shapes and int8/uint8 operands")
        if len(x_dims) != 4 or len(w_dims) != 4:
            raise fail(f"{where}: a {len(w_dims) - 2}-D convolution: only 2-D convolutions compile")
        zps = constant_zero_points(node, consts, fail, where)
        attrs = {a.name: a for a in node.attribute}
        group = attrs["group"].i if "group" in attrs else 1
        why_not = _not_on_int8_cube(x_t, w_t, w_name in consts, zps, group) or \
            asymmetric_pads(node) or _few_channels(w_dims[1])
        if not why_not:
            _on_int8_cube(node, graph, int(zps[0].reshape(-1)[0]))
            nodes.append(node)
            done.append(node.name)
            remark(f"{where}: on the int8 cube")
            continue
        taps = int(np.prod(w_dims[1:]))  # C/G * Kh * Kw
        if not exact_in_f32(taps, zps, (x_t, w_t)):
            raise fail(f"{where}: C/groups * Kh * Kw = {taps} with these zero points can exceed "
                       f"2^24 in the f32 accumulator of the f16 cube, and the int8 cube cannot "
                       f"take this node: {why_not}")
        e = Expansion(graph, node, nodes)
        x = e.make("Cast", [node.input[0]], "x_float", to=FLOAT)
        if np.any(zps[0] != 0):
            x = e.make("Sub", [x, e.const("x_zero_point", zps[0].reshape(()), np.float32)],
                       "x_centred")
        w_zp = zps[1].reshape(-1, 1, 1, 1) if zps[1].size > 1 else zps[1].reshape(())
        if w_name in consts:  # centred on the host
            w = e.const("w_float", consts[w_name].astype(np.float32) - w_zp, np.float32)
        else:
            w = e.make("Cast", [w_name], "w_float", to=FLOAT)
            if np.any(w_zp != 0):
                w = e.make("Sub", [w, e.const("w_zero_point", w_zp, np.float32)], "w_centred")
        to_float = _float_cast(users.get(node.output[0], []), node.output[0] in outputs)
        if to_float is None:
            product = e.make("Conv", [x, w], "product")
            e.nodes[-1].attribute.extend(node.attribute)
            e.final("Cast", [product], "to_int32", to=INT32)
        else:  # the exact f32 sums are what the Cast makes of the int32 ones
            taken.add(id(to_float))
            e.nodes.append(helper.make_node("Conv", [x, w], [to_float.output[0]],
                                            name=f"{node.name}/product"))
            e.nodes[-1].attribute.extend(node.attribute)
        done.append(node.name)
        remark(f"{where}: run on the f16 cube with exact f32 accumulation "
               f"(C/groups * Kh * Kw = {taps}), not on the int8 cube: {why_not}")
    del graph.node[:]
    graph.node.extend(nodes)
    return done


def _not_on_int8_cube(x_t: int, w_t: int, w_constant: bool, zps: list, group: int) -> str:
    """Why the node cannot run on the int8 cube ('' when it can)."""
    if (x_t, w_t) != (INT8, INT8):
        return "its operands are not both int8"
    if not w_constant:
        return "its weight is computed at run time (the int8 cube takes constant weights)"
    if np.any(zps[1] != 0):
        return "its weight has a non-zero zero point"
    if zps[0].size != 1:
        return "x has more than one zero point"
    if group != 1:
        return f"group = {group} (the int8 conv takes groups = 1)"
    return ""


def _float_cast(readers: list, is_output: bool):
    """The Cast to float that is the only reader of a ConvInteger's result, or None."""
    if is_output or len(readers) != 1 or readers[0].op_type != "Cast":
        return None
    to = next((a.i for a in readers[0].attribute if a.name == "to"), None)
    return readers[0] if to == FLOAT else None


def _few_channels(channels: int) -> str:
    """Why a stem is cheaper on the f16 cube ('' for a wider conv)."""
    if channels > STEM_CHANNELS:
        return ""
    return (f"C = {channels} input channels: padding them to an int8 block of 32 costs more cube "
            "time than the f16 small-channel mode")


def asymmetric_pads(node) -> str:
    """Why torch-mlir cannot import the node as an integer conv ('' when it
    can): it takes a ConvInteger's pads only when each axis's two are equal."""
    attrs = {a.name: a for a in node.attribute}
    pads = list(attrs["pads"].ints) if "pads" in attrs else [0, 0, 0, 0]
    auto = attrs["auto_pad"].s.decode() if "auto_pad" in attrs else "NOTSET"
    if auto not in ("NOTSET", "VALID"):
        return f"auto_pad = {auto} (torch-mlir's integer conv takes explicit pads)"
    if len(pads) == 4 and (pads[0] != pads[2] or pads[1] != pads[3]):
        return (f"pads {pads} differ at the two ends of an axis (torch-mlir's integer conv takes "
                "symmetric pads)")
    return ""


def _on_int8_cube(node, graph, x_zp: int) -> None:
    """The node as torch-mlir's conv_2d_nchw_fchw_q wants it: no weight zero
    point, x's zero point a scalar int8 (absent when 0)."""
    from onnx import numpy_helper

    del node.input[2:]
    if x_zp:
        name = f"{node.name}/x_zero_point"
        graph.initializer.append(numpy_helper.from_array(np.array(x_zp, np.int8), name))
        node.input.append(name)

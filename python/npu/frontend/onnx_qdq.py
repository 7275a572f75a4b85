"""ONNX quantisation nodes (QuantizeLinear, DequantizeLinear, MatMulInteger,
ConvInteger, QLinearMatMul, QLinearConv): the checks every one of them must
pass before anything reads it.

A bad scale or zero point would otherwise become a silently wrong answer (a
scale of 0 or NaN makes every dequantised value 0 or NaN), and a dtype the
int8 cube does not hold (uint4, int4, float8, int16) would be narrowed. Each
problem is one error line naming the node. Only constants can be checked:
a scale computed at run time is taken as given.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

QDQ_OPS = ("QuantizeLinear", "DequantizeLinear")
INTEGER_OPS = ("MatMulInteger", "ConvInteger", "QLinearMatMul", "QLinearConv")
# Every ONNX op of a quantised model, those we do not run included.
QUANTIZATION_OPS = frozenset(QDQ_OPS + INTEGER_OPS + ("DynamicQuantizeLinear",))
# ONNX elem_type -> (name, min, max) of the quantised types we run: int8 and uint8.
QUANT_TYPES = {3: ("int8", -128, 127), 2: ("uint8", 0, 255)}
# Inputs of each op that are scales / zero points (by position).
_SCALES = {"QuantizeLinear": (1,), "DequantizeLinear": (1,), "QLinearMatMul": (1, 4, 6),
           "QLinearConv": (1, 4, 6)}
_ZERO_POINTS = {"QuantizeLinear": (2,), "DequantizeLinear": (2,), "MatMulInteger": (2, 3),
                "ConvInteger": (2, 3),
                "QLinearMatMul": (2, 5, 7), "QLinearConv": (2, 5, 7)}


def _constants(model) -> dict[str, np.ndarray]:
    """Initializers and Constant-node values by name (only small ones are read)."""
    from onnx import numpy_helper

    values = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    for node in model.graph.node:
        if node.op_type == "Constant" and node.attribute and node.attribute[0].HasField("t"):
            values[node.output[0]] = numpy_helper.to_array(node.attribute[0].t)
    return values


def producers_of(graph) -> dict:
    """Each value's producing node, by value name."""
    return {o: n for n in graph.node for o in n.output}


def users_of(graph) -> dict[str, list]:
    """The nodes reading each value, by value name, in graph order."""
    users: dict[str, list] = {}
    for n in graph.node:
        for i in n.input:
            users.setdefault(i, []).append(n)
    return users


def quant_axis(node) -> int:
    """A Q/DQ node's `axis` attribute (ONNX's default: 1)."""
    return next((a.i for a in node.attribute if a.name == "axis"), 1)


def zero_point(node, consts: dict) -> np.ndarray | None:
    """A Q/DQ node's constant zero point, or None (absent or computed at run
    time; an absent one means uint8 data, which is not int8)."""
    if len(node.input) < 3 or not node.input[2]:
        return None
    return consts.get(node.input[2])


def int8_scalar_params(node, consts: dict) -> tuple[float, int] | None:
    """(scale, zero point) of a Q/DQ node with one constant scale and one
    constant int8 zero point, else None."""
    zp = zero_point(node, consts)
    scale = consts.get(node.input[1])
    if zp is None or scale is None or zp.dtype != np.int8 or zp.size != 1 or scale.size != 1:
        return None
    return float(scale.reshape(-1)[0]), int(zp.reshape(-1)[0])


def int8_activation(dq, consts: dict):
    """(a_q, s_a, zp_a) when `dq` dequantizes a run-time int8 tensor with one
    constant scale and zero point, else None: the int8 cube's run-time operand."""
    params = int8_scalar_params(dq, consts)
    if params is None or dq.input[0] in consts:
        return None
    return (dq.input[0], *params)


@dataclass
class Int8Product:
    """A MatMul or Conv of DQ(a_q) and DQ(W_q) matched for the int8 cube
    (`onnx_qdq_int8` writes it out; `onnx_qdq_conv` matches convs)."""
    dqs: tuple                          # the DequantizeLinears it reads
    a_q: str                            # the run-time int8 operand
    s_a: float
    zp_a: int
    s_w: np.ndarray                     # f32: one, or one per output channel shaped to broadcast
    # (Expansion, a_q) -> the f32 value of the integer product (a_q - zp_a) x W_q
    product: Callable
    bias_acc: np.ndarray | None = None  # f32 bias in units of s_a * s_w (added before a requantisation)
    bias: np.ndarray | None = None      # f32 bias added after the dequantisation
    unit: str = "on the int8 cube"      # where the integer product runs, for the remark


def _type_name(elem_type: int) -> str:
    import onnx

    return onnx.TensorProto.DataType.Name(elem_type).lower()


def check_quantized_nodes(model, fail: Callable[[str], Exception]) -> None:
    """Every quantisation node: finite non-zero constant scales, zero points of
    int8/uint8 within their type's range, no quantised type we do not run."""
    nodes = [n for n in model.graph.node if n.op_type in QDQ_OPS + INTEGER_OPS]
    if not nodes:
        return
    import onnx

    consts = _constants(model)
    try:
        inferred = onnx.shape_inference.infer_shapes(model)
        elem = {v.name: v.type.tensor_type.elem_type for v in
                list(inferred.graph.value_info) + list(inferred.graph.input) + list(inferred.graph.output)}
    except Exception:  # shape inference errors are reported later, by the importer's own check
        elem = {}
    elem.update({t.name: t.data_type for t in model.graph.initializer})
    for node in nodes:
        where = f"node '{node.name}' ({node.op_type})"
        for i in _SCALES.get(node.op_type, ()):
            if i < len(node.input) and node.input[i] in consts:
                s = consts[node.input[i]].astype(np.float64)
                if not np.all(np.isfinite(s)) or np.any(s == 0):
                    bad = s[~np.isfinite(s) | (s == 0)].ravel()[0]
                    raise fail(f"{where}: scale '{node.input[i]}' is {bad}: a quantisation scale "
                               "must be finite and non-zero")
        typed = [node.input[i] for i in _ZERO_POINTS.get(node.op_type, ()) if i < len(node.input)
                 and node.input[i]]
        typed += [node.output[0]] if node.op_type == "QuantizeLinear" else []
        typed += [node.input[0]] if node.op_type in ("DequantizeLinear",) + INTEGER_OPS else []
        for name in typed:
            t = elem.get(name)
            if t is not None and t != 0 and t not in QUANT_TYPES and not (
                    node.op_type == "DequantizeLinear" and t == 6):
                raise fail(f"{where}: '{name}' is {_type_name(t)}: quantised values run as int8 "
                           "or uint8 only")
        x_type = elem.get(node.input[0]) if node.op_type == "DequantizeLinear" else None
        for i in _ZERO_POINTS.get(node.op_type, ()):
            name = node.input[i] if i < len(node.input) else ""
            if x_type == 6 and name in consts and np.any(consts[name] != 0):
                raise fail(f"{where}: zero point '{name}' of int32 data must be 0 (ONNX)")
            if name in consts and consts[name].dtype.kind in "iu":
                info = QUANT_TYPES.get(elem.get(name, 0))
                zp = consts[name].astype(np.int64)
                if info is not None and (zp.min() < info[1] or zp.max() > info[2]):
                    raise fail(f"{where}: zero point '{name}' holds {zp.min() if zp.min() < info[1] else zp.max()}, "
                               f"outside {info[0]}'s range [{info[1]}, {info[2]}]")


def output_steps(model, names: list[str]) -> list[float | None]:
    """Each named graph output's quantisation step: the constant per-tensor
    scale of the DequantizeLinear that computes it (None for other outputs).
    Such an output is a multiple of its step from its zero point, so a
    difference of one step is the least the grid can show (`npu-run --check`)."""
    producers, consts = producers_of(model.graph), None
    steps: list[float | None] = []
    for name in names:
        node = producers.get(name)
        step = None
        if node is not None and node.op_type == "DequantizeLinear":
            consts = _constants(model) if consts is None else consts
            scale = consts.get(node.input[1])
            if scale is not None and scale.size == 1:
                step = abs(float(scale.reshape(())))
        steps.append(step)
    return steps

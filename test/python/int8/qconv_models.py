"""Quantised conv models built with onnx.helper (ConvInteger, QDQ Conv,
QLinearConv, a QDQ conv chain) and their run at the ascend level: the
conversion's `ascend` module evaluated by the reference interpreter. Shared
by the int8 conv frontend tests."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = [helper.make_opsetid("", 17)]


def const(name: str, value) -> onnx.TensorProto:
    return numpy_helper.from_array(np.asarray(value), name)


def out_size(h: int, k: int, stride: int, pads: tuple) -> int:
    return (h + pads[0] + pads[2] - k) // stride + 1


def conv_integer(n=1, c=20, h=9, w=9, cout=24, k=3, stride=1, pads=(1, 1, 1, 1), x_zp=None,
                 w_zp=None, group=1, x_type=TensorProto.INT8, w_type=np.int8,
                 seed=0) -> onnx.ModelProto:
    """y (int32) = ConvInteger(x, W, x_zp, w_zp) with a constant W of extreme values."""
    rng = np.random.default_rng(seed)
    info = np.iinfo(w_type)
    wt = rng.integers(info.min, int(info.max) + 1, (cout, c // group, k, k), dtype=w_type)
    wt[0] = info.min  # one output channel at the end of the range
    inits, inputs = [const("w", wt)], ["x", "w"]
    for name, zp in (("x_zp", x_zp), ("w_zp", w_zp)):
        if zp is not None:
            inits.append(const(name, zp))
        inputs.append(name if zp is not None else "")
    while inputs[-1] == "":
        inputs.pop()
    node = helper.make_node("ConvInteger", inputs, ["y"], name="ci", pads=list(pads),
                            strides=[stride, stride], group=group)
    ho, wo = out_size(h, k, stride, pads), out_size(w, k, stride, (pads[1], 0, pads[3]))
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("x", x_type, [n, c, h, w])],
        [helper.make_tensor_value_info("y", TensorProto.INT32, [n, cout, ho, wo])], inits)
    return helper.make_model(graph, opset_imports=OPSET, ir_version=8)


def qdq_convs(layers: list[tuple[int, int]], c=8, h=10, per_channel=True, bias=True, zx=3,
              relu=True, seed=0) -> onnx.ModelProto:
    """x (f32) -> Q -> DQ -> [Conv(DQ(W_q), DQ(b_int32)) -> Relu -> Q -> DQ] per
    (Cout, stride) of `layers`, 3x3 pad 1, as quantize_static writes a CNN;
    the activations' zero points are not zero."""
    rng = np.random.default_rng(seed)
    s_x = np.float32(0.05)
    inits = [const("sx", s_x), const("zx", np.int8(zx))]
    nodes = [helper.make_node("QuantizeLinear", ["x", "sx", "zx"], ["xq"], name="qx"),
             helper.make_node("DequantizeLinear", ["xq", "sx", "zx"], ["xd"], name="dqx")]
    cur, cin, size, s_in = "xd", c, h, s_x
    for i, (cout, stride) in enumerate(layers):
        wq = rng.integers(-127, 128, (cout, cin, 3, 3), dtype=np.int8)
        s_w = (rng.random(cout) * 0.004 + 0.001).astype(np.float32) if per_channel \
            else np.float32(0.003)
        zw = np.zeros(cout, np.int8) if per_channel else np.int8(0)
        inits += [const(f"w{i}", wq), const(f"sw{i}", s_w), const(f"zw{i}", zw)]
        nodes.append(helper.make_node("DequantizeLinear", [f"w{i}", f"sw{i}", f"zw{i}"],
                                      [f"wd{i}"], name=f"dqw{i}", axis=0))
        ins = [cur, f"wd{i}"]
        if bias:
            inits += [const(f"b{i}", rng.integers(-3000, 3000, cout, dtype=np.int32)),
                      const(f"sb{i}", s_in * s_w)]
            nodes.append(helper.make_node("DequantizeLinear", [f"b{i}", f"sb{i}"], [f"bd{i}"],
                                          name=f"dqb{i}", axis=0))
            ins.append(f"bd{i}")
        nodes.append(helper.make_node("Conv", ins, [f"c{i}"], name=f"conv{i}", pads=[1] * 4,
                                      strides=[stride, stride]))
        act = f"c{i}"
        if relu:
            nodes.append(helper.make_node("Relu", [act], [f"r{i}"], name=f"relu{i}"))
            act = f"r{i}"
        s_o = np.float32(0.06 + 0.01 * i)
        inits += [const(f"so{i}", s_o), const(f"zo{i}", np.int8(-5 + 3 * i))]
        nodes += [helper.make_node("QuantizeLinear", [act, f"so{i}", f"zo{i}"], [f"q{i}"],
                                   name=f"q{i}"),
                  helper.make_node("DequantizeLinear", [f"q{i}", f"so{i}", f"zo{i}"], [f"d{i}"],
                                   name=f"dq{i}")]
        cur, cin, size, s_in = f"d{i}", cout, out_size(size, 3, stride, (1, 1, 1, 1)), s_o
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, c, h, h])],
        [helper.make_tensor_value_info(cur, TensorProto.FLOAT, [1, cin, size, size])], inits)
    return helper.make_model(graph, opset_imports=OPSET, ir_version=8)


def qlinear_conv(c=24, cout=40, h=9, stride=2, per_channel=True, bias=True,
                 seed=5, groups=1, w_max=128, s_y=0.15, b_max=20000) -> onnx.ModelProto:
    """y (int8) = QLinearConv(x int8, ...), 3x3 pad 1; the output scale set so
    that y saturates at both ends."""
    rng = np.random.default_rng(seed)
    w = rng.integers(-w_max, w_max, (cout, c // groups, 3, 3), dtype=np.int8)
    s_w = (rng.random(cout) * 0.01 + 0.002).astype(np.float32) if per_channel \
        else np.float32(0.005)
    inits = [const("sx", np.float32(0.04)), const("zx", np.int8(-3)), const("w", w),
             const("sw", s_w), const("zw", np.zeros(cout, np.int8) if per_channel else np.int8(0)),
             const("sy", np.float32(s_y)), const("zy", np.int8(4))]
    inputs = ["x", "sx", "zx", "w", "sw", "zw", "sy", "zy"]
    if bias:
        inits.append(const("b", rng.integers(-b_max, b_max, cout, dtype=np.int32)))
        inputs.append("b")
    node = helper.make_node("QLinearConv", inputs, ["y"], name="qconv", pads=[1, 1, 1, 1],
                            strides=[stride, stride], group=groups)
    ho = out_size(h, 3, stride, (1, 1, 1, 1))
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("x", TensorProto.INT8, [1, c, h, h])],
        [helper.make_tensor_value_info("y", TensorProto.INT8, [1, cout, ho, ho])], inits)
    return helper.make_model(graph, opset_imports=OPSET, ir_version=8)


def ascend_text(model: onnx.ModelProto, capsys=None) -> tuple[str, object, str]:
    """(the ascend module's text, the module, the import's remarks)."""
    from npu.frontend.compile import import_linalg, linalg_to_ascend_text
    from npu.ir import make_context, parse_module

    ctx = make_context()
    linalg, ins, outs, locate = import_linalg(model, ctx, "m.onnx")
    text = linalg_to_ascend_text(linalg, ins, outs, locate, "m.onnx")
    remarks = capsys.readouterr().err if capsys is not None else ""
    return text, parse_module(text, ctx), remarks


def evaluate(module, *inputs: np.ndarray) -> np.ndarray:
    """The reference interpreter's result of the module's one output."""
    from npu.frontend.compile import read_interface
    from npu.ir import functions
    from npu.reference import evaluate as run

    func = functions(module)[0].operation
    interface = read_interface(func)
    results = run(func, interface.arguments(list(inputs)))
    return results[interface.roles.index("output")]


def conv_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if '"ascend.conv2d"' in line]

"""Where, And/Or/Xor/Not, IsNaN/IsInf and the comparisons compiled and
simulated, against onnxruntime. Bools cross the boundary as numpy bool (held
as i8 0/1 on the device); every result here is exact.

The attention masks of real exports are the motivating uses: GPT-2's causal
mask (a slice of a constant lower-triangular buffer, then Where with the
float minimum) and BERT's padding mask ((1 - mask) * min added to scores).
"""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper

from onnx_models import model
from test_onnx_data_ops import F, H, I32, check_exact, data, i64

B = TensorProto.BOOL
SPECIALS = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -2.5, 65504.0, -65504.0, 3e38])


def special(shape, elem, seed=0) -> np.ndarray:
    """Random values with NaN, infinities and extremes mixed in."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape)
    pick = rng.integers(0, 3, shape) == 0
    x[pick] = rng.choice(SPECIALS, int(pick.sum()))
    with np.errstate(over="ignore"):
        return x.astype(np.float16 if elem == H else np.float32)


@pytest.mark.parametrize("cond,x,y,elem", [
    ((3, 5), (3, 5), (5,), F), ((4, 5), (1, 5), (4, 1), H), ((5,), (2, 3, 5), (2, 3, 5), I32),
    ((2, 1, 7), (7,), (3, 1), F)])
def test_where(cond, x, y, elem):
    out = list(np.broadcast_shapes(cond, x, y))
    m = model([helper.make_node("Where", ["c", "x", "y"], ["o"], name="n")],
              [("c", list(cond), B), ("x", list(x), elem), ("y", list(y), elem)], [("o", out, elem)])
    check_exact(m, {"c": data(cond, B, 1), "x": data(x, elem, 2), "y": data(y, elem, 3)})


@pytest.mark.parametrize("op", ["And", "Or", "Xor"])
@pytest.mark.parametrize("a,b", [((3, 5), (5,)), ((4, 1, 3), (2, 1)), ((37,), (37,))])
def test_logic_binary(op, a, b):
    out = list(np.broadcast_shapes(a, b))
    m = model([helper.make_node(op, ["a", "b"], ["y"], name="n")], [("a", list(a), B), ("b", list(b), B)],
              [("y", out, B)])
    check_exact(m, {"a": data(a, B, 1), "b": data(b, B, 2)})


def test_not_of_a_comparison():
    """Not(Greater(x, y)) and And with a bool input: bools made on the device."""
    m = model([helper.make_node("Greater", ["x", "y"], ["g"], name="gt"),
               helper.make_node("Not", ["g"], ["ng"], name="not"),
               helper.make_node("And", ["ng", "m"], ["o"], name="and")],
              [("x", [3, 7]), ("y", [7]), ("m", [3, 7], B)], [("o", [3, 7], B)])
    check_exact(m, {"x": data((3, 7), F, 1), "y": data((7,), F, 2), "m": data((3, 7), B, 3)})


@pytest.mark.parametrize("elem", [F, H])
@pytest.mark.parametrize("op,attrs", [("IsNaN", {}), ("IsInf", {}),
                                      ("IsInf", {"detect_negative": 0}),
                                      ("IsInf", {"detect_positive": 0})])
def test_isnan_isinf(op, attrs, elem):
    opset = 20 if op == "IsInf" and elem == H else 17  # IsInf takes f16 from opset 20
    m = model([helper.make_node(op, ["x"], ["y"], name="n", **attrs)], [("x", [6, 9], elem)],
              [("y", [6, 9], B)], opset=opset)
    check_exact(m, {"x": special((6, 9), elem)})


@pytest.mark.parametrize("op", ["Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual"])
@pytest.mark.parametrize("elem", [F, H, I32])
def test_compare(op, elem):
    a, b = (4, 1, 5), (3, 1)
    x = data(a, elem, 1)
    y = data(b, elem, 2)
    y[0, 0] = x[0, 0, 0]  # some equal pairs
    m = model([helper.make_node(op, ["a", "b"], ["y"], name="n")], [("a", list(a), elem),
                                                                    ("b", list(b), elem)],
              [("y", [4, 3, 5], B)])
    check_exact(m, {"a": x, "b": y})


def test_gpt2_causal_mask():
    """Slice of a constant lower-triangular bool buffer (folded on the host),
    Where with the float minimum, then Softmax."""
    n, s = 8, 6
    bias = np.tril(np.ones((n, n), np.bool_)).reshape(1, 1, n, n)
    nodes = [helper.make_node("Slice", ["bias", "st", "en", "ax"], ["mask"], name="slice"),
             helper.make_node("Where", ["mask", "x", "min"], ["w"], name="where"),
             helper.make_node("Softmax", ["w"], ["y"], name="softmax", axis=-1)]
    m = model(nodes, [("x", [1, 2, s, s])], [("y", [1, 2, s, s])],
              [("bias", bias), ("st", i64(0, 0)), ("en", i64(s, s)), ("ax", i64(2, 3)),
               ("min", np.array(np.finfo(np.float32).min, np.float32))])
    from test_onnx_data_ops import run_both
    ours, ref = run_both(m, {"x": data((1, 2, s, s), F)})
    np.testing.assert_allclose(ours[0], ref[0], rtol=1e-4, atol=1e-6)


def test_bert_padding_mask():
    """(1 - mask) * min, Unsqueeze, Expand, Where on a runtime bool: BERT's extended mask."""
    s = 7
    nodes = [helper.make_node("Unsqueeze", ["m", "axes"], ["m4"], name="unsq"),
             helper.make_node("Expand", ["m4", "shape"], ["me"], name="expand"),
             helper.make_node("Cast", ["me"], ["mb"], name="cast", to=B),
             helper.make_node("Where", ["mb", "x", "min"], ["y"], name="where")]
    m = model(nodes, [("m", [1, s], I32), ("x", [1, 2, s, s])], [("y", [1, 2, s, s])],
              [("axes", i64(1, 2)), ("shape", i64(1, 2, s, s)),
               ("min", np.array(np.finfo(np.float32).min, np.float32))])
    mask = np.array([[1, 1, 1, 1, 0, 0, 0]], np.int32)
    check_exact(m, {"m": mask, "x": data((1, 2, s, s), F)})


@pytest.mark.parametrize("node,inputs,out", [
    (helper.make_node("Concat", ["a", "b"], ["y"], name="n", axis=1), [("a", [3, 5]), ("b", [3, 2])],
     [3, 7]),
    (helper.make_node("Concat", ["a", "b"], ["y"], name="n", axis=0), [("a", [2, 40]), ("b", [1, 40])],
     [3, 40]),
])
def test_bool_concat(node, inputs, out):
    """Short bool rows go through f16 (the gather moves 2- and 4-byte
    elements); rows of 32+ bools are copied as they are."""
    m = model([node], [(n, s, B) for n, s in inputs], [("y", out, B)])
    check_exact(m, {n: data(s, B, i) for i, (n, s) in enumerate(inputs)})


def test_bool_slice():
    m = model([helper.make_node("Slice", ["x", "s", "e", "a"], ["y"], name="n")], [("x", [4, 9], B)],
              [("y", [4, 3], B)], [("s", i64(2)), ("e", i64(5)), ("a", i64(1))])
    check_exact(m, {"x": data((4, 9), B)})


def test_bools_compared_broadcast_and_expanded():
    """Equal of two bools and Expand of a bool: through f16 on the device."""
    m = model([helper.make_node("Equal", ["a", "b"], ["e"], name="eq"),
               helper.make_node("Expand", ["e", "s"], ["y"], name="expand")],
              [("a", [1, 5], B), ("b", [5], B)], [("y", [3, 5], B)], [("s", i64(3, 5))])
    check_exact(m, {"a": data((1, 5), B, 1), "b": data((5,), B, 2)})


def test_where_between_bools():
    """onnxruntime has no bool Where kernel: numpy is the reference."""
    import npu

    m = model([helper.make_node("Where", ["c", "a", "b"], ["y"], name="n")],
              [("c", [3, 5], B), ("a", [3, 5], B), ("b", [5], B)], [("y", [3, 5], B)])
    c, a, b = data((3, 5), B, 0), data((3, 5), B, 1), data((5,), B, 2)
    ours, _ = npu.compile(m)(c, a, b)
    assert ours[0].dtype == np.bool_
    np.testing.assert_array_equal(ours[0], np.where(c, a, b))

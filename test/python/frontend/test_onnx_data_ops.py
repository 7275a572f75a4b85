"""Slice, Split, Concat, Expand and Trilu compiled and simulated, against
onnxruntime. All of them move elements without arithmetic, so the outputs
must be bit-identical (NaN patterns included).

The shapes pick each form of `npu-lower-slices`: rows of at least one
32-byte block (with a moved-back tail block when a row is not whole blocks,
and grouped strided bursts when rows are whole blocks apart), and the
element gather in UB for short or strided rows; odd sizes, f16/f32/i32.
"""

from __future__ import annotations

import numpy as np
import onnxruntime
import pytest
from onnx import TensorProto, helper

import npu
from onnx_models import model

F, H, I32 = TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.INT32
NUMPY = {F: np.float32, H: np.float16, I32: np.int32, TensorProto.BOOL: np.bool_}


def i64(*values) -> np.ndarray:
    return np.array(values, np.int64)


def data(shape, elem, seed=0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if elem == I32:
        return rng.integers(-1000, 1000, shape).astype(np.int32)
    if elem == TensorProto.BOOL:
        return rng.integers(0, 2, shape).astype(np.bool_)
    return rng.standard_normal(shape).astype(NUMPY[elem])


def run_both(m, inputs: dict) -> tuple[list, list]:
    """(simulated outputs, onnxruntime outputs)."""
    kernel = npu.compile(m)
    ours, _ = kernel(*[inputs[name] for name in kernel.input_names])
    session = onnxruntime.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    return ours, session.run(kernel.output_names, inputs)


def check_exact(m, inputs: dict) -> None:
    ours, ref = run_both(m, inputs)
    assert len(ours) == len(ref)
    for a, b in zip(ours, ref):
        assert a.shape == b.shape and a.dtype == b.dtype, (a.shape, a.dtype, b.shape, b.dtype)
        np.testing.assert_array_equal(a, b)


def slice_model(shape, out, starts, ends, axes, steps=None, elem=F):
    inits = [("s", i64(*starts)), ("e", i64(*ends)), ("a", i64(*axes))]
    names = ["x", "s", "e", "a"]
    if steps is not None:
        inits.append(("st", i64(*steps)))
        names.append("st")
    return model([helper.make_node("Slice", names, ["y"], name="n")], [("x", list(shape), elem)],
                 [("y", list(out), elem)], inits)


@pytest.mark.parametrize("shape,out,starts,ends,axes,steps,elem", [
    ((5, 9), (5, 3), [1], [7], [1], [2], F),                  # strided columns: gather
    ((6, 40), (6, 34), [3], [37], [1], None, F),              # rows with a tail block
    ((4, 3, 50), (4, 2, 36), [1, 4], [3, 40], [1, 2], None, H),
    ((7, 64), (4, 64), [2], [6], [0], None, I32),             # contiguous rows, merged
    ((9, 16), (5, 16), [0], [9], [0], [2], F),                # whole-block rows, grouped
    ((5, 40), (5, 40), [-1], [-6], [0], [-1], F),             # reversed rows
    ((3, 5, 7), (3, 5, 4), [-1], [-9], [2], [-2], F),         # negative step inside rows
    ((2, 3, 11), (2, 1, 5), [1, 2, -1], [2, 7, -3], [1, 2, 0], [1, 1, -1], H),
    ((64, 300), (64, 200), [50], [250], [1], None, F),        # a loop over rows
    ((5, 9), (2, 3), [3, -3], [5, 9], [0, 1], None, F),       # gather window at the end
    ((7, 3), (3, 3), [4], [7], [0], None, F),                 # one run of 9, ends at the end
])
def test_slice(shape, out, starts, ends, axes, steps, elem):
    check_exact(slice_model(shape, out, starts, ends, axes, steps, elem), {"x": data(shape, elem)})


@pytest.mark.parametrize("shape,axis,splits,elem,opset", [
    ((2, 7, 96), -1, [32, 32, 32], F, 17),                    # GPT-2's qkv split
    ((3, 7), 1, [4, 3], F, 18),                               # num_outputs, uneven
    ((6, 5, 3), 0, [1, 2, 3], H, 17),
    ((4, 70), 1, [20, 50], I32, 17),
])
def test_split(shape, axis, splits, elem, opset):
    outs = [f"y{i}" for i in range(len(splits))]
    out_shapes = [[s if d == axis % len(shape) else n for d, n in enumerate(shape)] for s in splits]
    if opset >= 18:
        node = helper.make_node("Split", ["x"], outs, name="n", axis=axis, num_outputs=len(splits))
        inits = []
    else:
        node = helper.make_node("Split", ["x", "sp"], outs, name="n", axis=axis)
        inits = [("sp", i64(*splits))]
    m = model([node], [("x", list(shape), elem)], [(o, s, elem) for o, s in zip(outs, out_shapes)],
              inits, opset=opset)
    check_exact(m, {"x": data(shape, elem)})


@pytest.mark.parametrize("shapes,axis,elem", [
    ([(3, 7), (3, 2)], 1, F),                                 # short rows: gather into the box
    ([(4, 40), (4, 24)], 1, F),                               # rows of whole blocks
    ([(2, 5), (3, 5), (1, 5)], 0, I32),
    ([(2, 3, 17), (2, 3, 33)], -1, H),
])
def test_concat(shapes, axis, elem):
    names = [f"x{i}" for i in range(len(shapes))]
    out = list(shapes[0])
    out[axis] = sum(s[axis] for s in shapes)
    m = model([helper.make_node("Concat", names, ["y"], name="n", axis=axis)],
              [(n, list(s), elem) for n, s in zip(names, shapes)], [("y", out, elem)])
    check_exact(m, {n: data(s, elem, i) for i, (n, s) in enumerate(zip(names, shapes))})


def test_concat_with_a_constant_and_a_computed_input():
    """The constant part is a host constant copied in; the other one is written by Relu."""
    c = np.arange(12, dtype=np.float32).reshape(3, 4)
    m = model([helper.make_node("Relu", ["x"], ["r"], name="act"),
               helper.make_node("Concat", ["r", "c"], ["y"], name="n", axis=1)],
              [("x", [3, 9])], [("y", [3, 13])], [("c", c)])
    check_exact(m, {"x": data((3, 9), F)})


@pytest.mark.parametrize("shape,target,elem", [
    ((3, 1), (2, 3, 5), F), ((1, 4), (3, 4), I32), ((5,), (2, 3, 5), H), ((2, 1, 3), (2, 4, 3), F)])
def test_expand(shape, target, elem):
    m = model([helper.make_node("Expand", ["x", "s"], ["y"], name="n")], [("x", list(shape), elem)],
              [("y", list(target), elem)], [("s", i64(*target))])
    check_exact(m, {"x": data(shape, elem)})


@pytest.mark.parametrize("shape,upper,k,elem", [
    ((4, 6), 0, 1, F), ((4, 6), 1, 0, F), ((5, 5), 1, -1, H), ((2, 3, 7), 0, 2, F),
    ((3, 4), 1, 5, I32)])
def test_trilu(shape, upper, k, elem):
    m = model([helper.make_node("Trilu", ["x", "k"], ["y"], name="n", upper=upper)],
              [("x", list(shape), elem)], [("y", list(shape), elem)], [("k", np.array(k, np.int64))])
    check_exact(m, {"x": data(shape, elem)})


def test_concat_and_split_inside_a_fused_chain():
    """Concat of two computed tensors, also returned, feeding Mul -> MatMul ->
    Split -> Add: the output buffer with several writers survives fusion,
    GM planning and sync."""
    w = np.random.default_rng(5).standard_normal((48, 32)).astype(np.float32)
    nodes = [helper.make_node("Relu", ["x"], ["r"], name="relu"),
             helper.make_node("Exp", ["y"], ["e"], name="exp"),
             helper.make_node("Concat", ["r", "e"], ["c"], name="cat", axis=1),
             helper.make_node("Mul", ["c", "c"], ["s"], name="sq"),
             helper.make_node("MatMul", ["s", "w"], ["m"], name="mm"),
             helper.make_node("Split", ["m"], ["a", "b"], name="split", axis=1, num_outputs=2),
             helper.make_node("Add", ["a", "b"], ["o"], name="add")]
    m = model(nodes, [("x", [20, 16]), ("y", [20, 32])], [("o", [20, 16]), ("c", [20, 48])], [("w", w)],
              opset=18)
    (o, c), (o_ref, c_ref) = run_both(m, {"x": data((20, 16), F, 1), "y": data((20, 32), F, 2)})
    np.testing.assert_allclose(c, c_ref, rtol=1e-6, atol=1e-6)  # exp within 1 ulp
    # f16 operands on the cube (2^-11 relative each), f32 sums of 48 products:
    # within 2e-3 of the largest output (2.2e-4 measured)
    assert np.abs(o - o_ref).max() <= 2e-3 * np.abs(o_ref).max()

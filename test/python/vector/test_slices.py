"""npu-lower-slices on the simulator (strict: bounds, races, uninitialised
reads) against numpy and against npu.reference: both forms (row copies and
the UB gather), every element type, negative strides, and insert_slice
keeping the elements of its output outside the box."""

from __future__ import annotations

import numpy as np
import pytest

from npu.ir import functions, parse_module
from npu.reference import evaluate
from vec_common import NP, func, memref, run, shared_context


def values(shape, elem, seed):
    rng = np.random.default_rng(seed)
    if elem in ("i32", "i8"):
        return rng.integers(-100, 100, size=shape).astype(NP[elem])
    return rng.uniform(-100, 100, size=shape).astype(NP[elem])


def reference(src: str, inputs):
    with shared_context():
        module = parse_module(src, shared_context())
        return evaluate(functions(module)[0], inputs)


def i64s(values_) -> str:
    return f"array<i64: {', '.join(map(str, values_))}>"


@pytest.mark.parametrize("shape,out,offsets,strides,elem", [
    ((5, 9), (5, 3), (0, 1), (1, 2), "f32"),              # gather, strided columns
    ((5, 9), (5, 9), (4, 8), (-1, -1), "f16"),            # gather, both dims reversed
    ((6, 40), (6, 34), (0, 3), (1, 1), "i32"),            # rows with a moved-back tail block
    ((3, 4, 70), (2, 4, 64), (1, 0, 6), (1, 1, 1), "i8"),  # i8 rows of two blocks
    ((9, 48), (3, 16), (2, 32), (3, 1), "f32"),           # whole-block rows, strided groups
    ((40, 24), (40, 16), (39, 8), (-1, 1), "f16"),        # reversed rows, one copy per row
    ((2, 3), (1, 1), (1, 2), (1, 1), "f32"),              # one element
])
def test_slice(shape, out, offsets, strides, elem):
    x = values(shape, elem, sum(shape))
    src = func("f", "ascend.slice", [memref(shape, elem), memref(out, elem)],
               f"offsets = {i64s(offsets)}, strides = {i64s(strides)}")
    got = run(src, "npu-lower-slices", [x, np.zeros(out, NP[elem])]).outputs[1]
    index = tuple(np.arange(n) * s + o for o, n, s in zip(offsets, out, strides))
    np.testing.assert_array_equal(got, x[np.ix_(*index)])
    np.testing.assert_array_equal(got, reference(src, [x, np.zeros(out, NP[elem])])[1])


@pytest.mark.parametrize("box,shape,offsets,elem", [
    ((3, 2), (3, 9), (0, 7), "f32"),                      # gather: the rest of out is kept
    ((4, 24), (4, 64), (0, 40), "f16"),                   # rows of whole blocks
    ((2, 5, 40), (3, 5, 40), (1, 0, 0), "i8"),            # one contiguous run
    ((2, 3), (4, 5), (2, 1), "i32"),
])
def test_insert_slice_keeps_the_rest(box, shape, offsets, elem):
    x, old = values(box, elem, 1), values(shape, elem, 2)
    src = func("f", "ascend.insert_slice", [memref(box, elem), memref(shape, elem)],
               f"offsets = {i64s(offsets)}")
    got = run(src, "npu-lower-slices", [x, old.copy()]).outputs[1]
    want = old.copy()
    want[tuple(slice(o, o + n) for o, n in zip(offsets, box))] = x
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got, reference(src, [x, old.copy()])[1])


def test_concat_is_two_inserts_into_one_buffer():
    """Two writers of one output, each of its own box: race-free in strict mode."""
    a, b = values((3, 7), "f32", 3), values((3, 2), "f32", 4)
    src = """func.func @cat(%a: memref<3x7xf32, "gm">, %b: memref<3x2xf32, "gm">, %o: memref<3x9xf32, "gm">) {
  "ascend.insert_slice"(%a, %o) {offsets = array<i64: 0, 0>} : (memref<3x7xf32, "gm">, memref<3x9xf32, "gm">) -> ()
  "ascend.insert_slice"(%b, %o) {offsets = array<i64: 0, 7>} : (memref<3x2xf32, "gm">, memref<3x9xf32, "gm">) -> ()
  return
}
"""
    got = run(src, "npu-lower-slices", [a, b, np.zeros((3, 9), np.float32)]).outputs[2]
    np.testing.assert_array_equal(got, np.concatenate([a, b], axis=1))

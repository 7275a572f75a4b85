"""Rows under one 32-byte block in tensors too large for UB, which the
element gathers held whole and refused: now cut into chunks of the leading
dims the op takes whole (every chunk whole blocks on each side, the last
ending at the tensors' ends). GoogLeNet at 64x64: a MaxPool's ceil-mode
padding, [1, 832, 4, 4] into [1, 832, 4, 8] (insert_slice, rows of 4 f32);
EfficientNet's squeeze-excite scale at 2x2 in NCHW: [1, 1152, 2, 2] times a
[1, 1152, 1, 1] gate (a column broadcast of rows of 4). Exact against
numpy, strictly simulated (bounds, races)."""

from __future__ import annotations

import numpy as np
import pytest

from vec_common import NP, func, memref, run


@pytest.mark.parametrize("inner,big,offsets,elem", [
    ([1, 832, 4, 4], [1, 832, 4, 8], [0, 0, 0, 0], "f32"),   # GoogLeNet's maxpool4 padding
    ([1, 833, 2, 2], [1, 833, 2, 5], [0, 0, 0, 1], "f32"),   # a last chunk that is not whole blocks
    ([3, 301, 2, 2], [3, 301, 2, 5], [0, 0, 0, 0], "f16"),
])
def test_insert_slice_of_short_rows_in_chunks(inner, big, offsets, elem):
    rng = np.random.default_rng(0)
    x, y = (rng.uniform(-9, 9, s).astype(NP[elem]) for s in (inner, big))
    src = func("f", "ascend.insert_slice", [memref(inner, elem), memref(big, elem)],
               f"offsets = array<i64: {', '.join(map(str, offsets))}>")
    got = run(src, "npu-lower-slices", [x, y.copy()]).outputs[1]
    want = y.copy()
    want[tuple(slice(o, o + n) for o, n in zip(offsets, inner))] = x
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("big,out,offsets,strides", [
    ([1, 833, 2, 5], [1, 833, 2, 2], [0, 0, 0, 1], [1, 1, 1, 1]),
    ([5, 301, 3, 7], [5, 301, 3, 3], [0, 0, 0, 1], [1, 1, 1, 2]),
    ([300, 400], [300, 200], [0, 0], [1, 2]),                   # every other element of each row
])
def test_slice_of_short_rows_in_chunks(big, out, offsets, strides):
    x = np.random.default_rng(1).uniform(-9, 9, big).astype(np.float32)
    src = func("f", "ascend.slice", [memref(big, "f32"), memref(out, "f32")],
               f"offsets = array<i64: {', '.join(map(str, offsets))}>, "
               f"strides = array<i64: {', '.join(map(str, strides))}>")
    got = run(src, "npu-lower-slices", [x, np.zeros(out, np.float32)]).outputs[1]
    want = x[tuple(slice(o, o + n * s, s) for o, n, s in zip(offsets, out, strides))]
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("op,a,b,out,elem", [
    ("ascend.mul", [1, 1152, 2, 2], [1, 1152, 1, 1], [1, 1152, 2, 2], "f32"),  # SE scale at 2x2
    ("ascend.mul", [1, 3001, 2, 2], [1, 3001, 1, 1], [1, 3001, 2, 2], "f16"),
    ("ascend.add", [1, 2001, 3], [1, 2001, 1], [1, 2001, 3], "f32"),
    ("ascend.sub", [7, 900, 1], [7, 900, 4], [7, 900, 4], "f32"),
    ("ascend.add", [4000, 10], [10], [4000, 10], "f16"),                        # a short row
    ("ascend.mul", [4000, 6, 8], [4000, 1, 8], [4000, 6, 8], "f16"),            # middle axis
])
def test_short_row_broadcast_in_chunks(op, a, b, out, elem):
    rng = np.random.default_rng(2)
    x, y = (rng.uniform(-9, 9, s).astype(NP[elem]) for s in (a, b))
    src = func("f", op, [memref(a, elem), memref(b, elem), memref(out, elem)], "")
    got = run(src, "npu-lower-elementwise", [x, y, np.zeros(out, NP[elem])]).outputs[2]
    fn = {"ascend.mul": np.multiply, "ascend.add": np.add, "ascend.sub": np.subtract}[op]
    np.testing.assert_allclose(got, fn(x, y).astype(NP[elem]), rtol=1e-3 if elem == "f16" else 1e-6)

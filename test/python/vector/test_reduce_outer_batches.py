"""npu-lower-reduce along an outer axis of short slabs (`OuterBatches` in
`passes/reduce_columns.py`): many outer indices a chunk, the folds repeating
over them. A global pool of a conv's NC1HWC0 result is this reduction
([N*C1, H*W, 16], axis 1): ResNet-50's head took 54,738 cycles for a vector
bound of ~3,500 when each outer index was its own load and a dozen
one-repeat instructions."""

from __future__ import annotations

import numpy as np
import pytest

from test_reduce_axis import check
from vec_common import func, memref, run


@pytest.mark.parametrize("op", ["sum", "max", "min"])
@pytest.mark.parametrize("elem", ["f16", "f32"])
@pytest.mark.parametrize("shape", [
    (32, 49, 16),      # ResNet-18's head (f16: one block a row)
    (40, 9, 8),        # f32 rows of one block, odd row count
    (5, 3, 80),        # rows over one repeat of f32 lanes (two segments in the narrowing)
    (3, 2, 128),       # two rows: one fold
])
def test_outer_batches(op, elem, shape):
    if elem == "f16" and shape[2] * 2 % 32:
        pytest.skip("rows not whole blocks")
    check(op, elem, shape, 1)


def test_outer_batches_chunks():
    """A cap of 3 slabs a chunk: chunks of equal size (10 outer indices in
    chunks of 3 + a tail of 1)."""
    check("sum", "f16", (10, 7, 16), 1, lowering="npu-lower-reduce{max-chunk=336}")
    check("max", "f32", (10, 7, 16), 1, lowering="npu-lower-reduce{max-chunk=336}")


# (C1, the most cycles over the bound): 14,034 / 1,128 and 54,738 / 3,856
# cycles (12x) for 32 and 128 before. What is left is latency: a load's,
# paid once a chunk (the set_flag after it holds MTE2 until the data lands),
# and the store's; the fewer the outer indices, the larger its share.
@pytest.mark.parametrize("c1,ratio", [(32, 3.0), (80, 2.1), (128, 1.8)])  # ResNet-18, MobileNetV2, ResNet-50
def test_gap_head_cycles(c1, ratio):
    """The heads' reduction [C1, 49, 16] f16 against numpy, and its cycles
    against the program's own bound."""
    shape, out = [c1, 49, 16], [c1, 1, 16]
    x = np.random.default_rng(c1).uniform(-4, 4, shape).astype(np.float16)
    src = func("f", "ascend.reduce_sum", [memref(shape, "f16"), memref(out, "f16")], "axis = 1 : i64")
    res = run(src, "npu-lower-reduce", [x, np.zeros(out, np.float16)], double_buffer=True)
    want = x.astype(np.float64).sum(axis=1, keepdims=True)
    np.testing.assert_allclose(res.outputs[1].astype(np.float64), want, rtol=2e-3, atol=2e-3)
    rep = res.report
    assert rep["cycles"] < ratio * rep["bound_cycles"], (rep["cycles"], rep["bound_cycles"])


@pytest.mark.parametrize("elem,shape,lowering", [
    ("f16", (128, 49, 16), "npu-lower-reduce"),                  # ResNet-50's head
    ("f32", (40, 9, 8), "npu-lower-reduce"),                     # stored from the slabs
    ("f16", (10, 7, 16), "npu-lower-reduce{max-chunk=100}"),     # per outer index
    ("f32", (7, 3, 100), "npu-lower-reduce"),                    # overlapping column pieces
])
def test_scaled_sum_is_sum_then_muls(elem, shape, lowering):
    """A global average pool's reduce_sum with `scale` (its 1/(H*W)) gives
    the bits of the reduce_sum and an ascend.muls after it (the two kernels
    the frontend made before, the sums through GM)."""
    scale = "0.020408162847161293 : f64"
    dt = np.float16 if elem == "f16" else np.float32
    out = [shape[0], 1, shape[2]]
    x = np.random.default_rng(sum(shape)).uniform(-4, 4, shape).astype(dt)
    types = [memref(list(shape), elem), memref(out, elem)]
    one = run(func("f", "ascend.reduce_sum", types, f"axis = 1 : i64, scale = {scale}"), lowering,
              [x, np.zeros(out, dt)]).outputs[1]
    total = run(func("f", "ascend.reduce_sum", types, "axis = 1 : i64"), lowering,
                [x, np.zeros(out, dt)]).outputs[1]
    two = run(func("g", "ascend.muls", [memref(out, elem)] * 2, f"scalar = {scale}"),
              "npu-lower-elementwise", [total, np.zeros(out, dt)]).outputs[1]
    assert one.tobytes() == two.tobytes()
    assert not np.array_equal(one, total)


@pytest.mark.parametrize("fraction", [None, 0.5, 0.8, 0.9, 1.0])
@pytest.mark.parametrize("double_buffer", [False, True])
def test_head_within_ub_at_any_fraction(fraction, double_buffer):
    """ResNet-50's global average pool ([128, 49, 16] f16, scaled) at any
    `ub-fraction`: a share is one ping-pong slot's, the two slots sharing the
    widened copy; over 0.5 no twin fits and the chunk's buffers, whole,
    must fit UB (at 0.8 they took 303,104 bytes of 262,144)."""
    shape, out = [128, 49, 16], [128, 1, 16]
    x = np.random.default_rng(50).uniform(-4, 4, shape).astype(np.float16)
    src = func("f", "ascend.reduce_sum", [memref(shape, "f16"), memref(out, "f16")],
               "axis = 1 : i64, scale = 0.020408162847161293 : f64")
    lowering = "npu-lower-reduce" + ("" if fraction is None else f"{{ub-fraction={fraction}}}")
    res = run(src, lowering, [x, np.zeros(out, np.float16)], double_buffer=double_buffer)
    want = x.astype(np.float64).mean(axis=1, keepdims=True)
    np.testing.assert_allclose(res.outputs[1].astype(np.float64), want, rtol=2e-3, atol=2e-3)

"""npu-lower-transpose on the simulator vs numpy: last-two swaps (vnchwconv,
with overlapped row/column tails and per-row copies for unaligned rows) and
the [0, 2, 1, 3] block-copy form."""

from __future__ import annotations

import numpy as np
import pytest

from vec_common import NP, func, memref, run

SWAP2 = [
    ((16, 16), "f16"), ((17, 33), "f16"), ((129, 16), "f16"), ((16, 127), "f16"),
    ((40, 20), "f32"), ((16, 8), "f32"), ((3, 48, 24), "f16"), ((2, 31, 17), "f32"),
    ((2, 64, 48), "i32"),
]


def permuted(shape, perm):
    return [shape[p] for p in perm]


@pytest.mark.parametrize("shape,elem", SWAP2, ids=lambda v: str(v))
@pytest.mark.parametrize("lowering", ["npu-lower-transpose",
                                      "npu-lower-transpose{max-rows=16 max-cols=16}"])
def test_swap_last_two(shape, elem, lowering):
    rank = len(shape)
    perm = list(range(rank - 2)) + [rank - 1, rank - 2]
    rng = np.random.default_rng(sum(shape))
    if elem == "i32":
        x = rng.integers(-1000, 1000, shape).astype(np.int32)
    else:
        x = rng.uniform(-8, 8, shape).astype(NP[elem])
    out_shape = permuted(shape, perm)
    src = func("f", "ascend.transpose", [memref(shape, elem), memref(out_shape, elem)],
               f"permutation = array<i64: {', '.join(map(str, perm))}>")
    res = run(src, lowering, [x, np.zeros(out_shape, x.dtype)])
    assert np.array_equal(res.outputs[1], np.transpose(x, perm))


@pytest.mark.parametrize("shape,elem", [((2, 5, 3, 16), "f16"), ((1, 37, 4, 8), "f32"),
                                        ((2, 3, 64), "f16"), ((3, 20, 2, 32), "f16")],
                         ids=lambda v: str(v))
@pytest.mark.parametrize("lowering", ["npu-lower-transpose", "npu-lower-transpose{max-rows=3}"])
def test_swap_before_last(shape, elem, lowering):
    rank = len(shape)
    perm = list(range(rank - 3)) + [rank - 2, rank - 3, rank - 1]
    x = np.random.default_rng(1).uniform(-8, 8, shape).astype(NP[elem])
    out_shape = permuted(shape, perm)
    src = func("f", "ascend.transpose", [memref(shape, elem), memref(out_shape, elem)],
               f"permutation = array<i64: {', '.join(map(str, perm))}>")
    res = run(src, lowering, [x, np.zeros(out_shape, x.dtype)])
    assert np.array_equal(res.outputs[1], np.transpose(x, perm))


@pytest.mark.parametrize("shape,lowering", [
    ((1, 3, 196, 256), "npu-lower-transpose"),  # ViT-base's patches: a k row is 196 KB
    ((2, 3, 100, 64), "npu-lower-transpose{ub-fraction=0.05}"),  # j tiles of 50, one k row each
], ids=str)
def test_swap_before_last_tiles_long_rows(shape, lowering):
    """A k row larger than the UB budget is moved a tile of j at a time."""
    perm = [0, 2, 1, 3]
    x = np.random.default_rng(3).uniform(-8, 8, shape).astype(np.float32)
    out_shape = permuted(shape, perm)
    src = func("f", "ascend.transpose", [memref(shape, "f32"), memref(out_shape, "f32")],
               f"permutation = array<i64: {', '.join(map(str, perm))}>")
    res = run(src, lowering, [x, np.zeros(out_shape, x.dtype)])
    assert np.array_equal(res.outputs[1], np.transpose(x, perm))


@pytest.mark.slow
def test_bert_transpose():
    shape, perm = (12, 512, 64), [0, 2, 1]
    x = np.random.default_rng(2).uniform(-8, 8, shape).astype(np.float16)
    src = func("f", "ascend.transpose", [memref(shape, "f16"), memref([12, 64, 512], "f16")],
               "permutation = array<i64: 0, 2, 1>")
    res = run(src, "npu-lower-transpose", [x, np.zeros((12, 64, 512), np.float16)])
    assert np.array_equal(res.outputs[1], np.transpose(x, perm))

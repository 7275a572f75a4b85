"""npu-lower-transpose for any permutation on the simulator vs numpy: dims
merged into the fast forms, permutations that only move size-1 dims
(copies), and the general UB gather for small and odd shapes."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from vec_common import NP, func, memref, run


def check(shape, perm, elem, lowering="npu-lower-transpose"):
    rng = np.random.default_rng(sum(shape) + len(perm))
    if elem == "i32":
        x = rng.integers(-2**31, 2**31 - 1, size=shape, dtype=np.int64).astype(np.int32)
    else:
        x = rng.uniform(-100, 100, size=shape).astype(NP[elem])
    out = [shape[p] for p in perm]
    src = func("f", "ascend.transpose", [memref(shape, elem), memref(out, elem)],
               f"permutation = array<i64: {', '.join(map(str, perm))}>")
    got = run(src, lowering, [x, np.zeros(out, NP[elem])]).outputs[1]
    np.testing.assert_array_equal(got, np.transpose(x, perm))


@pytest.mark.parametrize("perm", list(itertools.permutations(range(3))), ids=str)
@pytest.mark.parametrize("elem", ["f16", "f32", "i32"])
def test_every_rank3_permutation_small_odd(perm, elem):
    check((3, 5, 7), perm, elem)


@pytest.mark.parametrize("shape,perm,elem", [
    ((4, 16, 32), (2, 0, 1), "f16"),        # merges to a 2-D [64, 32] transpose
    ((16, 3, 40), (1, 2, 0), "f32"),        # merges to [16, 120] -> vnchwconv
    ((8, 64), (1, 0), "f16"),               # under one 16-row tile: gather
    ((2, 3, 4, 10), (0, 2, 1, 3), "f16"),   # last dim not whole blocks: gather
    ((1, 37, 1, 5), (2, 0, 3, 1), "f32"),   # size-1 dims moved only: a copy
    ((1, 300, 1), (2, 1, 0), "f16"),        # copy with an overlapped tail
    ((2, 3, 4, 5), (3, 1, 0, 2), "i32"),
    ((2, 2, 3, 2, 3), (4, 2, 0, 3, 1), "f16"),
])
def test_general_permutations(shape, perm, elem):
    check(shape, perm, elem)


@pytest.mark.parametrize("shape,perm,elem", [
    ((64, 48, 32), (2, 1, 0), "f32"),       # two rotations through a GM temporary
    ((32, 40, 16), (1, 2, 0), "f16"),       # merges to one rotation
])
def test_rotation_chain(shape, perm, elem):
    check(shape, perm, elem)


@pytest.mark.slow
def test_rotation_chain_three_steps():
    check((16, 24, 32, 16), (3, 1, 0, 2), "f16")


@pytest.mark.slow
@pytest.mark.parametrize("perm", list(itertools.permutations(range(4))), ids=str)
@pytest.mark.parametrize("elem", ["f16", "f32"])
def test_every_rank4_permutation(perm, elem):
    check((3, 4, 5, 6), perm, elem)

"""GM temporaries a lowering makes for its own op (a transpose's rotation
through GM) on a program split over cores: each core gets its own bytes (npu-plan-gm, `npu.core_private`). With one set of bytes
for all, the cores raced on them (found by the shape fuzzer: transpose
[0, 2, 1, 3] of 40x18x4x39 f16 on 20 cores)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "vector"))
from vec_common import NP, func, memref, run  # noqa: E402


@pytest.mark.parametrize("shape,elem", [((40, 18, 4, 39), "f16"), ((58, 18, 6, 20), "i32")])
def test_transpose_rotation_per_core(shape, elem):
    """Rows of 78 and 80 bytes: the swap of the middle dims rotates through
    a GM temporary (no block copies), on each core's share of the batch."""
    perm = (0, 2, 1, 3)
    out = [shape[p] for p in perm]
    source = func("t", "ascend.transpose", [memref(shape, elem), memref(out, elem)],
                  f"permutation = array<i64: {', '.join(map(str, perm))}>")
    dtype = np.int32 if elem == "i32" else NP[elem]
    x = (np.random.default_rng(3).standard_normal(shape) * 100).astype(dtype)
    result = run(source, "npu-lower{cores=32}", [x, np.zeros(out, dtype)])
    assert result.report["chip"]["launched"] > 1  # split over cores, or the test proves nothing
    assert not result.hazards
    np.testing.assert_array_equal(result.outputs[1], np.transpose(x, perm))


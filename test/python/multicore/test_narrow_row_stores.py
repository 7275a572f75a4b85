"""A fused row group whose output rows are narrower than a 32-byte block
(a global average pool: the sums of C channels, one f32 each) splits only
into slices of whole blocks. With one channel a core the kernel's store (one
run padded to a block) wrote its neighbours' sums: EfficientNet-B0's first
squeeze-excite pool ([1, 32, 112, 112]) raced on 32 cores. Its rows are
longer than UB: each core's share sums its column pieces as the one-core
kernel does (the piece width does not depend on the row count), so the bits
are the same."""

from __future__ import annotations

import numpy as np

from npu.ir import make_context, parse_module
from npu.pipeline import run_pipeline
from npu.simulator import simulate
from npu.target import get_target

C, HW = 32, 4096
POOL = f"""func.func @pool(%x: memref<{C}x{HW}xf32, "gm">, %y: memref<{C}x1xf32, "gm">) {{
  %sums = memref.alloc() : memref<{C}x1xf32, "gm">
  "ascend.reduce_sum"(%x, %sums) : (memref<{C}x{HW}xf32, "gm">, memref<{C}x1xf32, "gm">) -> ()
  "ascend.muls"(%sums, %y) {{scalar = {1.0 / HW!r} : f64}} : (memref<{C}x1xf32, "gm">, memref<{C}x1xf32, "gm">) -> ()
  return
}}
"""


def _run(cores: int):
    x = np.random.default_rng(5).standard_normal((C, HW)).astype(np.float32)
    module = parse_module(POOL, make_context())
    target = get_target("ascend910")
    options = "" if cores == 1 else " split-cores-min-bytes=0"
    run_pipeline(module, f"builtin.module(npu-lower{{cores={cores}{options}}})", target)
    return simulate(module, [x, np.zeros((C, 1), np.float32)], target=target), x


def test_narrow_rows_split_in_whole_blocks() -> None:
    many, x = _run(32)
    assert many.hazards == []
    assert 1 < many.report["block_dim"] <= C * 4 // 32  # 8 sums (a block) a core at least
    one, _ = _run(1)
    np.testing.assert_array_equal(one.outputs[-1], many.outputs[-1])
    np.testing.assert_allclose(many.outputs[-1][:, 0], x.mean(axis=1), rtol=1e-5)

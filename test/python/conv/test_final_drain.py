"""The conv's last two chunks in pieces (`passes/lower_conv/final_drain.py`):
the last super tile's mads go a few Cout blocks at a time, each piece
drained and stored right after its mads, so only a one-block drain and
store are left behind the conv's last mad. Against the reference
interpreter (npu.reference), at cce and hivm level."""

from __future__ import annotations

import numpy as np

from npu import ir as nir

from helpers import assert_close, compile_and_simulate, compile_program

# 1x1 stride 2, 64 -> 256 channels, 14x14 -> 7x7: one band, two super tiles
# of 8 Cout blocks (two accumulators of 4 each), weights resident, 4 chunks
C1, CO1, HW = 4, 16, 14
OUT = HW // 2


def _conv() -> str:
    x = f'memref<1x{C1}x{HW}x{HW}x16xf16, "gm">'
    w = f'memref<{C1}x{CO1}x16x16xf16, "gm">'
    b = f'memref<{CO1 * 16}xf16, "gm">'
    y = f'memref<1x{CO1}x{OUT}x{OUT}x16xf16, "gm">'
    return (f"func.func @f(%x: {x}, %w: {w}, %b: {b}, %y: {y}) {{\n"
            f'  "ascend.conv2d"(%x, %w, %b, %y) {{dilations = array<i64: 1, 1>, '
            f'groups = 1 : i64, kernel = array<i64: 1, 1>, layout = "nc1hwc0", '
            f"pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>}} : "
            f"({x}, {w}, {b}, {y}) -> ()\n  return\n}}\n")


def _inputs(seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.standard_normal((1, C1, HW, HW, 16)).astype(np.float16),
            (rng.standard_normal((C1, CO1, 16, 16)) * 0.1).astype(np.float16),
            rng.standard_normal(CO1 * 16).astype(np.float16),
            np.zeros((1, CO1, OUT, OUT, 16), np.float16)]


def test_final_pieces_match_the_reference():
    got, want, result = compile_and_simulate(_conv(), "npu-lower{cores=1}", _inputs())
    assert_close(got[-1], want[-1], np.float16)
    assert not result.hazards


def test_one_block_drains_after_the_last_mad():
    """Behind the last mad only its own piece drains: one Cout block of
    m1 fractals (before: the last accumulator's 4 blocks). The pieces of
    the last super tile each drain right after their mads."""
    module = compile_program(_conv(), "npu-lower{cores=1 prefetch=false}")
    body = [op for op in nir.ops_named(module.operation, "cce.mad", "cce.copy_l0c_to_ub")]
    last_mad = max(k for k, op in enumerate(body) if op.name == "cce.mad")
    after = body[last_mad + 1:]
    m1 = -(-OUT * OUT // 16)
    assert [op.name for op in after] == ["cce.copy_l0c_to_ub"], [op.name for op in after]
    assert nir.int_attr(after[0], "burst_len") == m1 * 32  # one block of f32 fractals
    # the last super tile's 8 blocks drain in pieces between its mads
    tail = body[-12:]
    assert sum(op.name == "cce.copy_l0c_to_ub" for op in tail) >= 4, [op.name for op in tail]



def test_last_super_tile_one_accumulator_after_the_other():
    """The last super tile (two accumulators of 8 blocks) goes accumulator
    by accumulator (`final_groups`): the first through its chunk and drained
    whole, V working on it while the cube does the second, whose pieces
    alone drain between their mads (1, 2, 2, 2, 1 blocks)."""
    module = compile_program(_conv(), "npu-lower{cores=1 prefetch=false}")
    body = [op for op in nir.ops_named(module.operation, "cce.mad", "cce.copy_l0c_to_ub",
                                       "cce.img2col_l1_to_l0a")]
    m1 = -(-OUT * OUT // 16)
    last_load = max(k for k, op in enumerate(body) if op.name == "cce.img2col_l1_to_l0a")
    pieces = body[last_load + 1:]
    assert [op.name for op in pieces] == ["cce.mad", "cce.copy_l0c_to_ub"] * 5
    assert [nir.int_attr(op, "burst_len") // (m1 * 32) for op in pieces[1::2]] == [1, 2, 2, 2, 1]
    # before the second accumulator's img2col: the first's mad and its whole drain
    first = [op for op in body[:last_load] if op.name != "cce.img2col_l1_to_l0a"][-2:]
    assert [op.name for op in first] == ["cce.mad", "cce.copy_l0c_to_ub"]
    assert nir.int_attr(first[0], "k") == 8 * 16
    assert nir.int_attr(first[1], "burst_len") == 8 * m1 * 32

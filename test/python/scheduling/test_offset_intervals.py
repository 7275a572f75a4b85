"""Offsets the access analysis cannot write as affine expressions (the
pipelined matmul's `tile / cols`, `tile % cols`, a clamping `min`) are
bounded by interval arithmetic (`npu.analysis.offset_intervals`) instead of widening
the access to the whole tensor."""

from __future__ import annotations

import pytest

from npu.analysis.access import AccessAnalysis
from npu.ir import make_context, parse_module, walk
from npu.target import get_target

ROW_BYTES = 768 * 4


def _store(lb: int, ub: int, row_index: str) -> str:
    """One loop over (tile, chunk) pairs of a 512x768 f32 result in 256x256
    tiles, 2 chunks per tile, 3 tiles per row, iterations [lb, ub): each
    stores a 16x64 block at row `row_index` (an expression of %tile) and
    column (tile % 3) * 256."""
    return f"""
func.func @f(%c: memref<512x768xf32, "gm">) {{
  %lb = arith.constant {lb} : index
  %ub = arith.constant {ub} : index
  %one = arith.constant 1 : index
  %two = arith.constant 2 : index
  %three = arith.constant 3 : index
  %k256 = arith.constant 256 : index
  %k8 = arith.constant 8 : index
  %k5 = arith.constant 5 : index
  scf.for %i = %lb to %ub step %one {{
    %tile = arith.divui %i, %two : index
    %row = {row_index}
    %t3 = arith.remui %tile, %three : index
    %col = arith.muli %t3, %k256 : index
    %buf = memref.alloc() : memref<16x64xf32, "ub">
    %dst = memref.subview %c[%row, %col] [16, 64] [1, 1] : memref<512x768xf32, "gm"> to memref<16x64xf32, strided<[768, 1], offset: ?>, "gm">
    "cce.copy_ub_to_gm"(%buf, %dst) {{n_burst = 16 : i64, burst_len = 8 : i64, src_gap = 0 : i64, dst_gap = 88 : i64}} : (memref<16x64xf32, "ub">, memref<16x64xf32, strided<[768, 1], offset: ?>, "gm">) -> ()
  }}
  return
}}
"""


def _written(text: str) -> tuple[int, int]:
    """(first, last + 1) byte the loop's store may write, for any iteration."""
    module = parse_module(text, make_context())
    analysis = AccessAnalysis(get_target("ascend910"))
    (copy,) = walk(module.operation, lambda o: o.name == "cce.copy_ub_to_gm")
    (r,) = analysis.access(copy).writes
    assert not r.start.terms
    return r.start.const, r.start.const + r.length


ROW_TILE = "%rt = arith.divui %tile, %three : index\n    %row = arith.muli %rt, %k256 : index"


@pytest.mark.parametrize("lb, ub, rows", [(0, 6, (0, 256)), (6, 12, (256, 512)),
                                          (0, 12, (0, 512)), (7, 12, (256, 512))])
def test_a_loop_over_one_row_of_tiles_stores_only_that_row(lb, ub, rows):
    first, end = _written(_store(lb, ub, ROW_TILE).replace("%row = " + ROW_TILE, ROW_TILE))
    # the 16-row block at the tile's first row; the hull of its columns
    assert first == rows[0] * ROW_BYTES
    assert end == (rows[1] - 256 + 15) * ROW_BYTES + (512 + 64) * 4


def test_min_clamps_and_remainders_across_a_multiple_widen_to_the_divisor():
    # %row = min(i * 5, 8) * 16 over i in [0, 12): rows 0 .. 128; the column's
    # tile % 3 crosses multiples of 3: the whole 0 .. 2 range.
    clamp = ("%m5 = arith.muli %i, %k5 : index\n    %mn = arith.minui %m5, %k8 : index\n"
             "    %k16 = arith.constant 16 : index\n    %row = arith.muli %mn, %k16 : index")
    first, end = _written(_store(0, 12, clamp).replace("%row = " + clamp, clamp))
    assert first == 0
    assert end == (128 + 15) * ROW_BYTES + (512 + 64) * 4


def test_an_index_it_cannot_bound_keeps_the_whole_tensor():
    shifted = ("%k1 = arith.constant 1 : index\n    %row = arith.shli %tile, %k1 : index")
    first, end = _written(_store(0, 12, shifted).replace("%row = " + shifted, shifted))
    assert (first, end) == (0, 512 * ROW_BYTES)


def test_an_interval_inside_a_workspace_tensor_is_narrowed_to_its_rows():
    # rows i / 2 of an 8x16 f16 tensor viewed at byte 1024 of a workspace,
    # i in [0, 4): rows 0 and 1, i.e. 64 bytes at 1024 (not the view's 256).
    text = """
func.func @f(%ws: memref<4096xi8, "gm"> {npu.workspace}) {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %c1 = arith.constant 1 : index
  %c1024 = arith.constant 1024 : index
  %t = memref.view %ws[%c1024][] : memref<4096xi8, "gm"> to memref<8x16xf16, "gm">
  %u = memref.alloc() : memref<16xf16, "ub">
  scf.for %i = %c0 to %c4 step %c1 {
    %row = arith.divsi %i, %c2 : index
    %r = memref.subview %t[%row, 0] [1, 16] [1, 1] : memref<8x16xf16, "gm"> to memref<16xf16, strided<[1], offset: ?>, "gm">
    "cce.copy_gm_to_ub"(%r, %u) {n_burst = 1 : i64, burst_len = 1 : i64, src_gap = 0 : i64, dst_gap = 0 : i64} : (memref<16xf16, strided<[1], offset: ?>, "gm">, memref<16xf16, "ub">) -> ()
  }
  return
}
"""
    module = parse_module(text, make_context())
    analysis = AccessAnalysis(get_target("ascend910"))
    (copy,) = walk(module.operation, lambda o: o.name == "cce.copy_gm_to_ub")
    (read,) = analysis.access(copy).reads
    assert (read.root, read.start.const, read.start.terms, read.length) == (("arg", 0), 1024, (), 64)

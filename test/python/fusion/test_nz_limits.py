"""The Nz store's field limits, as the fusion models check them before a
kernel is built (`npu.costmodel.vector.nz_limits`). The check had become
dead code (its body sat after the next function's return), so every
layout passed it."""

from __future__ import annotations

from npu.costmodel.vector.nz_limits import layout_limits
from npu.dialects.hivm import config_field
from npu.target import get_target


def test_rows_within_the_fields_pass():
    target = get_target("ascend910")
    assert layout_limits(target, 128, 768, 4) is None
    widest = target.vector_max_stride * target.vector_block_bytes // 4  # f32 elements
    assert layout_limits(target, 128, widest, 4) is None


def test_a_row_pitch_past_the_block_stride_is_refused():
    target = get_target("ascend910")
    widest = target.vector_max_stride * target.vector_block_bytes // 4
    why = layout_limits(target, 128, widest + 8, 4)
    assert why is not None and "vector block stride" in why


def test_a_column_block_past_the_copy_gap_is_refused():
    target = get_target("ascend910")
    per_row_block = target.fractal * target.fractal * 4 // target.vector_block_bytes
    rows = (config_field("copy", "dst_gap").max // per_row_block + 1) * target.fractal
    assert layout_limits(target, rows - target.fractal, 64, 4) is None
    why = layout_limits(target, rows, 64, 4)
    assert why is not None and "copy gap" in why

"""Unit tests of the chunk / repeat / overlap arithmetic shared by the vector
lowerings (pure Python, no MLIR)."""

import pytest

from npu.target import get_target
from npu.costmodel.vector.tiling import (VectorGeometry, max_chunk_elements, plan_chunks, split_repeats)


def covered(plan):
    """Every element index the plan's pieces touch, and whether any piece
    reaches past the tensor."""
    seen = set()
    for p in plan.pieces():
        seen.update(range(p.start, p.start + p.length))
    return seen


@pytest.mark.parametrize("widths,lanes,block", [
    ([2, 2, 2], 128, 16), ([4, 4], 64, 8), ([2, 4], 64, 16), ([1, 2], 128, 32), ([4, 1], 64, 32)])
def test_geometry_from_target(widths, lanes, block):
    geo = VectorGeometry.for_types(get_target("ascend910"), widths)
    assert (geo.lanes, geo.block, geo.max_repeat) == (lanes, block, 255)


@pytest.mark.parametrize("count", [1, 127, 128, 129, 255 * 128, 255 * 128 + 1, 600 * 128 + 5])
def test_split_repeats_covers_exactly(count):
    instrs = split_repeats(count, 128, 255)
    assert all(1 <= i.repeat <= 255 for i in instrs)
    assert all(i.mask == 128 for i in instrs[:-1])
    lanes = [i.offset + r * 128 + e for i in instrs for r in range(i.repeat) for e in range(i.mask)]
    assert lanes == list(range(count))
    assert instrs[-1].mask == (count % 128 or 128)


@pytest.mark.parametrize("total", [16, 17, 31, 127, 128, 129, 1000, 4096, 4097, 100003])
@pytest.mark.parametrize("max_chunk", [128, 1024])
def test_plan_covers_without_overrun(total, max_chunk):
    plan = plan_chunks(total, max_chunk, 16)
    assert not plan.padded
    assert covered(plan) == set(range(total))
    for p in plan.pieces():
        assert p.length % 16 == 0 and p.length <= max_chunk
        assert 0 <= p.start and p.start + p.length <= total
    if plan.tail is not None:
        # The tail ends exactly at the end and overlaps the previous chunk.
        assert plan.tail.start + plan.tail.length == total
        assert plan.tail.overlap == plan.full_chunks * plan.chunk - plan.tail.start
        assert 0 < plan.tail.overlap < 16


def test_plan_examples():
    p = plan_chunks(1000, 21760, 16)
    assert (p.chunk, p.full_chunks, p.tail.start, p.tail.length, p.tail.overlap) == (992, 1, 984, 16, 8)
    p = plan_chunks(50000, 16384, 16)
    assert (p.chunk, p.full_chunks, p.tail.start, p.tail.length) == (16384, 3, 50000 - 848, 848)
    assert p.tail.overlap == 0  # 848 = 50000 - 3*16384 is already whole blocks


def test_padded_small_tensor():
    p = plan_chunks(5, 128, 16)
    assert p.padded and p.full_chunks == 0 and p.tail.length == 16


def test_max_chunk_elements():
    ub = get_target("ascend910").capacity("ub")
    assert max_chunk_elements(ub // 2, 4, 128) == 32768
    assert max_chunk_elements(ub // 2, 6, 128) == 21760
    with pytest.raises(ValueError):
        max_chunk_elements(100, 4, 128)

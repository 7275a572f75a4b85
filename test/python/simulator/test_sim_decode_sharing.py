"""What the decode builds once and shares: the vector unit's lane layouts
(one per esize, repeat, mask and strides, whichever instruction asks) and the
blank buffers (mapped zero pages when large). Sharing must not change a
layout, and blank buffers must stay distinct, zeroed and writable."""

from __future__ import annotations

import numpy as np
import pytest

from npu.simulator.instruction import OperandInfo
from npu.simulator.memory import LAZY_BYTES, Memory
from npu.simulator.vector_unit import Lanes
from npu.target import ASCEND910


class Ctx:
    """The part of a `DecodeContext` `Lanes` reads: operands, target, ints."""

    def __init__(self, dtype: str, esize: int, **ints: int):
        self.operands = [OperandInfo("ub", dtype, esize, f"ub address, {dtype}")]
        self.target = ASCEND910
        self.ints = ints

    def int(self, name: str) -> int:
        return self.ints[name]

    def fail(self, message: str) -> ValueError:
        return ValueError(message)


def expected_elements(esize: int, repeat: int, mask: int, blk: int, rep: int) -> np.ndarray:
    """The lanes' element offsets, lane by lane (the hardware's definition)."""
    block = ASCEND910.vector_block_bytes
    out = []
    for r in range(repeat):
        for lane in range(mask):
            byte = r * rep * block + (lane * esize // block) * blk * block + lane * esize % block
            out.append(byte // esize)
    return np.array(out)


@pytest.mark.parametrize("esize,dtype", [(2, "f16"), (4, "f32")])
@pytest.mark.parametrize("repeat,mask,blk,rep", [(1, 128, 1, 8), (3, 64, 1, 8), (2, 40, 2, 16),
                                                 (4, 16, 0, 1), (2, 64, 1, 0)])
def test_shared_lane_layouts_are_the_lanes(esize: int, dtype: str, repeat: int, mask: int,
                                           blk: int, rep: int) -> None:
    mask = min(mask, 256 // esize)
    a = Lanes(Ctx(dtype, esize, dst_blk_stride=blk, dst_rep_stride=rep), 0, "dst", repeat, mask, 0)
    b = Lanes(Ctx(dtype, esize, src0_blk_stride=blk, src0_rep_stride=rep), 0, "src0", repeat,
              mask, 0)
    assert a.pattern is b.pattern  # built once for both operands
    want = expected_elements(esize, repeat, mask, blk, rep)
    got = np.arange(a.lo, a.hi) if a.idx is None else a.idx
    np.testing.assert_array_equal(got, want)
    # Another stride is another layout.
    c = Lanes(Ctx(dtype, esize, dst_blk_stride=blk, dst_rep_stride=rep + 1), 0, "dst", repeat,
              mask, 0)
    assert c.pattern is not a.pattern


def test_large_blank_buffers_are_zero_writable_and_distinct() -> None:
    small, big, other = (Memory(n, "gm", s) for n, s in (("s", 1024), ("b", 2 * LAZY_BYTES),
                                                         ("o", 2 * LAZY_BYTES)))
    for mem in (small, big, other):
        assert mem.data.flags.writeable and not mem.data.any()
    big.typed["f32"][-1] = 1.5
    big.data[7] = 9
    assert not other.data.any() and big.typed["f32"][-1] == 1.5 and big.data[7] == 9

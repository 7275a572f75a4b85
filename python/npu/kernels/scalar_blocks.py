"""Scalar and column operands broadcast to whole 32-byte blocks in UB with
`vnchwconv` (pure data movement, any 2- or 4-byte type): the elementwise
lowering's and the fused row kernels' broadcast operands."""

from __future__ import annotations

from mlir import ir

from npu import ir as nir
from npu.diagnostics import PassError
from npu.kernels.cce_build import View, copy, sub
from npu.target import Target


def expand_scalar_blocks(target: Target, src: ir.Value, elem: str, count: int,
                         dst: ir.Value, op: ir.Operation) -> None:
    """Broadcast each of `count` consecutive elements at `src` (UB) to a whole
    32-byte block at `dst` (block i = element i repeated), with vnchwconv:
    all 16 source rows point at the same block, so row j of the transpose is
    element j repeated. For 4-byte types each half-row is written twice (both
    halves are the same value)."""
    es = nir.element_bytes(elem)
    per_block = target.granule("ub") // es
    rows = target.fractal
    if es == 2:
        dst_offsets = list(range(rows))
    elif es == 4:
        dst_offsets = [t for t in range(per_block) for _ in range(2)]
    else:
        raise PassError(f"broadcasting {elem} operands is not supported (vnchwconv "
                        "handles 2- and 4-byte types)", op)
    per_repeat = per_block  # source elements expanded per vnchwconv repeat
    repeats = -(-count // per_repeat)
    done = 0
    while done < repeats:
        rep = min(repeats - done, target.max_repeat)
        s = sub(src, done * per_block, rep * per_block) if done else src
        d = sub(dst, done * per_block * per_block, rep * per_block * per_block) if done else dst
        nir.create_op("cce.vnchwconv", [d, s], repeat=rep, src_offsets=[0] * rows,
                      dst_offsets=dst_offsets, src_rep_stride=1, dst_rep_stride=per_block)
        done += rep


def load_scalar(target: Target, elem: str, flat: ir.Value, op: ir.Operation) -> View:
    """A one-element operand (GM `flat`, of `elem`s) as a UB block holding that element in every lane
    (read with block and repeat stride 0). The GM load is one granule (the
    tensor's padded granule); one vnchwconv with all 16 row pointers on that
    granule makes row j of its transpose element j repeated, and only row 0
    (both halves for 4-byte types) is kept: pure data movement, so it works
    for every 2- and 4-byte type (i32 included) and never reads the padding
    as a value."""
    granule = target.granule("ub")
    es = nir.element_bytes(elem)
    if es not in (2, 4):
        raise PassError(f"broadcasting {elem} operands is not supported (vnchwconv "
                        "handles 2- and 4-byte types)", op)
    per_block = granule // es
    raw = nir.alloc([per_block], elem, "ub")
    copy("cce.copy_gm_to_ub", sub(flat, 0, per_block), raw, 1, 1)
    # Block 0: row 0 (its first half for 4-byte types); every other row
    # lands in block 1, a scratch block never read.
    keep = 1 if es == 2 else 2
    rows = target.fractal
    both = nir.alloc([2 * per_block], elem, "ub")
    nir.create_op("cce.vnchwconv", [both, raw], repeat=1, src_offsets=[0] * rows,
                  dst_offsets=[0] * keep + [1] * (rows - keep), src_rep_stride=0,
                  dst_rep_stride=0)
    return View(sub(both, 0, per_block), 0, 0)

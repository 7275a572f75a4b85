"""Vector instructions over rectangles of 32-byte blocks in UB (the
depthwise vector path, `depthwise_vector.py`).

An operand is `Rect(buffer, element offset, blocks per row, blocks per
column)`: a rows x cols rectangle of blocks whose block (i, j) is at
offset + (i * row + j * col) blocks. Strides 0 read one block everywhere (a
per-channel weight or bias block). Like the NC1HWC0 pool's windows
(`lower_pool/kernel.py`), the repeats walk down the rows (repeat stride = a
row, 8 columns a repeat) when the strides fit the 8-bit fields, else along
each row.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir

from npu import ir as nir
from npu.kernels.cce_build import Index, lin, sub
from npu.costmodel.conv.depthwise_vector import BLOCKS_PER_REPEAT, MAX_STRIDE


@dataclass(frozen=True)
class Rect:
    buf: ir.Value
    at: Index     # element offset of block (0, 0)
    row: int      # blocks from one row to the next
    col: int      # blocks from one column to the next

    def moved(self, i: int, j: int, b: int) -> "Rect":
        """The rectangle from block (i, j) on (`b` elements a block)."""
        return Rect(self.buf, lin((self.at, 1), (i * self.row + j * self.col, b)), self.row, self.col)


def along_rows(rows: int, cols: int, ops: list[Rect]) -> bool:
    """Whether the repeats walk along each row (one instruction a row, its
    extent that row only) rather than down the rows (one a column of 8
    blocks, its extent every row). Sync insertion widens a strided access to
    its first..last byte, so a vmla after one on an overlapping extent gets
    a pipe_barrier(V): rows are disjoint, columns of one block are not. Along
    the rows when the row is whole repeats or long (a partial repeat is one
    more instruction for the scalar unit), or the row strides exceed the
    8-bit fields."""
    fits_rows = all(o.row <= MAX_STRIDE and o.col <= MAX_STRIDE for o in ops)
    fits_cols = all(o.col * BLOCKS_PER_REPEAT <= MAX_STRIDE for o in ops)
    if not fits_rows and not fits_cols:
        raise ValueError("the conv's strides exceed the vector stride fields")
    return not fits_rows or (fits_cols and (cols % BLOCKS_PER_REPEAT == 0 or cols >= 32))


def units(rows: int, cols: int, along: bool) -> list[int]:
    """The independent pieces of a rectangle: its rows (along) or its columns of 8."""
    return list(range(rows)) if along else list(range(0, cols, BLOCKS_PER_REPEAT))


def rect_op(name: str, dst: Rect, srcs: list[Rect], rows: int, cols: int, b: int,
            max_repeat: int, scalar: float | None = None, along: bool | None = None,
            unit: int | None = None) -> None:
    """`name` over a rows x cols rectangle of blocks of `b` elements each
    (only piece `unit` of `units(...)` when given)."""
    ops = [dst] + list(srcs)
    along = along_rows(rows, cols, ops) if along is None else along
    if not along:
        for c0 in ([unit] if unit is not None else units(rows, cols, False)):
            width = min(BLOCKS_PER_REPEAT, cols - c0)
            for r0 in range(0, rows, max_repeat):
                rep = min(max_repeat, rows - r0)
                _vop(name, [(o.moved(r0, c0, b), o.col, o.row) for o in ops], rep, width, b, scalar)
        return
    full, rest = divmod(cols, BLOCKS_PER_REPEAT)
    for r in ([unit] if unit is not None else units(rows, cols, True)):
        for c0, count, width in ((0, full, BLOCKS_PER_REPEAT), (full * BLOCKS_PER_REPEAT, int(rest > 0), rest)):
            for k in range(0, count, max_repeat):
                rep = min(max_repeat, count - k)
                first = c0 + k * BLOCKS_PER_REPEAT
                _vop(name, [(o.moved(r, first, b), o.col, BLOCKS_PER_REPEAT * o.col) for o in ops],
                     rep, width, b, scalar)


def _vop(name: str, views: list[tuple[Rect, int, int]], rep: int, width: int, b: int,
         scalar: float | None) -> None:
    operands, attrs = [], {"repeat": rep, "mask": width * b}
    tags = ["dst"] + (["src"] if len(views) == 2 else ["src0", "src1"])
    for tag, (r, blk, rep_stride) in zip(tags, views):
        extent = ((rep - 1) * rep_stride + (width - 1) * blk + 1) * b
        operands.append(sub(r.buf, r.at, extent))
        attrs[f"{tag}_blk_stride"] = blk
        attrs[f"{tag}_rep_stride"] = rep_stride
    if scalar is not None:
        attrs["scalar"] = scalar
    nir.create_op(name, operands, **attrs)


def flat_op(name: str, dst: ir.Value, src: ir.Value | None, count: int, lanes: int,
            max_repeat: int, dst_rep: int = 8, src_rep: int = 8, **attrs) -> None:
    """`name` over `count` contiguous elements (vdup without a source, a
    vconv with its own repeat strides): whole repeats, then a masked one."""
    done = 0
    while done < count:
        whole = (count - done) // lanes
        rep = min(whole, max_repeat) or 1
        mask = lanes if whole else count - done
        span = (rep - 1) * lanes + mask  # elements, the same in both (elementwise)
        operands = [sub(dst, done, span)]
        a = dict(repeat=rep, mask=mask, dst_blk_stride=1, dst_rep_stride=dst_rep, **attrs)
        if src is not None:
            operands.append(sub(src, done, span))
            a.update(src_blk_stride=1, src_rep_stride=src_rep)
        nir.create_op(name, operands, **a)
        done += rep * mask

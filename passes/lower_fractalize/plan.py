"""The vnchwconv plans of a strip (which rows go where in each pass) and the
matrix geometry they work on; pure data, no IR."""

from __future__ import annotations

from dataclasses import dataclass

# The plans below are written for the vnchwconv of dialects/README.md: 16 row
# pointers of one 32-byte block each (16 fp16 / 8 fp32), i.e. the target's
# fractal edge and block size; `lower` checks the target agrees.
ALGORITHMS = ("naive", "fill-ub")
VNCHW_ROWS = 16
VNCHW_BLOCK_BYTES = 32


@dataclass(frozen=True)
class Vnchw:
    """One vnchwconv: buffers are "strip" or "tmp", positions in 32-byte blocks."""

    src_buf: str
    src_block: int
    dst_buf: str
    dst_block: int
    repeat: int
    src_offsets: tuple[int, ...]
    dst_offsets: tuple[int, ...]
    src_rep: int
    dst_rep: int

    def inverted(self) -> "Vnchw":
        return Vnchw(self.dst_buf, self.dst_block, self.src_buf, self.src_block, self.repeat,
                     self.dst_offsets, self.src_offsets, self.dst_rep, self.src_rep)


def forward_passes(t: int, C1: int, elem_bytes: int) -> list[Vnchw]:
    """strip rows (pitch 16*C1 elements) -> Nz strip out[c][row][16] in the strip buffer."""
    if elem_bytes == 2:
        p1 = Vnchw("strip", 0, "tmp", 0, t * C1, tuple(a * t * C1 for a in range(16)),
                   tuple(range(16)), 1, 16)
        p2 = [Vnchw("tmp", b * C1 * 16, "strip", b, C1, tuple(range(16)),
                    tuple(a * t for a in range(16)), 16, 16 * t) for b in range(t)]
        return [p1] + p2
    H = 2 * C1  # 8-element pieces per row
    p1 = Vnchw("strip", 0, "tmp", 0, t * H, tuple(a * t * H for a in range(16)),
               tuple(range(16)), 1, 16)
    p2 = []
    for b in range(t):
        for half in (0, 1):
            dst = []
            for a in range(8):
                row = (half * 8 + a) * t
                dst += [2 * row, 2 * row + 1]
            p2.append(Vnchw("tmp", b * C1 * 32 + half, "strip", 2 * b, C1,
                            tuple(2 * i for i in range(16)), tuple(dst), 32, 32 * t))
    return [p1] + p2


def inverse_passes(t: int, C1: int, elem_bytes: int) -> list[Vnchw]:
    """Nz strip out[c][row][16] in the strip buffer -> strip rows."""
    if elem_bytes == 2:
        # The 2-byte vnchwconv is a plain transpose: swap roles, reverse order.
        return [p.inverted() for p in reversed(forward_passes(t, C1, 2))]
    q2, q1 = [], []
    for b in range(t):
        for half in (0, 1):
            # Rows a*t+b of column block c, elements half*8.. -> tmp[b][c][d][a].
            q2.append(Vnchw("strip", 2 * b + half, "tmp", b * C1 * 32 + half * 16, C1,
                            tuple(2 * a * t for a in range(16)), tuple(range(16)), 32 * t, 32))
            # tmp rows d, lanes a = half*8.. -> strip row a*t+b, column block c.
            dst = []
            for a in range(8):
                row = (half * 8 + a) * t * 2 * C1
                dst += [row, row + 1]
            q1.append(Vnchw("tmp", b * C1 * 32 + half, "strip", b * 2 * C1, C1,
                            tuple(2 * i for i in range(16)), tuple(dst), 32, 2))
    return q2 + q1


def split_repeats(p: Vnchw, max_repeat: int, max_rep_stride: int) -> list[Vnchw]:
    """`p` as instructions whose fields fit: at most `max_repeat` repeats,
    and repeat strides within their field; a stride that does not fit (a
    tall strip of narrow columns: 16 rows of t fractals) is replaced by one
    instruction per repeat, whose strides are then unused (0)."""
    if max(p.src_rep, p.dst_rep) > max_rep_stride:
        return [Vnchw(p.src_buf, p.src_block + r * p.src_rep, p.dst_buf,
                      p.dst_block + r * p.dst_rep, 1, p.src_offsets, p.dst_offsets, 0, 0)
                for r in range(p.repeat)]
    out = []
    for first in range(0, p.repeat, max_repeat):
        out.append(Vnchw(p.src_buf, p.src_block + first * p.src_rep, p.dst_buf,
                         p.dst_block + first * p.dst_rep, min(max_repeat, p.repeat - first),
                         p.src_offsets, p.dst_offsets, p.src_rep, p.dst_rep))
    return out


@dataclass(frozen=True)
class Geometry:
    """One fractalize/defractalize problem in elements and bytes."""

    batch: int
    R: int
    C: int
    e: int  # element bytes
    R1: int
    C1: int
    # The element type the strips are moved as: f16/f32/i32, and f16 for
    # int8 (pairs of bytes: see `LowerFractalize.geometry`).
    element: str = "f16"

    @property
    def Cp(self) -> int:  # UB row pitch in elements (whole column blocks)
        return self.C1 * VNCHW_ROWS

    @property
    def row_bytes(self) -> int:
        return self.C * self.e

    @property
    def total_bytes(self) -> int:
        return self.batch * self.R * self.C * self.e

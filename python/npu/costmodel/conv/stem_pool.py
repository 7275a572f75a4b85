"""A ResNet stem's max pool (3x3, stride 2, pad 1) on the stem conv's drain.

The stem conv (7x7/2 3->64 on 224, its ReLU on the drain: `stem_fold`)
writes a 112x112x64 f16 map (1.6 MB) that the pool reads back from GM to
write 56x56x64. Pooled on the vector unit as each band's tile leaves L0C,
only the pooled map leaves the core: every drained row is first pooled
along its columns (56 blocks of the max of columns 2j-1, 2j, 2j+1) into a
buffer of the band's rows, then each pooled row whose three rows are
drained is the max of three such rows (the last two of a band kept for the
next band's first pooled row: buffers of a band's rows in turn, three
for bands of one row).
`npu-fuse` joins the pool to the conv's group where it pays (`pays`) and on
one core only: a core's run of rows would need the conv row above it.

Measured (the 224 stem with its ReLU, one core): conv 47,736 + pool 33,306
cycles as two kernels; 51,566 fused (bands of 2 rows; V bounds it: the
drain's L0C -> UB moves, the image staging's vnchwconv and the pool).
"""

from __future__ import annotations

from mlir import ir

from npu import ir as nir
from npu.costmodel.conv.depthwise_vector import MAX_STRIDE  # the vector stride fields
from npu.costmodel.conv.epilogue import group_members
from npu.dialects.ascend_pool import POOL2D, Pool2d
from npu.target import Target

BLOCK = 16  # f16 lanes of a 32-byte block
# the pool's UB budgeted for bands of this many rows when the conv is tiled
# (its tiles then keep the UB they need; the kernel's drain slots give up the
# rest for its actual bands): with 4, ResNet's stem took bands of one row
# (73,186 cycles fused), with 2 its bands of 3 rows
BUDGET_ROWS = 2


def pool_fits(pool: ir.Operation, conv_out: ir.Value) -> bool:
    """Whether `pool` is the max pool this drain computes over `conv_out`
    ([1, C1, Ho, Wo, 16] f16): 3x3, stride 2, pad 1 at the top and left
    (at the bottom and right no window reaches it: the frontend may drop
    it), no dilation, Ho even, Wo whole 16-pixel fractals (a band's rows stay contiguous in
    its tile) and within the repeat stride field, one image."""
    if pool.name != POOL2D or nir.memref_element(conv_out) != "f16":
        return False
    p = Pool2d.of(pool)
    shape = nir.memref_shape(conv_out)
    if len(shape) != 5 or shape[0] != 1 or nir.memref_shape(pool.operands[0]) != shape:
        return False
    _, c1, ho, wo, c0 = shape
    return (p.kind == "max" and p.kernel == (3, 3) and p.strides == (2, 2)
            and p.dilations == (1, 1) and p.pads[:2] == (1, 1) and c0 == BLOCK
            and ho % 2 == 0 and wo % BLOCK == 0 and wo <= MAX_STRIDE
            and p.out_size(ho, wo) == (ho // 2, wo // 2)
            and nir.memref_shape(pool.operands[1]) == [1, c1, ho // 2, wo // 2, BLOCK])


def drain_pool(region: ir.Operation | None, conv: ir.Operation) -> ir.Operation | None:
    """The max pool that ends the conv's epilogue group (`npu-fuse` put it
    there only where `pool_fits`), or None."""
    if region is None:
        return None
    members = group_members(region, conv)
    return members[-1] if members and members[-1].name == POOL2D else None


def pooled_rows(rows: int) -> int:
    """The most pooled rows a band of `rows` drained rows completes (those
    whose last row, an odd one, it drains)."""
    return (rows + 1) // 2


def row_buffers(rows: int) -> int:
    """Buffers of a band's column-pooled rows, taken band by band: the
    band's own and those holding the two rows before it."""
    return -(-2 // rows) + 1


def ub_bytes(co1: int, rows: int, wo: int) -> int:
    """The pool's UB for bands of `rows` rows: the column-pooled rows'
    buffers and two of a band's pooled rows, for every Cout block."""
    return co1 * (row_buffers(rows) * rows + 2 * pooled_rows(rows)) * (wo // 2) * 32


def vector_cycles(co1: int, ho: int, wo: int, target: Target) -> float:
    """The pool on V, one repeat (8 blocks) a cycle: two maxes along every
    row's columns, two down the rows of every pooled row."""
    blocks = co1 * (2 * ho * (wo // 2) + 2 * (ho // 2) * (wo // 2))
    return blocks * 32 / target.vector_bytes


def pays(co1: int, ho: int, wo: int, target: Target) -> bool:
    """Whether pooling on the drain beats the pool's own kernel: that
    kernel's busiest mover (the map read back, or the pooled map stored),
    plus the conv's stores of the map that no longer leave the core, against
    the vector work the drain takes on."""
    map_bytes = co1 * ho * wo * 32
    read = map_bytes / target.path("gm_to_ub").bytes_per_cycle
    stores_saved = map_bytes * 3 / 4 / target.path("ub_to_gm").bytes_per_cycle
    return read + stores_saved > vector_cycles(co1, ho, wo, target)

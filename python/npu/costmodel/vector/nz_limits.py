"""Which rows a vector kernel can store in the cube's Nz layout
(`npu.kernels.nz_store.NzStore`): the limits of the gather's strides and
the copy's gap, which the fusion models check before the kernel is built."""

from __future__ import annotations

from npu.dialects.hivm import config_field
from npu.target import Target


def layout_limits(target: Target, rows: int, n: int, es: int) -> str | None:
    """Why rows x n elements cannot be stored as Nz this way (None: they can):
    the gather's block stride is the row pitch, the copy's gap the rest of a
    column block's rows, each within its instruction field."""
    block = target.vector_block_bytes
    r1 = -(-rows // target.fractal)
    if n * es // block > target.vector_max_stride:
        return (f"rows of {n * es} bytes exceed the vector block stride "
                f"({target.vector_max_stride} blocks)")
    if r1 * target.fractal * target.fractal * es // block > config_field("copy", "dst_gap").max:
        return f"{rows} rows exceed the copy gap of one Nz column block"
    return None


def cast_gather_limits(target: Target, n: int, src_es: int, dst_es: int) -> bool:
    """Whether rows of `n` elements of `src_es` bytes can be converted to
    `dst_es` bytes straight into Nz order (`NzStore.store` with `cast`):
    a 16-column block of the result is one 32-byte block (every lane of
    a vconv repeat lands in the block of its column block, block stride
    the rows of the piece), and the source row pitch fits the repeat
    stride."""
    block = target.vector_block_bytes
    return (target.fractal * dst_es == block and src_es > dst_es
            and n * src_es // block <= target.vector_max_stride)

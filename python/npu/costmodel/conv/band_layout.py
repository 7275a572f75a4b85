"""Which input rows a band of output rows reads: the one rule the conv
lowering's bands (`kernel.Band`) and the tiling estimate's test for alike
bands (`ConvShape`) share."""

from __future__ import annotations


def band_layout(ho0: int, rows: int, h: int, stride: int, pad_top: int, extent: int,
                row_skip: bool) -> tuple[tuple[int, int, int, int], int]:
    """((output rows, input rows copied to L1, padding rows above, padding
    rows below), first input row) of the band of output rows [ho0, ho0+rows)
    of a map of `h` rows. With `row_skip` only the runs of input rows the
    windows read are copied, packed. The lowering's bands (`kernel.Band`)
    and the estimate's test for bands alike both come from here."""
    if row_skip:
        return (rows, rows * extent, 0, 0), ho0 * stride
    top = ho0 * stride - pad_top
    bottom = (ho0 + rows - 1) * stride - pad_top + extent
    r0 = max(0, top)
    return (rows, min(h, bottom) - r0, r0 - top, max(0, bottom - h)), r0

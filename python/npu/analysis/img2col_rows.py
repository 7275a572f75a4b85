"""The bytes of its map an img2col reads: the input rows its windows touch.

Read as the whole map operand, a band's first img2col waited for every
staging chunk of the band's rows (an NCHW image staged through UB in
chunks, `lower_conv.image_map`), although its windows read the first
chunk's rows only. Here the rows are bounded by its windows (rows of the
first and last of its 16 x repeat windows, or 16 in repeat mode 0) and the
kernel rows it may fetch; only for a map of one C1 block laid out densely
(else: the whole operand).
"""

from __future__ import annotations

from mlir import ir

from npu.dialects.cce_img2col import geometry


def img2col_read_bytes(op: ir.Operation, ebytes: int, size: int) -> tuple[int, int]:
    """(first byte, length) of map operand 0 that img2col `op` may read;
    (0, `size`) when not bounded here."""
    mt = ir.MemRefType(op.operands[0].type)
    shape = list(mt.shape)
    try:
        strides, _ = mt.get_strides_and_offset()
    except Exception:  # noqa: BLE001 (a layout without static strides)
        return 0, size
    if len(shape) != 4 or shape[0] != 1 or strides[1:] != [shape[2] * shape[3], shape[3], 1]:
        return 0, size
    g = geometry(op)
    if g.fm_h != shape[1] or g.fm_w != shape[2]:
        return 0, size
    windows = 16 * (g.repeat if g.repeat_mode == 1 else 1)
    first = g.first_window // g.out_w
    last = (g.first_window + windows - 1) // g.out_w
    kh0, kh1 = 0, g.kernel_h - 1  # mode 0 steps the kernel point
    if g.repeat_mode == 1:  # one point, or 4 consecutive ones (small-channel mode)
        point = g.fetch_h * g.kernel_w + g.fetch_w
        kh0 = g.fetch_h
        kh1 = min(kh1, (point + (3 if g.small_channel else 0)) // g.kernel_w)
    lo = first * g.stride_h - g.pad_top + kh0 * g.dilation_h
    hi = last * g.stride_h - g.pad_top + kh1 * g.dilation_h
    lo, hi = max(lo, 0), min(hi, g.fm_h - 1)
    if hi < lo:
        return 0, 0
    row = shape[2] * shape[3] * ebytes
    return lo * row, (hi - lo + 1) * row

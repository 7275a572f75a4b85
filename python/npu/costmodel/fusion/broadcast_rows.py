"""Whether a host-constant operand shaped like a matmul's C repeats one row
per column block: a bias the frontend broadcast over the rows, which an
epilogue reads once (`npu.costmodel.fusion.epilogue`).

The answer is kept per MLIR context, by where the constant's data lives:
npu-fuse, npu-split-cores and npu-lower-matmul ask again and again about the
same biases (684 full-array comparisons on BERT-12 at 32 cores for about 72
arrays, 0.2 CPU s). The data of a non-splat `DenseElementsAttr` is the
attribute's storage, which its context keeps unchanged and never frees
while it lives, so its address and size name it; data the lookup copied
(another element type, i1's unpacked bits) is compared every time. The cache holds no MLIR
object (it goes with its context)."""

from __future__ import annotations

import weakref

import numpy as np
from mlir import ir

from npu import ir as nir

# context -> {(data address, bytes, C's shape, dtype): whether its rows repeat}
_KNOWN: "weakref.WeakKeyDictionary[ir.Context, dict[tuple, bool]]" = weakref.WeakKeyDictionary()


def row_broadcast(value: ir.Value) -> bool:
    """Whether `value`, an operand shaped like C, is a host constant
    (`npu.constant` argument) whose rows within each column block are all
    the same (and the same in every batch): a bias the frontend broadcast
    over the rows. Compared bit for bit, so reading one row is exact."""
    view = nir.defining_op(value)
    if view is not None and view.name == "memref.subview" and len(
            nir.memref_shape(view.operands[0])) == len(nir.memref_shape(value)):
        return row_broadcast(view.operands[0])  # a core's slice (npu-split-cores) repeats too
    data = nir.constant_argument(value)  # None: not a constant input (or a loop's argument)
    if data is None:
        return False
    shape = nir.memref_shape(value)
    key = _storage_key(data, shape)
    known = _KNOWN.setdefault(value.context, {}) if key is not None else None
    if known is not None and key in known:
        return known[key]
    bits = data.view(f"u{data.itemsize}").reshape(-1, shape[-4], shape[-3] * shape[-2], shape[-1])
    repeats = bool(np.array_equal(bits, np.broadcast_to(bits[:1, :, :1, :], bits.shape)))
    if known is not None:
        known[key] = repeats
    return repeats


def _storage_key(data: np.ndarray, shape: list[int]) -> tuple | None:
    """What names `data` while its context lives, or None when it is not a
    view of another object's memory (an array made for this lookup, whose
    address a later one may reuse)."""
    root = data
    while isinstance(root.base, np.ndarray):
        root = root.base
    # The attribute's own storage: exported by it, not unpacked for the
    # lookup (i1 elements are: a buffer made per call).
    if (root.flags.owndata or not isinstance(root.base, memoryview) or data.dtype == np.bool_
            or not isinstance(root.base.obj, ir.DenseElementsAttr)):
        return None
    return (data.__array_interface__["data"][0], data.nbytes, tuple(shape), data.dtype.str)

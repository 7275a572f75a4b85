"""Whether a host-constant operand shaped like a matmul's C repeats one row
per column block: a bias the frontend broadcast over the rows, which an
epilogue reads once (`npu.costmodel.fusion.epilogue`)."""

from __future__ import annotations

from mlir import ir

from npu import ir as nir


def row_broadcast(value: ir.Value) -> bool:
    """Whether `value`, an operand shaped like C, is a host constant
    (`npu.constant` argument) whose rows within each column block are all
    the same (and the same in every batch): a bias the frontend broadcast
    over the rows. Compared bit for bit, so reading one row is exact."""
    import numpy as np

    view = nir.defining_op(value)
    if view is not None and view.name == "memref.subview" and len(
            nir.memref_shape(view.operands[0])) == len(nir.memref_shape(value)):
        return row_broadcast(view.operands[0])  # a core's slice (npu-split-cores) repeats too
    data = nir.constant_argument(value)  # None: not a constant input (or a loop's argument)
    if data is None:
        return False
    shape = nir.memref_shape(value)
    bits = data.view(f"u{data.itemsize}").reshape(-1, shape[-4], shape[-3] * shape[-2], shape[-1])
    return bool(np.array_equal(bits, np.broadcast_to(bits[:1, :, :1, :], bits.shape)))

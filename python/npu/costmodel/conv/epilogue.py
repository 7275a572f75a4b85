"""What may join a conv's drain (`npu.conv_epilogue` groups, formed by
`npu-fuse`, lowered by `npu-lower-conv`).

A conv's result in NC1HWC0 is, tile by tile, the implicit matmul's C in the
order it drains (each Cout block's run of output pixels), so an elementwise
op over whole NC1HWC0 tensors of the result's shape (the ReLU or ReLU6
after a conv, a residual Add, the cast to f16 for the next conv) is one
more vector pass over the tile in UB: its other operands' tiles are loaded
like the result's own store, and only the last member's result goes to GM.
"""

from __future__ import annotations

from mlir import ir

from npu import ir as nir
from npu.costmodel.vector.recipes import compute_of
from npu.diagnostics import PassError

CONV_EPILOGUE_ATTR = "npu.conv_epilogue"


def joins(op: ir.Operation, shape: list[int]) -> bool:
    """Whether elementwise `op` can run on a drained tile: every memref it
    takes or writes is a contiguous GM tensor of the conv result's `shape`,
    and the vector unit has a recipe for its types."""
    values = [v for v in op.operands if nir.is_memref(v.type)]
    if len(values) < 2 or any(nir.memory_space(v) != "gm" or not nir.is_contiguous(v)
                              or nir.memref_shape(v) != shape for v in values):
        return False
    try:
        compute_of(op, [nir.memref_element(v) for v in values[:-1]], nir.memref_element(values[-1]))
    except PassError:
        return False
    return True


def loaded_operands(members: list[ir.Operation], conv_out: ir.Value) -> list[ir.Value]:
    """The tensors the members read from GM (not made in the group), in
    first-use order."""
    made = [conv_out] + [m.operands[-1] for m in members]
    loads: list[ir.Value] = []
    for m in members:
        for v in m.operands[:-1]:
            if nir.is_memref(v.type) and not any(v == w for w in made + loads):
                loads.append(v)
    return loads

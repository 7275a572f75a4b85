"""An f32 model's ReLU / Clip between two convs, run on the f16 copy the
next conv reads.

An f32 model's conv result is f32; the next conv reads an f16 copy of it
(`ConvLayouts.input_5hd`). When a clamp (ReLU, Clip: a max / min against
scalars) is all that lies between, and only convs read its result,
clamping after the rounding gives the same f16 values: rounding to nearest
is monotonic, so round(max(x, c)) = max(round(x), round(c)) (min alike).
The converter then emits conv -> cast -> clamp in f16, which `npu-fuse`
folds into the conv's drain as it does for f16 models (the L0C -> UB copy
converts, the clamp runs on half the bytes, and no f32 map reaches GM).
"""

from __future__ import annotations

import numbers

from mlir import ir

CONV_OPS = ("linalg.conv_2d_nchw_fchw", "linalg.depthwise_conv_2d_nchw_chw",
            "linalg.conv_2d_ngchw_gfchw")
PASSING = ("tensor.pad", "tensor.expand_shape")  # what convs read through (zero pads, groups)
# A max pool commutes with the rounding too (a max of its window): a stem's
# ReLU whose pooled map only convs read (ResNet-50's stem) runs in f16 with
# its pool, as in an f16 model (where npu-fuse joins the pool to the drain).
MAX_POOLS = ("linalg.pooling_nchw_max", "linalg.pooling_ncw_max")


def clamp_body(body: ir.Block, args: list) -> bool:
    """Every op is a max / min, or a select between exactly the two values
    its condition compares (a max / min spelled as cmpf + select), and
    `args` (the block arguments but the 5hd input) are scalars."""
    conds = {}
    for o in body.operations:
        name = o.name
        if name in ("arith.maximumf", "arith.minimumf", "arith.cmpf", "arith.constant",
                    "linalg.yield"):
            if name == "arith.cmpf":
                conds[o.results[0]] = {o.operands[0], o.operands[1]}
            continue
        if name != "arith.select":
            return False
        compared = conds.get(o.operands[0])
        if compared is None or {o.operands[1], o.operands[2]} != compared:
            return False
    return all(isinstance(a, numbers.Real) for a in args)


def read_by_convs(value: ir.Value) -> bool:
    """Every use is a conv's input (through pads, group reshapes and max pools)."""
    uses = list(value.uses)
    if not uses:
        return False
    for use in uses:
        owner = use.owner
        if owner.name in PASSING or (owner.name in MAX_POOLS and use.operand_number == 0):
            if not read_by_convs(owner.results[0]):
                return False
        elif owner.name not in CONV_OPS or use.operand_number != 0:
            return False
    return True

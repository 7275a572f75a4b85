"""The positions options act on (`npu.passes.applies.OnPattern`): an op of a
kind where the option can do something, found in the IR's structure.

Each is read the same before the fusions (npu-lower's input: a conv, then
its cast, then the Add, each its own op) and after them (npu-lower-conv run
alone: the same ops inside the conv's `npu.conv_epilogue` group), and each
is wider than what the pass finally does (a fusion may still decline, the
cost model may choose otherwise): a program without one has no op the
option could ever act on, and the option is refused there.
"""

from __future__ import annotations

from typing import Callable, Iterator

from mlir import ir

from npu import ir as nir
from npu.dialects.ascend_pool import POOL2D
from npu.passes.applies import BATCH_MATMULS, CONVS, OnPattern

# The cube's ops: a value through one is another op's result, not the same tensor's
_CUBE = ("ascend.conv2d", "ascend.matmul", "ascend.batch_matmul")


def readers(value: ir.Value) -> Iterator[tuple[ir.Operation, int]]:
    """(op, operand number) of each ascend op that reads `value` (an input,
    not its destination, the last operand), through views of it."""
    for use in value.uses:
        owner = use.owner.operation if hasattr(use.owner, "operation") else use.owner
        if owner.name in nir.VIEW_OPS:
            yield from readers(owner.results[0])
        elif owner.name.startswith("ascend.") and use.operand_number < len(owner.operands) - 1:
            yield owner, use.operand_number


def reaches(op: ir.Operation, goal: Callable[[ir.Operation, int], bool]) -> bool:
    """Whether the result of `op` (its last operand), or a result computed
    from it by ops other than the cube's (casts, elementwise ops, layout
    changes, reductions, pools), is read as an operand where `goal(reader,
    operand number)` holds. Each op is followed once, however far (a bound
    would refuse an option on a long enough softmax)."""
    seen: set = set()
    todo = [op]
    while todo:
        at = todo.pop()
        for reader, k in readers(at.operands[-1]):
            if goal(reader, k):
                return True
            if reader.name not in _CUBE and reader not in seen:
                seen.add(reader)
                todo.append(reader)
    return False


def _one_by_one(op: ir.Operation) -> bool:
    """A dense 1x1 stride-1 unpadded conv in layout "nc1hwc0" of f16 weights."""
    from npu.dialects.ascend_conv import geometry, layout

    if layout(op) != "nc1hwc0" or nir.memref_element(op.operands[1]) != "f16":
        return False
    g = geometry(op)
    return (g.kh, g.kw, tuple(g.strides), tuple(g.pads), g.groups) == (1, 1, (1, 1), (0, 0, 0, 0), 1)


def _residual(conv: ir.Operation) -> bool:
    """`conv` has `npu-lower-conv cube-residual`'s shape (`cube_residual.applies`
    on the IR): a 1x1 stride-1 conv whose result, cast to f16, an f16 Add of
    another tensor of its shape reads."""
    if not _one_by_one(conv):
        return False
    for cast, _ in readers(conv.operands[-1]):
        if cast.name != "ascend.cast" or nir.memref_element(cast.operands[-1]) != "f16":
            continue
        shape = nir.memref_shape(cast.operands[-1])
        for add, _ in readers(cast.operands[-1]):
            values = [v for v in add.operands if nir.is_memref(v.type)]
            if add.name == "ascend.add" and len(values) == 3 and all(
                    nir.memref_element(v) == "f16" and nir.memref_shape(v) == shape for v in values):
                return True
    return False


def _biased(conv: ir.Operation) -> bool:
    """`conv` has `npu-lower-conv cube-bias`'s shape (`cube_bias.applies` on
    the IR): a 1x1 conv in layout "nc1hwc0" of f16 weights with a bias, its
    result f16 or cast to f16 (the drain rounds)."""
    from npu.dialects.ascend_conv import geometry, has_bias, layout

    g = geometry(conv)
    if (layout(conv) != "nc1hwc0" or (g.kh, g.kw) != (1, 1) or not has_bias(conv)
            or nir.memref_element(conv.operands[1]) != "f16"):
        return False
    return nir.memref_element(conv.operands[-1]) == "f16" or any(
        r.name == "ascend.cast" and nir.memref_element(r.operands[-1]) == "f16"
        for r, _ in readers(conv.operands[-1]))


def _depthwise(conv: ir.Operation) -> bool:
    from npu.dialects.ascend_conv import NC1HWC0_BD, group_channels, layout

    return layout(conv) == NC1HWC0_BD and group_channels(conv) == 1


# npu-lower-conv depthwise: a depthwise conv (its choice of unit)
DEPTHWISE = OnPattern('depthwise conv (layout "nc1hwc0_bd", group_channels = 1)', CONVS.ops,
                      kind=CONVS.what, finds=_depthwise)

CUBE_BIASES = OnPattern("1x1 conv with a bias whose result is f16 or cast to f16", CONVS.ops,
                        kind=CONVS.what, finds=_biased)

# npu-fuse conv-pool: a conv whose result (its cast and ReLU) a max pool reads
# (`fuse.stem_pool`: the stem's)
CONV_POOLS = OnPattern("conv whose result a max pool reads", CONVS.ops, kind=CONVS.what,
                       finds=lambda op: reaches(op, lambda r, k: (
                           k == 0 and r.name == POOL2D
                           and ir.StringAttr(r.attributes["kind"]).value == "max")))

CONV_RESIDUALS = OnPattern("1x1 stride-1 conv whose result an f16 Add reads (a residual)",
                           CONVS.ops, kind=CONVS.what, finds=_residual)

# npu-fuse conv-chains: a conv's result (after its epilogue) read as the
# input map of a later 1x1 stride-1 conv (`conv_chain.pair_of`, `takes_map`)
CONV_CHAINS = OnPattern("conv whose result a 1x1 stride-1 conv reads as its input map",
                        CONVS.ops, kind=CONVS.what,
                        finds=lambda op: reaches(op, lambda r, k: (
                            k == 0 and r.name == "ascend.conv2d" and _one_by_one(r))))

# npu-fuse chains: a matmul's result (after its epilogue, cast and
# fractalize) read as the next matmul's A operand (`fuse.chains`)
MATMUL_CHAINS = OnPattern("matmul whose result another matmul reads as its A operand",
                          ("ascend.matmul",), kind="matmul",
                          finds=lambda op: reaches(op, lambda r, k: (
                              k == 0 and r.name == "ascend.matmul")))

# The attention passes: a batch_matmul (Q.K^T) whose result, through the
# softmax, another batch_matmul (P.V) reads (`costmodel.attention.pattern`
# matches the canonical form npu-canonicalize makes of it)
ATTENTIONS = OnPattern("attention (a batch_matmul whose result, through its softmax, another "
                       "batch_matmul reads)", BATCH_MATMULS.ops, kind=BATCH_MATMULS.what,
                       finds=lambda op: reaches(op, lambda r, k: r.name == "ascend.batch_matmul"))


def _conv_weights(alloc: ir.Operation) -> bool:
    """An L1 alloc of a lowered conv's weights npu-prefetch may load early."""
    from npu.passes.lower_conv.weights import RESIDENT_ATTR, STREAMED_ATTR

    return RESIDENT_ATTR in alloc.attributes or STREAMED_ATTR in alloc.attributes


# npu-prefetch convs: a lowered conv's resident weights or first streamed tile
# (in npu-lower, npu-lower-conv makes them of a conv: `lower_options.MAKES`)
CONV_WEIGHTS = OnPattern("lowered conv's weights in L1 (npu.resident_weights or "
                         "npu.streamed_weights)", ("memref.alloc",), kind="alloc",
                         finds=_conv_weights)


def _weights_to_l1(copy: ir.Operation) -> bool:
    """A GM -> L1 copy of a host constant (a function argument marked
    `npu.constant`): the weights npu-prefetch may load early."""
    root = nir.view_root(copy.operands[0])
    if not isinstance(root, ir.BlockArgument):
        return False
    func = root.owner.owner
    func = func.operation if hasattr(func, "operation") else func
    return func.name == "func.func" and nir.CONSTANT_ATTR in nir.arg_attrs(func, root.arg_number)


# npu-prefetch's slots (chunks, l1-room, ...): a lowered matmul's or conv's
# host-constant weights staged into L1 (in npu-lower, those lowerings make them)
L1_WEIGHTS = OnPattern("host-constant weights staged into L1 (a lowered matmul's or conv's)",
                       ("cce.copy_gm_to_l1",), kind="copy from GM into L1",
                       finds=_weights_to_l1)

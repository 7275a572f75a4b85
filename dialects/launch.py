"""Rules for a multi-core kernel's launch attributes on `func.func`
(`npu.block_dim`, `npu.block_idx`; see README.md "Multi-core kernels")."""

from __future__ import annotations

from mlir import ir

from npu.dialects.rules import RuleError, rule
from npu.ir.walks import BLOCK_DIM_ATTR, BLOCK_IDX_ATTR, arg_attrs


@rule("func.func")
def _launch(op: ir.Operation) -> None:
    if not op.regions[0].blocks:
        return
    args = list(op.regions[0].blocks[0].arguments)
    marked = [i for i in range(len(args)) if BLOCK_IDX_ATTR in arg_attrs(op, i)]
    if len(marked) > 1:
        raise RuleError(f"has {len(marked)} '{BLOCK_IDX_ATTR}' arguments (#"
                        f"{', #'.join(map(str, marked))}); a kernel has one block index")
    for i in marked:
        if str(args[i].type) != "index":
            raise RuleError(f"argument #{i} is marked '{BLOCK_IDX_ATTR}' but is {args[i].type}, "
                            "not index")
    dim = 1
    if BLOCK_DIM_ATTR in op.attributes:
        attr = op.attributes[BLOCK_DIM_ATTR]
        if not isinstance(attr, ir.IntegerAttr) or ir.IntegerAttr(attr).value < 1:
            raise RuleError(f"'{BLOCK_DIM_ATTR}' must be an integer of at least 1, got {attr}")
        dim = ir.IntegerAttr(attr).value
    if marked and BLOCK_DIM_ATTR not in op.attributes:
        raise RuleError(f"has a '{BLOCK_IDX_ATTR}' argument but no '{BLOCK_DIM_ATTR}'")
    if dim > 1 and not marked:
        raise RuleError(f"'{BLOCK_DIM_ATTR}' = {dim} needs an '{BLOCK_IDX_ATTR}' argument: "
                        "every core would do the same work")


@rule("cce.sync_all", "hivm.sync_all")
def _sync_all_at_top_level(op: ir.Operation) -> None:
    """Every core must reach the same barriers in the same order: one under a
    loop or a branch could be passed a different number of times by some
    cores, and the launch would hang."""
    parent = op.parent
    if parent is None or parent.name != "func.func":
        where = "a function" if parent is None else f"'{parent.name}'"
        raise RuleError(f"sits in {where}: the chip barrier must be in a function's body, "
                        "outside loops and branches, so that every core reaches it equally often")

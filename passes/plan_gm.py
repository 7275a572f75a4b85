"""`npu-plan-gm`: pack every GM temporary of a function into one workspace.

Why: a graph of ascend ops allocates one GM tensor per intermediate result;
most die soon after they are made. Planning them statically into one
workspace (reusing the bytes of dead tensors) gives the caller a single,
small scratch buffer to provide, as real NPU runtimes do.

* Positions are the ops of the function's entry block in order; an op nested
  in a loop or another region counts at the position of its top-level
  ancestor (conservative: the whole loop).
* A tensor (`memref.alloc` in "gm" with a static shape and identity layout)
  lives from its first to its last use, counting uses through views
  (expand_shape, collapse_shape, subview, cast, reinterpret_cast, view); its
  bytes mean nothing before the first use, so where the alloc stands does
  not matter (allocs hoisted to the top still share bytes).
  `memref.dealloc` is not a use; it is erased with the alloc. The allocs
  inside a matmul or conv epilogue group (`npu.epilogue`, `npu.conv_epilogue`)
  are its tensors that never leave UB (their lowerings erase them): they get
  no bytes. A tensor that
  leaves the function (returned, passed to a call) or flows into a region's
  terminator (yielded) is left as it is: its lifetime is not the op order's.
* In a multi-core program a lifetime stretches to the chip barriers
  (`cce.sync_all`) around it: other cores may still use a tensor until all
  have passed the next barrier, so only tensors a barrier apart share bytes.
* Placement is the shared planner (`npu.memory_planning`): greedy by size and
  MegEngine's pushdown, the lower peak wins. Offsets and sizes are whole
  units of `target.gm_workspace_alignment`.
* The function gets one more argument, `memref<BYTES x i8, "gm">` marked
  `npu.workspace` (scratch: the caller provides it, it is neither input nor
  output), and each alloc becomes `memref.view` of it at its offset.
* A temporary a lowering made for its own op (`npu.core_private`) on a
  kernel of N cores takes N slices of its aligned size, one per core, each
  core's view at its block index's slice (the op's code runs on every core:
  one set of bytes for all was a race between the cores).

The function records `npu.gm_plan = {allocated, lower_bound, sum, tensors,
algorithm}` (bytes of the workspace, most bytes live at once, sum of the
aligned sizes without reuse) and, with `remarks=true`, says so as a remark.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir
from mlir.dialects import arith, memref

from npu import memory_planning as planner
from npu.costmodel.conv.epilogue import CONV_EPILOGUE_ATTR
from npu.costmodel.fusion.epilogue import EPILOGUE_ATTR
from npu.ir import (CORE_PRIVATE_ATTR, VIEW_OPS, WORKSPACE_ATTR, ancestors, append_argument, block_dim,
                    block_idx_value, element_bytes, element_type_name, functions, i64_attr,
                    index_const, memory_space, memref_layout, symbol_name, walk_held)
from npu.passes.base import Option, Pass, PassError
from npu.target import Target

PLAN_ATTR = "npu.gm_plan"
ESCAPES = ("func.return", "func.call", "func.call_indirect", "scf.condition", "cf.br",
           "cf.cond_br")


def _escapes(user: ir.Operation) -> bool:
    """Does passing a tensor to `user` let it outlive op order (returned,
    called with, yielded to a loop's next iteration or a region's result)?"""
    return user.name in ESCAPES or user.name.endswith(".yield")


@dataclass
class Tensor:
    """One GM temporary and its lifetime in entry-block positions."""

    op: ir.Operation
    size: int    # bytes rounded up to the workspace alignment
    nbytes: int  # bytes of its elements
    start: int
    end: int
    deallocs: list[ir.Operation]
    offset: int = -1
    per_core: int = 0  # a core-private temporary: each core's slice (`size` holds them all)


@dataclass(frozen=True)
class GmPlan:
    allocated: int    # workspace bytes
    lower_bound: int  # most (aligned) bytes live at once
    total: int        # sum of the aligned sizes
    algorithm: str
    tensors: int
    unplanned: int    # GM allocs left as they are (dynamic, escaping, strided)


class _Positions:
    """op of the function -> the position of its entry-block ancestor, found
    by going up from the op: only the users of GM allocs are asked, and
    listing every op of a lowered BERT-12 (32 cores) cost more than them."""

    def __init__(self, func_op: ir.Operation):
        self.tops = {top.operation: i for i, top in
                     enumerate(func_op.regions[0].blocks[0].operations)}

    def __getitem__(self, op: ir.Operation) -> int:
        found = self.tops.get(op)
        while found is None:
            parent = op.parent
            if parent is None:
                raise KeyError(f"'{op.name}' is not inside the function")
            op = parent.operation
            found = self.tops.get(op)
        return found


def _lifetime(alloc: ir.Operation, where: _Positions
              ) -> tuple[int, int, list[ir.Operation]] | None:
    """(first and last position that reads or writes the tensor, its
    deallocs), None when it escapes. Views only compute addresses: they
    neither start nor end a lifetime (their uses do)."""
    positions = []
    deallocs = []
    pending = [alloc.results[0]]
    while pending:
        value = pending.pop()
        for use in value.uses:
            user = use.owner.operation
            if user.name == "memref.dealloc":
                deallocs.append(user)
            elif _escapes(user):
                return None
            elif user.name in VIEW_OPS and use.operand_number == 0:
                pending.extend(user.results)
            else:
                positions.append(where[user])
    if not positions:
        positions = [where[alloc]]
    return min(positions), max(positions), deallocs


def _epochs(life: tuple, barriers: list[int], end: int) -> tuple:
    """On many cores a tensor's bytes are free for another only once every
    core has passed a chip barrier (`cce.sync_all`) after its last use: the
    lifetime covers the whole stretch between the barriers around it, from
    the function's start before the first and to its `end` after the last
    (a program without barriers is one stretch: its cores run unordered)."""
    first, last, deallocs = life
    first = max([b + 1 for b in barriers if b < first], default=0)
    last = min([b - 1 for b in barriers if b > last], default=end)
    return first, last, deallocs


def _in_epilogue(op: ir.Operation) -> bool:
    return any(EPILOGUE_ATTR in node.attributes or CONV_EPILOGUE_ATTR in node.attributes
               for node in ancestors(op))


def collect_tensors(func_op: ir.Operation, target: Target) -> tuple[list[Tensor], int]:
    """The plannable GM allocs of `func_op` and how many GM allocs are not."""
    where: _Positions | None = None  # made for the first candidate only
    align = target.gm_workspace_alignment
    cores = block_dim(func_op)
    tensors, unplanned = [], 0
    for alloc in walk_held(func_op, lambda o: o.name == "memref.alloc"):
        mtype = ir.MemRefType(alloc.results[0].type)
        if memory_space(mtype) != "gm" or _in_epilogue(alloc) or "npu.chain" in alloc.attributes \
                or "npu.conv_chain" in alloc.attributes:
            continue  # a chained tensor becomes an L1 buffer (npu-lower-matmul, npu-lower-conv)
        strides, offset = memref_layout(mtype)
        expected, identity = 1, offset == 0
        for d, s in reversed(list(zip(mtype.shape, strides))):
            identity = identity and s == expected
            expected *= d
        life = None
        if mtype.has_static_shape and identity:
            if where is None:
                where = _Positions(func_op)
                tops = list(func_op.regions[0].blocks[0].operations)
                barriers = [i for i, top in enumerate(tops) if top.operation.name == "cce.sync_all"]
            life = _lifetime(alloc, where)
            if life is not None and cores > 1:
                life = _epochs(life, barriers, len(tops) - 1)
        if life is None:
            unplanned += 1
            continue
        nbytes = element_bytes(element_type_name(mtype.element_type))
        for d in mtype.shape:
            nbytes *= d
        size = max(align, -(-nbytes // align) * align)
        if cores > 1 and CORE_PRIVATE_ATTR in alloc.attributes:
            tensors.append(Tensor(alloc, size * cores, nbytes, *life, per_core=size))
        else:
            tensors.append(Tensor(alloc, size, nbytes, *life))
    return tensors, unplanned


def plan_function(func_op: ir.Operation, target: Target, algorithm: str = "auto",
                  apply: bool = True, collected: tuple[list[Tensor], int] | None = None
                  ) -> GmPlan | None:
    """Plan the GM temporaries of `func_op`; with `apply`, rewrite them into
    views of a new workspace argument. None when there is nothing to plan.
    `collected`: what `collect_tensors` gave for the function as it is."""
    tensors, unplanned = collected or collect_tensors(func_op, target)
    if not tensors:
        return None
    adj = planner.conflict_graph(tensors, planner.overlaps)
    plan = planner.place(tensors, adj, algorithm)
    for t, off in zip(tensors, plan.offsets):
        t.offset = off
    result = GmPlan(plan.peak, planner.lower_bound(tensors)[0], sum(t.size for t in tensors),
                    plan.algorithm, len(tensors), unplanned)
    if apply:
        _rewrite(func_op, tensors, result)
    return result


def _rewrite(func_op: ir.Operation, tensors: list[Tensor], plan: GmPlan) -> None:
    with func_op.context, func_op.location:
        ws_type = ir.MemRefType.get([plan.allocated], ir.IntegerType.get_signless(8), None,
                                    ir.StringAttr.get("gm"))
        workspace = append_argument(func_op, ws_type, {WORKSPACE_ATTR: ir.UnitAttr.get()})
        for t in tensors:
            for d in t.deallocs:
                d.erase()
            with t.op.location, ir.InsertionPoint(t.op):
                shift = index_const(t.offset)
                if t.per_core:
                    core = arith.MulIOp(block_idx_value(t.op), index_const(t.per_core)).result
                    shift = arith.AddIOp(shift, core).result
                view = memref.ViewOp(t.op.results[0].type, workspace, shift, []).result
            t.op.results[0].replace_all_uses_with(view)
            t.op.erase()
        func_op.attributes[PLAN_ATTR] = ir.DictAttr.get({
            "allocated": i64_attr(plan.allocated), "lower_bound": i64_attr(plan.lower_bound),
            "sum": i64_attr(plan.total), "tensors": i64_attr(plan.tensors),
            "algorithm": ir.StringAttr.get(plan.algorithm)})


def _check_not_called(module: ir.Operation, func_op: ir.Operation) -> None:
    name = symbol_name(func_op)
    for call in walk_held(module, lambda o: o.name == "func.call"):
        if ir.FlatSymbolRefAttr(call.attributes["callee"]).value == name:
            raise PassError(f"npu-plan-gm cannot add a workspace argument to '@{name}': it is "
                            "called here", call)


class PlanGmPass(Pass):
    name = "npu-plan-gm"
    summary = "Pack GM memref.alloc temporaries into one workspace argument (lifetime-based reuse)"
    options = (
        Option("algorithm", str, "auto", "placement heuristic; auto keeps the better of both",
               choices=planner.ALGORITHMS),
        Option("remarks", bool, False, "report the plan as a remark on each function"),
    )

    def run(self, module: ir.Operation) -> None:
        for func in functions(module):
            if not func.regions[0].blocks:
                continue
            if len(func.regions[0].blocks) > 1:
                raise PassError("npu-plan-gm orders lifetimes by the ops of one block; this "
                                "function has several (unstructured control flow)", func)
            collected = collect_tensors(func, self.target)
            if collected[0]:
                _check_not_called(module, func)
            plan = plan_function(func, self.target, self.algorithm, collected=collected)
            if plan is not None and self.remarks:
                self.remark(func, f"gm workspace: allocated {plan.allocated} B, lower bound "
                            f"{plan.lower_bound} B, sum of sizes {plan.total} B ({plan.tensors} "
                            f"tensors, {plan.algorithm}"
                            + (f"; {plan.unplanned} gm allocs left unplanned)"
                               if plan.unplanned else ")"))

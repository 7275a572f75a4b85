"""npu-fuse-attention-projection: an attention kernel (`npu.attention`
group) absorbs the matmul epilogue group (`npu.epilogue`, from `npu-fuse`)
that computes its Q, K and V, so that the kernel projects each head on the
cube into the L1 tiles its stages read: the projection of head h+1 runs on
the cube (and its weights on MTE2) while head h's softmax keeps the vector
unit busy, where apart they ran one after the other, each leaving the
other's units idle.

Run after `npu-fuse` (which forms the epilogue: the bias add, the rounding
to f16 and the row-major stores of the Q, K, V siblings of
`npu-fuse-horizontal`). A candidate is refused, with a remark saying why,
when Q, K and V are not the f16 rows one such epilogue alone writes
(`npu.costmodel.attention.projection.find`), when an op between the two groups
conflicts with moving the epilogue into the attention, or when the cost
model (`npu.costmodel.attention.projection_plan.choose`: every tile of the attention and
configuration of the projection that fits on chip, by the busiest pipe's
estimated cycles) finds nothing faster than the projection's own kernel
followed by the attention. The epilogue region moves into the attention
region, before its members, with the Q, K, V tensors (which no longer
reach GM); `npu.attention` gets the chosen tile and the region
`npu.projection = {...}`, the projection's plan (dialects/README.md,
"Attention groups").
"""

from __future__ import annotations

from mlir import ir

from npu.costmodel.attention import pattern as att
from npu.costmodel.attention.nz_out import absorb_nz_out
from npu.costmodel.attention import plan as cost
from npu.costmodel.attention import projection as proj
from npu.costmodel.attention import projection_plan as choice_model
from npu.costmodel.fusion import epilogue
from npu import ir as nir
from npu.passes.base import Option, Pass, ub_fraction_option
from npu.passes.patterns import ATTENTIONS
from npu.passes.fuse.chains import CHAIN_ATTR
from npu.passes.fuse.scan import scan_top_level


class FuseAttentionProjectionPass(Pass):
    name = "npu-fuse-attention-projection"
    acts_on = ATTENTIONS  # every option: the program has one
    summary = "An attention kernel computes its own Q, K, V projection, head by head, on chip"
    options = (
        ub_fraction_option(cost.ATTENTION_UB_FRACTION,
                           "UB share of one tile's buffers by the footprint model"),
        Option("remarks", bool, True, "report each projection absorbed and why a candidate "
               "was not"),
    )

    def run(self, module: ir.Operation) -> None:
        for func in nir.functions(module):
            if len(func.regions[0].blocks):
                self.fuse_function(func)

    def fuse_function(self, func: ir.Operation) -> None:
        ops, index, users, touches = scan_top_level(func)
        region_of: dict = {}
        for op in ops:
            if op.name == "scf.execute_region" and epilogue.EPILOGUE_ATTR in op.attributes:
                for store in nir.walk(op, lambda o: o.name == "ascend.defractalize"):
                    region_of[nir.view_root(store.operands[-1])] = op
        for region in [op for op in ops if att.ATTENTION_ATTR in op.attributes]:
            a = self.attention_of(region, ops)
            if a is None:
                continue
            found = proj.find(a, region_of, users, self.target)
            if isinstance(found, str):
                self.refuse(region, found)
                continue
            why = self.conflict(found, region, a, ops, index, touches)
            if why is not None:
                self.refuse(region, why)
                continue
            attrs = nir.dict_attr_items(region.attributes[att.ATTENTION_ATTR])
            apart = (attrs["query_rows"] // 16, attrs["key_rows"] // 16)
            s1 = a.seq_blocks

            def own(qb: int, kb: int, a=a, s1=s1,
                    masks=cost.mask_room(a, attrs.get("softmax", "f32"))) -> dict[str, int]:
                return cost.footprint(qb, kb, a.d_blocks, a.staged, qb >= s1 and kb >= s1,
                                      a.nz_out, self.target, a.guard, **masks)

            choice = choice_model.choose(a, found, self.target, self.ub_fraction, apart, own,
                                         attrs.get("softmax", "f32"))
            if isinstance(choice, str):
                self.refuse(region, choice)
                continue
            self.form(region, a, found, choice, attrs, set(ops))

    @staticmethod
    def attention_of(region: ir.Operation, ops: list) -> att.Attention | None:
        """The group's attention as `npu-lower-attention` will see it. At a
        seq of partial 16-row blocks npu-fuse-attention left the head
        transposes and fractalizes of Q, K, V out (the kernel would read
        rows past the end); computing them, the kernel reads none, so those
        join from the top level (`att.match(any_seq=True)`: members outside
        the region, moved in by `form`)."""
        body = [o.operation for o in region.regions[0].blocks[0].operations]
        first = next(o for o in body if o.name == "ascend.batch_matmul")
        outside = [o for o in ops if o.name.startswith("ascend.")]
        users = att.users_of(body + outside)
        a = att.match(first, users, any_seq=True)
        if isinstance(a, str):
            return None
        if any(o.name == "ascend.fractalize" and o not in a.members for o in body):
            absorb_nz_out(a, users)
        if any(m not in body and m.name not in ("ascend.transpose", "ascend.fractalize")
               for m in a.members):
            return None
        return a

    @staticmethod
    def conflict(p: proj.Projection, region: ir.Operation, a: att.Attention, ops: list,
                 index: dict, touches: dict) -> str | None:
        """Why the epilogue group (and members of the attention still at the
        top level) cannot move down into the attention: an op in between
        writes what one reads or touches what one writes."""
        moved = [m for m in a.members if m in index]
        mine = {nir.view_root(s) for s in a.sources}
        for first, extra in [(p.region, mine)] + [(m, set()) for m in moved]:
            reads, writes = touches[index[first]]
            for op in ops[index[first] + 1:index[region]]:
                if op.name in nir.VIEW_OPS or op.name == "memref.alloc" or op in moved \
                        or index[op] not in touches:
                    continue
                r, w = touches[index[op]]
                if w & reads or (r | w) & (writes | extra):
                    return (f"'{op.name}' between the projection and the attention uses Q, K or "
                            "V or writes the projection's input")
        return None

    def refuse(self, region: ir.Operation, why: str) -> None:
        if self.remarks:
            self.remark(region, f"attention not fused with its Q/K/V projection: {why}")

    def form(self, region: ir.Operation, a: att.Attention, p: proj.Projection,
             choice: choice_model.Choice, attrs: dict, top: set) -> None:
        """The epilogue group (and the Q, K, V tensors) move into the
        attention region, whose attribute gets the chosen tile and plan;
        `top`: the function's top-level ops."""
        block = region.regions[0].blocks[0]
        head = block.operations[0]
        unchain(p)
        roots = [nir.view_root(s) for s in a.sources]
        for root in roots:
            for op in nir.view_closure(root):
                op.move_before(head)
        p.region.move_before(head)
        # Members still at the top level (the prologue at a seq of partial
        # blocks, `attention_of`): their tensors, then themselves.
        moved = [m for m in a.members if m in top]
        for m in moved:
            root = nir.view_root(m.operands[-1])
            if nir.defining_op(root) in top:
                for op in nir.view_closure(root):
                    op.move_before(head)
        for m in moved:
            m.move_before(head)
        pp = choice.plan
        frac, h = self.target.fractal, a.heads
        qkv = 3 * a.seq * h * a.head_dim * 2
        rows = pp.row_tiles(p.m1)
        snake = choice_model.overlapped(a, choice.qb, choice.kb)
        fused = attrs["gm_bytes"] - qkv + choice_model.gm_read_bytes(a, p, pp, snake)
        unfused = attrs["unfused_gm_bytes"] + int(nir.dict_attr_items(
            p.region.attributes[epilogue.EPILOGUE_ATTR])["unfused_gm_bytes"])
        new = dict(attrs, query_rows=choice.qb * 16, key_rows=choice.kb * 16,
                   ub_bytes=choice.ub_bytes, gm_bytes=fused, unfused_gm_bytes=unfused)
        with region.context:
            region.attributes[att.ATTENTION_ATTR] = nir.dict_attr_of(new)
            region.attributes[proj.PROJECTION_ATTR] = nir.dict_attr_of(pp.as_attr())
        if not self.remarks:
            return
        m, n, k = p.m1 * frac, p.n1 * frac, p.c_blocks * frac
        x = ("X resident in L1 for all heads" if pp.x_resident else
             f"X streamed in row strips of {pp.rows * frac} rows, once a head"
             + (" (each head starts on the two the head before ended with)"
                if snake and rows > 1 else ""))
        was = (attrs["query_rows"], attrs["key_rows"])
        tile = f"attention tile {choice.qb * frac} x {choice.kb * frac}"
        if was != (choice.qb * frac, choice.kb * frac):
            tile += f" (apart {was[0]} x {was[1]}, not kept: {choice.apart_why})"
        chunks = cost.key_chunks(choice.kb, a.d_blocks, self.target)
        if len(chunks) > 1:
            tile += f", Q.K^T and P.V in {len(chunks)} chunks of up to {chunks[0] * frac} keys"
        tile += f", softmax in {attrs.get('softmax', 'f32')}"
        self.remark(region, f"attention computes its Q/K/V projection ({m}x{n}x{k} matmul and "
                            f"its epilogue) head by head on chip: {x}; W's columns of a head "
                            f"read {rows} time(s) a head in chunks of {pp.chunk * frac}; C "
                            f"pieces of {pp.rows * frac} x {pp.cols * frac} in {pp.c_slots} L0C "
                            f"slot(s), L0 sub-steps of {pp.sub * frac}"
                            + ("; the scores in one L0C slot" if pp.scores_slots == 1 else "")
                            + f"; {tile}; estimated {int(choice.fused)} cycles ("
                            f"{choice.cost.text()} and the first head's projection; "
                            f"{int(choice.busiest)} by the busiest pipes) against "
                            f"{int(choice.apart)} apart; Q, K, V never reach GM (GM traffic "
                            f"{unfused} -> {fused} bytes)")


def unchain(p: proj.Projection) -> None:
    """X read from GM by the attention's projection: a matmul chain that
    npu-fuse formed into the projection's matmul (its X kept in L1 from the
    matmul before, passes/fuse/chains.py: ELECTRA's and ALBERT's embedding
    projection) is undone, so its producer stores X to GM and npu-plan-gm
    places it; left chained, X had no GM address (a GM temporary in the
    kernel's argument area)."""
    alloc = nir.defining_op(nir.view_root(p.x))
    if alloc is not None and alloc.name == "memref.alloc" and CHAIN_ATTR in alloc.attributes:
        del alloc.attributes[CHAIN_ATTR]

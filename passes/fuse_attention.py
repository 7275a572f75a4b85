"""npu-fuse-attention: group attention (Q.K^T, scale, softmax, P.V per head,
`npu.costmodel.attention.pattern` documents it) into one kernel whose score matrix
never goes to GM.

Every `ascend.batch_matmul` is a candidate; `npu.costmodel.attention.pattern.match` follows
its result by structure (not by names) through the defractalize, the
optional scaling, the softmax steps, the cast and fractalize of P into the
second batch_matmul and its defractalize. The cost model
(`npu.costmodel.attention.plan.plan`, `npu.costmodel.attention.cost`) picks the tile of query
rows x keys that fits on chip with the fewest modelled cycles (`tile`):
all keys at once keeps the scores on chip, fewer streams them with an
online softmax. `softmax` (recorded in the group) sets the precision of
the kernel's softmax. A candidate is refused when the structure differs, when an
intermediate tensor is used elsewhere, when an op between the members
conflicts with moving them together, or when no tile fits; a remark says
why. A group becomes an `scf.execute_region {npu.attention = {...}}` at the
position of its last member holding the members and the allocs of the
tensors that stay on chip (dialects/README.md, "Attention groups").
When the merged context is only cast to f16 and fractalized (out_proj's A
operand), those two join too and the kernel writes f16 Nz (`nz-out`).
"""

from __future__ import annotations

from mlir import ir

from npu.costmodel.attention import pattern as att
from npu.costmodel.attention.nz_out import absorb_nz_out
from npu.costmodel.attention import plan as cost
from npu import ir as nir
from npu.passes import attention_nz
from npu.passes.base import Option, Pass, ub_fraction_option
from npu.passes.patterns import ATTENTIONS


class FuseAttentionPass(Pass):
    name = "npu-fuse-attention"
    acts_on = ATTENTIONS  # every option: the program has one
    summary = "Group attention (Q.K^T, scale, softmax, P.V) into one kernel per head tile"
    options = (
        ub_fraction_option(cost.ATTENTION_UB_FRACTION,
                           "UB share of one tile's buffers by the footprint model"),
        Option("nz-out", bool, True, "when the merged context's only use is a cast to f16 "
               "and a fractalize (a matmul's A operand), the kernel writes it in f16 Nz"),
        Option("softmax", str, att.SOFTMAX_DEFAULT, "precision of the kernel's softmax: f16 "
               "drains the scores rounded to f16 and takes the row max, the scaled shift and "
               "exp in f16; f32 takes the max and shift in f32 (exp in f16 either way; the row "
               "sums and the context are f32)", choices=att.SOFTMAX_PRECISIONS),
        Option("tile", str, "cost", "how the tile is chosen: 'cost' (the fewest modelled "
               "cycles, npu.costmodel.attention.cost; key tiles wider than L0B holds with V run in "
               "chunks) or 'fewest' (the fewest tiles per head, whole key tiles in L0B)",
               choices=("cost", "fewest")),
        Option("nz-operands", bool, False, "read Q, K and V as their projections' Nz when "
               "they are defractalized, transposed per head and fractalized again "
               "(passes/attention_nz.py)"),
        Option("remarks", bool, True, "report each attention fused and why a candidate was not"),
    )

    def run(self, module: ir.Operation) -> None:
        for func in nir.functions(module):
            if len(func.regions[0].blocks):
                if self.nz_operands:
                    self.nz_function(func)
                self.fuse_function(func)

    def nz_function(self, func: ir.Operation) -> None:
        """Each attention that would fuse with its Q, K, V as rows made from
        its projections' Nz reads that Nz instead (`attention_nz.rewrite`);
        at any seq (`any_seq`: the rows' prologue is kept for the rewrite to
        find, which reads no rows)."""
        done: set = set()
        while True:
            ops = [o.operation for o in func.regions[0].blocks[0].operations]
            users = att.users_of(ops)
            for op in ops:
                if op.name != "ascend.batch_matmul" or op in done:
                    continue
                done.add(op)
                found = att.match(op, users, any_seq=True)
                if isinstance(found, str) or self.conflict(found, ops) is not None:
                    continue
                if isinstance(cost.plan(found, self.target, self.ub_fraction, self.softmax,
                                        self.tile), cost.Plan) and attention_nz.rewrite(found):
                    break  # the op list changed
            else:
                return

    def fuse_function(self, func: ir.Operation) -> None:
        ops = [o.operation for o in func.regions[0].blocks[0].operations]
        users = att.users_of(ops)
        taken: set = set()
        for op in ops:
            if op.name != "ascend.batch_matmul" or op in taken:
                continue
            found = att.match(op, users)
            if isinstance(found, str):
                why = found
            else:
                index = {o: k for k, o in enumerate(ops)}
                found.members.sort(key=lambda o: index[o])
                why = self.conflict(found, ops)
                if why is not None and found.prologue:
                    att.drop_prologues(found)  # perhaps only a cast or fractalize conflicts
                    why = self.conflict(found, ops)
                if why is None:
                    found.nz_why = self.absorb_nz_out(found, users, ops)
                    plan = cost.plan(found, self.target, self.ub_fraction, self.softmax,
                                     self.tile)
                    if isinstance(plan, cost.Plan):
                        taken.update(found.members)
                        self.form(found, plan)
                        continue
                    why = plan
            # The second batch_matmul of a fused attention is never a candidate.
            if self.remarks and op not in taken:
                self.remark(op, f"'{op.name}' not fused as attention: {why}")

    def absorb_nz_out(self, a: att.Attention, users: dict, ops: list[ir.Operation]) -> str:
        """The context's cast and fractalize join as its f16 Nz store
        (`npu.costmodel.attention.nz_out.absorb_nz_out`), unless off or moving them conflicts."""
        if not self.nz_out:
            return "Nz output is off (nz-out=false)"
        before = (list(a.members), list(a.internal), a.out)
        why = absorb_nz_out(a, users)
        if why is None:
            why = self.conflict(a, ops)
            if why is not None:
                a.members, a.internal, a.out = before
                a.nz_out = False
        return why

    @staticmethod
    def conflict(a: att.Attention, ops: list[ir.Operation]) -> str | None:
        """Why the members cannot move to the last one's position: an op in
        between writes what a member reads, or touches what it writes."""
        index = {op: k for k, op in enumerate(ops)}
        members = set(a.members)
        end = index[a.members[-1]]

        def touches(op: ir.Operation) -> tuple[set, set]:
            roots = [nir.view_root(v) for o in nir.walk(op) for v in o.operands
                     if nir.is_memref(v.type)]
            if op.name.startswith("ascend.") and roots:
                return set(roots[:-1]), {roots[-1]}
            return set(roots), set(roots)

        for m in a.members[:-1]:
            reads, writes = touches(m)
            for op in ops[index[m] + 1:end]:
                if op in members or op.name in nir.VIEW_OPS or op.name == "memref.alloc":
                    continue
                r, w = touches(op)
                if w & reads or (r | w) & writes:
                    return (f"'{op.name}' between the members uses a member's result or "
                            "writes its input")
        return None

    def form(self, a: att.Attention, plan: cost.Plan) -> None:
        unfused, fused = cost.gm_bytes(a, plan, self.target)
        last = a.members[-1]
        attrs = {"heads": a.heads, "seq": a.seq, "head_dim": a.head_dim,
                 "query_rows": plan.q_blocks * 16, "key_rows": plan.k_blocks * 16,
                 "gm_bytes": fused, "unfused_gm_bytes": unfused, "ub_bytes": plan.ub_bytes,
                 "softmax": self.softmax}
        scores = next(m for m in a.members if m.name == "ascend.batch_matmul")
        named = [scores] + [m for m in a.members if m is not scores]
        with last.context:
            location = _location(named)
        region_op = nir.form_group_region(att.ATTENTION_ATTR, attrs, location, last, a.internal,
                                          list(a.members))
        s1 = a.seq_blocks
        keys = (f"all {a.seq} keys per tile: the scores stay on chip" if not plan.online(s1)
                else f"keys in tiles of {plan.k_blocks * 16} with an online softmax "
                     f"({-(-s1 // plan.k_blocks)} tiles per row)")
        loads = ("Q, K, V loaded in f32 and cast and laid out on chip" if a.staged
                 else "Q, K, V read as f16 rows and laid out on chip" if a.sources
                 else "Q, K, V read as f16 fractals")
        out = ("the context written as the f16 Nz A operand of the next matmul (its cast and "
               "fractalize absorbed: no separate pass over it)" if a.nz_out
               else f"the context written in f32 (not as an Nz A operand: {a.nz_why})")
        chunks = cost.key_chunks(plan.k_blocks, a.d_blocks, self.target)
        rows = f"{plan.q_blocks * 16} rows"
        if cost.overlapped(a, plan.q_blocks):
            rows += (" (the last overlapping the one before: "
                     f"{(-(-s1 // plan.q_blocks) * plan.q_blocks - s1) * 16} rows recomputed; "
                     "K and V cast once a head and kept in L1)")
        tile = ""
        if len(chunks) > 1:
            tile = (f"; Q.K^T and P.V in {len(chunks)} chunks of up to {chunks[0] * 16} keys (K^T "
                    "and V of a key tile do not fit L0B together)")
        if plan.cost is not None:
            tile += f"; the tile of the fewest modelled cycles: {plan.cost.text()}"
        softmax = ("softmax in f16 (scores drained to f16; row max, shift and exp in f16)"
                   if self.softmax == "f16" else
                   "softmax in f32 (row max and shift in f32, exp in f16)")
        self.remark(region_op, f"fused attention ({len(a.members)} ops; {loads}) over {a.heads} heads, "
                               f"seq {a.seq}, head dim {a.head_dim}: query tiles of "
                               f"{rows}, {keys}; GM traffic {unfused} -> "
                               f"{fused} bytes; UB {plan.ub_bytes} bytes per tile; {out}; "
                               f"{softmax}{tile}")


def _location(members: list[ir.Operation]) -> ir.Location:
    """The members' distinct locations fused, the scores matmul's first:
    tools show a fused location by its first part."""
    by_text = {str(m.location): m.location for m in members}
    locs = list(by_text.values())
    return locs[0] if len(locs) == 1 else ir.Location.fused(locs)

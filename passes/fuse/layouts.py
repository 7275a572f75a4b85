"""Nz stores of row groups: an `ascend.fractalize` of a row group's result
(a layernorm's f16 copy, or a lone cast of a matmul's input) joins the
group, which writes that result in the cube's Nz layout as it leaves UB.
The separate fractalize pass (read the ND tensor, lay it out, write Nz)
leaves the critical path in front of the matmul that reads it, and the
ND tensor is not stored at all when nothing else reads it."""

from __future__ import annotations

from mlir import ir

from npu.kernels import fused_chunk

from npu.costmodel.fusion import rows as fusion
from npu import ir as nir


class NzLayouts:
    """Mixed into `npu-fuse` (needs `self.target`, `self.nz_stores`)."""

    def nz_layouts(self, members: list[fusion.RowOp], users: dict, touches: dict,
                   index: dict, budget: int, two_pass: bool,
                   why: dict[ir.Operation, str]) -> list[ir.Operation]:
        """The fractalizes of `members`' results that the group absorbs; the
        reason for each one it does not goes into `why` (by fractalize)."""
        taken: list[ir.Operation] = []
        place = max(m.index for m in members)
        rows, n = members[0].rows, next((m.n for m in members if m.n is not None), None)
        for m in members:
            if m.out.kind != "full":
                continue
            for f in sorted(users.get(m.out.root, ()), key=lambda o: index.get(o, -1)):
                if f.name != "ascend.fractalize" or f not in index:
                    continue
                if nir.view_root(f.operands[0]) != m.out.root:
                    continue
                reason = self._nz_refusal(f, members, taken, users, touches, index, place,
                                          rows, n, budget, two_pass)
                if reason is None:
                    taken.append(f)
                else:
                    why[f] = reason
        return taken

    def _nz_refusal(self, f: ir.Operation, members, taken, users, touches, index, place,
                    rows, n, budget, two_pass) -> str | None:
        if not self.nz_stores:
            return "Nz stores are off (nz-stores=false)"
        if two_pass:
            return "the group's rows are longer than UB (two-pass kernel): no whole rows to lay out"
        nd, nz = f.operands
        shape_why = fusion.nz_layout(nd, nz, rows, n, self.target)
        if shape_why is not None:
            return shape_why
        nd_root, nz_root = nir.view_root(nd), nir.view_root(nz)
        if any(nir.view_root(i.value) == nz_root for m in members for i in m.ins + [m.out]):
            return "the group reads or writes its Nz tensor"
        for k in range(place + 1, index[f]):
            if k not in touches:
                continue
            r, w = touches[k]
            if nz_root in r | w or nd_root in w:
                return ("an op between the group and the fractalize uses its Nz tensor or "
                        "writes its source")
        if not nir.hoist_definition(nz, max(members, key=lambda m: m.index).op):
            return "its Nz tensor is defined after the group by an op that cannot move"
        g = fusion.model(members, users, layouts=taken + [f])
        cb = fused_chunk.one_set(g, self.target)
        if cb.rows(budget, lambda key: 1) < cb.row_block:
            return (f"the group with its Nz store needs "
                    f"{cb.fixed + fused_chunk.per_row(cb) * cb.row_block} "
                    f"bytes of UB for {cb.row_block} rows, over the budget {budget}")
        return None

    def nz_remark(self, f: ir.Operation, members: list[fusion.RowOp], users: dict) -> str:
        nd, nz = f.operands
        g = fusion.model(members, users, layouts=[f])
        kept = "; its ND tensor is not stored" if nir.view_root(nd) not in g.leaving else (
            "; its ND tensor is still stored (read elsewhere)")
        chain = ", ".join(m.short for m in members)
        return (f"'ascend.fractalize' absorbed by the row group ({chain}): the "
                f"{nir.memref_element(nd)} result leaves UB in Nz as the matmul A operand "
                f"(gathered in UB), no separate layout pass over "
                f"{fusion.nbytes(nd) + fusion.nbytes(nz)} GM bytes{kept}")

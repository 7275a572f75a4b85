"""Which `memref.alloc` each operand of a cce op is a view of, kept per op
with the op's access (`AccessAnalysis`, which mixes this in and forgets an
op's entry with its access): `BufferCollector` re-analyses a changed
top-level op from its analysis, and re-reading every operand's type and root
there was most of npu-prefetch's re-analysis (BERT-12 on 32 cores)."""

from __future__ import annotations

from mlir import ir

from npu.ir import defining_op


class AllocUses:
    """Mixed into `AccessAnalysis` (uses its `root_value`)."""

    def __init__(self) -> None:
        self._allocs_used: dict[ir.Operation, tuple[ir.Operation, ...]] = {}

    def allocs_used(self, op: ir.Operation, memo: dict[ir.Value, ir.Operation | None] | None = None
                    ) -> tuple[ir.Operation, ...]:
        """The `memref.alloc` of each memref operand of `op` that is a view of
        one, in operand order. `memo`: root value -> its alloc or None, for
        the caller's walk."""
        found = self._allocs_used.get(op)
        if found is not None:
            return found
        memo = {} if memo is None else memo
        allocs = []
        for operand in op.operands:
            if not isinstance(operand.type, ir.MemRefType):
                continue
            root = self.root_value(operand)
            if root not in memo:
                owner = defining_op(root)
                memo[root] = owner if owner is not None and owner.name == "memref.alloc" else None
            if memo[root] is not None:
                allocs.append(memo[root])
        found = self._allocs_used[op] = tuple(allocs)
        return found

    def known_allocs_used(self, op: ir.Operation) -> tuple[ir.Operation, ...] | None:
        """`allocs_used(op)` if found already, else None."""
        return self._allocs_used.get(op)

    def take_allocs_used(self, op: ir.Operation, allocs: tuple[ir.Operation, ...]) -> None:
        """Record `allocs`, derived elsewhere (`npu.analysis.unrolled`), as `allocs_used(op)`."""
        self._allocs_used[op] = allocs

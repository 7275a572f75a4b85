"""What `npu-fuse` needs to know of a function's top-level ops: positions,
the users of each root tensor and what each op reads and writes."""

from __future__ import annotations

from mlir import ir

from npu import ir as nir


def scan_top_level(func: ir.Operation):
    """The function's top-level ops, their positions, the users of each
    root tensor (at any depth: the members of a group are its users) and
    what each op reads and writes (a group: what its members do)."""
    ops = [o.operation for o in func.regions[0].blocks[0].operations]
    index = {op: k for k, op in enumerate(ops)}
    users: dict = {}
    touches: dict[int, tuple[set, set]] = {}
    for op in ops:
        if op.name in nir.VIEW_OPS or op.name in ("memref.alloc", "memref.dealloc"):
            continue
        inner = [op]
        if op.regions:
            inner = nir.walk(op, lambda o: bool(o.operands) and o.name not in nir.VIEW_OPS
                             and o.name not in ("memref.alloc", "memref.dealloc"))
        reads, writes = set(), set()
        for o in inner:
            roots = [nir.view_root(v) for v in o.operands if nir.is_memref(v.type)]
            for r in roots:
                users.setdefault(r, set()).add(o)
            if o.name.startswith("ascend.") and roots:
                reads |= set(roots[:-1])
                writes.add(roots[-1])
            elif roots:
                reads |= set(roots)
                writes |= set(roots)
        if reads or writes:
            touches[index[op]] = (reads, writes)
    return ops, index, users, touches

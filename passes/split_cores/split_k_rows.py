"""A matmul's reduction split whose partial sums its row-group reader adds.

`split_k`'s form adds the partial sums in the matmul's own epilogue group:
a phase of its own after a chip barrier (on BERT's ffn_out, 5.6-10.6k
cycles for a 7.9k saving: docs/multicore.md). When the group's epilogue is
linear (adds of C-shaped bias tensors, then a defractalize to f32 rows) and
one fused row group (npu-fuse's `npu.fused`, e.g. BERT's residual add and
layernorm) is the only reader of its result, the sums need no phase:

    W_r = defractalize(A[:, run r] . B[run r, :])               (r < parts)
    D   = defractalize(A[:, last run] . B[last run, :] + bias)  (the group)
    row group: S = ((D + W_0) + W_1) ...;  then its members on S

Each partial is a copy of the group without its adds (the bias is added
once, by the group), writing a GM tensor of D's type; the row group reads
the partials' rows beside D's (one more f32 row tensor a part) and adds
them in a fixed order before its first member. The row group already waits
at a chip barrier for D's rows, so the split adds no barrier. The order is
fixed by the IR: every run and core count gives the same bits (not the
unsplit matmul's: its f32 sums associate otherwise).
"""

from __future__ import annotations

from mlir import ir

from npu import ir as nir
from npu.costmodel.fusion.epilogue import PARTIAL_SUMS_ATTR
from npu.costmodel.fusion.rows import FUSED_ATTR

ADD = "ascend.add"
DEFRACTALIZE = "ascend.defractalize"


def _members(group: ir.Operation) -> list[ir.Operation]:
    return [o.operation for o in group.regions[0].blocks[0].operations]


def _linear_epilogue(group: ir.Operation, matmul: ir.Operation) -> list[ir.Operation] | None:
    """The group's members after its matmul when they are only adds of a
    tensor from outside the group to the running C, ending in a defractalize
    to an f32 tensor from outside; else None."""
    ops = [o for o in _members(group) if o.name.startswith("ascend.")]
    if not ops or ops[0] != matmul or len(ops) < 2 or ops[-1].name != DEFRACTALIZE:
        return None
    inside = {r for o in _members(group) for r in o.results}
    running = matmul.operands[2]
    for op in ops[1:-1]:
        if op.name != ADD or len(op.operands) != 3:
            return None
        a, b = op.operands[0], op.operands[1]
        other = b if a == running else a if b == running else None
        if other is None or other in inside or nir.view_root(other) in inside:
            return None
        running = op.operands[2]
    last = ops[-1]
    if last.operands[0] != running or nir.view_root(last.operands[1]) in inside:
        return None
    if str(nir.memref_element(last.operands[1].type)) != "f32":
        return None
    return ops[1:]


def consumer(group: ir.Operation, matmul: ir.Operation) -> tuple[ir.Operation, ir.Value] | None:
    """(the row group, the one view of the result it reads) when the group's
    epilogue is linear and that row group is its result's only reader."""
    epilogue = _linear_epilogue(group, matmul)
    if epilogue is None:
        return None
    out = epilogue[-1].operands[1]
    if out != nir.view_root(out) or nir.defining_op(out) is None \
            or nir.defining_op(out).name != "memref.alloc":
        return None
    rows, read = None, set()
    closure = nir.view_closure(out)
    if any(op.parent != group.parent for op in closure):  # views in a group: not cloned
        return None
    for op in closure:
        for v in op.results:
            for use in v.uses:
                user = use.owner.operation
                if user.name in nir.VIEW_OPS or user == epilogue[-1].operation:
                    continue
                parent = user.parent
                if parent is None or parent.name != "scf.execute_region" \
                        or FUSED_ATTR not in parent.attributes:
                    return None
                if rows is not None and parent != rows:
                    return None
                rows = parent
                read.add(v)
    if rows is None or len(read) != 1 or group.parent != rows.parent \
            or not group.is_before_in_block(rows):
        return None
    return rows.operation, read.pop()


def rewrite(group: ir.Operation, matmul: ir.Operation, parts: int, last: int,
            found: tuple[ir.Operation, ir.Value]) -> list[ir.Operation]:
    """Split `matmul` (in epilogue `group`, read by row group `found`) into
    `parts` partial groups of (N1 - last) / parts reduction blocks before
    the group, the group keeping the `last` blocks; the row group adds the
    partials' results first. Returns the partial groups."""
    rows, seen = found
    a, b, _ = matmul.operands
    n1, m1, f, _ = nir.memref_shape(a.type)
    k1 = nir.memref_shape(b.type)[0]
    run = (n1 - last) // parts
    assert run * parts + last == n1 and run > 0 and last > 0
    epilogue = _linear_epilogue(group, matmul)
    out = epilogue[-1].operands[1]
    partial, results = [], []
    for r in range(parts):
        with group.location, ir.InsertionPoint(group):
            w = nir.alloc(nir.memref_shape(out.type), "f32", "gm")
            a_r = nir.subview(a, [r * run, 0, 0, 0], [run, m1, f, f])
            b_r = nir.subview(b, [0, r * run, 0, 0], [k1, run, f, f])
            copy = group.clone()
        body = [o for o in _members(copy) if o.name.startswith("ascend.")]
        mm, adds, store = body[0], body[1:-1], body[-1]
        mm.operands[0], mm.operands[1] = a_r, b_r
        store.operands[0] = mm.operands[2]
        store.operands[1] = w
        for op in reversed(adds):
            dead = nir.defining_op(op.operands[2])
            op.erase()
            if dead is not None and dead.name == "memref.alloc" and not list(dead.results[0].uses):
                dead.erase()
        partial.append(copy)
        results.append(w)
    matmul.operands[0] = _subview_at(group, a, [parts * run, 0, 0, 0], [last, m1, f, f])
    matmul.operands[1] = _subview_at(group, b, [0, parts * run, 0, 0], [k1, last, f, f])
    _sum_in_rows(rows, seen, out, results)
    return partial


def _subview_at(before: ir.Operation, v: ir.Value, offsets: list[int],
                sizes: list[int]) -> ir.Value:
    with before.location, ir.InsertionPoint(before):
        return nir.subview(v, offsets, sizes)


def _sum_in_rows(rows: ir.Operation, seen: ir.Value, out: ir.Value,
                 results: list[ir.Value]) -> None:
    """Make row group `rows`, which reads `seen` (a view of `out`), read the
    sum ((seen + W_0) + W_1) ... of the same views of `results` instead."""
    chain = nir.view_closure(out)[1:]
    views = []
    with rows.location, ir.InsertionPoint(rows):
        for w in results:
            mapping = {out: w}
            nir.clone_into(chain, mapping, set())
            views.append(mapping.get(seen, w) if seen != out else w)
    block = rows.regions[0].blocks[0]
    readers = [use.owner.operation for use in seen.uses
               if use.owner.operation.parent == rows]
    first = block.operations[0]
    total = seen
    with rows.location, ir.InsertionPoint(first):
        sums = [nir.alloc(nir.memref_shape(seen.type), "f32", "gm") for _ in views]
        for v, s in zip(views, sums):
            nir.create_op(ADD, [total, v, s])
            total = s
    for op in readers:
        for i, v in enumerate(op.operands):
            if v == seen:
                op.operands[i] = total
    with rows.context:
        rows.attributes[PARTIAL_SUMS_ATTR] = nir.i64_attr(len(results))

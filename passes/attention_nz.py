"""Q, K and V of an attention read as the projections' Nz, not their rows
(npu-fuse-attention's `nz-operands`, which npu-lower sets on several cores).

BERT's projections leave the cube in Nz ([H*D/16, S/16, 16, 16] f16, after
their bias and cast), are defractalized to rows [S, H*D], viewed as
[1, S, H, D], transposed per head ([1, H, S, D], K to [1, H, D, S]) and
fractalized again for the two batch_matmuls. With D and S whole 16-blocks
that round trip moves no element: the Nz of head h's Q (or V), [D/16, S/16,
16, 16], is column blocks h*D/16.. of the projection's Nz, one contiguous
run; K^T's Nz [S/16, D/16, 16, 16] is the same blocks of K's, each block
transposed and the block grid too (`ascend.transpose` [0, 2, 1, 4, 3] of
the 5-D view), which the cube's L1 -> L0B load does anyway when it reads
K's own Nz tile as K^T's Zn blocks (as for interleaved rows).

So, when an attention's three operands are such chains (f16, nothing else
reading the rows or the transposed copies), the rows, the head transposes
and the fractalizes go: Q and V become 5-D views of the projections' Nz, K^T
a transpose of K's view, which npu-fuse-attention absorbs
(`npu.costmodel.attention.pattern`, `k_rows`). The projections' epilogues
then store whole Nz blocks (no defractalize), and the fused kernel loads
a head's K or V tile as one GM -> L1 copy of contiguous fractals, where
the rows took a 32-byte burst per row and column block, or one burst a row
through UB and four MTE3 copies to lay it out. The same bytes in the same
order reach the cube: outputs are bit for bit those of the rows' program.

At a seq of partial 16-row blocks (a ViT's 197 tokens) the projection's Nz
has the fractalizes' padded shape [H*D/16, ceil(S/16), 16, 16], and its
padding rows hold 0 @ W plus the bias where the fractalizes wrote zeros:
the kernel adds the padded keys' mask before the row max and never stores
the padded queries, so any finite padding leaves the same bits
(`_finite_padding` checks it is finite by construction). There the rows'
program ran the head transposes on one core (rows of 197 split into no
equal 32-byte aligned slices): ViT-base on 32 cores 178,982 -> 132,326.
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import memref

from npu import ir as nir
from npu.costmodel.attention import pattern as att

# K^T's Nz [H, S/16, D/16, 16, 16] from K's [H, D/16, S/16, 16, 16].
K_NZ_PERMUTATION = [0, 2, 1, 4, 3]


def _non_view_users(value: ir.Value) -> list[ir.Operation]:
    """The ops that use `value` or a view of it (views themselves left out)."""
    out, pending = [], [value]
    while pending:
        v = pending.pop()
        for use in v.uses:
            user = use.owner.operation if hasattr(use.owner, "operation") else use.owner
            if user.name in nir.VIEW_OPS:
                pending.extend(user.results)
            elif user not in out:
                out.append(user)
    return out


def _writer(root: ir.Value, name: str) -> ir.Operation | None:
    """The one op writing `root` (an alloc, read by exactly one other op),
    when it is a `name`."""
    owner = nir.defining_op(root)
    if owner is None or owner.name != "memref.alloc":
        return None
    users = _non_view_users(root)
    writers = [u for u in users if u.name.startswith("ascend.")
               and nir.view_root(u.operands[-1]) == root]
    if len(writers) != 1 or len(users) != 2 or writers[0].name != name:
        return None
    return writers[0]


def _chain(a: att.Attention, nz: ir.Value) -> tuple | None:
    """(fractalize, head transpose, defractalize, the projection's Nz) of the
    operand `nz`, when it is the round trip the module docstring describes."""
    frac = _writer(nir.view_root(nz), "ascend.fractalize")
    if frac is None or frac not in a.members:
        return None
    transpose = _writer(nir.view_root(frac.operands[0]), "ascend.transpose")
    if transpose is None or transpose not in a.members:
        return None
    defrac = _writer(nir.view_root(transpose.operands[0]), "ascend.defractalize")
    if defrac is None:
        return None
    z = defrac.operands[0]
    # (a tensor of its own: not a sibling's part of npu-fuse-horizontal's
    # Q, K and V, which npu-split-cores cuts by each sibling's row-major
    # columns)
    owner = nir.defining_op(z)
    if owner is None or owner.name != "memref.alloc":
        return None
    rows = nir.memref_shape(defrac.operands[-1])
    if (nir.memref_element(z) != "f16" or not nir.is_contiguous(z)
            or not nir.is_contiguous(defrac.operands[-1])
            or nir.memref_shape(z) != [a.heads * a.d_blocks, a.seq_blocks, 16, 16]
            or rows[-2:] != [a.seq, a.heads * a.head_dim]
            or any(n != 1 for n in rows[:-2])
            or (a.seq % 16 and not _finite_padding(z))):
        return None
    return frac, transpose, defrac, z


# Ops that map the finite padding rows of their Nz input to finite ones
# (a projection's bias, scale and cast), followed back to the matmul.
_PADDING_KEEPS = ("ascend.cast", "ascend.add", "ascend.adds", "ascend.sub", "ascend.mul",
                  "ascend.muls")


def _written_by(root: ir.Value) -> ir.Operation | None:
    """The one `ascend` op writing `root` (or a view of it), if one."""
    writers = [u for u in _non_view_users(root) if u.name.startswith("ascend.")
               and nir.view_root(u.operands[-1]) == root]
    return writers[0] if len(writers) == 1 else None


def _finite_padding(z: ir.Value) -> bool:
    """Whether the rows past the sequence in the projection's Nz `z` (its
    last row block's padding) are finite: `z` is its matmul's C through
    casts and affine ops, and the matmul's A a fractalize's (zero padding),
    so they are 0 @ W and the bias. The kernel masks the padded keys and
    never stores the padded queries, which cancels any finite values: read
    from `z` they leave the same bits as the fractalizes' zeros; an inf or
    NaN there would not cancel (0 * inf in P.V)."""
    root = nir.view_root(z)
    for _ in range(8):
        op = _written_by(root)
        if op is None:
            return False
        if op.name == "ascend.matmul":
            a = _written_by(nir.view_root(op.operands[0]))
            return a is not None and a.name == "ascend.fractalize"
        if op.name not in _PADDING_KEEPS:
            return False
        # the temporary it follows; the others are the program's constants
        # (a bias), taken as finite as its weights
        temps = [nir.view_root(v) for v in op.operands[:-1] if nir.is_memref(v.type)
                 and not nir.is_block_argument(nir.view_root(v))]
        if len(temps) != 1:
            return False
        root = temps[0]
    return False


def _heads_view(z: ir.Value, a: att.Attention) -> ir.Value:
    """[H, D/16, S/16, 16, 16] of the projection's Nz `z`, right after `z`'s
    definition."""
    owner = nir.defining_op(z)
    where = ir.InsertionPoint.after(owner) if owner is not None else \
        ir.InsertionPoint.at_block_begin(z.owner)
    with where, owner.location if owner is not None else ir.Location.unknown():
        t = nir.memref_type(z)
        shape = [a.heads, a.d_blocks, a.seq_blocks, 16, 16]
        result = ir.MemRefType.get(shape, t.element_type, None, t.memory_space)
        i64 = ir.IntegerType.get_signless(64)
        groups = ir.ArrayAttr.get([ir.ArrayAttr.get([ir.IntegerAttr.get(i64, d) for d in g])
                                   for g in ([0, 1], [2], [3], [4])])
        return memref.ExpandShapeOp(result, z, groups, [], shape).result


def _erase_dead(roots: list[ir.Value]) -> None:
    """Erase each root's views and alloc once nothing else uses them."""
    for root in roots:
        for op in reversed(nir.view_closure(root)):
            if all(not list(r.uses) for r in op.results):
                op.erase()


def rewrite(a: att.Attention) -> bool:
    """Read `a`'s Q, K and V as their projections' Nz (the module docstring);
    False (nothing changed) unless all three are such round trips."""
    if a.sources is None or not a.interleaved or a.staged or a.head_dim % 16:
        return False
    chains = [_chain(a, nz) for nz in (a.q, a.k, a.v)]
    if any(c is None for c in chains) or len({c[3] for c in chains}) != 3:
        return False
    views = [_heads_view(c[3], a) for c in chains]
    dead: list[ir.Value] = []
    for i, (frac, transpose, defrac, _) in enumerate(chains):
        out = frac.operands[-1]
        if i == 1:  # K^T: the transpose of K's blocks, in the fractalize's place
            with ir.InsertionPoint(frac), frac.location:
                op = nir.create_op("ascend.transpose", [views[1], out],
                                   permutation=ir.DenseI64ArrayAttr.get(K_NZ_PERMUTATION))
            a.members[a.members.index(frac)] = op
            a.prologue = [op]
        else:
            a.members.remove(frac)
            a.internal.remove(nir.view_root(out))
            nir.view_root(out).replace_all_uses_with(views[i])
            dead.append(nir.view_root(out))
        a.members.remove(transpose)
        a.internal.remove(nir.view_root(transpose.operands[-1]))
        dead += [nir.view_root(transpose.operands[-1]), nir.view_root(defrac.operands[-1])]
        frac.erase()
        transpose.erase()
        defrac.erase()
    _erase_dead(dead)
    a.q, a.v, a.k_rows = views[0], views[2], views[1]
    a.sources, a.interleaved = None, False
    return True

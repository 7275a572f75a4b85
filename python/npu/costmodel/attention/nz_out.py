"""The merged context as the out-projection's f16 Nz A operand
(`absorb_nz_out`): npu-fuse-attention, npu-split-cores and the lowerings
take its cast and fractalize into a matched attention
(`npu.costmodel.attention.pattern`) when only they read it."""

from __future__ import annotations

import math

from npu import ir as nir
from npu.costmodel.attention.pattern import Attention

_root = nir.view_root


def absorb_nz_out(a: Attention, users: dict) -> str | None:
    """The merged context read only by a cast to f16 whose result only a
    fractalize reads (the out-projection's A operand): both become members
    and the kernel writes each head's context in f16 Nz (cast on chip, the
    same rounding). Returns why not (None: absorbed)."""
    if not a.merged:
        return "the context is not merged across heads by the group"
    root = _root(a.out)
    owner = nir.defining_op(root)
    readers = [u for u in users.get(root, []) if _root(u.operands[-1]) != root]
    if owner is None or owner.name != "memref.alloc":
        return "the context is a function result"
    if len(readers) != 1 or readers[0].name != "ascend.cast":
        return "the context is not read by one cast alone"
    cast = readers[0]
    half = _root(cast.operands[-1])
    rows, cols = a.seq, a.heads * a.head_dim
    if (nir.memref_element(cast.operands[-1]) != "f16"
            or math.prod(nir.memref_shape(cast.operands[-1])) != rows * cols
            or not nir.is_contiguous(cast.operands[-1])):
        return "the context's cast is not an f32 -> f16 cast of the whole context"
    owner = nir.defining_op(half)
    fracs = [u for u in users.get(half, []) if u is not cast]
    if owner is None or owner.name != "memref.alloc" or len(fracs) != 1:
        return "the f16 context is read by more than its fractalize"
    frac = fracs[0]
    nz = frac.operands[-1]
    if (frac.name != "ascend.fractalize" or _root(frac.operands[0]) != half
            or nir.memref_shape(frac.operands[0]) != [rows, cols]
            or nir.memref_shape(nz) != [cols // 16, a.seq_blocks, 16, 16]
            or not nir.is_contiguous(nz)):
        return "the f16 context is not fractalized as one [seq, heads*head_dim] matrix"
    a.members += [cast, frac]
    a.internal += [root, half]
    a.out, a.nz_out = nz, True
    a.nz_round = nir.str_attr(cast, "round_mode") if "round_mode" in cast.attributes else "rint"
    return None

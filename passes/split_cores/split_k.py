"""A matmul's reduction split over the cores (`npu-split-cores`' split-K).

A grid of output tiles reads, on every core, its rows of A and its columns
of B over the whole reduction: at seq 128 BERT's ffn_out (128x3072x768)
reads at least 688 KB a core whatever the grid, ~10.7k cycles at one
core's 64 B/cycle, where the chip's bus would move A, B and C once in 3.3k.
A split of the reduction cuts those bytes: the matmul epilogue group

    C = A . B;  epilogue(C)

becomes `parts` partial matmuls over runs of the reduction, each writing
its f32 sums to a GM workspace tensor of C's shape (independent ops: they
may run side by side on shares of the cores, `share`), and the group itself
over the last run, which adds the workspace tensors in a fixed order
(C_last + W_0 + W_1 + ...) before its epilogue:

    W_r = A[:, run r] . B[run r, :]      (r < parts)
    C = A[:, last run] . B[last run, :];  S = ((C + W_0) + W_1) ...;  epilogue(S)

Where the group's grid reads sums other cores wrote, a chip barrier goes
between (`barriers.place`; none when the grids agree). Its first `parts`
members are the adds (`PARTIAL_SUMS_ATTR`): npu-lower-matmul's epilogue
loads all their pieces before the first, so that their latencies overlap.
The epilogue (bias, GELU, residual, cast) runs once, on the whole sum. The
sum's order is fixed by the IR, not by which core finishes first, so every
run gives the same bits (each matmul's own tiling, as for any grid, may
differ with the core count: docs/multicore.md, "Bits").
"""

from __future__ import annotations

from typing import Callable

from mlir import ir

from npu import ir as nir
from npu.costmodel.fusion.epilogue import EPILOGUE_ATTR, PARTIAL_SUMS_ATTR
from npu.costmodel.fusion.precision import HEAD_ATTR

from . import split_k_model, split_k_rows
from .groups import epilogue_matmuls
from .prefetched import is_host_constant

CUBE_OPS = ("ascend.matmul", "ascend.batch_matmul", "ascend.conv2d")
COMPUTE_KEY = "compute"  # npu.epilogue's precision (`precision.COMPUTE_F16`)


def parse(text: str) -> dict[tuple[int, int, int], tuple[int, int]]:
    """`split-k` option text -> {(M, N, K): (parts, last)}: items
    `MxNxK:PxL` joined by `;` (a matmul of M x N times N x K elements: P
    partial matmuls over equal runs of its reduction N, and the group's own
    run of L 16-element blocks). ValueError when malformed."""
    out: dict = {}
    for item in filter(None, (i.strip() for i in text.split(";"))):
        key, sep, val = item.partition(":")
        try:
            dims = tuple(int(x) for x in key.split("x"))
            parts = tuple(int(x) for x in val.split("x"))
        except ValueError:
            dims = parts = ()
        if not sep or len(dims) != 3 or len(parts) != 2 or min(parts) < 1:
            raise ValueError(f"split '{item}': expected 'MxNxK:PxL' (a matmul's M, N, K, its "
                             "partial matmuls and the 16-element blocks of N left to the group)")
        out[dims] = parts
    return out


def apply_all(func: ir.Operation, wanted: dict, fractal: int) -> tuple[set, list[str]]:
    """Rewrite every matmul epilogue group of `func` whose matmul's M x N x K
    is in `wanted` (`parse`); returns the keys taken and a line per group
    for the remarks. ValueError when an entry's runs do not fit its matmul."""
    used: set = set()
    said: list[str] = []
    for group, matmul in epilogue_matmuls(func):
        a, b = (nir.memref_shape(v.type) for v in matmul.operands[:2])
        dims = (a[1] * fractal, a[0] * fractal, b[0] * fractal)
        if dims not in wanted:
            continue
        parts, last = wanted[dims]
        if last >= a[0] or (a[0] - last) % parts:
            raise ValueError(f"split '{'x'.join(map(str, dims))}:{parts}x{last}': {a[0]} blocks "
                             f"of the reduction less {last} do not make {parts} equal runs")
        rows = split_k_rows.consumer(group, matmul)
        if rows is not None:
            split_k_rows.rewrite(group, matmul, parts, last, rows)
        else:
            rewrite(group, matmul, parts, last)
        used.add(dims)
        run = (a[0] - last) // parts * fractal
        where = ("summed by the fused row group that reads it" if rows is not None
                 else "in its epilogue group")
        said.append(f"matmul {'x'.join(map(str, dims))}: its reduction split, {parts} partial "
                    f"matmul(s) of {run} and {last * fractal} {where}")
    return used, said


def apply_model(func: ir.Operation, named: set, cores: int, target,
                room_before: Callable[[ir.Operation], float]) -> list[str]:
    """Split the reduction of every matmul epilogue group of `func` not in
    `named` whose sums its row-group reader can add (`split_k_rows`), into
    the equal runs `split_k_model` chooses (`room_before(group)`: the MTE2
    idle cycles the unit before leaves it); a remark line per group split."""
    said: list[str] = []
    f = target.fractal
    tops = [o.operation for o in func.regions[0].blocks[0].operations]
    cube = [bool(nir.walk_held(o, lambda x: x.name in CUBE_OPS)) for o in tops]
    for group, matmul in epilogue_matmuls(func):
        a, b, c = (nir.memref_shape(v.type) for v in matmul.operands)
        dims = (a[1] * f, a[0] * f, b[0] * f)
        if dims in named or len(a) != 4 or (rows := split_k_rows.consumer(group, matmul)) is None:
            continue
        # A matmul after the row group: npu-prefetch already loads its
        # weights in the unsplit phase's idle MTE2, which the split would
        # take (BERT-12 at seq 128: 528,191 -> 536,093 cycles split in
        # every layer, each inner layer's ffn_out phase no shorter)
        if any(cube[tops.index(rows[0]) + 1:]):
            continue
        in_bytes = nir.element_bytes(nir.memref_element(matmul.operands[0].type))
        out_bytes = nir.element_bytes(nir.memref_element(matmul.operands[2].type))
        room = room_before(group) if is_host_constant(matmul.operands[1]) else 0.0
        choice = split_k_model.choose(*dims, cores, in_bytes, out_bytes, target, room)
        if choice is None or choice.parts == 1:
            continue
        run = a[0] // choice.parts
        split_k_rows.rewrite(group, matmul, choice.parts - 1, run, rows)
        said.append(f"matmul {'x'.join(map(str, dims))}: its reduction split by the model into "
                    f"{choice.parts} runs of {run * f}, summed by the fused row group that reads "
                    f"it (estimate {choice.cycles:,.0f} cycles with the row group's "
                    f"{choice.reads:,.0f} of added loads, against {choice.unsplit:,.0f} unsplit)")
    return said


def rewrite(group: ir.Operation, matmul: ir.Operation, parts: int, last: int) -> list[ir.Operation]:
    """Split `matmul` (in epilogue `group`) into `parts` partial matmuls of
    (N1 - last) / parts reduction blocks each, before the group, and the
    group's own over the `last` blocks; returns the partial matmuls."""
    a, b, c = matmul.operands
    n1, m1, f, _ = nir.memref_shape(a.type)
    k1 = nir.memref_shape(b.type)[0]
    run = (n1 - last) // parts
    assert run * parts + last == n1 and run > 0 and last > 0
    partial: list[ir.Operation] = []
    workspaces: list[ir.Value] = []
    with group.location, ir.InsertionPoint(group):
        for r in range(parts):
            w = nir.alloc([k1, m1, f, f], "f32", "gm")
            a_r = nir.subview(a, [r * run, 0, 0, 0], [run, m1, f, f])
            b_r = nir.subview(b, [0, r * run, 0, 0], [k1, run, f, f])
            partial.append(nir.create_op("ascend.matmul", [a_r, b_r, w]))
            workspaces.append(w)
        a_l = nir.subview(a, [parts * run, 0, 0, 0], [last, m1, f, f])
        b_l = nir.subview(b, [0, parts * run, 0, 0], [k1, last, f, f])
    matmul.operands[0] = a_l
    matmul.operands[1] = b_l
    readers = [use.owner for use in c.uses if use.owner != matmul]
    total = c
    with matmul.location, ir.InsertionPoint.after(matmul):
        for w in workspaces:
            s = nir.alloc([k1, m1, f, f], nir.memref_element(c.type), "gm")
            nir.create_op("ascend.add", [total, w, s])
            total = s
    with group.context:
        group.attributes[PARTIAL_SUMS_ATTR] = nir.i64_attr(parts)
        # an epilogue computed in f16 rounds C first; the sums are added in
        # f32 (f32 operands loaded per piece), so the group computes in f32
        attrs = nir.dict_attr_items(group.attributes[EPILOGUE_ATTR])
        if attrs.pop(COMPUTE_KEY, None) is not None:
            attrs.pop(HEAD_ATTR, None)
            group.attributes[EPILOGUE_ATTR] = nir.dict_attr_of(attrs)
    for op in readers:
        for i, v in enumerate(op.operands):
            if v == c:
                op.operands[i] = total
    return partial

"""Fused groups over cores: a group (`scf.execute_region`) becomes the same
group over each core's slice, before its lowering (`npu-lower-fused`,
`npu-lower-matmul`) sees it.

* a row group (`npu.fused`, `rows = R`) is cut into `parts` chunks of whole
  rows: every tensor with R rows (row-major `[R, ...]`, `[R]`, or Nz
  `[C1, R/16, 16, 16]`) is cut along them, row operands (`[1, L]`) are
  whole on every core; with more cores than the Nz tensors' row blocks, the
  grid is (row blocks x runs of rows in each) and an Nz tensor is cut along
  both its row-block and row dims (a core's run of rows of one block);
* an epilogue group (`npu.epilogue`) takes its matmul's grid
  (`SplitRules.split_matmul`): its C-shaped tensors (Nz `[K1, M1, 16, 16]`, or the
  ND `[M, K]` a defractalize writes) are cut like C, its bias operands
  along the dims they share with C.

Tensors from outside the group become `memref.subview`s of the core's slice
(like a lone op's operands); the group's own tensors become allocs of the
slice's size, so the lowering sees an ordinary group over fewer rows or a
smaller C.
"""

from __future__ import annotations

import math
from dataclasses import replace

from mlir import ir

from npu import ir as nir
from npu.costmodel.attention.flat_runs import FLAT_RUNS_ATTR
from npu.costmodel.attention.pattern import ATTENTION_ATTR
from npu.costmodel.conv.epilogue import CONV_EPILOGUE_ATTR, is_per_channel
from npu.costmodel.fusion.epilogue import EPILOGUE_ATTR
from npu.costmodel.fusion.rows import FUSED_ATTR

from . import attention, prefetched, qkv
from .rules import ATTENTION_KEY, SplitRules
from .split import BATCH, JOINT, ROWS, Split, axis_parts, slice_value

Cuts = dict[int, str]


def _dict_int(attr: ir.Attribute, key: str) -> int:
    return ir.IntegerAttr(ir.DictAttr(attr)[key]).value


def members(group: ir.Operation) -> list[ir.Operation]:
    return [o.operation for o in group.regions[0].blocks[0].operations]


def group_split(group: ir.Operation, parts: int, rules: SplitRules
                ) -> tuple[Split, dict[ir.Value, Cuts]] | None:
    """The group's split over `parts` cores and each memref value's cuts, or
    None when some tensor of it does not cut evenly."""
    if FUSED_ATTR in group.attributes:
        rows = _dict_int(group.attributes[FUSED_ATTR], "rows")
        frac = rules.target.fractal
        found = _stores_whole_granules(group, _cuts(group, Split((), (("x", parts),)),
                                                    lambda v: _row_cut(v, rows, parts, frac)),
                                       rules.target.vector_block_bytes)
        if found is None:
            found = _leading_pair(group, rows, parts, rules.target.vector_block_bytes)
        blocks = rows // frac
        if found is not None or rows % frac or parts % blocks or frac % (parts // blocks):
            return found
        # More cores than an Nz store's row blocks: each core a run of the
        # rows of one block (`npu.kernels.nz_store` writes any run of rows).
        split = Split((), (("x", blocks), ("y", parts // blocks)))
        return _stores_whole_granules(
            group, _cuts(group, split, lambda v: _row_cut(v, rows, parts, frac, fine=True)),
            rules.target.vector_block_bytes)
    if ATTENTION_ATTR in group.attributes:
        a = attention.matched(group)
        forced = rules.grids.get(ATTENTION_KEY)
        found = attention.grid(group, a, parts, rules.target, forced)
        if found is None:
            return None
        hp, qp, cycles = found
        attrs = group.attributes[ATTENTION_ATTR]
        heads, head_dim = _dict_int(attrs, "heads"), _dict_int(attrs, "head_dim")
        queries = attention.query_side(a) if a is not None and qp > 1 else set()
        # the key mask [1, .., 1, S] and a mask of the scores shared by the heads
        # hold no heads: every core reads them whole (one per head: cut by heads)
        whole = set() if a is None else {m for m in (
            a.key_mask, None if a.bias_per_head else a.scores_bias) if m is not None}

        def cut_of(v: ir.Value) -> Cuts | None:
            if v in whole or hp == 0:  # (flat runs: the kernel indexes the tensors whole)
                return {}
            cut = _head_cut(v, heads, head_dim)
            if cut is None or v not in queries:
                return cut
            rows = attention.rows_dim(v, a)
            return None if rows is None or rows in cut else {**cut, rows: attention.QUERIES}

        # its loads come first: MTE2 idles through its modelled cycles (`prefetched`)
        return _cuts(group, replace(attention.split(hp, qp), tail=float(cycles),
                                       forced=None if forced is None else ATTENTION_KEY), cut_of)
    if CONV_EPILOGUE_ATTR in group.attributes:
        conv = [o for o in members(group) if o.name == "ascend.conv2d"]
        split = rules.split_conv(conv[0], parts) if len(conv) == 1 else None
        if split is None:
            return None
        fixed = {v: cut for v, cut in zip(conv[0].operands, split.cuts)}
        out = nir.memref_shape(conv[0].operands[-1].type)
        axes = dict(split.grid)
        return _cuts(group, split, lambda v: fixed.get(v, _channel_cut(v, out, axes)))
    if EPILOGUE_ATTR in group.attributes:
        mm = [o for o in members(group) if o.name == "ascend.matmul"]
        if len(mm) != 1:
            return None
        c_shape = nir.memref_shape(mm[0].operands[2].type)
        frac = rules.target.fractal
        count = qkv.siblings(mm[0])  # a horizontal group: each sibling's columns (`qkv`)
        for whole_k in (False,) if count else (False, True):  # then only along M
            if rules.lookahead.tails:
                rules.epilogue_cycles = prefetched.epilogue_cycles(group, mm[0], rules.target)
            try:
                split = rules.split_matmul(mm[0], parts, whole_k,
                                           qkv.column_unit(mm[0]) if count else 0)
            finally:
                rules.epilogue_cycles = 0.0
            if split is None:
                continue
            fixed = {v: cut for v, cut in zip(mm[0].operands, split.cuts)}
            rows_whole = dict(split.grid).get("m", 1) == 1
            other = (qkv.cut_of(c_shape, qkv.sibling_blocks(mm[0]), frac, group) if count
                     else lambda v: _c_cut(v, c_shape, frac, whole_k, rows_whole))
            found = _cuts(group, split, lambda v: fixed.get(v, other(v)))
            if found is not None:
                return found
        return None
    return None


def _cuts(group: ir.Operation, split: Split, cut_of) -> tuple[Split, dict] | None:
    cuts: dict[ir.Value, Cuts] = {}
    parts = dict(split.grid)
    for op in members(group):
        if op.name.startswith("ascend."):
            values = list(op.operands)
        elif op.name == "memref.alloc" or op.name in nir.VIEW_OPS:
            values = [op.results[0]]  # the group's own tensors and their views
        else:
            continue
        for v in values:
            cut = cut_of(v)
            if cut is None:
                return None
            shape = nir.memref_shape(v.type)
            if any(shape[d] % axis_parts(parts, a) for d, a in cut.items()):
                return None
            if cuts.setdefault(v, cut) != cut:
                return None
    return split, cuts


def _stores_whole_granules(group: ir.Operation, found: tuple[Split, dict] | None,
                           granule: int) -> tuple[Split, dict] | None:
    """`found`, unless a row-major tensor the group writes has rows under a
    GM granule and a core's slice of it is not whole granules: the kernel
    stores such narrow rows as one run padded to a granule, which would
    write the next core's rows (a global average pool's [C, 1] sums with a
    channel a core)."""
    if found is None:
        return None
    split, cuts = found
    parts = dict(split.grid)
    for v in written(group) & set(external(group, cuts)):  # the group's own stay on chip
        cut, shape = cuts[v], nir.memref_shape(v.type)
        if not cut or nir.memory_space(v) != "gm" or not nir.is_contiguous(v):
            continue
        d = min(cut)
        es = nir.element_bytes(nir.memref_element(v.type))
        row_bytes = math.prod(shape[d + 1:]) * es
        share = shape[d] // math.prod(axis_parts(parts, a) for a in cut.values())
        if row_bytes < granule and share * row_bytes % granule:
            return None
    return found


def _row_cut(v: ir.Value, rows: int, parts: int, frac: int, fine: bool = False) -> Cuts | None:
    """`fine`: the grid is (x: the Nz row blocks, y: runs of rows in each)."""
    shape = nir.memref_shape(v.type)
    axis = "x" + JOINT + "y" if fine else "x"
    if len(shape) == 4 and shape[1] * frac == rows and shape[2] == shape[3] == frac:
        if fine:
            return {1: "x", 2: "y"}  # runs of rows inside the row blocks
        return {1: "x"} if shape[1] % parts == 0 else None  # an Nz store: whole row blocks
    if shape and shape[0] == rows:
        return {0: axis}
    if len(shape) >= 2 and math.prod(shape[:-1]) == rows:
        d = next(i for i, n in enumerate(shape) if n > 1)  # leading dims flattened into rows
        if d < len(shape) - 1 and shape[d] % parts == 0:
            return {d: axis}
    if math.prod(shape[:-1]) == 1:
        return {}  # a row operand: every core reads all of it
    return None


def _leading_pair(group: ir.Operation, rows: int, parts: int, granule: int
                  ) -> tuple[Split, dict] | None:
    """Rows flattened from leading dims the first of which is too short to
    cut alone (an NC1HWC0 map [1, 2, 112, 112, 16]: two channel blocks): a
    grid of that dim whole by runs of the next ([1, 1, 7, 112, 16] a core,
    contiguous); row operands whole on every core."""
    def lead(v: ir.Value) -> tuple[int, int] | None:
        shape = nir.memref_shape(v.type)
        if len(shape) < 3 or math.prod(shape[:-1]) != rows:
            return None
        d = next((i for i, n in enumerate(shape) if n > 1), len(shape))
        return (d, shape[d]) if d + 1 < len(shape) - 1 else None

    first = next((f for op in members(group) if op.name.startswith("ascend.")
                  for v in op.operands if nir.is_memref(v.type) and (f := lead(v))), None)
    if first is None or first[1] > parts or parts % first[1]:
        return None
    outer = first[1]

    def cut_of(v: ir.Value) -> Cuts | None:
        shape = nir.memref_shape(v.type)
        if math.prod(shape[:-1]) == 1:
            return {}
        if len(shape) == 5 and shape[:2] == [1, outer] and shape[2:4] == [1, 1]:
            return {1: "x"}  # a row per channel block (`fusion.rows.per_block`): its own
        found = lead(v)
        return {found[0]: "x", found[0] + 1: "y"} if found and found[1] == outer else None

    return _stores_whole_granules(group, _cuts(group, Split((), (("x", outer), ("y", parts // outer))),
                                               cut_of), granule)


def _channel_cut(v: ir.Value, out: list[int], axes: dict[str, int]) -> Cuts | None:
    """A conv epilogue's tensors by the conv's cut: maps [N, Cout1, Ho, Wo,
    16] (the conv's result, a residual) along their images and channel
    blocks (and rows, which stay unsliced: the conv's lowering runs the
    epilogue on its own rows), per-channel vectors [Cout1 * 16] and
    operands [1, Cout1, 1, 1, 16] along their channel blocks; a scalar
    operand is whole on every core."""
    shape = nir.memref_shape(v.type)
    co1 = out[1]
    if is_per_channel(v, out):
        return {1: "x"}
    if len(shape) == 5 and shape[:2] == out[:2]:
        return {**({0: BATCH} if BATCH in axes else {}), 1: "x",
                **({2: ROWS} if ROWS in axes and shape[2] == out[2] else {})}
    if len(shape) == 1 and shape[0] == co1 * 16:
        return {0: "x"}
    if math.prod(shape) == 1:
        return {}
    return None


def _head_cut(v: ir.Value, heads: int, head_dim: int) -> Cuts | None:
    """The dim of `v` that holds the heads, by the layouts an attention group
    has: the context in Nz [H*D/16, S/16, 16, 16], batched Nz [H, ..., 16, 16],
    rows of all heads [.., H*D], interleaved [.., S, H, D], per head
    [1.., H, ...], or a flat view; no dim for a scalar; None for anything
    else (the key mask is the caller's: whole)."""
    shape = nir.memref_shape(v.type)
    last = len(shape) - 1
    if math.prod(shape) == 1:
        return {}  # a scalar (the NaN guard's zero): every core reads it whole
    if len(shape) == 4 and shape[2:] == [16, 16] and shape[0] * 16 == heads * head_dim:
        return {0: "x"}
    if len(shape) == 5 and shape[0] == heads:
        return {0: "x"}
    if len(shape) >= 3 and shape[-1] == head_dim and shape[-2] == heads:
        return {last - 1: "x"}
    lead = next((d for d, n in enumerate(shape) if n != 1), None)
    # Heads leading two dims or more ([H, S, D], [1, H, D, S], the scores
    # [H, S, S]) before rows of all heads [.., S, H*D]: a seq of H*D rows
    # would otherwise read as the heads' columns.
    if lead is not None and lead < last - 1 and shape[lead] == heads:
        return {lead: "x"}
    if len(shape) >= 2 and shape[-1] == heads * head_dim:
        return {last: "x"}
    if len(shape) >= 2 and lead is not None and shape[lead] == heads:
        return {lead: "x"}
    if len(shape) == 1 and shape[0] % heads == 0:
        return {0: "x"}
    return None


def _c_cut(v: ir.Value, c_shape: list[int], frac: int, whole_k: bool = False,
           rows_whole: bool = False) -> Cuts | None:
    """How a C-shaped tensor of an epilogue cuts; `rows_whole`: the grid
    cuts only columns, so an ND tensor of C's real rows (ViT's 197 tokens
    against C's 13 row blocks) keeps them whole on every core."""
    shape = nir.memref_shape(v.type)
    k1, m1 = c_shape[0], c_shape[1]
    if whole_k:  # every tensor's rows (Nz dim 1, ND dim 0) cut; byte buffers in step
        if len(shape) == 4 and shape[1] in (m1, 1):
            return {1: "m"} if shape[1] == m1 else {}
        if len(shape) == 2 and shape[0] in (m1 * frac, 1):
            return {0: "m"} if shape[0] == m1 * frac else {}
        if len(shape) == 1 and nir.memref_element(v.type) == "i8":
            return {0: "m"}  # the bytes the group's views share, rows in each
        return None
    if len(shape) == 4:
        cut = {}
        if shape[0] == k1:
            cut[0] = "k"
        elif shape[0] != 1:
            return None
        if shape[1] == m1:
            cut[1] = "m"
        elif shape[1] != 1:
            return None
        return cut
    if len(shape) == 2:
        cut = {}
        if shape[0] == m1 * frac:
            cut[0] = "m"
        elif shape[0] != 1 and not (rows_whole and -(-shape[0] // frac) == m1):
            return None
        if shape[1] == k1 * frac:
            cut[1] = "k"
        elif shape[1] != 1:
            return None
        return cut
    return None


def external(group: ir.Operation, cuts: dict[ir.Value, Cuts]) -> list[ir.Value]:
    return [v for v in cuts if not nir.within(v.owner, group)]


def written(group: ir.Operation) -> set:
    return {op.operands[len(op.operands) - 1] for op in members(group)
            if op.name.startswith("ascend.")}


def apply_group(group: ir.Operation, split: Split, cuts: dict[ir.Value, Cuts],
                blk: ir.Value, first: int = 0) -> None:
    """Give the group core `blk`'s slice of every tensor (`blk` counted from
    the group's first core, `first`)."""
    parts = dict(split.grid)
    if EPILOGUE_ATTR in group.attributes:  # a horizontal group's weights, part by part
        for mm in (o for o in members(group) if qkv.siblings(o)):
            qkv.permute(mm, parts, cuts, external(group, cuts))
    replaced: dict[ir.Value, ir.Value] = {}
    with ir.InsertionPoint(group):
        coords = split.block_coords(blk)
        for v in external(group, cuts):
            cut = split.sliced(cuts[v])
            replaced[v] = slice_value(v, cut, parts, coords) if cut else v
    # The group's own tensors: allocs (and views of them) of the slice's size.
    for op in members(group):
        if op.name != "memref.alloc" and op.name not in nir.VIEW_OPS:
            continue
        res = op.results[0]
        cut = cuts.get(res)
        new_t = _sliced_type(res.type, None if cut is None else split.sliced(cut), parts)
        if new_t is None or new_t == res.type:
            continue
        with ir.InsertionPoint(op), op.location:
            operands = [replaced.get(o, o) for o in op.operands]
            attrs = {name: op.attributes[name] for name in op.attributes}
            if op.name == "memref.view":  # a byte offset into a buffer cut by rows
                shift = nir.defining_op(op.operands[1])
                n = nir.int_attr(shift, "value") // math.prod(parts.values())
                operands[1] = nir.index_const(n)
            if op.name == "memref.expand_shape":
                attrs["static_output_shape"] = ir.DenseI64ArrayAttr.get(
                    nir.memref_shape(new_t))
            new = ir.Operation.create(op.name, results=[new_t], operands=operands,
                                      attributes=attrs)
        replaced[res] = new.results[0]
    rewire(group, replaced)
    for op in members(group):
        if op.name == "ascend.conv2d":
            split.mark(op, first)
    if ATTENTION_ATTR in group.attributes:
        split.mark(group, first)  # its query runs (`attention`)
        if attention.FLAT in parts:
            group.attributes[FLAT_RUNS_ATTR] = ir.UnitAttr.get()
    for attr, key in ((FUSED_ATTR, "rows"), (ATTENTION_ATTR, "heads")):
        if attr in group.attributes:
            n = _dict_int(group.attributes[attr], key) // (
                math.prod(parts.values()) if attr == FUSED_ATTR else parts.get("x", 1))
            set_figure(group, attr, key, n)


def rewire(group: ir.Operation, replaced: dict[ir.Value, ir.Value]) -> None:
    """The group's members read `replaced`'s values for its keys; its allocs
    and views left without a use go."""
    for op in members(group):
        for i, o in enumerate(op.operands):
            if o in replaced:
                op.operands[i] = replaced[o]
    for op in reversed(members(group)):
        if op.results and all(not list(r.uses) for r in op.results) and (
                op.name == "memref.alloc" or op.name in nir.VIEW_OPS):
            op.erase()


def set_figure(group: ir.Operation, attr: str, key: str, n: int) -> None:
    """Entry `key` of the group's dictionary attribute `attr` set to `n`."""
    figures = ir.DictAttr(group.attributes[attr])
    with group.location:
        group.attributes[attr] = ir.DictAttr.get(
            {a.name: (nir.i64_attr(n) if a.name == key else a.attr)
             for a in (figures[i] for i in range(len(figures)))})


def _sliced_type(t: ir.Type, cut: Cuts | None, parts: dict[str, int]) -> ir.Type | None:
    if cut is None:
        return None
    m = ir.MemRefType(t)
    shape = list(m.shape)
    for d, a in cut.items():
        shape[d] //= axis_parts(parts, a)
    return ir.MemRefType.get(shape, m.element_type, None, m.memory_space)


def epilogue_matmuls(func: ir.Operation) -> list[tuple[ir.Operation, ir.Operation]]:
    """(group, its matmul) of each top-level matmul epilogue group of `func`
    holding one `ascend.matmul`, listed before any is rewritten."""
    found = []
    for child in list(func.regions[0].blocks[0].operations):
        group = child.operation
        if group.name != "scf.execute_region" or EPILOGUE_ATTR not in group.attributes:
            continue
        mm = [o.operation for o in group.regions[0].blocks[0].operations
              if o.operation.name == "ascend.matmul"]
        if len(mm) == 1:
            found.append((group, mm[0]))
    return found

"""How one ascend op is cut over `parts` cores (the per-family split rules of
`npu-split-cores`).

* matmul (Nz): the output's fractal columns and rows form a grid of
  `pk x pm = parts` tiles (B and C split along N, A and C along M); the grid
  is the one whose per-core shape, tiled by the matmul cost model
  (`choose_tiling`), gives the least estimated time: the larger of the
  core's cube time, its GM traffic over its movers, and the chip's GM
  traffic over the chip's bandwidth;
* conv and NC1HWC0 pool: a grid of their output channel blocks and runs of
  their output rows (`conv.py`); an NCHW pool its images or channels;
* batch matmul: the batch;
* elementwise, unary and reduce ops split the output's outermost dimension
  that divides evenly into contiguous slices (broadcast operands are not
  sliced);
* transpose splits one output dimension (and the input dimension it comes
  from; a swap of the two dims before the last, the heads of a projection,
  runs of the source's rows, `_split_swapped_rows`, which its lowering
  takes itself), fractalize / defractalize the rows of the ND side (a matrix wider
  than one column block: runs of its row blocks, `_split_row_blocks`, which
  its lowering takes itself), gather the ids and their output rows (every
  core reads the whole table), a slice along a leading dim it takes whole
  (`_split_whole_dim`), or that moves one run (`_split_run`) equal pieces
  of it.

Every slice is 32-byte aligned, and each core moves at least `min_bytes`
(its share of all the op's operands).

`grids` (npu-split-cores' `grids` option, `parse_grids`) replaces the model's
choice for matmuls of a given shape and for attention, to measure the
alternatives in the simulator (docs/multicore.md, "BERT seq 512 on 32
cores").
"""

from __future__ import annotations

import math
from dataclasses import replace

from mlir import ir

from npu import ir as nir
from npu.diagnostics import int_ranges
from npu.analysis.slice_runs import op_runs
from npu.costmodel.matmul.fitting import MatmulShape
from npu.costmodel.matmul.tiling import TilingError, choose_tiling
from npu.dialects.ascend_conv import NC1HWC0, layout
from npu.passes.transpose_general import collapse_permutation, permutation_groups
from npu.target import Target

from .channel_grid import per_block_op
from .conv import split_conv, split_pool
from .leading_grid import vector_grid
from .prefetched import (NONE, Lookahead, is_host_constant, phase_cost, ranked, tail_cycles,
                         weight_slot)
from .split import COLUMNS, KEPT_ROWS, ROW_BLOCKS, ROWS, RUN, SOURCE_J, SOURCE_ROWS, Split

ELEMENTWISE = {"ascend.add", "ascend.sub", "ascend.mul", "ascend.div", "ascend.max",
               "ascend.min"}
UNARY = {"ascend.adds", "ascend.muls", "ascend.maxs", "ascend.mins", "ascend.relu", "ascend.abs",
         "ascend.neg", "ascend.exp", "ascend.ln", "ascend.sqrt", "ascend.rsqrt",
         "ascend.reciprocal", "ascend.tanh", "ascend.sigmoid", "ascend.cast", "ascend.clamp",
         "ascend.broadcast"}
REDUCE = {"ascend.reduce_sum", "ascend.reduce_max"}

ATTENTION_KEY = "attention"


def parse_grids(text: str) -> dict:
    """`grids` option text -> {(M, N, K): (column parts, row parts)} for
    matmuls (M x N times N x K, elements) and {"attention": (head parts,
    query runs; 0 head parts: flat runs)}: items `MxNxK:PKxPM` or
    `attention:HPxQP` joined by `;`
    (the grids as npu-split-cores' remarks print them). ValueError when
    malformed."""
    out: dict = {}
    for item in filter(None, (i.strip() for i in text.split(";"))):
        key, sep, grid = item.partition(":")
        try:
            parts = tuple(int(x) for x in grid.split("x"))
            dims = None if key == ATTENTION_KEY else tuple(int(x) for x in key.split("x"))
        except ValueError:
            parts = dims = ()
        least = (0, 1) if dims is None else (1, 1)  # attention:0xP: P flat runs
        if (not sep or len(parts) != 2 or parts[0] < least[0] or parts[1] < least[1]
                or (dims is not None and len(dims) != 3)):
            raise ValueError(f"grid '{item}': expected 'MxNxK:PKxPM' (a matmul's M, N, K and its "
                             "column x row parts) or 'attention:HPxQP' (0xP: P flat runs)")
        out[dims if dims is not None else ATTENTION_KEY] = parts
    return out


def _grid_key(key) -> str:
    return key if key == ATTENTION_KEY else "x".join(str(d) for d in key)


class SplitRules:
    """The split of one op over a given number of cores, or None."""

    def __init__(self, target: Target, min_bytes: int, grids: dict | None = None):
        self.target = target
        self.min_bytes = min_bytes
        self.grids = grids or {}  # `parse_grids`: the model's choice replaced
        self.used: set = set()  # keys of `grids` some split took
        self.matmuls: set = set()  # (M, N, K, cores) of the matmul splits asked for
        # (images, channel parts, runs of rows): convs take only that grid (`aligned.py`)
        self.grid_of: tuple[int, int, int] | None = None
        # the units around the op being split (`prefetched`): matmul grids
        # count the weights npu-prefetch loads before their barrier
        self.lookahead: Lookahead = NONE
        # vector cycles of the epilogue of the matmul being split, over all of C
        self.epilogue_cycles = 0.0
        self._matmul_splits: dict[tuple, Split | None] = {}  # `split_matmul`'s grids

    def _aligned(self, t: ir.Type, dim: int, parts: int) -> bool:
        """A slice of `t` along `dim` in `parts` equal pieces starts each on 32 bytes."""
        shape = nir.memref_shape(t)
        if shape[dim] % parts:
            return False
        strides, _ = nir.memref_layout(t)
        step = shape[dim] // parts * strides[dim] * nir.element_bytes(nir.memref_element(t))
        return step % self.target.vector_block_bytes == 0

    def _big_enough(self, out_t: ir.Type, parts: int, *more: ir.Type) -> bool:
        """Each core's share of the output and of `more` (the op's other
        operands) is worth at least a transfer's latency in bytes."""
        nbytes = sum(math.prod(nir.memref_shape(t)) * nir.element_bytes(nir.memref_element(t))
                     for t in (out_t, *more))
        return nbytes // parts >= self.min_bytes

    def _row_copies(self, op: ir.Operation, types: list) -> bool:
        """A transpose of rows under whole 32-byte blocks on either side copies
        each row alone (GoogLeNet's 7x7 NCHW -> NC1HWC0, rows of 49 f16): its
        time is in its copies, not its bytes, so every even cut pays (so an
        op of a per-channel operand's, `per_block_op`)."""
        if op.name != "ascend.transpose":
            return per_block_op(types)
        return any(nir.memref_shape(t)[-1] * nir.element_bytes(nir.memref_element(t))
                   % self.target.vector_block_bytes for t in types)

    def split(self, op: ir.Operation, parts: int) -> Split | None:
        types = [v.type for v in op.operands]
        # every operand's bytes: a reduction's or a matmul's reads are most of its traffic
        if not (self._big_enough(types[-1], parts, *types[:-1]) or self._row_copies(op, types)):
            return None
        name = op.name
        if name == "ascend.matmul":
            return self._matmul_grid(op, types, parts)
        if name == "ascend.conv2d":
            return self.split_conv(op, parts)
        if name == "ascend.pool2d":
            return split_pool(op, parts) or self._split_planes(op, types, parts)
        if name == "ascend.batch_matmul":
            cuts = tuple({0: "x"} for _ in types)
            return Split(cuts, (("x", parts),)) if self._cuts_aligned(types, cuts, parts) else None
        if name in ELEMENTWISE or name in UNARY or name in REDUCE:
            out_shape = nir.memref_shape(types[-1])
            for d in range(len(out_shape)):
                cuts = self._cut_dim(types, d, name in REDUCE)
                if cuts is not None and self._cuts_aligned(types, cuts, parts):
                    return Split(cuts, (("x", parts),))
            return None if name in REDUCE else vector_grid(types, parts, self._aligned)
        if name == "ascend.transpose":
            perm = list(ir.DenseI64ArrayAttr(op.attributes["permutation"]))
            for d in range(len(perm)):
                cuts = ({perm[d]: "x"}, {d: "x"})
                if self._cuts_aligned(types, cuts, parts):
                    return Split(cuts, (("x", parts),))
            return (self._split_columns(types, perm, parts)
                    or self._split_swapped_rows(types, perm, parts)
                    or self._split_swapped_rows(types, perm, parts, SOURCE_J)
                    or self._split_kept_rows(types, perm, parts))
        if name == "ascend.gather":  # rows of the output with their ids; the table whole
            # the scalar unit reads the ids one by one: their slice needs no 32-byte start
            axis = nir.int_attr(op, "axis") % len(nir.memref_shape(types[0]))
            ids = nir.memref_shape(types[1])
            for d in range(len(ids)):
                cuts = ({}, {d: "x"}, {axis + d: "x"})
                if (ids[d] % parts == 0 and all(x == 1 for x in ids[:d])
                        and self._cuts_aligned(types[2:], cuts[2:], parts)):  # the rows out
                    return Split(cuts, (("x", parts),))
            return None
        if name in ("ascend.slice", "ascend.insert_slice"):
            return self._split_whole_dim(op, types, parts) or self._split_run(op, types, parts)
        if name in ("ascend.fractalize", "ascend.defractalize"):
            nd, nz = (0, 1) if name == "ascend.fractalize" else (1, 0)
            nd_shape = nir.memref_shape(types[nd])
            frac = self.target.fractal
            cuts = [{}, {}]
            if len(nd_shape) > 2:  # a leading batch dim
                cuts[nd], cuts[nz] = {0: "x"}, {0: "x"}
            else:
                if nd_shape[-2] % (frac * parts):
                    return None
                cuts[nd], cuts[nz] = {len(nd_shape) - 2: "x"}, {len(nd_shape) - 1: "x"}
            if self._cuts_aligned(types, cuts, parts):
                return Split(tuple(cuts), (("x", parts),))
            return self._split_row_blocks(types, nd, parts)
        return None

    def _split_row_blocks(self, types: list, nd: int, parts: int) -> Split | None:
        """A matrix's (de)fractalize whose Nz side a cut of rows would make a
        strided slice (C1 > 1): runs of whole 16-row blocks, left unsliced
        (npu-lower-fractalize strips the core's run through the whole
        tensors, `core_part`); rows of whole 32-byte blocks only, so that no
        run owns an end-of-tensor window."""
        nd_shape = nir.memref_shape(types[nd])
        frac, e = self.target.fractal, nir.element_bytes(nir.memref_element(types[nd]))
        rows, cols = nd_shape[-2:]
        if (len(nd_shape) != 2 or e == 1 or rows % (frac * parts)
                or cols * e % self.target.vector_block_bytes
                or not all(nir.is_contiguous(t) for t in types)):
            return None
        cuts = [{}, {}]
        cuts[nd], cuts[1 - nd] = {0: ROW_BLOCKS}, {1: ROW_BLOCKS}
        return Split(tuple(cuts), ((ROW_BLOCKS, parts),), unsliced=frozenset({ROW_BLOCKS}))

    @staticmethod
    def _cut_dim(types: list, d: int, reduce: bool) -> tuple[dict[int, str], ...] | None:
        """Cuts of output dim `d` for every operand, numpy broadcasting
        aligning trailing dims (a reduce's input has one more, last, dim);
        None when an operand has another size there but 1."""
        out_shape = nir.memref_shape(types[-1])
        cuts = []
        for t in types:
            shape = nir.memref_shape(t)
            dd = d if reduce else d + len(shape) - len(out_shape)
            if 0 <= dd < len(shape) and shape[dd] == out_shape[d]:
                cuts.append({dd: "x"})
            elif 0 <= dd < len(shape) and shape[dd] != 1:
                return None
            else:
                cuts.append({})
        return tuple(cuts)

    def _cuts_aligned(self, types: list, cuts, parts: int) -> bool:
        """Every slice 32-byte aligned and contiguous: all dims outside the
        cut are 1. The vector, transpose and fractalize lowerings take a GM
        operand's strides as dense (a strided slice gave wrong results)."""
        return all(self._aligned(t, d, parts) and all(x == 1 for x in nir.memref_shape(t)[:d])
                   for t, cut in zip(types, cuts) for d in cut)

    def split_conv(self, op: ir.Operation, parts: int) -> Split | None:
        return split_conv(op, parts, self.target, self.grid_of)

    def _split_planes(self, op: ir.Operation, types: list, parts: int) -> Split | None:
        """An NCHW pool (its map not in NC1HWC0: SqueezeNet's after a concat)
        over its images or channels: whole planes, contiguous on both sides."""
        if layout(op) == NC1HWC0:
            return None
        for d in (0, 1):
            cuts = ({d: "x"}, {d: "x"})
            if self._cuts_aligned(types, cuts, parts):
                return Split(cuts, (("x", parts),))
        return None

    def _split_whole_dim(self, op: ir.Operation, types: list, parts: int) -> Split | None:
        """A slice that takes a leading dim whole (the same size on both
        sides, offset 0, stride 1: the columns of each row, as a Split along
        the last axis reads them) cut along it: each core's rows keep the
        op's offsets, which are relative to its operands."""
        src, dst = (nir.memref_shape(t) for t in types)
        offsets = nir.int_array_attr(op, "offsets")
        strides = (nir.int_array_attr(op, "strides") if op.name == "ascend.slice"
                   else [1] * len(offsets))
        for d in range(len(src) - 1):
            if src[d] != dst[d] or offsets[d] or strides[d] != 1:
                continue
            cuts = ({d: "x"}, {d: "x"})
            if self._cuts_aligned(types, cuts, parts):
                return Split(cuts, (("x", parts),))
        return None

    def _split_run(self, op: ir.Operation, types: list, parts: int) -> Split | None:
        """A slice that moves one long run (the image's 3 channels into the
        16 of its padded copy) in equal pieces of whole blocks, left
        unsliced (npu-lower-slices cuts the run by `core_part`); for the
        barriers every core reads and writes all of it."""
        runs = op_runs(op)
        block = self.target.vector_block_bytes // nir.element_bytes(nir.memref_element(types[0]))
        if math.prod(runs.lead) != 1 or runs.length % (parts * block):
            return None
        return Split(({}, {}), ((RUN, parts),), unsliced=frozenset({RUN}))

    def _split_columns(self, types: list, perm: list[int], parts: int) -> Split | None:
        """A last-two swap whose rows no contiguous cut divides (NCHW -> NHWC
        of an image: [1, C, H*W] -> [1, H*W, C]), cut along one source dim:
        its columns (the result's rows; the lowering's chunks read strided
        rows anyway), or else its rows (the result's columns, written as
        strided runs of whole 32-byte blocks, at least one vnchwconv tile of
        rows a core: ConvNeXt's [1, 384, 14, 14] -> [1, 14, 14, 384], whose
        196 f32 columns are not whole blocks). Left unsliced (`Split.mark`);
        the dims that swap may be groups ([1, 14, 14, 384] -> [1, 384, 14, 14])
        when each core's run of the cut group is a cut of its first dim."""
        groups = _swapped_groups(nir.memref_shape(types[0]), perm)
        if groups is None:
            return None
        shape = nir.memref_shape(types[0])
        block = self.target.vector_block_bytes // nir.element_bytes(nir.memref_element(types[0]))
        (row_dims, rows), (col_dims, cols) = groups
        if parts < 2 * (math.prod(shape) // (rows * cols)):  # a batch's own cut has half of them
            return None
        # a group's run of a core is a cut of its first dim
        if (shape[col_dims[0]] % parts == 0 and rows >= self.target.fractal
                and cols % (parts * block) == 0):
            d, axis = col_dims[0], COLUMNS
        elif (shape[row_dims[0]] % parts == 0 and cols >= block and rows % (parts * block) == 0
              and rows // parts >= self.target.fractal):
            d, axis = row_dims[0], SOURCE_ROWS
        else:
            return None
        return Split(({d: axis}, {perm.index(d): axis}), ((axis, parts),), unsliced=frozenset({axis}))

    def _split_swapped_rows(self, types: list, perm: list[int], parts: int,
                            axis: str = ROWS) -> Split | None:
        """A swap of the two dims before the last ([1, S, H, D] -> [1, H, S, D]:
        the heads of a projection, when attention is not fused) whose cuts are
        strided slices on one side: runs of the source's rows (its first
        swapped dim), left unsliced (npu-lower-transpose's block copies take the
        core's run); whole 32-byte blocks of the last dim, one row of which
        fits half of UB, as those copies need. `axis` SOURCE_J: runs of the
        source's second swapped dim instead (the result's rows), for a first
        one too short to cut (ViT-base's patches, [1, 3, 196, 256] ->
        [1, 196, 3, 256]: 3 channels, 196 rows of 28 cores)."""
        shape = nir.memref_shape(types[0])
        n = len(shape)
        es = nir.element_bytes(nir.memref_element(types[0]))
        cut, out = (n - 3, n - 2) if axis == ROWS else (n - 2, n - 3)  # source's, result's
        if n < 3 or perm != list(range(n - 3)) + [n - 2, n - 3, n - 1]:
            return None
        row = (shape[-2] if axis == ROWS else shape[-2] // parts) * shape[-1] * es
        if (math.prod(shape[:-3]) != 1 or shape[cut] % parts or shape[-2] < 2
                or shape[-1] * es % self.target.vector_block_bytes
                or row > self.target.capacity("ub") // 2
                or not all(nir.is_contiguous(t) for t in types)):
            return None
        return Split(({cut: axis}, {out: axis}), ((axis, parts),), unsliced=frozenset({axis}))

    def _split_kept_rows(self, types: list, perm: list[int], parts: int) -> Split | None:
        """A permutation that keeps its last dim of at least one 32-byte
        block (a channel shuffle's H*W planes in NCHW), which no rule above
        cuts: equal runs of the result's rows, left unsliced
        (npu-lower-transpose copies the core's run of rows; every copy
        writes only its own row, so any two rows may be cut apart)."""
        shape, kept = collapse_permutation(nir.memref_shape(types[0]), perm)
        row = shape[-1] * nir.element_bytes(nir.memref_element(types[0])) if shape else 0
        block = self.target.vector_block_bytes
        if (len(kept) < 2 or kept[-1] != len(kept) - 1 or row < block
                or math.prod(shape[:-1]) % parts
                or not all(nir.is_contiguous(t) for t in types)):
            return None
        return Split(({}, {}), ((KEPT_ROWS, parts),), unsliced=frozenset({KEPT_ROWS}))

    def split_matmul(self, op: ir.Operation, parts: int, whole_k: bool = False,
                     columns_of: int = 0) -> Split | None:
        """The matmul's grid; `whole_k`: only M is cut (every core keeps whole
        rows of C, as a row-major result written from it needs);
        `columns_of`: the column parts divide this many column blocks (each
        sibling's of a horizontal group, `qkv`)."""
        types = [v.type for v in op.operands]
        if not self._big_enough(types[-1], parts, *types[:-1]):
            return None
        return self._matmul_grid(op, types, parts, whole_k, columns_of)

    def _matmul_grid(self, op: ir.Operation, types: list, parts: int, whole_k: bool = False,
                     columns_of: int = 0) -> Split | None:
        """`_split_matmul`, once per everything the grid depends on: a model
        repeats its matmuls (BERT-12 at 32 cores: 2,004 grids asked for,
        0.1 CPU s)."""
        a_shape, b_shape = nir.memref_shape(types[0]), nir.memref_shape(types[1])
        f = a_shape[2]
        self.matmuls.add((a_shape[1] * f, a_shape[0] * f, b_shape[0] * f, parts))  # asked for
        key = (*types, is_host_constant(op.operands[1]), parts, whole_k, self.lookahead,
               self.epilogue_cycles, columns_of)
        if key not in self._matmul_splits:
            self._matmul_splits[key] = self._split_matmul(op, types, parts, whole_k, columns_of)
        return self._matmul_splits[key]

    def _split_matmul(self, op: ir.Operation, types: list, parts: int,
                      whole_k: bool = False, columns_of: int = 0) -> Split | None:
        # A Nz [N1, M1, f, f], B Nz [K1, N1, f, f], C Nz [K1, M1, f, f] (dialects/README.md).
        a_shape, b_shape, c_shape = (nir.memref_shape(t) for t in types)
        n1, m1, f = a_shape[0], a_shape[1], a_shape[2]
        k1 = b_shape[0]
        t = self.target
        in_bytes = nir.element_bytes(nir.memref_element(types[0]))
        out_bytes = nir.element_bytes(nir.memref_element(types[2]))
        constant = is_host_constant(op.operands[1])
        best_rank = 0.0
        dims = (m1 * f, n1 * f, k1 * f)
        forced = self.grids.get(dims)
        if forced is not None and forced[0] * forced[1] != parts:
            forced = None  # applies to splits over its own count of cores
        best = None
        for pk in range(1, 2 if whole_k else parts + 1):
            if parts % pk or (forced is not None and pk != forced[0]):
                continue
            pm = parts // pk
            if k1 % pk or m1 % pm or (columns_of and columns_of % pk):
                continue
            cuts = ({1: "m"}, {0: "k"}, {0: "k", 1: "m"})  # whole fractals: always aligned
            shape = MatmulShape(m1 // pm * f, n1 * f, k1 // pk * f, 1, in_bytes, 4, out_bytes)
            try:
                choice = choose_tiling(shape, t)
            except TilingError:
                continue
            core_bytes = (choice.traffic.read_bytes(shape) + choice.traffic.write_bytes(shape))
            cube = t.cube_cycles(float(m1 // pm * n1 * (k1 // pk)))
            slot, count = weight_slot(shape, choice, t) if constant else (0, 0)
            slots = min(slot * count, shape.N * shape.K * in_bytes)
            whole = slots >= shape.N * shape.K * in_bytes
            tail = tail_cycles(shape, choice, t, self.epilogue_cycles / parts) \
                if self.lookahead.tails else 0.0
            cost, rank = ranked(cube, core_bytes, slots, whole, tail, parts, self.lookahead, t)
            if best is None or rank < best_rank:
                saved = cost - phase_cost(cube, core_bytes - slots, parts, t) if slots else 0.0
                best, best_rank = Split(cuts, (("k", pk), ("m", pm)), cost, tail=tail, slot=slot,
                                        slots=count, per_byte=saved / slots if slots else 0.0), rank
        if forced is not None and best is not None:
            best = replace(best, forced=dims)
        return best

    def unused_grids(self) -> str | None:
        """A line naming the `grids` entries no split took (a matmul shape or
        core count the program does not have), with the matmul splits it
        has, or None: an option that does not apply is refused."""
        unused = [k for k in self.grids if k not in self.used]
        if not unused:
            return None
        names = ", ".join(f"'{_grid_key(k)}:{self.grids[k][0]}x{self.grids[k][1]}'"
                          for k in unused)
        counts: dict[tuple, list[int]] = {}
        for m, n, k, c in sorted(self.matmuls):
            counts.setdefault((m, n, k), []).append(c)
        seen = ", ".join(f"{m}x{n}x{k} on {int_ranges(c)}" for (m, n, k), c in counts.items())
        return (f"{names} applied to no split (the matmul splits tried, M x N x K on cores: "
                f"{seen or 'none'})")


def _swapped_groups(shape: list[int], perm: list[int]) -> tuple | None:
    """((source dims, size) of the rows, (dims, size) of the columns) of a last-two
    swap (under a batch that stays in front), unit dims dropped and dims that
    stay adjacent merged; None for any other permutation."""
    groups = permutation_groups(shape, perm)
    if len(groups) == 3 and groups[0][-1] < min(groups[1][0], groups[2][0]):  # NCHW -> NC1HWC0
        groups = groups[1:]
    if len(groups) != 2 or groups[0][0] < groups[1][0]:
        return None
    cols, rows = groups
    return ((rows, math.prod(shape[d] for d in rows)), (cols, math.prod(shape[d] for d in cols)))

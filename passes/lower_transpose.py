"""npu-lower-transpose: ascend.transpose -> cce (thesis 6.4.4).

Two forms, the ones BERT needs; leading dimensions that stay in place are
batch dimensions:
  * swap of the last two dims (`[1,0]`, `[0,2,1]`, ...): `dst[b,j,k] =
    src[b,k,j]`. Per batch, the R x C matrix is cut into chunks of RT x CT
    (RT a multiple of 16 rows, CT a multiple of one 32-byte block of
    columns) that fit UB twice (source and result). Each chunk is loaded
    GM->UB, transposed with `vnchwconv` (one instruction per column block,
    repeating down the 16-row tiles; 16x16 tiles for 2-byte types, 16x8 for
    4-byte ones) and stored. R and C that are not whole tiles are covered by
    moving the last chunk back so it ends at the edge (overlap: a few rows or
    columns are transposed twice, with identical results). On many cores
    (`npu.core_part`) each core takes a run of the source's columns, or of
    its rows (`npu.core_axis` "sr": the result's columns, stored as strided
    runs of whole blocks).
  * swap of the two dims before the last (`[0,2,1,3]`): `dst[a,j,k,l] =
    src[a,k,j,l]`. The last dim is moved as whole 32-byte blocks: chunks of K
    source rows (`src[a,k,:,:]`) are loaded contiguously and written back
    with one strided copy per j (gap = the other j's). Needs the last
    dimension to be a whole number of 32-byte blocks. On many cores the k
    rows may be cut into runs (`npu.core_part`): each core copies its own.
  * a permutation that keeps the last dim, of at least one block but not
    whole blocks (ShuffleNet's channel shuffle: whole H*W planes of NCHW
    reordered): the element gather below when the tensor fits UB, else
    each row copied GM -> UB -> GM whole (`npu.kernels.run_copies.slots`:
    its whole blocks, then its last block moved back to end at the row's
    end, a group of rows loaded back to back). On many cores the result's
    rows are cut into equal runs (`KEPT_ROWS`), whole-block rows too.
Before choosing, size-1 dims are dropped and input dims that stay adjacent
in the output are merged (`transpose_general.collapse_permutation`): e.g.
[2, 0, 1] on [4, 16, 32] is the 2-D transpose of [64, 32]. A permutation
that only moves size-1 dims is a copy. Everything else, and shapes too small
for one vnchwconv tile, go to the general fallback of
`npu.passes.transpose_general`: a chain of at most rank - 1 last-two swaps
(block rotations [B, X, Y] -> [B, Y, X]) through GM temporaries when every
step has a whole vnchwconv tile, else the whole tensor in UB with an element
gather by block copies, in pieces along a dim when the tensor does not fit
UB (`npu.passes.transpose_tiled`); rejected at the op only when no piece does.
"""

from __future__ import annotations

import numpy as np
from mlir import ir

from npu import ir as nir
from npu.analysis.slice_runs import RunMap
from npu.kernels.cce_build import copy, copy_bursts, core_part, for_pieces, for_range, lin, sub
from npu.kernels.run_copies import RunCopies
from npu.passes.base import Option, Pass, PassError, ub_fraction_option
from npu.passes.applies import OnOps
from npu.passes.transpose_general import (GatherTranspose, collapse_permutation, copy_through_ub,
                                         gather_in_boxes,
                                         rotation_steps)
from npu.passes.transpose_tiled import gather_in_tiles
from npu.costmodel.vector.tiling import plan_chunks, round_down, round_up

Index = int | ir.Value


class LowerTranspose(Pass):
    name = "npu-lower-transpose"
    summary = ("Lower ascend.transpose: last-two swap via vnchwconv, [0,2,1,3] via block "
               "copies, a permutation keeping a last dim of a block or more by row copies, any "
               "other permutation by a gather in UB")
    handles = ("ascend.transpose",)
    acts_on = OnOps("transpose", handles)  # every option: the program has one
    options = (
        ub_fraction_option(0.5, "fraction of UB one chunk's buffers may use (0.5 leaves "
                           "room for double buffering)"),
        Option("max-rows", int, 0, "cap on the rows of a chunk (0: as many as UB allows); for tests",
               low=0),
        Option("max-cols", int, 0, "cap on the columns of a chunk (0: as UB allows); for tests",
               low=0),
    )

    def run(self, module: ir.Operation) -> None:
        self.lower_each(module, erase=True)

    def lower(self, op: ir.Operation) -> None:
        src, dst = op.operands
        perm = nir.int_array_attr(op, "permutation")
        in_shape, out_shape = nir.memref_shape(src), nir.memref_shape(dst)
        rank = len(in_shape)
        if sorted(perm) != list(range(rank)) or len(out_shape) != rank:
            raise PassError(f"permutation {perm} is not a permutation of the {rank} input "
                            "dimensions", op)
        if [in_shape[p] for p in perm] != out_shape:
            raise PassError(f"output shape {out_shape} is not the input shape {in_shape} "
                            f"permuted by {perm}", op)
        elem = nir.memref_element(src)
        if nir.memref_element(dst) != elem:
            raise PassError("input and output element types differ", op)
        for v in (src, dst):
            if not nir.is_contiguous(v):
                raise PassError(f"operand of type {v.type} is not contiguous (row-major, dense)",
                                op)
        if src == dst:
            raise PassError("transpose cannot be done in place (output aliases the input)", op)
        shape, perm = collapse_permutation(in_shape, perm)
        rank = len(shape)
        ident = list(range(rank))
        es = nir.element_bytes(elem)
        granule = self.target.granule("ub")
        columns = core_part(op)
        axis = (ir.StringAttr(op.attributes[nir.CORE_AXIS_ATTR]).value
                if nir.CORE_AXIS_ATTR in op.attributes else None)
        if columns is not None and axis == nir.KEPT_ROWS_AXIS:
            self.runs(op, src, dst, elem, shape, perm, columns)
        elif columns is not None and rank == 3 and perm == [1, 0, 2]:
            on_j = axis == nir.SOURCE_J_AXIS
            self.swap_before_last(op, src, dst, elem, 1, *shape, run=columns, run_j=on_j)
        elif columns is not None:
            self.core_part_swap(op, src, dst, elem, shape, perm, columns,
                                axis == nir.SOURCE_ROWS_AXIS)
        elif perm == ident:
            copy_through_ub(self, src, dst, elem, int(np.prod(in_shape)))
        elif (perm == ident[:-2] + [rank - 1, rank - 2] and es in (2, 4)
              and shape[-2] >= self.target.fractal and shape[-1] >= granule // es):
            batch = int(np.prod(shape[:-2]))
            self.swap_last_two(op, src, dst, elem, batch, shape[-2], shape[-1])
        elif (rank >= 3 and perm == ident[:-3] + [rank - 2, rank - 3, rank - 1]
              and (shape[-1] * es) % granule == 0
              and shape[-1] * es <= self.budget()):
            batch = int(np.prod(shape[:-3]))
            self.swap_before_last(op, src, dst, elem, batch, *shape[-3:])
        elif self.rotations_fit(rotation_steps(shape, perm), es):
            self.rotate(op, src, dst, elem, rotation_steps(shape, perm))
        elif perm[-1] == rank - 1 and shape[-1] * es >= granule:
            self.runs(op, src, dst, elem, shape, perm)
        else:
            self.gather(op, src, dst, elem, shape, perm)

    def runs(self, op: ir.Operation, src: ir.Value, dst: ir.Value, elem: str,
             shape: list[int], perm: list[int],
             part: tuple[int, ir.Value] | None = None) -> None:
        """A permutation that keeps the last dim (of at least one block, not
        whole blocks: a channel shuffle's H*W planes in NCHW) reorders whole
        rows: the element gather when the tensor fits UB (one pass), else
        each row copied GM -> UB -> GM on its own (`npu.kernels.run_copies`:
        its last block moved back to end at the row's end). `part`: (parts,
        this core's part) of the result's rows, cut by npu-split-cores
        (`nir.KEPT_ROWS_AXIS`): each core copies its run of rows."""
        if part is None:
            try:
                self.gather(op, src, dst, elem, shape, perm, boxes=False)
                return
            except PassError:
                pass
        es = nir.element_bytes(elem)
        block = self.target.granule("ub") // es
        if shape[-1] < block or perm[-1] != len(shape) - 1:
            raise PassError(f"{nir.CORE_PART_ATTR}: cuts the rows of a permutation that keeps its "
                            f"last dim of at least {block} elements; this one is {shape} "
                            f"permuted by {perm}", op)
        in_strides = [int(np.prod(shape[d + 1:])) for d in range(len(shape))]
        out_shape = [shape[p] for p in perm]
        out_strides = [int(np.prod(out_shape[d + 1:])) for d in range(len(shape))]
        r = RunMap(out_shape[:-1], [in_strides[p] for p in perm[:-1]], out_strides[:-1], 0, 0,
                   shape[-1])
        first, count = 0, None
        if part is not None:  # this core's rows: a run of the flattened leading dims
            parts, k = part
            rows = int(np.prod(out_shape[:-1]))
            if rows % parts:
                raise PassError(f"{nir.CORE_PART_ATTR}: {rows} rows do not cut into {parts} equal "
                                "runs", op)
            count = rows // parts
            first = lin((k, count))
        chunk = max(block, round_down(self.budget() // es, block))
        RunCopies(self.target, elem, chunk).slots(r, nir.flatten_memref(src),
                                                 nir.flatten_memref(dst), first, count)

    def gather(self, op: ir.Operation, src: ir.Value, dst: ir.Value, elem: str,
               shape: list[int], perm: list[int], boxes: bool = True) -> None:
        """The general fallback. A leading dim the permutation keeps in place
        is a batch: when the whole tensor does not fit UB, chunks of whole
        blocks of it in turn (a CNN head's maps back to NCHW: [N*C1, H*W,
        16] -> [N*C1, 16, H*W] with H*W under 16 rows)."""
        inner = int(np.prod(shape[1:]))
        whole_blocks = inner % (self.target.granule("ub") // nir.element_bytes(elem)) == 0
        per, first_refusal = shape[0], None
        while True:
            try:
                gather = GatherTranspose(self, op, elem, [per] + shape[1:], perm)
                break
            except PassError as e:
                first_refusal = first_refusal or e
                if boxes and perm[0] != 0 and gather_in_boxes(self, op, src, dst, elem, shape,
                                                               perm):
                    return
                if perm[0] != 0 or per == 1 or not whole_blocks:
                    if boxes and gather_in_tiles(self, op, src, dst, elem, shape, perm):
                        return
                    raise first_refusal
                per = -(-per // 2)
        if per == shape[0]:
            gather.emit(src, dst)
            return
        flat_src, flat_dst = nir.flatten_memref(src), nir.flatten_memref(dst)

        def chunk(start, rows: int) -> None:
            g = gather if rows == per else GatherTranspose(self, op, elem, [rows] + shape[1:], perm)
            g.emit(sub(flat_src, lin((start, inner)), rows * inner),
                   sub(flat_dst, lin((start, inner)), rows * inner))
        for_pieces(plan_chunks(shape[0], per, 1), chunk)

    def core_part_swap(self, op: ir.Operation, src: ir.Value, dst: ir.Value, elem: str,
                       shape: list[int], perm: list[int], part_of: tuple[int, ir.Value],
                       source_rows: bool) -> None:
        """This core's run of source columns (the result's rows), or of source
        rows (`source_rows`: the result's columns, stored as strided runs), of
        an R x C last-two swap (in every batch) that npu-split-cores cut over the cores
        (`nir.CORE_PART_ATTR`): either cut is a strided slice on one side,
        which the chunks' bursts take anyway."""
        parts, part = part_of
        col_block = self.target.granule("ub") // nir.element_bytes(elem)
        batch, (rows, cols) = int(np.prod(shape[:-2])), shape[-2:]
        cut = rows if source_rows else cols
        if perm not in ([1, 0], [0, 2, 1]) or cut % (parts * col_block):
            what = "rows" if source_rows else "columns"
            raise PassError(f"{nir.CORE_PART_ATTR}: cuts the source {what} of a (batched) 2-D "
                            f"transpose into {parts} runs of whole {col_block}-element blocks; "
                            f"this one is {shape} permuted by {perm}", op)
        run = cut // parts
        if source_rows:
            self.swap_last_two(op, src, dst, elem, batch, run, cols, first_row=lin((part, run)),
                               all_rows=rows)
        else:
            self.swap_last_two(op, src, dst, elem, batch, rows, run, lin((part, run)), cols)

    def rotations_fit(self, steps: list[tuple[int, int, int]], es: int) -> bool:
        """Every rotation is a last-two swap with at least one vnchwconv tile."""
        col_block = self.target.granule("ub") // es
        return es in (2, 4) and all(rows >= self.target.fractal and cols >= col_block
                                    for _, rows, cols in steps)

    def rotate(self, op: ir.Operation, src: ir.Value, dst: ir.Value, elem: str,
               steps: list[tuple[int, int, int]]) -> None:
        """A chain of last-two swaps through GM temporaries (one full pass over
        the tensor per step, each at vnchwconv speed)."""
        total = int(np.prod(nir.memref_shape(src)))
        cur = src
        for k, (batch, rows, cols) in enumerate(steps):
            out = dst if k == len(steps) - 1 else nir.core_scratch([total], elem)
            self.swap_last_two(op, cur, out, elem, batch, rows, cols)
            cur = out

    def budget(self) -> int:
        return int(self.target.capacity("ub") * self.ub_fraction)

    # -- dst[b, j, k] = src[b, k, j] ------------------------------------------------
    def swap_last_two(self, op: ir.Operation, src: ir.Value, dst: ir.Value, elem: str,
                      batch: int, rows: int, cols: int, first_col: Index = 0,
                      all_cols: int | None = None, first_row: Index = 0,
                      all_rows: int | None = None) -> None:
        """`cols` columns from `first_col` of the source's `all_cols` (all of
        them by default), and `rows` rows from `first_row` of `all_rows`."""
        es = nir.element_bytes(elem)
        granule = self.target.granule("ub")
        tile_rows = self.target.fractal  # vnchwconv transposes 16 rows per repeat
        if es not in (2, 4):
            raise PassError(f"transpose of {elem} is not supported (vnchwconv handles 2- and "
                            "4-byte types)", op)
        col_block = granule // es  # columns of one tile: one 32-byte block
        if rows < tile_rows or cols < col_block:
            raise PassError(f"transposing a {rows}x{cols} matrix needs at least {tile_rows} "
                            f"rows and {col_block} columns (one {tile_rows}x{col_block} "
                            "vnchwconv tile)", op)
        # vnchwconv's source repeat stride (16 rows of the chunk) is limited.
        max_cols = round_down(self.target.vector_max_stride * granule // (tile_rows * es),
                              col_block)
        ct = min(round_down(cols, col_block), max_cols)
        if self.max_cols:
            ct = min(ct, max(col_block, round_down(self.max_cols, col_block)))
        rt_budget = round_down(self.budget() // (2 * ct * es), tile_rows)
        if rt_budget < tile_rows:
            raise PassError("UB budget too small for one transpose tile", op)
        rt = min(round_down(rows, tile_rows), rt_budget)
        if self.max_rows:
            rt = min(rt, max(tile_rows, round_down(self.max_rows, tile_rows)))
        # Same number of chunks, evened out (no short last chunk to pipeline).
        rt = min(rt, round_up(-(-rows // -(-rows // rt)), tile_rows))
        row_plan = plan_chunks(rows, rt, tile_rows)
        col_plan = plan_chunks(cols, ct, col_block)
        flat_src, flat_dst = nir.flatten_memref(src), nir.flatten_memref(dst)
        ctx = _Swap2(self, flat_src, flat_dst, elem, all_rows or rows, all_cols or cols)

        def over_cols(b: Index, r0: Index, nrows: int) -> None:
            for_pieces(col_plan, lambda c0, ncols: ctx.chunk(b, lin((first_row, 1), (r0, 1)), nrows,
                                                             lin((first_col, 1), (c0, 1)), ncols))

        def over_rows(b: Index) -> None:
            for_pieces(row_plan, lambda r0, nrows: over_cols(b, r0, nrows))

        for_range(batch, over_rows)

    # -- dst[a, j, k, l] = src[a, k, j, l] -------------------------------------------
    def swap_before_last(self, op: ir.Operation, src: ir.Value, dst: ir.Value, elem: str,
                         batch: int, nk: int, nj: int, nl: int,
                         run: tuple[int, ir.Value] | None = None, run_j: bool = False) -> None:
        """[.., k, j, l] -> [.., j, k, l] by block copies: a tile of k rows x
        j columns of whole-block l rows loaded (one burst per k row), then
        stored one j at a time (its k rows, strided in UB). The j tile is all
        of j when a k row fits the UB budget, else as many as fit (ViT-base's
        patch rows: 196 x 256 f32 per channel). `run`: (parts, this core's
        part) of the k rows that npu-split-cores cut over the cores
        (`nir.CORE_PART_ATTR`; a cut of k is a strided slice of the result),
        or with `run_j` of the j (a strided slice of the source: each k row's
        run is a burst of its own)."""
        es = nir.element_bytes(elem)
        first_k: Index = 0
        first_j: Index = 0
        nk_all, nj_all = nk, nj
        if run is not None:
            parts, part = run
            if (nj if run_j else nk) % parts:
                raise PassError(f"{nir.CORE_PART_ATTR}: {nj if run_j else nk} source "
                                f"{'columns' if run_j else 'rows'} do not cut into {parts} "
                                "equal runs", op)
            if run_j:
                nj = nj // parts
                first_j = lin((part, nj))
            else:
                nk = nk // parts
                first_k = lin((part, nk))
        granule = self.target.granule("ub")
        if (nl * es) % granule:
            raise PassError(f"permutation [0, 2, 1, 3] is lowered as block copies and needs the "
                            f"last dimension ({nl} x {es} bytes) to be a whole number of "
                            f"{granule}-byte blocks", op)
        jt = min(nj, self.budget() // (nl * es))
        if jt < 1:
            raise PassError(f"one source row ({nl * es} bytes) does not fit the UB budget", op)
        k_max = self.budget() // (jt * nl * es)
        if self.max_rows:
            k_max = min(k_max, self.max_rows)
        k = min(k_max, nk)
        plan = plan_chunks(nk, -(-nk // -(-nk // k)), 1)  # evened-out chunks
        j_plan = plan_chunks(nj, -(-nj // -(-nj // jt)), 1)
        flat_src, flat_dst = nir.flatten_memref(src), nir.flatten_memref(dst)
        blocks_l = nl * es // granule

        def chunk(a: Index, k0: Index, nrows: int, j0: Index, nj_tile: int) -> None:
            buf = nir.alloc([nrows * nj_tile * nl], elem, "ub")
            k0 = lin((k0, 1), (first_k, 1))
            j0 = lin((j0, 1), (first_j, 1))
            start = lin((a, nk_all * nj_all * nl), (k0, nj_all * nl), (j0, nl))
            if nj_tile == nj_all:  # whole k rows: one burst
                copy("cce.copy_gm_to_ub", sub(flat_src, start, nrows * nj_all * nl), buf, 1,
                     nrows * nj_all * blocks_l)
            else:
                copy_bursts("cce.copy_gm_to_ub",
                            sub(flat_src, start, (nrows - 1) * nj_all * nl + nj_tile * nl), buf,
                            nrows, nj_tile * blocks_l, src_gap=(nj_all - nj_tile) * blocks_l)

            def one_j(j: Index) -> None:
                ub_view = sub(buf, lin((j, nl)), (nrows - 1) * nj_tile * nl + nl)
                out = lin((a, nj_all * nk_all * nl), (j0, nk_all * nl), (j, nk_all * nl),
                          (k0, nl))
                copy("cce.copy_ub_to_gm", ub_view, sub(flat_dst, out, nrows * nl), nrows,
                     blocks_l, src_gap=(nj_tile - 1) * blocks_l, dst_gap=0)

            for_range(nj_tile, one_j)

        for_range(batch, lambda a: for_pieces(plan, lambda k0, n: for_pieces(
            j_plan, lambda j0, m: chunk(a, k0, n, j0, m))))


class _Swap2:
    """Emits one RT x CT chunk of the last-two-dims transpose."""

    def __init__(self, p: LowerTranspose, src: ir.Value, dst: ir.Value, elem: str, rows: int,
                 cols: int):
        self.p, self.src, self.dst, self.elem = p, src, dst, elem
        self.rows, self.cols = rows, cols
        self.es = nir.element_bytes(elem)
        self.granule = p.target.granule("ub")
        self.tile_rows = p.target.fractal

    def chunk(self, b: Index, r0: Index, rt: int, c0: Index, ct: int) -> None:
        es, g, rows, cols = self.es, self.granule, self.rows, self.cols
        src_ub = nir.alloc([rt * ct], self.elem, "ub")
        # Source rows r0..r0+rt, columns c0..c0+ct -> UB rows of ct.
        src_start = lin((b, rows * cols), (r0, cols), (c0, 1))
        strided_copy("cce.copy_gm_to_ub", self.src, src_start, cols, src_ub, ct, rt, ct, es, g,
                     gm_is_src=True)
        dst_ub = nir.alloc([ct * rt], self.elem, "ub")
        self.transpose_tiles(src_ub, dst_ub, rt, ct)
        dst_start = lin((b, rows * cols), (c0, rows), (r0, 1))
        strided_copy("cce.copy_ub_to_gm", self.dst, dst_start, rows, dst_ub, rt, ct, rt, es, g,
                     gm_is_src=False)

    def transpose_tiles(self, src_ub: ir.Value, dst_ub: ir.Value, rt: int, ct: int) -> None:
        es, g, t = self.es, self.granule, self.tile_rows
        col_block = g // es
        src_row_blocks = ct * es // g
        dst_row_blocks = rt * es // g
        if es == 2:
            dst_offsets = [r * dst_row_blocks for r in range(t)]
        else:  # 4-byte: result row r (16 values, 2 blocks) in two halves
            dst_offsets = [r * dst_row_blocks + half for r in range(col_block) for half in (0, 1)]
        src_offsets = [k * src_row_blocks for k in range(t)]
        row_tiles = rt // t
        max_rep = self.p.target.max_repeat
        for j in range(ct // col_block):
            done = 0
            while done < row_tiles:
                rep = min(row_tiles - done, max_rep)
                s_off = done * t * ct + j * col_block
                d_off = j * col_block * rt + done * t
                s = sub(src_ub, s_off, rt * ct - s_off)
                d = sub(dst_ub, d_off, ct * rt - d_off)
                nir.create_op("cce.vnchwconv", [d, s], repeat=rep, src_offsets=src_offsets,
                              dst_offsets=dst_offsets, src_rep_stride=t * src_row_blocks,
                              dst_rep_stride=t * es // g)
                done += rep


def strided_copy(name: str, gm: ir.Value, gm_start: Index, gm_row: int, ub: ir.Value,
                 ub_row: int, nrows: int, ncols: int, es: int, granule: int,
                 gm_is_src: bool) -> None:
    """Copy `nrows` rows of `ncols` elements between GM rows of `gm_row`
    elements and UB rows of `ub_row` (whole blocks): one burst if contiguous,
    one strided copy if the GM row is whole blocks, else one copy per row."""
    burst = ncols * es // granule

    def emit(gm_view: ir.Value, ub_view: ir.Value, n: int, blen: int, gm_gap: int) -> None:
        if gm_is_src:
            copy(name, gm_view, ub_view, n, blen, src_gap=gm_gap, dst_gap=0)
        else:
            copy(name, ub_view, gm_view, n, blen, src_gap=0, dst_gap=gm_gap)

    if gm_row == ncols and ub_row == ncols:
        emit(sub(gm, gm_start, nrows * ncols), ub, 1, nrows * burst, 0)
    elif (gm_row * es) % granule == 0:
        span = (nrows - 1) * gm_row + ncols
        emit(sub(gm, gm_start, span), ub, nrows, burst, (gm_row - ncols) * es // granule)
    else:
        def one_row(k: Index) -> None:
            emit(sub(gm, lin((gm_start, 1), (k, gm_row)), ncols), sub(ub, lin((k, ub_row)), ncols),
                 1, burst, 0)
        for_range(nrows, one_row)


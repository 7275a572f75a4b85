"""The vector work of `npu-lower-attention`'s steps: the (online) softmax
of a tile of scores, the context's rescaling and normalisation, and the
helpers they share (flat vector runs, row reductions and broadcasts over
Nz slabs, masks)."""

from __future__ import annotations

from typing import Callable

from mlir import ir

from npu import ir as nir
from npu.costmodel.attention.cost import fold_across_cycles
from npu.costmodel.vector.recipes import Compute, cast_compute, unary_compute
from npu.costmodel.vector.tiling import split_repeats
from npu.kernels.cce_build import View, copy, lin, sub
from npu.kernels.vector_compute import emit, vdup_fill

# Added to the scores of padded keys (f32 softmax): -inf, below any score a
# mask leaves finite (HF's finfo.min mask: s + finfo.min is finite), so a
# row whose every key is masked spreads its weight over its real keys as
# onnxruntime does, not over the padded ones (-1e30 did); their shift is
# clamped to -F16_MASKED before the f16 exp (`p_run`).
MASKED = float("-inf")
# The padded keys' shifted scores clamped to this before the f16 exp
# (finite in f16; exp(-F16_MASKED) is 0 there).
F16_MASKED = 6e4
# Most slabs a row max folds onto at once (`row_reduce`: independent chains
# share each pipe_barrier(V)); the scores phase of the attention plan's
# footprint has room for four slabs besides the scores and P.
MAX_FOLD_CHAINS = 4
# Runs of key slabs a tile's P is made and copied to L1 in, with several
# tiles per head (with one, the next head's scores do not wait for P's copy
# and one run measured faster: 46,373 against 46,949 cycles for 12 heads
# of 128). Two against three, 12 heads of 200 / 256 / 384 / 512 / 1024:
# +1.5k / +0.1k / -0.4k / -2.0k / -7.3k cycles (BERT at 512: -2.0k).
P_RUNS = 2


class SoftmaxSteps:
    """Mixed into the kernel (`a`, `t`, `qb`, `kb`, `granule`, `prescale`, `scale_p`, `scale_block`,
    `row_max`, `context`, `nz_slabs`, `flat_out`)."""

    def softmax_tile(self, sc: ir.Value, pl1: ir.Value, mq: int, kbk: int,
                     alpha: ir.Value | None, masked: bool, key0=0) -> None:
        """Scores L0C -> UB, key mask, the row max (online: the running max
        and `alpha` = exp(old max - new max); None: the first tile), the
        shift in f32, then P = exp(scale * shifted) in f16 (half the vector
        repeats of f32; the shift keeps the rounding relative to s - max),
        P -> L1. The row sums come from the cube (`load_v`'s ones column).
        With the softmax in f16 (`elem`), `softmax_tile_f16`."""
        if self.elem == "f16":
            self.softmax_tile_f16(sc, pl1, mq, kbk, alpha, masked, key0)
            return
        a = self.a
        rows = mq * 16
        slab, count = rows * 16, kbk * rows * 16
        scores = nir.alloc([count], "f32", "ub")
        copy("cce.copy_l0c_to_ub", sc, scores, 1, kbk * mq * 32)
        self.add_key_mask(scores, kbk, rows, key0, scaled=False)
        if self.prescale:
            self.apply(Compute("scalar", vop="cce.vmuls", scalar=a.scale), scores, [scores], count)
        self.add_key_mask(scores, kbk, rows, key0, scaled=True)
        if masked:
            bias = self.key_mask(rows, a.seq % 16)
            self.apply(Compute("binary", vop="cce.vadd"), scores, [scores, bias], slab,
                       offsets=((kbk - 1) * slab, (kbk - 1) * slab, 0))
        first = alpha is None
        tile_max = self.row_reduce(scores, kbk, rows, "cce.vmax", "cce.vcmax",
                                   self.row_max if first else None)
        vmax, vsub = Compute("binary", vop="cce.vmax"), Compute("binary", vop="cce.vsub")
        # Ordered in waves of independent instructions (one pipe_barrier(V)
        # each): the new max; alpha's difference, the running max's update
        # (after its read: V's WAR is safe) and the shift; exp(alpha) with
        # P's first stage.
        if first:
            new_max = self.row_max
        else:
            new_max = nir.alloc([rows], "f32", "ub")
            self.apply(vmax, new_max, [self.row_max, tile_max], rows)
            self.apply(vsub, alpha, [self.row_max, new_max], rows)
            self.apply(vmax, self.row_max, [self.row_max, tile_max], rows)
        if self.scale_p:  # the shift by -scale * max: one vmadd scales and shifts
            scaled_max = nir.alloc([rows], "f32", "ub")
            self.apply(Compute("scalar", vop="cce.vmuls", scalar=-a.scale), scaled_max,
                       [new_max], rows)
            if not first:
                self.apply(Compute("scalar", vop="cce.vmuls", scalar=a.scale), alpha, [alpha],
                           rows)
            new_max = scaled_max
        shift = self.broadcast(new_max, rows)
        self.guard_rows(shift, rows, "f32")
        if not first:
            self.apply(unary_compute("ascend.exp", "f32"), alpha, [alpha], rows)
            self.guard_alpha(alpha, new_max, rows)
        probs = nir.alloc([count], "f16", "ub")
        # P in a few runs of key slabs, each to L1 as soon as it is made: the
        # last run's copy is all that the next tile's scores (which the
        # memory planner may place over P) wait for.
        per_run = self.per_run(kbk)
        self.emit_runs([self.p_run(scores, probs, pl1, shift, j0, min(kbk, j0 + per_run), mq,
                                   kbk, masked) for j0 in range(0, kbk, per_run)])

    def per_run(self, kbk: int) -> int:
        """Key slabs per run of P (see P_RUNS)."""
        return kbk if self.a.seq_blocks <= min(self.qb, self.kb) else -(-kbk // P_RUNS)

    @staticmethod
    def emit_runs(runs: list[list[Callable[[], None]]]) -> None:
        """The runs' stages emitted diagonally (stage s of run r in wave r + s,
        the older run's first): the runs touch disjoint slabs, so the stages
        of one wave need no pipe_barrier(V) between them, one per wave
        instead of one per stage and run."""
        for wave in range(len(runs) + len(runs[0]) - 1):
            for stage in reversed(range(len(runs[0]))):
                if 0 <= wave - stage < len(runs):
                    runs[wave - stage][stage]()

    def p_run(self, scores: ir.Value, probs: ir.Value, pl1: ir.Value, shift: ir.Value,
              j0: int, j1: int, mq: int, kbk: int, masked: bool) -> list[Callable[[], None]]:
        """The stages of P's run of key slabs j0..j1-1: the shift by the row
        max in f32 (`scale_p`: scale * s - scale * max, one vmadd with the
        scale's constant block, in place of an f16 vmuls over P), the cast to
        f16, then exp and the copy to L1."""
        rows = mq * 16
        slab = rows * 16
        at, n = j0 * slab, (j1 - j0) * slab

        def shifted() -> None:
            self.shift_slabs(scores, shift, j0, j1, slab, "cce.vsub")
            if masked and j1 == kbk:  # padded keys' -inf: a finite value before f16
                self.apply(Compute("scalar", vop="cce.vmaxs", scalar=-F16_MASKED), scores,
                           [scores], slab, offsets=((kbk - 1) * slab, (kbk - 1) * slab))

        def half() -> None:
            self.apply(cast_compute("f32", "f16", "rint"), probs, [scores], n, offsets=(at, at),
                       sizes=(2, 4))

        def exp_to_l1() -> None:
            self.exp_to_l1(probs, pl1, j0, j1, mq, kbk)

        return [shifted, half, exp_to_l1]

    def shift_slabs(self, scores: ir.Value, shift: ir.Value, j0: int, j1: int, slab: int,
                    vop: str, **sizes) -> None:
        """Key slabs j0..j1-1 of `scores` shifted by the row max in place:
        under `scale_p` scale * s + `shift` (-scale * max) in one vmadd with
        the scale's constant block, else s `vop` `shift`."""
        for j in range(j0, j1):
            if self.scale_p:
                self.apply(Compute("multiply_add"), scores, [self.scale_block, shift], slab,
                           offsets=(j * slab, 0, 0), **sizes)
            else:
                self.apply(Compute("binary", vop=vop), scores, [scores, shift], slab,
                           offsets=(j * slab, j * slab, 0), **sizes)

    def exp_to_l1(self, p: ir.Value, pl1: ir.Value, j0: int, j1: int, mq: int, kbk: int) -> None:
        """exp in place over the f16 key slabs j0..j1-1 of `p`, then their
        copy into P's L1 tile (P.V's A operand)."""
        slab = mq * 16 * 16
        at, n = j0 * slab, (j1 - j0) * slab
        self.apply(unary_compute("ascend.exp", "f16"), p, [p], n, offsets=(at, at), sizes=(2, 2))
        self.zero_guarded(p, j0, j1, slab)
        run = pl1 if j1 - j0 == kbk else \
            nir.subview(pl1, [j0, 0, 0, 0], [j1 - j0] + nir.memref_shape(pl1)[1:])
        copy("cce.copy_ub_to_l1", sub(p, at, n), run, 1, (j1 - j0) * mq * 16)

    def rescale_context(self, pv: ir.Value, alpha: ir.Value, mq: int) -> None:
        """O = O * alpha + P.V per row (the online softmax's correction), the
        row sums in the extra slab alike."""
        slabs, rows = self.a.d_blocks + 1, mq * 16
        slab = rows * 16
        part = nir.alloc([slabs * slab], "f32", "ub")
        copy("cce.copy_l0c_to_ub", pv, part, 1, slabs * mq * 32)
        rescale = self.broadcast(alpha, rows)
        for j in range(slabs):  # one vmadd: O = alpha * O + P.V
            self.apply(Compute("multiply_add"), self.context, [rescale, part], slab,
                       offsets=(j * slab, 0, j * slab))

    def finish(self, h, x0, mq: int, valid: int, skip: int = 0) -> None:
        """O / l per row, then one burst per valid row and 16 columns to GM
        (with `nz_out`, every column block is scaled before any is cast to
        f16: the casts then wait for one pipe_barrier(V), not one each).
        `skip`: the first blocks of rows are not stored (an overlapped query
        tile's, stored by the tile before)."""
        a = self.a
        rows, d = mq * 16, a.head_dim
        slab = rows * 16
        total = a.d_blocks * slab  # the row sums, one per lane of the last slab
        self.guard_sums(total, slab)
        self.apply(unary_compute("ascend.reciprocal", "f32"), self.context, [self.context], slab,
                   offsets=(total, total))

        def scaled(j: int) -> None:
            self.apply(Compute("binary", vop="cce.vmul"), self.context,
                       [self.context, self.context], slab, offsets=(j * slab, j * slab, total))

        if a.nz_out:
            for j in range(a.d_blocks):
                scaled(j)
            halves = [self.nz_half(j, mq, valid) for j in range(a.d_blocks)]
            for j, half in enumerate(halves):
                self.store_nz(half, h, x0, j, mq, skip)
            return
        first_row, valid = skip * 16, valid - skip * 16
        for j in range(a.d_blocks):
            scaled(j)
            if a.merged:  # head h's columns of the merged [S, H*D] rows
                pitch = a.heads * d
                first = lin((x0, 16 * pitch), (h, d), (1, 16 * j), (first_row, pitch))
            else:
                pitch = d
                first = lin((h, a.seq * d), (x0, 16 * d), (1, 16 * j), (first_row, d))
            dst = sub(self.flat_out, first, (valid - 1) * pitch + 16)
            copy("cce.copy_ub_to_gm", sub(self.context, j * slab + first_row * 16, valid * 16),
                 dst, valid,
                 16 * 4 // self.granule, 0, (pitch - 16) * 4 // self.granule)

    def nz_half(self, j: int, mq: int, valid: int) -> ir.Value:
        """Column block j of the context (a slab: rows x 16, already in the
        Nz order of one column block) cast to f16 with the absorbed cast's
        rounding, padding rows zeroed. `finish` casts every block before it
        stores any: the stores then wait for one V -> MTE3 flag, not one
        per block (each holds V until its casts have finished)."""
        a = self.a
        rows = mq * 16
        half = self.nz_slabs[j] if self.nz_slabs else nir.alloc([rows * 16], "f16", "ub")
        self.apply(cast_compute("f32", "f16", a.nz_round), half, [self.context], valid * 16,
                   offsets=(0, j * rows * 16), sizes=(2, 4))
        if valid < rows:  # the fractalize zero-fills the rows past seq
            lanes = self.t.lanes(2)
            for piece in split_repeats((rows - valid) * 16, lanes, self.t.max_repeat):
                at = valid * 16 + piece.offset
                nir.create_op("cce.vdup", [sub(half, at, (piece.repeat - 1) * lanes + piece.mask)],
                              repeat=piece.repeat, mask=piece.mask, dst_blk_stride=1,
                              dst_rep_stride=lanes * 2 // self.granule, scalar=0.0)
        return half

    def store_nz(self, half: ir.Value, h, x0, j: int, mq: int, skip: int = 0) -> None:
        """`nz_half`'s block j -> one burst into the merged context's Nz
        tensor at column block h * D/16 + j (but its first `skip` row blocks)."""
        a, rows = self.a, (mq - skip) * 16
        column = lin((h, a.d_blocks), (1, j))
        first = lin((column, a.seq_blocks * 256), (x0, 256), (skip, 256))
        copy("cce.copy_ub_to_gm", half if not skip else sub(half, skip * 256, rows * 16),
             sub(self.flat_out, first, rows * 16), 1, rows * 16 * 2 // self.granule)

    # -- vector helpers -------------------------------------------------------
    def apply(self, compute: Compute, dst: ir.Value, srcs: list[ir.Value | View], count: int,
              offsets: tuple[int, ...] | None = None, sizes: tuple[int, int] = (4, 4)) -> None:
        """`compute` over `count` contiguous elements of dst and srcs (f32
        unless `sizes` = (dst bytes, src bytes)), from the element offsets; a
        src given as a View (a constant block) is read as it is."""
        offsets = offsets or (0,) * (1 + len(srcs))
        des, ses = sizes
        lanes, g = self.t.lanes(max(des, ses)), self.granule
        for piece in split_repeats(count, lanes, self.t.max_repeat):
            touched = (piece.repeat - 1) * lanes + piece.mask

            def view(buf: ir.Value | View, at: int, es: int) -> View:
                if isinstance(buf, View):  # a constant block (strides 0)
                    return buf
                return View(sub(buf, at + piece.offset, touched), 1, lanes * es // g)

            emit(compute, view(dst, offsets[0], des),
                          [view(s, o, ses) for s, o in zip(srcs, offsets[1:])],
                          piece.repeat, piece.mask)

    def row_reduce(self, scores: ir.Value, slabs: int, rows: int, fold: str, across: str,
                   into: ir.Value | None, elem: str = "f32") -> ir.Value:
        """Per row of the Nz tile: slabs folded elementwise onto one [rows, 16]
        slab, then the 16 lanes of each row reduced into `into` (or a new
        buffer). A max or min (exact, so the order does not matter) folds
        onto `chains` contiguous slabs: the second `chains` slabs onto the
        first in one instruction, then the rest `chains` at a time, then the
        chains halved onto themselves. Each round is one instruction and one
        pipe_barrier(V). f32: up to MAX_FOLD_CHAINS slabs (the footprint's
        room beside the scores and P); f16: half the slabs (the f16 scores
        and these take less UB than the f32 scores alone), so the fold is a
        halving tree. The chains live only over the folds (within the scores
        phase of `npu.costmodel.attention.plan.footprint`). `elem`: the scores' type."""
        slab, es = rows * 16, nir.element_bytes(elem)
        sizes = (es, es)
        work, spare = scores, None
        combine = Compute("binary", vop=fold)
        exact = fold in ("cce.vmax", "cce.vmin")
        transposed = exact and self.transposed_fold(rows, es)
        if slabs > 1:
            chains = min(MAX_FOLD_CHAINS if es == 4 else slabs, slabs // 2) if exact else 1
            # With the transposed last step, a second slab for its transpose:
            # a buffer of its own would land where the memory planner put
            # something in flight on another pipe, and wait for it.
            acc = nir.alloc([max(chains, 2 if transposed else 1) * slab], elem, "ub")
            spare = sub(acc, slab, slab) if transposed else None
            self.apply(combine, acc, [scores, scores], chains * slab,
                       offsets=(0, 0, chains * slab), sizes=sizes)
            for j in range(2 * chains, slabs, chains):
                n = min(chains, slabs - j)
                self.apply(combine, acc, [acc, scores], n * slab, offsets=(0, 0, j * slab),
                           sizes=sizes)
            while chains > 1:  # the last half onto the first
                keep = chains - chains // 2
                self.apply(combine, acc, [acc, acc], (chains // 2) * slab,
                           offsets=(0, 0, keep * slab), sizes=sizes)
                chains = keep
            work = acc
        out = into if into is not None else nir.alloc([rows], elem, "ub")
        if transposed:
            self.fold_across(work, out, rows, combine, elem, spare)
            return out
        nir.create_op(across, [out, sub(work, 0, slab)], repeat=rows, mask=16,
                      src_blk_stride=1, src_rep_stride=16 * es // self.granule, dst_rep_stride=1)
        return out

    def transposed_fold(self, rows: int, es: int) -> bool:
        """Whether `fold_across` replaces the vcmax (`row-max`; auto: when
        its modelled cycles (`npu.costmodel.attention.cost.fold_across_cycles`) are
        fewer than one reduce repeat per row; 128 rows: 71 (f16) / 102
        (f32) against 128)."""
        if self.row_max_mode != "auto":
            return self.row_max_mode == "transpose"
        return fold_across_cycles(rows, es, self.t) < rows * self.t.vector_cycles("reduce")

    def fold_across(self, work: ir.Value, out: ir.Value, rows: int, combine: Compute,
                    elem: str, spare: ir.Value | None = None) -> None:
        """The 16 lanes of each row of slab `work` [rows, 16] combined into
        out [rows] without a 16-lane repeat per row (vcmax: `rows` repeats):
        vnchwconv transposes the slab to [16 keys, rows] (each key's lane of
        all rows contiguous), then a halving tree of full-width vmax: 8 x
        rows, 4 x rows, 2 x rows, then rows elements (the last into out).
        128 rows: 8 transposes (f16; 16 in f32) and 15 (f32: 30) repeats,
        against 128. Exact for max / min, so the order does not matter. The
        transpose goes to `spare` (a free slab), or a new buffer."""
        es = nir.element_bytes(elem)
        per_block = self.granule // es  # row values per 32-byte block
        row_blocks = rows // per_block  # blocks of one key's row of T
        t = spare if spare is not None else nir.alloc([rows * 16], elem, "ub")
        if es == 2:  # one 16x16 transpose per 16 rows: key j -> T row j
            nir.create_op("cce.vnchwconv", [t, work], repeat=rows // 16,
                          src_offsets=list(range(16)), src_rep_stride=16,
                          dst_offsets=[j * row_blocks for j in range(16)], dst_rep_stride=1)
        else:  # 4-byte: 16 rows x 8 keys per repeat, once per half of the keys;
            # key t's 16 values land in two halves (rows 0..7, 8..15)
            for h in range(2):
                nir.create_op("cce.vnchwconv", [t, work], repeat=rows // 16,
                              src_offsets=[2 * i + h for i in range(16)], src_rep_stride=32,
                              dst_offsets=[(8 * h + k // 2) * row_blocks + k % 2
                                           for k in range(16)], dst_rep_stride=2)
        width = 8
        while width >= 1:
            self.apply(combine, out if width == 1 else t, [t, t], width * rows,
                       offsets=(0, 0, width * rows), sizes=(es, es))
            width //= 2

    def broadcast(self, col: ir.Value, rows: int, elem: str = "f32") -> ir.Value:
        """[rows] -> [rows, 16]: each value over one slab row, by vnchwconv
        with all 16 source rows on the same block of values (row t of the
        transpose is value t repeated; f32: 8 values a block, each row
        written to both 32-byte halves)."""
        per_block = self.granule // nir.element_bytes(elem)
        wide = nir.alloc([rows * 16], elem, "ub")
        nir.create_op("cce.vnchwconv", [wide, col], repeat=rows // per_block,
                      src_offsets=[0] * 16, dst_offsets=list(range(16)), src_rep_stride=1,
                      dst_rep_stride=16)
        return wide

    def constant_block(self, value: float, elem: str = "f32") -> View:
        """One block of `value` (`elem`) in UB, read with strides 0 as a
        whole repeat of it."""
        per_block = self.granule // nir.element_bytes(elem)
        block = nir.alloc([per_block], elem, "ub")
        nir.create_op("cce.vdup", [block], repeat=1, mask=per_block, dst_blk_stride=1,
                      dst_rep_stride=8, scalar=value)
        return View(block, 0, 0)

    def fill(self, buf: ir.Value, count: int, elem: str, value: float) -> None:
        """The first `count` elements of `buf` (`elem`) set to `value` (vdup)."""
        vdup_fill(self.t, buf, count, elem, value)

    def ones_blocks(self, blocks: int) -> ir.Value:
        """`blocks` 16x16 f16 blocks of 1.0 in UB, the source of V's ones column."""
        ones = nir.alloc([blocks * 256], "f16", "ub")
        self.fill(ones, blocks * 256, "f16", 1.0)
        return ones

    def key_mask(self, rows: int, valid_keys: int) -> ir.Value:
        """A [rows, 16] slab: 0 for the first `valid_keys` lanes of each row,
        MASKED for the padded keys."""
        bias = nir.alloc([rows * 16], "f32", "ub")
        self.fill(bias, rows * 16, "f32", MASKED)
        nir.create_op("cce.vdup", [bias], repeat=rows, mask=valid_keys, dst_blk_stride=1,
                      dst_rep_stride=16 * 4 // self.granule, scalar=0.0)
        return bias

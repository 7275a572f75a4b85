"""The Q, K and V tiles of `npu-lower-attention` in L1 (Nz, f16): read as f16
fractals, as f16 rows laid out by the loads (absorbed fractalizes), or as
f32 rows staged in UB and cast there (absorbed casts)."""

from __future__ import annotations

import math

from mlir import ir

from npu import ir as nir
from npu.costmodel.attention.core_start import staged_f16
from npu.costmodel.vector.recipes import cast_compute
from npu.kernels.cce_build import copy, copy_bursts, lin, sub



def row_pitch(source: ir.Value) -> int:
    """Elements between the rows of an interleaved [.., S, H, D] source: H x D,
    or more for one core's run of heads (a subview, npu-split-cores)."""
    shape = nir.memref_shape(source)
    return nir.memref_layout(source)[0][len(shape) - 3]


def flat_rows(source: ir.Value) -> tuple:
    """(a 1-D view, the source's first element in it): the source's own, or
    for a run of heads (a subview of a contiguous tensor) the whole tensor's."""
    if nir.is_contiguous(source):
        return nir.flatten_memref(source), 0
    view = nir.defining_op(source)
    whole = view.operands[0]
    dynamic = ir.ShapedType.get_dynamic_stride_or_offset()
    given = iter(list(view.operands)[1:])
    offsets = [next(given) if o == dynamic else o
               for o in ir.DenseI64ArrayAttr(view.attributes["static_offsets"])]
    strides = nir.memref_layout(whole)[0]
    return nir.flatten_memref(whole), lin(*zip(offsets, strides))


# An f16 tile of rows may load through UB: each row one burst of the
# head's D columns to UB, then each column block to L1 (MTE3), rather than
# `rows_to_nz`'s one 32-byte burst per row and column block straight to L1:
# a GM burst costs `gm_burst_cycles` of set-up, so a head's K of 512 keys
# took 4 x 768 cycles of MTE2 against 1,536 (BERT seq 512 on 32 cores: the
# attention phase 20,331 -> 18,363 cycles, the vector's wait for the first
# scores 3.8k -> 3.0k and for V's first P.V 1.07k -> 0). The staging's flag
# to MTE3 holds MTE2 one GM latency (two for Q's tile: K's load waits
# behind it), so a tile goes through UB when the bursts it saves take
# longer (`staged_f16` in npu.costmodel.attention.core_start, whose load
# model reads it too): seq 128's K and V (128 rows, 384 cycles saved) are
# staged, its Q tiles are not (BERT seq 128 on 32 cores 41,727 -> 41,151
# cycles; its 64-row Q tiles staged too, 41,343; on 2 cores, 128-row Q
# tiles staged, two layers 449,913 -> 454,315). The staging is one copy, in the caller's scope (a scope of its
# own put Q's flag, and so one GM latency, between Q's and K's loads:
# 18,713): in pieces, each piece's flag to MTE3 held MTE2 for one GM
# latency (4 pieces: 20,850).


class OperandTiles:
    """Mixed into the kernel (`a`, `mm`, `granule`, `deferred`, `joint_layouts`, `wides`,
    `scope`, `apply`, `ones_blocks`)."""

    reloads_kv = False  # K and V tiles loaded again for each query tile (`head_tiles`, `query_tiles`)

    def load_q(self, h, x0, mq: int, joint: bool = False) -> ir.Value:
        """Rows x0.. (mq blocks) of Q as the A operand's Nz [D/16, mq, 16, 16]
        (`joint`: staged through UB with the K tile behind it, `joint_staged`)."""
        return self.load_rows(self.a.q, 0, h, x0, mq, joint=joint)

    def joint_staged(self, q_blocks: int, k_blocks: int) -> bool:
        """Whether a first Q tile and the K tile loaded right behind it
        (`K_BEHIND_Q`) both go through UB, laid out after both loads under
        one flag: when K's tile is staged (`staged_f16`) and both stagings
        fit UB at once. Q's flag then adds no GM latency, so its bursts
        saved are free (BERT seq 128 on 32 cores: 64-row Q tiles, 41,151 ->
        41,023 cycles)."""
        a = self.a
        if (a.sources is None or self.reloads_kv
                or any(nir.memref_element(s) != "f16" for s in a.sources)):
            return False
        k_rows, k_cols = (k_blocks * 16, a.head_dim) if a.interleaved else \
            (a.head_dim, k_blocks * 16)
        both = (q_blocks * 16 * a.head_dim + k_blocks * 16 * a.head_dim) * 2
        return (staged_f16(k_rows, k_cols // 16, self.t)
                and self.need["ub"] + both <= self.t.capacity("ub"))

    def load_rows(self, tensor: ir.Value, source: int, h, block0, blocks: int,
                  into: ir.Value | None = None, ones: bool = True,
                  joint: bool = False) -> ir.Value:
        """Rows from 16-row block `block0` (`blocks` of them) of a head of Q
        or V as Nz [D/16, blocks, 16, 16] in L1: from the f16 fractals, or
        staged from `a.sources[source]` in f32. `into` (V): a tile of
        [D/16 + 1, >= blocks] blocks whose last column block gets ones, so
        that P.V also yields each row's sum of P (in f32, of the f16 P the
        context is made of; `ones` False: the tile has them already)."""
        a, d1 = self.a, self.a.d_blocks
        l1 = into if into is not None else nir.alloc([d1, blocks, 16, 16], "f16", "l1")
        ld = nir.memref_shape(l1)[1]
        if into is not None and ones:
            self.fill_ones(l1, blocks)
        if a.sources is None:
            copy_bursts("cce.copy_gm_to_l1",
                        nir.subview(tensor, [h, 0, block0, 0, 0], [1, d1, blocks, 16, 16]),
                        l1, d1, blocks * 16, src_gap=(a.seq_blocks - blocks) * 16,
                        dst_gap=(ld - blocks) * 16)
            return l1
        first, pitch = self.rows_of(h, block0)
        self.stage(a.sources[source], first, blocks * 16, a.head_dim, pitch, l1,
                   valid_rows=self.in_seq(block0, blocks), q=source == 0, joint=joint)
        return l1

    def in_seq(self, block0, blocks: int) -> int:
        """Rows (or keys) of `blocks` 16-row blocks from block `block0` that
        lie within the sequence: all of them but in the last block of a seq
        of partial blocks (a dynamic `block0` is a loop's middle tile, never
        the last: `skewed` peels it)."""
        a = self.a
        if isinstance(block0, int) and block0 + blocks >= a.seq_blocks:
            return a.seq - block0 * 16
        return blocks * 16

    def fill_ones(self, v1: ir.Value, blocks: int) -> None:
        """The last column block of V's L1 tile: ones (see `load_rows`)."""
        d1, ld, fill = self.a.d_blocks, nir.memref_shape(v1)[1], blocks * 256
        self.scope(lambda: copy("cce.copy_ub_to_l1", self.ones_blocks(blocks),
                                sub(nir.flatten_memref(v1), d1 * ld * 256, fill), 1,
                                fill * 2 // self.granule))

    def rows_of(self, h, block0) -> tuple:
        """(first element, row pitch) of a head's rows from 16-row block
        `block0` in a Q or V source: [H, S, D], or [S, H*D] (interleaved)."""
        a = self.a
        if a.interleaved:
            pitch = row_pitch(a.sources[0])
            return lin((block0, 16 * pitch), (h, a.head_dim)), pitch
        return lin((h, a.seq * a.head_dim), (block0, 16 * a.head_dim)), a.head_dim

    def k_tile(self, kbk: int) -> ir.Value:
        """An L1 tile for `load_k` of kbk key blocks."""
        d1 = self.a.d_blocks
        shape = [d1, kbk] if self.a.k_as_rows else [kbk, d1]
        return nir.alloc(shape + [16, 16], "f16", "l1")

    def load_k(self, h, y0, kbk: int, into: ir.Value | None = None) -> ir.Value:
        """Keys y0.. (kbk blocks) of K^T in L1 (`into`, or a new `k_tile`),
        as `k_to_l0b` takes them."""
        a, d1 = self.a, self.a.d_blocks
        l1 = into if into is not None else self.k_tile(kbk)
        if a.interleaved:
            # K's own rows [keys, D] laid out as Nz [D/16, keys/16] in L1: each
            # 16x16 block of K row-major is the Zn block of K^T, and block
            # (j, l) of K^T sits at j * keys/16 + l in both, so one plain load.
            pitch = row_pitch(a.sources[1])
            self.stage(a.sources[1], lin((y0, 16 * pitch), (h, a.head_dim)), kbk * 16,
                       a.head_dim, pitch, l1, valid_rows=self.in_seq(y0, kbk))
            return l1
        if a.k_rows is not None:  # K's own Nz, as the interleaved rows are laid out
            ld = nir.memref_shape(l1)[1]
            copy_bursts("cce.copy_gm_to_l1",
                        nir.subview(a.k_rows, [h, 0, y0, 0, 0], [1, d1, kbk, 16, 16]),
                        l1, d1, kbk * 16, src_gap=(a.seq_blocks - kbk) * 16,
                        dst_gap=(ld - kbk) * 16)
            return l1
        if a.sources is None:
            copy("cce.copy_gm_to_l1", nir.subview(a.k, [h, y0, 0, 0, 0], [1, kbk, d1, 16, 16]),
                 l1, 1, kbk * d1 * 16)
        else:
            first = lin((h, a.seq * a.head_dim), (y0, 16))
            self.stage(a.sources[1], first, a.head_dim, kbk * 16, a.seq, l1,
                       valid_cols=self.in_seq(y0, kbk))
        return l1

    def k_to_l0b(self, l1: ir.Value, kbk: int) -> ir.Value:
        """`load_k`'s tile -> L0B (Zn) for Q.K^T."""
        d1 = self.a.d_blocks
        if self.a.k_as_rows:
            l0b = nir.alloc([d1, kbk, 16, 16], "f16", "l0b")
            self.mm.reorder_blocks(l1, l0b, rows=1, cols=d1 * kbk, transpose=False,
                                   op_name="cce.load_l1_to_l0b", src_col_stride=1)
            return l0b
        return self.mm.to_l0b(l1, d1, kbk)

    def load_v(self, h, y0, kbk: int, into: ir.Value, ones: bool = True) -> None:
        """Keys y0.. (kbk blocks) of V as the B operand's Nz in `into`, with
        a column block of ones (see `load_rows`; `ones` False: `into` has
        them already)."""
        self.load_rows(self.a.v, 2, h, y0, kbk, into, ones)

    def stage(self, source: ir.Value, first, rows: int, cols: int, pitch: int,
              l1: ir.Value, valid_rows: int | None = None,
              valid_cols: int | None = None, q: bool = False,
              joint: bool = False) -> None:
        """rows x cols f32 of a GM matrix with `pitch` columns from element
        `first` -> UB, cast to f16 there (the absorbed cast), laid out as Nz
        in `l1` (the absorbed fractalize); the UB staging is a scope of its own.
        While `self.deferred` is a list, only the GM load is emitted here and
        the rest appended to it: the caller issues all its loads first, so
        MTE2 streams them back to back into separate buffers. An f16 source
        goes straight to L1, each column block `rows` bursts, or through UB
        where `staged_f16` takes it or its last block is partial (`q`: a tile of Q, K queued behind it;
        `joint`: staged with K, `joint_staged`).
        `valid_rows` / `valid_cols`: the last block of a seq of partial
        16-row blocks (Q, V, K's rows / K^T's columns): only those are
        read, the rest of the tile is zeroed in UB (finite: the keys' mask
        and P's zeros cancel them only then; the padded query rows are
        never stored)."""
        r, c = valid_rows or rows, valid_cols or cols
        if nir.memref_element(source) == "f16":
            assert c == cols, "f16 rows: the whole columns of a head (K read as its rows)"
            if joint or r < rows or self.staged_f16(rows, cols, q):
                # (the last block of a seq of partial blocks: through UB, its padding zeroed)
                staged = self.fetch(source, first, rows, cols, pitch, r, c)
                if r < rows:
                    self.fill(sub(staged, r * cols, (rows - r) * cols), (rows - r) * cols,
                              "f16", 0.0)
                if self.joint_layouts is None:
                    self.to_nz(staged, l1, rows, cols)
                else:  # laid out once the caller's loads are issued
                    self.joint_layouts.append(lambda: self.to_nz(staged, l1, rows, cols))
                return
            self.rows_to_nz(source, first, rows, cols, pitch, l1)
            return
        if self.deferred is None:
            self.scope(lambda: self.lay_out(self.fetch(source, first, rows, cols, pitch, r, c),
                                            l1, rows, cols, r, c))
            return
        wide = self.fetch(source, first, rows, cols, pitch, r, c)
        self.deferred.append(lambda: self.scope(lambda: self.lay_out(wide, l1, rows, cols,
                                                                     r, c)))

    def rows_to_nz(self, source: ir.Value, first, rows: int, cols: int, pitch: int,
                   l1: ir.Value) -> None:
        """rows x cols f16 of a GM matrix with `pitch` columns -> Nz in L1
        (the absorbed fractalize), one copy per 16-column block."""
        shape = nir.memref_shape(l1)
        blocks, ld = math.prod(shape[:-2]), shape[1]
        flat, (src, base) = self.mm.flat_blocks(l1, blocks), flat_rows(source)
        first = lin((first, 1), (base, 1))
        for j in range(cols // 16):
            copy("cce.copy_gm_to_l1", sub(src, lin((first, 1), (16 * j, 1)), (rows - 1) * pitch + 16),
                 self.mm.block_view(flat, j * ld, blocks), rows, 1, pitch * 2 // self.granule - 1, 0)

    def staged_f16(self, rows: int, cols: int, q: bool = False) -> bool:
        """Whether an f16 tile of rows x cols (of Q: `q`) goes through UB
        (`staged_f16` of the cost model: its bursts saved outweigh the GM
        latencies its flag adds), when its staging fits UB beside the
        kernel's footprint (`self.need`, the footprint model's, counts no
        such staging). K and V tiles loaded again for each query tile
        (`reloads_kv`) go straight to L1: staged, each step's MTE3 layout
        of them is in the step's scope, and the next step's first load into
        L1 waited for that scope's MTE3 work as a whole, its context stores
        included (BERT-base seq 208, one core, the attention apart: 103,174
        cycles straight, 170,221 staged)."""
        if self.reloads_kv and not q:
            return False
        nbytes = rows * cols * 2
        return (staged_f16(rows, cols // 16, self.t, first=q)
                and self.need["ub"] + nbytes <= self.t.capacity("ub"))

    def fetch(self, source: ir.Value, first, rows: int, cols: int, pitch: int,
              valid_rows: int | None = None, valid_cols: int | None = None) -> ir.Value:
        """rows x cols of a GM matrix with `pitch` columns -> UB, row-major:
        into the next of `wides` (f32), or a new buffer. Only the first
        `valid_rows` x `valid_cols` are read (see `stage`)."""
        g, elem = self.granule, nir.memref_element(source)
        es = nir.element_bytes(elem)
        r, c = valid_rows or rows, valid_cols or cols
        wide = self.wides.pop(0) if self.wides and elem == "f32" \
            else nir.alloc([rows * cols], elem, "ub")
        src, base = flat_rows(source)
        whole = pitch == cols and c == cols
        copy_bursts("cce.copy_gm_to_ub",
                    sub(src, lin((first, 1), (base, 1)), (r - 1) * pitch + c),
                    wide if r == rows else sub(wide, 0, r * cols),
                    1 if whole else r, r * cols * es // g if whole else c * es // g,
                    src_gap=0 if whole else (pitch - c) * es // g,
                    dst_gap=(cols - c) * es // g)
        return wide

    def lay_out(self, wide: ir.Value, l1: ir.Value, rows: int, cols: int,
                valid_rows: int | None = None, valid_cols: int | None = None) -> None:
        """The f32 staging -> f16 -> Nz; what `fetch` left out of it (the
        padding of a partial last block) zeroed first."""
        r, c = valid_rows or rows, valid_cols or cols
        if any(wide == z for z in self.zeroed):
            r, c = rows, cols  # (zeroed by an earlier head: `head_pipeline`)
        elif any(wide == z for z in self.lasting):
            self.zeroed.append(wide)
        if r < rows:
            self.fill(sub(wide, r * cols, (rows - r) * cols), (rows - r) * cols, "f32", 0.0)
        if c < cols:
            self.zero_columns(wide, rows, cols, c)
        half = nir.alloc([rows * cols], "f16", "ub")
        self.apply(cast_compute("f32", "f16", "rint"), half, [wide], rows * cols, sizes=(2, 4))
        self.to_nz(half, l1, rows, cols)

    def zero_columns(self, wide: ir.Value, rows: int, cols: int, valid: int) -> None:
        """Columns `valid`.. of every row of a row-major rows x cols f32
        matrix in UB set to 0: a repeat per row, its leading lanes."""
        per_row = cols * 4 // self.granule
        for r0 in range(0, rows, self.t.max_repeat):
            rep = min(self.t.max_repeat, rows - r0)
            nir.create_op("cce.vdup", [sub(wide, r0 * cols + valid, (rep - 1) * cols + cols - valid)],
                          repeat=rep, mask=cols - valid, dst_blk_stride=1, dst_rep_stride=per_row,
                          scalar=0.0)

    def to_nz(self, half: ir.Value, l1: ir.Value, rows: int, cols: int) -> None:
        """A row-major rows x cols f16 matrix in UB -> Nz in L1 (the absorbed
        fractalize): column block j is `rows` bursts of 16 elements, from
        block j * ld (ld: the tile's row blocks, at least rows / 16)."""
        shape = nir.memref_shape(l1)
        blocks, ld = math.prod(shape[:-2]), shape[1]
        flat = self.mm.flat_blocks(l1, blocks)
        per_row = cols * 2 // self.granule
        for j in range(cols // 16):
            dst = self.mm.block_view(flat, j * ld, blocks)
            copy("cce.copy_ub_to_l1", sub(half, 16 * j, (rows - 1) * cols + 16), dst, rows, 1,
                 per_row - 1, 0)

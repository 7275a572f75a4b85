"""The building blocks every matmul schedule of `npu-lower-matmul` shares
(and `npu-lower-attention` reuses through a `LowerMatmul` instance): tile
loops, GM -> L1 staging, L1 -> L0A/L0B reordering loads, `mad`, and the
L0C -> UB -> GM drain (with the f16 conversion or a fused epilogue)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

from mlir import ir
from mlir.dialects import arith, memref, scf

from npu import ir as nir
from npu.kernels.cce_build import copy_bursts
from npu.costmodel.fusion.rows import FUSED_UB_FRACTION
from npu.passes.base import PassError
from npu.passes.matmul_epilogue import Piece

IndexValue = ir.Value




@dataclass(frozen=True)
class Segment:
    """`count` tiles of `size` blocks starting at block `start` of a dimension."""

    start: int
    count: int
    size: int


def segments(total_blocks: int, tile_blocks: int) -> list[Segment]:
    """Full tiles, then the edge tile if the dimension is not a multiple."""
    full, rest = divmod(total_blocks, tile_blocks)
    segs = []
    if full:
        segs.append(Segment(0, full, tile_blocks))
    if rest:
        segs.append(Segment(full * tile_blocks, 1, rest))
    return segs



@dataclass
class Operands:
    """The three GM operands and the batch prefix of their indices."""

    a: ir.Value
    b: ir.Value
    c: ir.Value
    prefix: list  # [] or [batch index value]
    M1: int
    N1: int
    K1: int
    in_type: ir.Type
    out_type: ir.Type
    # Fractals from one block column (A, C) or row (B) to the next in GM: M1,
    # N1 and M1 for dense operands, more for a slice of a larger tensor
    # (npu-split-cores gives each core one).
    a_pitch: int = 0
    b_pitch: int = 0
    c_pitch: int = 0


def block_pitch(value: ir.Value, op: ir.Operation) -> int:
    """Fractals between consecutive outer blocks of an Nz GM operand; its
    fractals themselves (rows x cols: 16 x 16, or int8's 16 x 32 and 32 x 16)
    must be dense (strides [.., rows*cols, cols, 1])."""
    strides, _ = nir.memref_layout(value.type)
    rows, cols = nir.memref_shape(value)[-2:]
    if strides[-3:] != [rows * cols, cols, 1] or strides[-4] % (rows * cols):
        raise PassError(f"Nz operand {value.type} must hold whole dense fractals", op)
    return strides[-4] // (rows * cols)


class MatmulBlocks:
    """Mixed into `LowerMatmul`: uses its `target` and, in the drain, its
    `epilogue`. Buffers take their fractals' shape from the operands they
    come from (16 x 16, or int8's 16 x 32 A and 32 x 16 B blocks); the cube
    types below are the f16 ones unless `lower` sets the int8 ones."""

    # Elements of the reduction per fractal (0: the fractal edge, as for
    # f16; 32 for int8) and the accumulator's type in L0C.
    reduction_block: int = 0
    acc_type: str = "f32"

    def reduction_step(self) -> int:
        return self.reduction_block or self.target.fractal

    def l0_blocks(self, l1: ir.Value, transpose: bool) -> list[int]:
        """Fractal shape of an L0A (Zz: as in L1) or L0B (Zn: transposed)
        buffer loaded from `l1`."""
        rows, cols = nir.memref_shape(l1)[-2:]
        return [cols, rows] if transpose else [rows, cols]

    # ------------------------------------------------------------------ loops

    def emit_tiles(self, segs: Sequence[Segment], body: Callable[[IndexValue, int], None]) -> None:
        """One scf.for per segment (iv = first block of the tile). A single
        tile (an edge tile, the peeled first reduction step) gets a one-trip
        loop too: its body is the scope of the buffers it streams, so memory
        planning sees them die at its end (an alloc in a loop body lives for
        that body)."""
        for seg in segs:
            loop = nir.for_loop(seg.start, seg.start + seg.count * seg.size, seg.size)
            with ir.InsertionPoint(loop.body):
                body(loop.induction_variable, seg.size)
                nir.yield_()

    # ------------------------------------------------------------------ data movement

    def stage_a(self, ops: Operands, x: IndexValue, s: IndexValue, m: int, n: int) -> ir.Value:
        """A tile (m x n blocks) GM -> L1, kept in Nz; returns the L1 buffer."""
        return self.stage_nz(ops, ops.a, ops.a_pitch, s, x, n, m)

    def stage_b(self, ops: Operands, s: IndexValue, y: IndexValue, n: int, k: int) -> ir.Value:
        """B tile (n x k blocks) GM -> L1, kept in Nz; returns the L1 buffer."""
        return self.stage_nz(ops, ops.b, ops.b_pitch, y, s, k, n)

    def stage_nz(self, ops: Operands, matrix: ir.Value, pitch: int, col: IndexValue,
                 row: IndexValue, cols: int, rows: int) -> ir.Value:
        """`cols` column blocks of `rows` row blocks of an Nz operand, from block
        (row, col), GM -> L1: one burst per column block (its row blocks are
        contiguous in GM, `pitch` row blocks apart)."""
        src = self.nz_source(ops, matrix, col, row, cols, rows)
        l1 = nir.alloc([cols, rows] + nir.memref_shape(matrix)[-2:], ops.in_type, "l1")
        self.copy_nz(src, pitch, l1)
        return l1

    @staticmethod
    def nz_source(ops: Operands, matrix: ir.Value, col: IndexValue, row: IndexValue,
                  cols: int, rows: int) -> ir.Value:
        """The GM view of `cols` column blocks of `rows` row blocks from block (row, col)."""
        inner = nir.memref_shape(matrix)[-2:]
        return nir.subview(matrix, ops.prefix + [col, row, 0, 0],
                           [1] * len(ops.prefix) + [cols, rows] + inner)

    def copy_nz(self, src: ir.Value, pitch: int, l1: ir.Value) -> None:
        """GM view `src` (`nz_source`) -> the L1 buffer `l1` of its blocks."""
        blk = self.target.fractal_bytes(2)  # 512 bytes, int8 fractals too
        cols, rows = nir.memref_shape(l1)[:2]
        if pitch == rows and cols > 1 and _intermediate(src):
            # the column blocks follow each other in GM as in L1 (a view of
            # every row block, or a row part of a buffer stored by row parts,
            # `split_cores.row_parts`): one burst
            copy_bursts("cce.copy_gm_to_l1", src, l1, 1, self.target.blocks(cols * rows * blk))
            return
        copy_bursts("cce.copy_gm_to_l1", src, l1, cols, self.target.blocks(rows * blk),
                    src_gap=self.target.blocks((pitch - rows) * blk))

    def to_l0a(self, l1: ir.Value, m: int, n: int, first_col: int = 0) -> ir.Value:
        """Columns first_col.. (n blocks) of an L1 A tile -> L0A (Zz).
        Nz block (i, j) is at j*m + i in L1, Zz wants it at i*n + j."""
        l0a = nir.alloc([m, n] + self.l0_blocks(l1, False), nir.memref_type(l1).element_type,
                        "l0a")
        self.reorder_blocks(l1, l0a, rows=m, cols=n, transpose=False, op_name="cce.load_l1_to_l0a",
                            src_first=first_col * m, src_col_stride=m)
        return l0a

    def to_l0b(self, l1: ir.Value, n: int, k: int, first_row: int = 0) -> ir.Value:
        """Rows first_row.. (n blocks) of an L1 B tile -> L0B (Zn). Nz block
        (j, l) is at l*ld + j in L1 (ld: the L1 tile's row blocks), Zn wants
        it at j*k + l, transposed."""
        ld = nir.memref_shape(l1)[1]
        l0b = nir.alloc([n, k] + self.l0_blocks(l1, True), nir.memref_type(l1).element_type,
                        "l0b")
        self.reorder_blocks(l1, l0b, rows=n, cols=k, transpose=True, op_name="cce.load_l1_to_l0b",
                            src_first=first_row, src_col_stride=ld)
        return l0b

    def load_a(self, ops: Operands, x: IndexValue, s: IndexValue, m: int, n: int) -> ir.Value:
        """A tile (m x n blocks) GM -> L1 (Nz) -> L0A (Zz); returns the L0A buffer."""
        return self.to_l0a(self.stage_a(ops, x, s, m, n), m, n)

    def load_b(self, ops: Operands, s: IndexValue, y: IndexValue, n: int, k: int) -> ir.Value:
        """B tile (n x k blocks) GM -> L1 (Nz) -> L0B (Zn); returns the L0B buffer."""
        return self.to_l0b(self.stage_b(ops, s, y, n, k), n, k)

    def reorder_blocks(self, src: ir.Value, dst: ir.Value, rows: int, cols: int,
                       transpose: bool, op_name: str, src_first: int = 0,
                       src_col_stride: int | None = None,
                       src_base: ir.Value | None = None) -> None:
        """Copy a rows x cols grid of fractals from column-major block order
        (Nz: block (i, j) at src_first + j*src_col_stride + i) to row-major
        block order (Zz/Zn) with as few loads as possible: one load per row
        (repeat over columns) or per column (repeat over rows). `src_base`:
        a dynamic block offset added to src_first (a chunk of a resident
        strip)."""
        max_rep = self.target.max_repeat
        ld = rows if src_col_stride is None else src_col_stride
        src_blocks = 1
        for d in nir.memref_shape(src)[:-2]:
            src_blocks *= d
        flat_src = self.flat_blocks(src, src_blocks)
        flat_dst = self.flat_blocks(dst, rows * cols)
        if rows <= cols:
            # Per block row i: src blocks i, i+ld, ...; dst blocks i*cols + j.
            lines = [(src_first + i, i * cols, cols, ld, 1) for i in range(rows)]
        else:
            # Per block column j: src blocks j*ld + i; dst blocks i*cols + j.
            lines = [(src_first + j * ld, j, rows, 1, cols) for j in range(cols)]
        for src0, dst0, count, src_stride, dst_stride in lines:
            for first in range(0, count, max_rep):
                rep = min(max_rep, count - first)
                if src_base is None:
                    s = self.block_view(flat_src, src0 + first * src_stride, src_blocks)
                else:
                    s = self.dynamic_block_view(flat_src, src_base, src0 + first * src_stride,
                                                (rep - 1) * src_stride + 1)
                d = self.block_view(flat_dst, dst0 + first * dst_stride, rows * cols)
                nir.create_op(op_name, [s, d], repeat=rep, src_stride=src_stride,
                              dst_stride=dst_stride, transpose=transpose)

    def flat_blocks(self, buf: ir.Value, blocks: int) -> ir.Value:
        """The buffer viewed as [blocks, rows, cols] of its fractals (static
        shapes collapse freely)."""
        shape = nir.memref_shape(buf)
        if len(shape) == 3:
            return buf
        t = nir.memref_type(buf)
        result = ir.MemRefType.get([blocks] + shape[-2:], t.element_type, None, t.memory_space)
        return memref.CollapseShapeOp(result, buf, [[0, 1], [2], [3]]).result

    def block_view(self, flat: ir.Value, first: int, total: int) -> ir.Value:
        """From block `first` to the end of the buffer: the operand address is
        the first block, the view covers everything the instruction may touch."""
        return nir.subview(flat, [first, 0, 0], [total - first] + nir.memref_shape(flat)[1:])

    def dynamic_block_view(self, flat: ir.Value, base: ir.Value, first: int, blocks: int
                           ) -> ir.Value:
        """`blocks` fractals from block base + first (the extent the
        instruction touches: the end of the buffer is not static)."""
        start = arith.AddIOp(base, nir.index_const(first)).result if first else base
        return nir.subview(flat, [start, 0, 0], [blocks] + nir.memref_shape(flat)[1:])

    def mad(self, a0: ir.Value, b0: ir.Value, c: ir.Value, m: int, n: int, k: int,
            accumulate: bool | ir.Value) -> None:
        """`accumulate` is static, or an i1 "first step" flag: then an scf.if
        holds the overwriting mad and its else branch the accumulating one."""
        frac = self.target.fractal
        if isinstance(accumulate, ir.Value):
            branch = scf.IfOp(accumulate, [], has_else=True)
            for block, acc in ((branch.then_block, False), (branch.else_block, True)):
                with ir.InsertionPoint(block):
                    self.mad(a0, b0, c, m, n, k, acc)
                    scf.YieldOp([])
            return
        nir.create_op("cce.mad", [a0, b0, c], m=m * frac, n=n * self.reduction_step(), k=k * frac,
                      accumulate=accumulate)

    def write_back(self, ops: Operands, c_l0c: ir.Value, x: IndexValue, y: IndexValue,
                   m: int, k: int, ub_budget: int | None = None,
                   landing: ir.Value | None = None) -> None:
        """C tile (k column blocks x m row blocks, Nz, f32) L0C -> UB -> GM, in
        chunks of whole column blocks that fit UB, or `ub_budget` bytes of it
        (with the f16 copy if C is f16). `landing`: the UB buffer the tile
        moves to when it drains in one chunk (else one allocated here)."""
        out_name = str(ops.out_type)
        convert = out_name != self.acc_type
        if self.epilogue is not None:
            chunk = min(k, self.epilogue_part_columns(m))
        else:
            acc_blk = self.target.fractal_bytes(4)
            out_blk = self.target.fractal_bytes(nir.element_bytes(out_name))
            per_column = m * (acc_blk + (out_blk if convert else 0))
            budget = self.target.capacity("ub") if ub_budget is None else ub_budget
            chunk = min(k, max(1, budget // per_column))
        flat = self.flat_blocks(c_l0c, k * m)
        # Several chunks in one loop body would all live for the whole body
        # (memory planning scopes a buffer by the loop it is allocated in) and
        # together overflow UB: each chunk then gets its own one-trip loop.
        # The pipelined schedule drains inside an scf.if, where lifetimes are
        # the uses, and passes `ub_budget`.
        scoped = ub_budget is None and chunk < k
        for c0 in range(0, k, chunk):
            cols = min(chunk, k - c0)
            if scoped:
                part = nir.for_loop(0, 1, 1)
                with ir.InsertionPoint(part.body):
                    self.drain_chunk(ops, flat, x, y, m, k, c0, cols, convert)
                    nir.yield_()
            else:
                self.drain_chunk(ops, flat, x, y, m, k, c0, cols, convert,
                                 landing if cols == k else None)

    def epilogue_part_columns(self, m: int, staged: int = 0) -> int:
        """Column blocks (of m row blocks) of C one epilogue part may drain.

        npu-fuse's share sizes the epilogue's parts: all of UB at the
        default share (less when npu-lower retries fusion at a smaller one),
        in both schedules: an epilogue's vector work dominates, and longer
        runs and fewer flag pairs pay more (BERT ffn_in + GELU 281k -> 252k).
        `staged`: UB bytes the pipelined schedule's staged piece holds
        (0 when it returns 0, a part does not fit beside it)."""
        share = self.epilogue.ub_budget
        budget = min(self.target.capacity("ub"),
                     int(share / FUSED_UB_FRACTION) + self.target.granule("ub"))
        budget -= self.epilogue.resident_bytes  # the broadcast rows, for the whole matmul
        per_column = m * self.epilogue.bytes_per_fractal
        if staged:
            return max(0, budget - staged) // per_column
        return max(1, budget // per_column)

    def drain_chunk(self, ops: Operands, flat: ir.Value, x: IndexValue, y: IndexValue, m: int,
                    k: int, c0: int, cols: int, convert: bool,
                    landing: ir.Value | None = None) -> None:
        """Column blocks c0 .. c0+cols of a C tile: L0C -> UB (-> f16) -> GM
        (into `landing` if given)."""
        frac = self.target.fractal
        out_blk = self.target.fractal_bytes(nir.element_bytes(str(ops.out_type)))
        src = self.block_view(flat, c0 * m, k * m)
        drained = self.acc_type if self.epilogue is None else self.epilogue.drain_type
        ub32 = landing if landing is not None else nir.alloc([cols, m, frac, frac], drained, "ub")
        self.move_to_ub(src, ub32, cols * m)
        col = y if c0 == 0 else arith.AddIOp(y, nir.index_const(c0)).result
        if self.epilogue is not None:
            self.epilogue.emit(ub32, Piece(ops.prefix, col, x, cols, m))
            return
        out = ub32
        if convert:
            out = nir.alloc([cols, m, frac, frac], ops.out_type, "ub")
            self.convert(ub32, out, cols * m * frac * frac)
        dst = nir.subview(self.chained_l1(ops.c) or ops.c, ops.prefix + [col, x, 0, 0],
                          [1] * len(ops.prefix) + [cols, m, frac, frac])
        copy_bursts(self.store_name(ops.c), out, dst, cols, self.target.blocks(m * out_blk),
                    dst_gap=self.target.blocks((ops.c_pitch - m) * out_blk))

    def move_to_ub(self, src: ir.Value, dst: ir.Value, fractals: int) -> None:
        """`fractals` f32 fractals L0C -> UB as one burst, rounded to f16 on
        the way when `dst` is f16 (the move's conversion)."""
        convert = {"convert": "f32_to_f16"} if nir.memref_element(dst) == "f16" else {}
        nir.create_op("cce.copy_l0c_to_ub", [src, dst], n_burst=1,
                      burst_len=self.target.blocks(fractals * self.target.fractal_bytes(4)),
                      src_gap=0, dst_gap=0, **convert)

    def convert(self, src: ir.Value, dst: ir.Value, elements: int) -> None:
        """f32 -> f16 with vconv over whole repeats (elements is a multiple of 256)."""
        t = self.target
        lanes = t.lanes(4)
        unit = t.vector_block_bytes
        repeats = elements // lanes
        assert repeats * lanes == elements
        flat_src, flat_dst = nir.flatten_memref(src), nir.flatten_memref(dst)
        for first in range(0, repeats, t.max_repeat):
            rep = min(t.max_repeat, repeats - first)
            e0 = first * lanes
            s = nir.subview(flat_src, [e0], [elements - e0])
            d = nir.subview(flat_dst, [e0], [elements - e0])
            nir.create_op("cce.vconv", [d, s], repeat=rep, mask=lanes, dst_blk_stride=1,
                          dst_rep_stride=lanes * 2 // unit, src_blk_stride=1,
                          src_rep_stride=lanes * 4 // unit, round_mode="rint")


def _intermediate(view: ir.Value) -> bool:
    """Whether `view` is of a buffer the program computes (an alloc, or its
    place in the GM workspace after npu-plan-gm), not an argument's: the
    weights' copies npu-prefetch cuts at bursts, and the inputs' keep the
    caller's layout."""
    root = nir.view_root(view)
    if not nir.is_block_argument(root):
        return True
    arg = ir.BlockArgument(root)
    func = arg.owner.owner.operation
    return func.name == "func.func" and nir.WORKSPACE_ATTR in nir.arg_attrs(func, arg.arg_number)

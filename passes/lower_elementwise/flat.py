"""Inputs that are all full or scalar: the tensors flattened and streamed
through UB in chunks (plus the helpers the row lowering shares)."""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np
from mlir import ir

from npu import ir as nir
from npu.costmodel.vector.recipes import Compute
from npu.costmodel.vector.tiling import (ChunkPlan, VectorGeometry, max_chunk_elements, plan_chunks,
                                         round_down, split_repeats)
from npu.kernels.cce_build import View, copy, index_mul, sub
from npu.kernels.scalar_blocks import load_scalar
from npu.kernels.vector_compute import constant_blocks, emit
from npu.passes.base import Pass, PassError

from .operands import Input


def writes_in_place(p: Pass, compute: Compute, full: list[Input]) -> bool:
    """Whether the result overwrites the first streamed input's buffer (vector
    ops may write their own source lanes), saving one buffer per element.

    With two streamed inputs this is free. With one, the buffer would chain
    load -> compute -> store -> next load of the same buffer, which double
    buffering cannot overlap (one ping-pong copy busy for the whole chain);
    a separate output buffer lets the next load start once the compute has
    read the input. `in-place-unary` trades that for chunks twice as big
    (fewer transfers: better without double buffering)."""
    if compute.kind in ("cast", "cmp", "select") or not full:
        return False  # the output's type differs from the first streamed input's
    return len(full) >= 2 or p.in_place_unary


def budget_bytes(p: Pass, fixed_bytes: int) -> int:
    """UB bytes one iteration's streamed buffers may take."""
    return int((p.target.capacity("ub") - fixed_bytes) * p.ub_fraction)


def stream_chunks(plan: ChunkPlan, load_piece: Callable[[object, int], dict],
                  store_piece: Callable[[object, int, dict], None], aliased: bool) -> None:
    """Load, compute and store each piece of `plan`: an scf.for over the full
    chunks, then the tail. When the output aliases an input, the tail's
    overlap would re-read already-computed elements, so the tail's inputs are
    loaded before the loop."""
    preloaded = None
    if plan.tail is not None and plan.full_chunks and aliased:
        preloaded = load_piece(plan.tail.start, plan.tail.length)
    if plan.full_chunks:
        loop = nir.for_loop(0, plan.full_chunks)
        with ir.InsertionPoint(loop.body):
            start = index_mul(loop.induction_variable, plan.chunk)
            store_piece(start, plan.chunk, load_piece(start, plan.chunk))
            nir.yield_()
    if plan.tail is not None:
        bufs = preloaded or load_piece(plan.tail.start, plan.tail.length)
        store_piece(plan.tail.start, plan.tail.length, bufs)


class FlatLowering:
    """All inputs full or scalar: flatten and chunk."""

    def __init__(self, p: Pass, op: ir.Operation, inputs: list[Input], out: ir.Value,
                 out_shape: Sequence[int], out_elem: str, compute: Compute):
        self.p, self.op, self.inputs, self.out, self.out_elem = p, op, inputs, out, out_elem
        self.compute = compute
        self.total = int(np.prod(out_shape))
        temp_bytes = [nir.element_bytes(t) for t in compute.temps]
        sizes = [nir.element_bytes(i.elem) for i in inputs] + [nir.element_bytes(out_elem)]
        self.geo = VectorGeometry.for_types(p.target, sizes + temp_bytes)
        self.full = [i for i in inputs if i.kind == "full"]
        self.in_place = writes_in_place(p, compute, self.full)
        per_elem = sum(nir.element_bytes(i.elem) for i in self.full)
        if not self.in_place:
            per_elem += nir.element_bytes(out_elem)
        self.per_elem = per_elem + sum(temp_bytes)

    def scalar_bytes(self) -> int:
        granule = self.p.target.granule("ub")
        return granule * (3 * sum(1 for i in self.inputs if i.kind == "scalar")
                          + len(self.compute.constants))

    def plan(self) -> ChunkPlan:
        budget = budget_bytes(self.p, self.scalar_bytes())
        try:
            chunk = max_chunk_elements(budget, self.per_elem, self.geo.lanes)
        except ValueError as e:
            raise PassError(str(e), self.op) from None
        if self.p.max_chunk:
            chunk = min(chunk, max(self.geo.lanes, round_down(self.p.max_chunk, self.geo.lanes)))
        # A tensor under one block gets one padded piece (README: GM granules).
        return plan_chunks(self.total, chunk, self.geo.block)

    def emit(self) -> None:
        plan = self.plan()
        self.flat = {id(i): nir.flatten_memref(i.value) for i in self.inputs}
        flat_out = nir.flatten_memref(self.out)
        self.flat_out = flat_out
        self.scalar_views = {id(i): self.load_scalar(i) for i in self.inputs if i.kind == "scalar"}
        self.consts = constant_blocks(self.compute, self.p.target)
        stream_chunks(plan, self.load_piece, self.store_piece,
                      aliased=any(i.aliases_out for i in self.full))

    def load_scalar(self, inp: Input) -> View:
        return load_scalar(self.p.target, inp.elem, self.flat[id(inp)], self.op)

    def load_piece(self, start, length: int) -> dict:
        bufs = {}
        for inp in self.full:
            es = nir.element_bytes(inp.elem)
            buf = nir.alloc([length], inp.elem, "ub")
            copy("cce.copy_gm_to_ub", sub(self.flat[id(inp)], start, length), buf, 1,
                 self.moved_granules(length, es))
            bufs[id(inp)] = buf
        return bufs

    def store_piece(self, start, length: int, bufs: dict) -> None:
        block_bytes = self.p.target.granule("ub")
        if self.in_place:
            out_buf = bufs[id(self.full[0])]
        else:
            out_buf = nir.alloc([length], self.out_elem, "ub")
        out_es = nir.element_bytes(self.out_elem)
        lanes = self.geo.lanes
        tmp_bufs = [(nir.alloc([length], t, "ub"), nir.element_bytes(t)) for t in self.compute.temps]
        # Only the tensor's own elements are computed (a padded piece is longer).
        for ins in split_repeats(min(length, self.total), lanes, self.geo.max_repeat):
            touched = (ins.repeat - 1) * lanes + ins.mask
            dst = View(sub(out_buf, ins.offset, touched), 1, lanes * out_es // block_bytes)
            tmps = [View(sub(buf, ins.offset, touched), 1, lanes * es // block_bytes)
                    for buf, es in tmp_bufs]
            srcs = []
            for inp in self.inputs:
                if inp.kind == "scalar":
                    srcs.append(self.scalar_views[id(inp)])
                else:
                    es = nir.element_bytes(inp.elem)
                    srcs.append(View(sub(bufs[id(inp)], ins.offset, touched), 1,
                                     lanes * es // block_bytes))
            emit(self.compute, dst, srcs, ins.repeat, ins.mask, tmps, self.consts)
        copy("cce.copy_ub_to_gm", out_buf, sub(self.flat_out, start, length), 1,
             self.moved_granules(length, out_es))

    def moved_granules(self, length: int, es: int) -> int:
        """Granules one piece moves between GM and UB. A padded piece (the
        tensor is under one common block) moves only the granules the
        tensor's own elements start in: with mixed element sizes the piece
        is longer than the narrow tensors' one padded granule."""
        block_bytes = self.p.target.granule("ub")
        return -(-min(length, self.total) * es // block_bytes)

"""The general transpose in tiles, for `npu-lower-transpose`, when the whole
tensor does not fit UB and neither `gather_in_boxes` (a chunk of the
result's first dim) nor the batch chunks of `LowerTranspose.gather` apply:
MobileViT's [32, 16, 4] -> [4, 16, 32] f32, or a batch of 14 x 14 maps
whose chunks are not whole blocks.

One input dim `d` is cut into pieces of `m` indices. A piece is a box on
both sides: in the source, runs of m * (elements after d) and in the
result, runs of m * (elements after d's output position). Each piece is
  1. copied from the source to a GM scratch by run copies (skipped when d
     is the source's first dim and the piece is whole blocks: the box is
     then contiguous);
  2. transposed whole by one `GatherTranspose` into a second GM scratch;
  3. copied from there into the result's box by run copies (skipped when d
     is the result's first dim and the piece is whole blocks).
Both run lengths must be at least one block (`RunCopies`), and the piece
must fit UB; of the dims that allow it, the one with the largest piece
wins. A tail shorter than `m` is moved back to end at the dim's end (its
leading indices are transposed twice, with identical results)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from mlir import ir

from npu import ir as nir
from npu.analysis.slice_runs import RunMap
from npu.costmodel.vector.tiling import ChunkPlan, Piece, round_down, round_up
from npu.kernels.cce_build import for_pieces, lin, sub
from npu.kernels.run_copies import RunCopies
from npu.passes.transpose_general import GatherTranspose, halving_fit


def _strides(shape: list[int]) -> list[int]:
    return [int(np.prod(shape[k + 1:])) for k in range(len(shape))]


@dataclass
class TileCut:
    """Input dim `dim` cut into pieces of `size` indices, each gathered by
    `gather`, or (None) cut again by the next `TileCut` of the plan."""
    dim: int
    size: int
    gather: GatherTranspose | None

    def box(self, shape: list[int]) -> list[int]:
        return shape[:self.dim] + [self.size] + shape[self.dim + 1:]


def plan_cuts(p, op: ir.Operation, elem: str, shape: list[int], perm: list[int]
              ) -> list[TileCut] | None:
    """The cuts, outermost first: the one cut with the largest piece that
    fits UB and whose runs on both sides are at least a block; when no
    single cut fits, the smallest piece of some dim cut again (a box of a
    [143, 54, 3] f16 transpose is still too large after one cut). None when
    no plan exists."""
    b = p.target.granule("ub") // nir.element_bytes(elem)
    out_shape = [shape[k] for k in perm]
    in_st, out_st = _strides(shape), _strides(out_shape)
    best: TileCut | None = None
    smallest: list[TileCut] = []
    for d in range(len(shape)):
        least = max(-(-b // in_st[d]), -(-b // out_st[perm.index(d)]), 1)
        if least >= shape[d]:
            continue
        smallest.append(TileCut(d, least, None))

        def build(m: int, d=d) -> GatherTranspose:
            return GatherTranspose(p, op, elem, shape[:d] + [m] + shape[d + 1:], perm)

        found = halving_fit(shape[d], least, build)
        if found is not None and (best is None or int(np.prod(TileCut(d, *found).box(shape)))
                                  > int(np.prod(best.box(shape)))):
            best = TileCut(d, *found)
    if best is not None:
        return [best]
    for cut in sorted(smallest, key=lambda c: int(np.prod(c.box(shape)))):
        inner = plan_cuts(p, op, elem, cut.box(shape), perm)
        if inner is not None:
            return [cut] + inner
    return None


def gather_in_tiles(p, op: ir.Operation, src: ir.Value, dst: ir.Value, elem: str,
                    shape: list[int], perm: list[int]) -> bool:
    """The transpose in pieces (module docstring); False when no plan fits."""
    cuts = plan_cuts(p, op, elem, shape, perm)
    if cuts is None:
        return False
    emit_cuts(p, cuts, src, dst, elem, shape, perm)
    return True


def emit_cuts(p, cuts: list[TileCut], src: ir.Value, dst: ir.Value, elem: str,
              shape: list[int], perm: list[int]) -> None:
    """The first cut's pieces, each gathered or cut by the rest."""
    es = nir.element_bytes(elem)
    b = p.target.granule("ub") // es
    cut = cuts[0]
    d, m = cut.dim, cut.size
    q = perm.index(d)
    out_shape = [shape[k] for k in perm]
    in_st, out_st = _strides(shape), _strides(out_shape)
    box_in = cut.box(shape)
    box_out = [box_in[k] for k in perm]
    piece = int(np.prod(box_in))
    flat_src, flat_dst = nir.flatten_memref(src), nir.flatten_memref(dst)
    chunk_elems = max(b, round_down(p.budget() // es, b))
    copies = RunCopies(p.target, elem, chunk_elems)
    whole = piece % b == 0  # a contiguous box is used in place only then (no reads past the end)
    src_box = None if d == 0 and whole else nir.core_scratch([round_up(piece, b)], elem)
    direct_out = q == 0 and whole
    out_box = None if direct_out else nir.core_scratch([round_up(piece, b)], elem)

    def transpose(box: ir.Value, out: ir.Value) -> None:
        if cut.gather is not None:
            cut.gather.emit(box, out)
        else:
            emit_cuts(p, cuts[1:], box, out, elem, box_in, perm)

    def one(i0, _length: int) -> None:
        if src_box is None:
            box = sub(flat_src, lin((i0, in_st[0])), piece)
        else:
            copies.rows(RunMap(shape[:d], in_st[:d], _strides(box_in)[:d], lin((i0, in_st[d])), 0,
                               m * in_st[d]), flat_src, src_box)
            box = src_box
        if out_box is None:
            transpose(box, sub(flat_dst, lin((i0, out_st[0])), piece))
            return
        transpose(box, out_box)
        copies.rows(RunMap(out_shape[:q], _strides(box_out)[:q], out_st[:q], 0,
                           lin((i0, out_st[q])), m * out_st[q]), out_box, flat_dst)

    full, rest = divmod(shape[d], m)
    tail = Piece(shape[d] - m, m, m - rest) if rest else None
    for_pieces(ChunkPlan(shape[d], m, full, tail), one)

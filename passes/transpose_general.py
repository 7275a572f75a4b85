"""Any permutation, for `npu-lower-transpose`: dimension merging, a plain
copy for permutations that move only size-1 dims, and the general fallback.

`collapse_permutation` drops size-1 dims and merges input dims that stay
adjacent and in order in the output, so e.g. [2, 0, 1] on [4, 16, 32] is
the 2-D transpose [64, 32] -> [32, 64] and the fast vnchwconv / block-copy
forms apply to more permutations.

The general fallback (`GatherTranspose`) works for every permutation of a
2- or 4-byte type whose input fits in UB (small and odd shapes, where the
fast forms need at least one 16 x block tile):
  1. load the whole input (contiguous, one copy);
  2. expand every element to its own 32-byte block with `vnchwconv` (all 16
     source rows read the same block, so row j of the transpose is element
     j repeated);
  3. assemble the output order block by block: each output row (the last
     output dim, `n` elements, input stride `s`) is one `copy_ub_to_ub` of
     n one-block bursts with source gap s - 1 blocks;
  4. compact the blocks back to elements with `vnchwconv` (16 blocks in, the
     first row of the transpose holds their 16 leading elements; the other
     rows go to a scratch area);
  5. store the output (one copy).
The cost is two vnchwconv passes over 16x (f16) / 8x (f32) the data plus
one UB copy instruction per output row, so it is meant for tensors of a few
thousand elements; larger ones go through `rotation_steps` (a chain of
last-two swaps via GM temporaries, in `npu-lower-transpose`) when every step
has a whole vnchwconv tile, else through `gather_in_boxes` (the gather on
chunks of the result's first dim, each chunk's source box copied to a GM
scratch first), else through `npu.passes.transpose_tiled` (pieces cut
along any dim, boxes on both sides), and are rejected at the op when no
piece fits.
"""

from __future__ import annotations

import math
from typing import Callable, Sequence, TypeVar

import numpy as np
from mlir import ir

from npu import ir as nir
from npu.analysis.slice_runs import RunMap
from npu.kernels.cce_build import copy, delinearize, for_pieces, for_range, lin, sub
from npu.kernels.run_copies import RunCopies
from npu.passes.base import PassError
from npu.costmodel.vector.tiling import ChunkPlan, Piece, plan_chunks, round_down, round_up

T = TypeVar("T")


def permutation_groups(shape: Sequence[int], perm: Sequence[int]) -> list[list[int]]:
    """The runs of input dims (size-1 dims left out) that stay consecutive in
    the output, in output order: each moves as one dim."""
    keep = [d for d in range(len(shape)) if shape[d] != 1]
    groups: list[list[int]] = []
    for p in (d for d in perm if shape[d] != 1):
        if groups and keep.index(groups[-1][-1]) + 1 == keep.index(p):
            groups[-1].append(p)
        else:
            groups.append([p])
    return groups


def collapse_permutation(shape: Sequence[int], perm: Sequence[int]
                         ) -> tuple[list[int], list[int]]:
    """(shape, permutation) with size-1 dims dropped and runs of input dims
    that stay consecutive in the output merged into one dim."""
    groups = permutation_groups(shape, perm)
    order = sorted(range(len(groups)), key=lambda g: groups[g][0])
    merged_shape = [int(np.prod([shape[d] for d in groups[g]])) for g in order]
    position = {g: i for i, g in enumerate(order)}
    return merged_shape, [position[g] for g in range(len(groups))]


def rotation_steps(shape: Sequence[int], perm: Sequence[int]) -> list[tuple[int, int, int]]:
    """The permutation as a chain of block rotations [B, X, Y] -> [B, Y, X]
    (each a last-two swap of merged dims): output position j = 0, 1, ...
    gets its dim by rotating the dims before it to the end. Returns the
    (batch, rows, cols) of each step; at most rank - 1 steps."""
    cur = list(range(len(shape)))
    steps = []
    for j, d in enumerate(perm):
        p = cur.index(d)
        if p == j:
            continue
        size = lambda dims: int(np.prod([shape[x] for x in dims]))  # noqa: E731
        steps.append((size(cur[:j]), size(cur[j:p]), size(cur[p:])))
        cur = cur[:j] + cur[p:] + cur[j:p]
    return steps


def copy_through_ub(p, src: ir.Value, dst: ir.Value, elem: str, total: int) -> None:
    """dst = src for contiguous memrefs: chunks through UB, whole blocks, the
    last chunk moved back to end at the tensor's end (overlap)."""
    es = nir.element_bytes(elem)
    g = p.target.granule("ub")
    block = g // es
    chunk = max(block, round_down(int(p.target.capacity("ub") * p.ub_fraction) // es, block))
    plan = plan_chunks(total, chunk, block)
    flat_src, flat_dst = nir.flatten_memref(src), nir.flatten_memref(dst)

    def piece(start, length: int) -> None:
        buf = nir.alloc([length], elem, "ub")
        copy("cce.copy_gm_to_ub", sub(flat_src, start, length), buf, 1, length * es // g)
        copy("cce.copy_ub_to_gm", buf, sub(flat_dst, start, length), 1, length * es // g)

    for_pieces(plan, piece)


def vnchwconv(p, dst: ir.Value, src: ir.Value, repeats: int, src_offsets: list[int],
              dst_offsets: list[int], src_rep: int, dst_rep: int, src_step: int,
              dst_step: int) -> None:
    """vnchwconv over `repeats` repeats, split at max_repeat; `*_step`:
    elements one repeat advances each operand."""
    done = 0
    while done < repeats:
        rep = min(repeats - done, p.target.max_repeat)
        s = sub(src, done * src_step, nir.memref_shape(src)[0] - done * src_step)
        d = sub(dst, done * dst_step, nir.memref_shape(dst)[0] - done * dst_step)
        nir.create_op("cce.vnchwconv", [d, s], repeat=rep, src_offsets=src_offsets,
                      dst_offsets=dst_offsets, src_rep_stride=src_rep, dst_rep_stride=dst_rep)
        done += rep


def expand_to_blocks(p, inp: ir.Value, expanded: ir.Value, count: int, es: int) -> None:
    """Block i of `expanded` = element i of `inp` repeated, i < count (a
    repeat reads one source block and writes one block per element)."""
    b = p.target.granule("ub") // es
    rows = p.target.fractal
    if es == 2:
        dst_offsets = list(range(rows))
    else:  # 4-byte: result row t in halves to offsets 2t, 2t+1 (equal halves)
        dst_offsets = [t for t in range(b) for _ in range(2)]
    vnchwconv(p, expanded, inp, -(-count // b), [0] * rows, dst_offsets, 1, b, b, b * b)


def compact_blocks(p, blocks: ir.Value, out: ir.Value, groups: int, es: int) -> None:
    """Element j of `out` = leading element of block j of `blocks`, for
    j < 16 * groups: per repeat 16 blocks are transposed; the first result
    row (16 elements) is the compacted run, the other rows land in a scratch
    area after the output (`out` holds 2 * out_blocks + 2 blocks)."""
    b, rows = p.target.granule("ub") // es, p.target.fractal
    per_rep = rows // b  # output blocks one repeat produces (1 f16, 2 f32)
    scratch = groups * per_rep  # rows 1.. of every repeat, overwriting each other
    if es == 2:
        dst_offsets = [0] + [scratch] * (rows - 1)
    else:
        dst_offsets = [0, 1] + [scratch] * (rows - 2)
    vnchwconv(p, out, blocks, groups, list(range(rows)), dst_offsets, rows, per_rep, rows * b,
              per_rep * b)


class GatherTranspose:
    """The general fallback (module docstring) for one op."""

    def __init__(self, p, op: ir.Operation, elem: str, shape: Sequence[int],
                 perm: Sequence[int]):
        self.p, self.op, self.elem = p, op, elem
        self.shape, self.perm = list(shape), list(perm)
        self.es = nir.element_bytes(elem)
        self.granule = p.target.granule("ub")
        self.rows = p.target.fractal  # vnchwconv rows per repeat
        self.block = self.granule // self.es
        if self.es not in (2, 4):
            raise PassError(f"transpose of {elem} is not supported (vnchwconv handles 2- and "
                            "4-byte types)", op)
        self.total = int(np.prod(shape))
        self.groups = -(-self.total // self.rows)  # vnchwconv repeats of the compaction
        need = self.ub_bytes()
        budget = int(p.target.capacity("ub") * p.ub_fraction)
        if need > budget:
            raise PassError(f"permutation {list(perm)} of shape {list(shape)} needs the general "
                            f"transpose, which holds the whole tensor in UB ({need} bytes, "
                            f"budget {budget}); larger tensors need the last-two swap, the swap "
                            "before a last dim of whole blocks, a chain of last-two swaps each "
                            f"with at least {self.rows} rows and one block of columns, or pieces "
                            "cut along a dim (runs of a block or more on both sides) that fit "
                            "UB", op)

    def ub_bytes(self) -> int:
        g = self.granule
        blocks = self.groups * self.rows  # expanded / assembled buffers, one block per element
        out_blocks = self.groups * self.rows // self.block
        return (round_up(self.total, self.block) * self.es + 2 * blocks * g
                + (2 * out_blocks + 2) * g)

    def emit(self, src: ir.Value, dst: ir.Value) -> None:
        es, g, elem, total = self.es, self.granule, self.elem, self.total
        padded = round_up(total, self.block)
        blocks = self.groups * self.rows
        inp = nir.alloc([padded], elem, "ub")
        copy("cce.copy_gm_to_ub", nir.flatten_memref(src), inp, 1, padded * es // g)
        expanded = nir.alloc([blocks * self.block], elem, "ub")
        expand_to_blocks(self.p, inp, expanded, total, es)
        assembled = nir.alloc([blocks * self.block], elem, "ub")
        self.assemble(expanded, assembled)
        out_blocks = blocks // self.block
        # The compacted output, then the scratch rows of the compaction.
        out = nir.alloc([(2 * out_blocks + 2) * self.block], elem, "ub")
        compact_blocks(self.p, assembled, out, self.groups, es)
        copy("cce.copy_ub_to_gm", sub(out, 0, padded), nir.flatten_memref(dst), 1,
             padded * es // g)

    def assemble(self, expanded: ir.Value, assembled: ir.Value) -> None:
        """Block j of `assembled` = block src(j) of `expanded`, one UB copy per
        output row."""
        out_shape = [self.shape[p] for p in self.perm]
        in_strides = [int(np.prod(self.shape[d + 1:])) for d in range(len(self.shape))]
        n = out_shape[-1]
        stride = in_strides[self.perm[-1]]
        lead = out_shape[:-1]
        lead_strides = [in_strides[p] for p in self.perm[:-1]]
        b = self.block

        def row(i) -> None:
            index = delinearize(i, lead) if lead else []
            start = lin(*[(ix, st * b) for ix, st in zip(index, lead_strides)])
            copy("cce.copy_ub_to_ub", sub(expanded, start, ((n - 1) * stride + 1) * b),
                 sub(assembled, lin((i, n * b)), n * b), n, 1, src_gap=stride - 1, dst_gap=0)

        for_range(int(np.prod(lead)) if lead else 1, row)


def halving_fit(total: int, step: int, build: Callable[[int], T]) -> tuple[int, T] | None:
    """The largest of total / 2, total / 4, ... (each rounded down to a
    multiple of `step`, at least `step`) for which `build(n)` does not
    refuse with a PassError, and what it built; None when none fits. The
    chunked fallbacks of tensors too large for UB (`gather_in_boxes`, the
    slices' element gather, the small elementwise kernel) look for their
    chunk so."""
    n = round_down(total // 2, step)
    while n >= step:
        try:
            return n, build(n)
        except PassError:
            n = round_down(n // 2, step)
    return None


def gather_in_boxes(p, op: ir.Operation, src: ir.Value, dst: ir.Value, elem: str,
                    shape: list[int], perm: list[int]) -> bool:
    """The general fallback on chunks of the result's first dim, when the
    whole tensor does not fit UB (a channel shuffle of 2x2 planes,
    [2, 232, 4] -> [232, 2, 4] f32): each chunk's box of the source (that
    dim cut, runs of at least one block) is copied to a GM scratch by run
    copies, then gathered whole into its contiguous piece of the result, a
    whole number of blocks. False when no chunk fits (or the first dim
    stays in place: `LowerTranspose.gather` cuts that one directly)."""
    k = perm[0]
    if k == 0:
        return False
    es = nir.element_bytes(elem)
    b = p.target.granule("ub") // es
    inner = int(np.prod(shape[k + 1:]))  # source elements per index of dim k
    out_inner = int(np.prod([shape[d] for d in perm[1:]]))
    step = b // math.gcd(out_inner, b)
    step *= -(-b // (step * inner)) if step * inner < b else 1  # runs of at least a block
    found = halving_fit(shape[k], step,
                        lambda n: GatherTranspose(p, op, elem, shape[:k] + [n] + shape[k + 1:], perm))
    if found is None:
        return False
    n, gather = found
    lead = shape[:k]
    src_strides = [int(np.prod(shape[d + 1:])) for d in range(k)]
    flat_src, flat_dst = nir.flatten_memref(src), nir.flatten_memref(dst)
    scratch = nir.core_scratch([round_up(int(np.prod(lead)) * n * inner, b)], elem)
    chunk_elems = max(b, round_down(int(p.target.capacity("ub") * p.ub_fraction) // es, b))

    def chunk(c0, m: int) -> None:
        box_strides = [int(np.prod(lead[d + 1:])) * m * inner for d in range(k)]
        runs = RunMap(list(lead), src_strides, box_strides, lin((c0, inner)), 0, m * inner)
        box = sub(scratch, 0, round_up(int(np.prod(lead)) * m * inner, b))
        RunCopies(p.target, elem, chunk_elems).rows(runs, flat_src, box)
        g = gather if m == n else GatherTranspose(p, op, elem, shape[:k] + [m] + shape[k + 1:],
                                                   perm)
        g.emit(box, sub(flat_dst, lin((c0, out_inner)), m * out_inner))

    plan = plan_chunks(shape[k], n, 1)
    rest = shape[k] % n
    if rest and rest * inner < b:  # a tail's runs under a block: moved back to end at the end
        plan = ChunkPlan(shape[k], n, shape[k] // n, Piece(shape[k] - n, n, n - rest))
    for_pieces(plan, chunk)
    return True

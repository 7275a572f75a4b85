"""Chunking, repeat/mask splitting and the overlap tail scheme shared by the
vector lowerings (elementwise, cast, clamp, transpose, reduce).

Pure Python on integers so it can be unit-tested without MLIR. Every
hardware number comes in through a `VectorGeometry` built from a `Target`.

Vocabulary (all counts in elements unless the name says bytes):
  lanes        elements one vector repeat covers (256 B / widest operand)
  block        elements of the common 32-byte granule of every operand, so a
               run of whole blocks is a whole number of granules for each
               operand (f16->f32 cast: 16; i8->f16: 32)
  chunk        elements moved GM->UB and processed per loop iteration
  tail piece   the last, shorter piece; when the remainder is not a whole
               number of blocks it is extended *backwards* to a whole number
               of blocks ("overlap"): a few elements of the previous chunk
               are re-loaded, re-computed and re-stored, so nothing is read
               or written past the end of a GM tensor (thesis 6.4.3).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

from npu.target import Target


def round_up(value: int, multiple: int) -> int:
    return -(-value // multiple) * multiple


def round_down(value: int, multiple: int) -> int:
    return value // multiple * multiple


@dataclass(frozen=True)
class VectorGeometry:
    """The vector-unit numbers a lowering needs, for one set of operand types."""

    lanes: int
    block: int
    max_repeat: int
    block_bytes: int

    @staticmethod
    def for_types(target: Target, elem_bytes: Sequence[int]) -> "VectorGeometry":
        widest = max(elem_bytes)
        granule = target.granule("ub")
        # Elements per granule differ per type; a common run must be whole
        # granules for every operand: lcm of the per-type block sizes.
        block = 1
        for b in elem_bytes:
            block = math.lcm(block, granule // b)
        return VectorGeometry(lanes=target.lanes(widest), block=block,
                              max_repeat=target.max_repeat,
                              block_bytes=target.vector_block_bytes)


@dataclass(frozen=True)
class VectorInstr:
    """One vector instruction over a contiguous run: `repeat` repeats starting
    at element `offset`; every repeat has `mask` active leading lanes."""

    offset: int
    repeat: int
    mask: int


def split_repeats(count: int, lanes: int, max_repeat: int) -> list[VectorInstr]:
    """Instructions covering `count` contiguous elements: whole repeats with
    the full mask, in groups of at most `max_repeat`, then one repeat with a
    partial mask for the remainder."""
    if count <= 0:
        return []
    instrs = []
    whole = count // lanes
    offset = 0
    while whole > 0:
        rep = min(whole, max_repeat)
        instrs.append(VectorInstr(offset, rep, lanes))
        offset += rep * lanes
        whole -= rep
    rest = count - offset
    if rest:
        instrs.append(VectorInstr(offset, 1, rest))
    return instrs


@dataclass(frozen=True)
class Piece:
    """A run of elements [start, start+length) processed as one unit.
    `overlap` leading elements were already produced by the previous piece."""

    start: int
    length: int
    overlap: int = 0


@dataclass(frozen=True)
class ChunkPlan:
    """`full_chunks` pieces of `chunk` elements at k*chunk (a loop), then an
    optional tail piece. `padded` marks a tensor smaller than one block: its
    only piece is a whole block reaching past the end of the tensor."""

    total: int
    chunk: int
    full_chunks: int
    tail: Piece | None
    padded: bool = False

    def pieces(self) -> list[Piece]:
        out = [Piece(k * self.chunk, self.chunk) for k in range(self.full_chunks)]
        if self.tail is not None:
            out.append(self.tail)
        return out


def max_chunk_elements(budget_bytes: int, bytes_per_element: int, lanes: int) -> int:
    """Largest multiple of `lanes` whose buffers (`bytes_per_element` summed
    over every UB buffer of one iteration) fit `budget_bytes`."""
    chunk = round_down(budget_bytes // bytes_per_element, lanes)
    if chunk <= 0:
        raise ValueError(f"UB budget of {budget_bytes} bytes cannot hold one repeat "
                         f"({lanes} elements at {bytes_per_element} bytes each)")
    return chunk


def plan_chunks(total: int, max_chunk: int, block: int) -> ChunkPlan:
    """Split `total` elements into whole-block pieces of at most `max_chunk`.

    The chunk is `max_chunk` (a multiple of the lanes) when the tensor is at
    least that long, else the tensor rounded down to whole blocks; the
    remainder becomes the tail piece, extended back to whole blocks.
    """
    if total <= 0:
        raise ValueError("empty tensor")
    if max_chunk % block:
        raise ValueError(f"chunk {max_chunk} is not a whole number of {block}-element blocks")
    if total < block:
        return ChunkPlan(total, block, 0, Piece(0, block), padded=True)
    chunk = min(max_chunk, round_down(total, block))
    full = total // chunk
    rest = total - full * chunk
    if rest == 0:
        return ChunkPlan(total, chunk, full, None)
    length = round_up(rest, block)
    return ChunkPlan(total, chunk, full, Piece(total - length, length, length - rest))

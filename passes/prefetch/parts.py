"""Plain data of `npu-prefetch`."""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir


@dataclass(frozen=True)
class Part:
    """Bursts [first, end) of a weight copy, issued after top-level op `gap`."""

    gap: int
    copy: ir.Operation
    first: int
    end: int


@dataclass
class Candidate:
    """A matmul loop whose body stages host-constant weights into L1."""

    loop: ir.Operation
    # Per weight buffer (a ping-pong slot) in body order: its alloc and copies.
    slots: list[tuple[ir.Operation, list[ir.Operation]]]

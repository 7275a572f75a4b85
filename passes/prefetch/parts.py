"""Plain data of `npu-prefetch`, and the IR helpers its parts share."""

from __future__ import annotations

from dataclasses import dataclass, field

import re

from mlir import ir

from npu.ir import VIEW_OPS, defining_op, view_root

# `npu-prefetch{l1-room}`: in the order of `space_bounds_at`'s (lower, upper).
L1_ROOMS = ("live", "safe")


@dataclass(frozen=True)
class Part:
    """Bursts [first, end) of a weight copy, issued after top-level op `gap`."""

    gap: int
    copy: ir.Operation
    first: int
    end: int


@dataclass
class ConvCandidate:
    """A conv's resident weights: their alloc and pieces (copies per piece, in order)."""

    alloc: ir.Operation
    pieces: list[list[ir.Operation]]
    # Share guards (scf.if without else) the pieces' copies run under: the
    # clones run under the same conditions.
    guards: list[ir.Operation]


@dataclass
class Candidate:
    """A matmul loop whose body stages host-constant weights into L1."""

    loop: ir.Operation
    # Per weight buffer (a ping-pong slot) in body order: its alloc and copies.
    slots: list[tuple[ir.Operation, list[ir.Operation]]]
    # The buffers are a resident strip's parts (npu-lower-matmul's column
    # strips): allocated at function level, each copied under an `scf.if`
    # of the loop body on the iterations that start a column.
    resident: bool = False
    # The loop body's ops as `_candidate` listed them (listing a large body
    # again for each gap's clones was 0.1 CPU s of BERT-12's on 32 cores);
    # only the slots' allocs move out of it before `_guard`.
    body: list[ir.Operation] | None = field(default=None, compare=False, repr=False)
    body_set: set[ir.Operation] | None = field(default=None, compare=False, repr=False)


def _label(op: ir.Operation) -> str:
    """The source op's name of a (name-)location, else its line: an ONNX
    node's name as the frontend writes it (`loc("/layer1/Conv"("m":4:1))`,
    any characters; was 'line 4' for a name with a '/')."""
    try:
        if op.location.is_a_name():
            return op.location.name_str
    except AttributeError:
        pass
    text = str(op.location)  # a name within a fused or call-site location
    names = re.findall(r'"([^"]+)"\(', text) or re.findall(r'^loc\("([^"]+)"\)$', text)
    if names:
        return names[0]
    line = re.search(r":(\d+):\d+", text)
    return f"line {line.group(1)}" if line else text


def _sole_constant_row(op: ir.Operation, constants, level: ir.Operation) -> bool:
    """Whether `op` is a GM -> UB copy of a host constant (in `constants`)
    into an alloc made at `level`'s block that no other copy writes: a row
    load that may move anywhere before its first reader."""
    if op.name != "cce.copy_gm_to_ub" or view_root(op.operands[0]) not in constants:
        return False
    alloc = defining_op(view_root(op.operands[1]))
    return (alloc is not None and alloc.name == "memref.alloc"
            and alloc.parent.operation == level.parent.operation
            and _writers(alloc.results[0]) == [op])


def _writers(value: ir.Value) -> list[ir.Operation]:
    """The copies that store into `value` or a view of it (its uses followed
    through views: no walk of the function)."""
    found: list[ir.Operation] = []
    pending = [value]
    while pending:
        for use in pending.pop().uses:
            owner = use.owner.operation
            if owner.name.startswith("cce.copy_") and use.operand_number == 1:
                found.append(owner)
            elif owner.name in VIEW_OPS and use.operand_number == 0:
                pending.extend(owner.results)
    return found



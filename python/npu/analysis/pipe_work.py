"""Static per-pipe work of lowered `cce` ops, from the target's rates: what a
pass can know about where each pipe is busy without simulating.

A transfer costs its bytes over its path's bandwidth, a `mad` its fractal
blocks on the cube, a vector op its repeats at its class's rate; a loop
multiplies its body by its (constant) trip count, and an `scf.if` counts its
costlier branch. Latencies are left out: the pipes overlap them
(`Target.pipelined_pipes`). Used by `npu-prefetch` to estimate how long
MTE2 sits idle at the end of an op.
"""

from __future__ import annotations

from collections import Counter

from mlir import ir

from npu.dialects.cce import OP_SPACES, PIPE_OF, vector_class
from npu.ir import constant_int, int_attr
from npu.target import Target


def trip_count(loop: ir.Operation) -> int | None:
    """Iterations of an `scf.for` with constant bounds, else None."""
    lb, ub, step = (constant_int(v) for v in list(loop.operands)[:3])
    if lb is None or ub is None or not step:
        return None
    return max(0, -(-(ub - lb) // step))


def instruction_cycles(op: ir.Operation, target: Target) -> float:
    """Cycles `op` keeps its pipe busy (0 for anything that is not an instruction)."""
    name = op.name
    if name == "cce.mad":
        f = target.fractal
        blocks = (int_attr(op, "m") // f) * (int_attr(op, "k") // f) * (int_attr(op, "n") // f)
        return float(target.cube_cycles(float(blocks)))
    if name.startswith("cce.copy_"):
        src, dst = OP_SPACES[name]
        nbytes = int_attr(op, "n_burst") * int_attr(op, "burst_len") * target.vector_block_bytes
        return nbytes / target.path(f"{src}_to_{dst}").bytes_per_cycle
    if name.startswith("cce.load_"):
        src, dst = OP_SPACES[name]
        nbytes = int_attr(op, "repeat") * target.fractal_bytes(2)
        return nbytes / target.path(f"{src}_to_{dst}").bytes_per_cycle
    if name == "cce.img2col_l1_to_l0a":
        return int_attr(op, "repeat") * target.fractal_bytes(2) / target.img2col_bytes_per_cycle
    if PIPE_OF.get(name) == "V" and "repeat" in op.attributes:
        return float(int_attr(op, "repeat") * target.vector_cycles(vector_class(name)))
    return 0.0


def pipe_work(ops: list[ir.Operation], target: Target) -> Counter:
    """Busy cycles per pipe of `ops` run once in order (nested loops and
    branches as described in the module docstring)."""
    work: Counter = Counter()
    for op in ops:
        pipe = PIPE_OF.get(op.name)
        if pipe:
            work[pipe] += instruction_cycles(op, target)
        elif op.name == "scf.for":
            body = [o.operation for o in op.regions[0].blocks[0].operations]
            trips = trip_count(op)
            inner = pipe_work(body, target)
            for p, c in inner.items():
                work[p] += c * (1 if trips is None else trips)
        elif op.name == "scf.if":
            branches = [pipe_work([o.operation for o in b.operations], target)
                        for r in op.regions for b in r.blocks]
            for p in {p for b in branches for p in b}:
                work[p] += max(b.get(p, 0.0) for b in branches)
        else:
            for region in op.regions:
                for block in region.blocks:
                    work.update(pipe_work([o.operation for o in block.operations], target))
    return work

"""An analytic cycle estimate per candidate: what guided search ranks by.

It extends the project's own models rather than inventing new ones: the
matmul's GM traffic comes from `npu.costmodel.matmul.tiling` (the model that picks
tiles), the vector ops' chunking from the lowerings' UB budget. Each pipe's
busy time is bytes / bandwidth (or repeats, or cube blocks) from the target;
with double buffering the pipes overlap (the estimate is the busiest pipe
plus one start-up latency), without it they take turns (the sum, plus a
latency per transfer). The Spearman correlation `npu-tune` reports measures
how far this ranking is from the simulator's.
"""

from __future__ import annotations

import math
from typing import Any

from npu.target import Target
from npu.tune.program import OpTask
from npu.tune.space import matmul_shape, reduction_scale


def estimate(task: OpTask, options: dict[str, Any], target: Target) -> float:
    """Estimated cycles of `task` lowered with canonical `options`; inf when
    the model says it cannot compile."""
    if task.family == "npu-lower-matmul":
        return _matmul(task, options, target)
    if task.family == "npu-lower-gather":
        return _gather(task, options, target)
    return _vector(task, options, target)


def ideal_bound(task: OpTask, target: Target) -> float:
    """The problem's own lower bound: compulsory GM traffic (each operand
    read once, the result written once) over the GM bandwidth, and the
    compute (cube blocks, or one vector repeat per element run), whichever
    pipe is busiest."""
    from npu.ir import element_bytes

    *inputs, output = task.operands
    reads = sum(math.prod(o.shape) * element_bytes(o.dtype) for o in inputs)
    if task.family == "npu-lower-gather":  # the rows it picks, and the ids: not the table
        reads = sum(math.prod(o.shape) * element_bytes(o.dtype) for o in task.operands[1:])
    writes = math.prod(output.shape) * element_bytes(output.dtype)
    busy = [reads / target.path("gm_to_l1").bytes_per_cycle,
            writes / target.path("ub_to_gm").bytes_per_cycle]
    if task.family == "npu-lower-matmul":
        shape = matmul_shape(task, target)
        frac = target.fractal
        busy.append(target.cube_cycles(
            float(shape.batch * (shape.M // frac) * (shape.N // frac) * (shape.K // frac))))
    else:
        lanes = target.lanes(max(element_bytes(o.dtype) for o in task.operands))
        elems = max(math.prod(o.shape) for o in task.operands)
        busy.append(math.ceil(elems / lanes) * _vector_cycles_per_repeat(task, target))
    return max(busy)


def _combine(busy: dict[str, float], latencies: float, overlapped: bool,
             exposed: float) -> float:
    if overlapped:
        return max(busy.values()) + latencies
    return sum(busy.values()) + exposed


def _matmul(task: OpTask, options: dict[str, Any], target: Target) -> float:
    from npu.costmodel.matmul.fitting import Tiles, first_overflow, traffic

    shape = matmul_shape(task, target)
    frac = target.fractal
    strategy, m, k = options["strategy"], options["m"], options["k"]
    n = (options["n"] or 0) // reduction_scale(task, target)
    if not m or not n or not k or m % frac or n % frac or k % frac or strategy not in ("os", "is", "ws"):
        return math.inf
    tiles = Tiles(m, n, k)
    if first_overflow(strategy, shape, tiles, target) is not None:
        return math.inf
    t = traffic(strategy, shape, tiles)
    xs, ys, ss = (math.ceil(shape.M / m), math.ceil(shape.K / k), math.ceil(shape.N / n))
    copies = {"os": 2 * xs * ys * ss, "is": xs * ss * (1 + ys), "ws": ys * ss * (1 + xs)}[strategy]
    gm_in, gm_out = target.path("gm_to_l1"), target.path("ub_to_gm")
    l0a, l0b, drain = target.path("l1_to_l0a"), target.path("l1_to_l0b"), target.path("l0c_to_ub")
    blocks = shape.batch * (shape.M // frac) * (shape.N // frac) * (shape.K // frac)
    busy = {
        "MTE2": t.read_bytes(shape) / gm_in.bytes_per_cycle,
        "MTE1": (t.a_reads * shape.in_bytes / l0a.bytes_per_cycle
                 + t.b_reads * shape.in_bytes / l0b.bytes_per_cycle),
        "M": target.cube_cycles(float(blocks)),
        "V": t.c_writes * shape.acc_bytes / drain.bytes_per_cycle,
        "MTE3": t.write_bytes(shape) / gm_out.bytes_per_cycle,
    }
    overlapped = bool(options.get("double-buffer", True))
    exposed = copies * gm_in.latency + xs * ys * (gm_out.latency + drain.latency) \
        + xs * ys * ss * target.mad_latency
    return _combine(busy, gm_in.latency + gm_out.latency, overlapped, exposed)


def _vector(task: OpTask, options: dict[str, Any], target: Target) -> float:
    from npu.ir import element_bytes

    *inputs, output = task.operands
    # The streamed volume: a reduction's output is small, its input is not.
    elems = max(math.prod(o.shape) for o in task.operands)
    in_bytes = sum(math.prod(o.shape) * element_bytes(o.dtype) for o in inputs)
    out_bytes = math.prod(output.shape) * element_bytes(output.dtype)
    per_elem = sum(element_bytes(o.dtype) * math.prod(o.shape) / elems for o in task.operands)
    fraction = float(options.get("ub-fraction", 1.0))
    if not 0 < fraction <= 1:
        return math.inf
    if options.get("fractalize") == "naive":
        nd = min(task.operands, key=lambda o: len(o.shape))  # strips of 16 ND rows
        chunks = math.ceil(elems / (target.fractal * nd.shape[-1]))
        fraction = 0.0  # small strips: both slots fit
    else:
        chunk = target.capacity("ub") * fraction / per_elem
        if chunk < target.lanes(max(element_bytes(o.dtype) for o in task.operands)):
            return math.inf
        chunks = math.ceil(elems / chunk)
    gm_in, gm_out = target.path("gm_to_ub"), target.path("ub_to_gm")
    lanes = target.lanes(max(element_bytes(o.dtype) for o in task.operands))
    busy = {
        "MTE2": in_bytes / gm_in.bytes_per_cycle,
        "V": math.ceil(elems / lanes) * _vector_cycles_per_repeat(task, target),
        "MTE3": out_bytes / gm_out.bytes_per_cycle,
    }
    # The double-buffer pass duplicates a chunk's buffers only if both fit UB.
    overlapped = bool(options.get("double-buffer", True)) and 2 * fraction <= 1 and chunks > 1
    exposed = chunks * (gm_in.latency + gm_out.latency + target.vector_latency)
    return _combine(busy, gm_in.latency + gm_out.latency, overlapped, exposed)


def _gather(task: OpTask, options: dict[str, Any], target: Target) -> float:
    """npu-lower-gather's rows: each chunk pays the GM latency once per mover
    ((K + 1) * (T / K + L) for K chunks of T cycles), beside the scalar unit's
    work per row (about 16 issues, a data-cache miss per line of ids)."""
    from npu.ir import element_bytes

    table, ids, out = task.operands
    es = element_bytes(out.dtype)
    row_bytes = es * math.prod(table.shape[1:])  # axis 0, the embedding's
    total_bytes = math.prod(out.shape) * es
    count = max(1, total_bytes // max(1, row_bytes))  # rows gathered
    path = target.path("gm_to_ub")
    data = total_bytes / path.bytes_per_cycle
    budget = target.capacity("ub") * float(options.get("ub-fraction", 0.9))
    per_chunk = max(1, int(budget // (2 * max(1, row_bytes))))
    if options.get("gather-max-rows"):
        per_chunk = min(per_chunk, int(options["gather-max-rows"]))
    chunks = max(math.ceil(count / per_chunk), round(math.sqrt(data / path.latency)) or 1)
    movers = (chunks + 1) * (data / chunks + path.latency)
    lines = math.ceil(math.prod(ids.shape) * 4 / target.scalar_dcache_line_bytes)
    scalar = count * 16 * target.scalar_issue_cycles + lines * path.latency
    return max(movers, scalar)


def _vector_cycles_per_repeat(task: OpTask, target: Target) -> float:
    """Cycles per repeat summed over the vector instructions of one element."""
    from npu.costmodel.vector.recipes import UNARY
    from npu.dialects.cce import vector_class

    if task.family == "npu-lower-elementwise" and task.op_name in UNARY:
        return sum(target.vector_cycles(vector_class(s.op)) for s in UNARY[task.op_name])
    if task.family in ("npu-lower-transpose", "npu-lower-fractalize"):
        return target.vnchwconv_cycles_per_repeat
    return target.vector_cycles("simple")

"""What bounds each op of a CNN on one core: the pipes' busy cycles in each
op's window and MTE2's idle time by cause (`bench/cnn_breakdown.py` gives
the cycles against per-conv ideals; this says which unit was short).

Each op's window runs from the previous op's last instruction to its own
last (windows tile the run, in the order ops end); in it, each pipe's busy
cycles are the issue occupancy of the instructions there (a DMA's GM
latency not counted: it overlaps the next copy unless a flag waits for it).
MTE2's idle gaps are split into flag stalls (a gap of one GM latency: the
set_flag after a run of copies holds the in-order queue until they land)
and waits (a copy waiting on another pipe, the previous op's buffers or
results), each charged to the op whose copy follows the gap.

    .venv/bin/python bench/cnn_pipes.py [--model resnet50] [--size 224]
                                       [--pipeline 'npu-lower{...}'] [--gaps 2000]
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

PIPES = ("V", "M", "MTE1", "MTE2", "MTE3")


def simulate_model(model, pipeline: str | None) -> tuple[dict, object]:
    """(the kernel's report, the simulation result) of `model` on one core
    of ascend910, timing only; the same arguments a kernel call builds."""
    import npu
    from npu.frontend.compile import is_memref
    from npu.ir import functions
    from npu.simulator import simulate

    options = {"pipeline": pipeline} if pipeline else {}
    kernel = npu.compile(model, target="ascend910", cores=1, **options)
    size = model.graph.input[0].type.tensor_type.shape.dim[-1].dim_value
    x = np.random.default_rng(0).standard_normal((1, 3, size, size)).astype(np.float16)
    _, report = kernel(x, numerics=False)
    func = functions(kernel.module)[0]
    roles = kernel.interface.roles
    extra = [a for a in list(func.regions[0].blocks[0].arguments)[len(roles):] if is_memref(a.type)]
    args = kernel.interface.arguments(kernel.check_inputs([x]), extra)
    return report, simulate(kernel.module, args, target=kernel.target, strict=True, numerics=False)


def columns(result) -> dict[str, np.ndarray]:
    """Per executed instruction: start, end, occupancy, pipe (-1: a flag), location, name."""
    from npu.simulator.hazards import PIPE_NAMES
    from npu.simulator.instruction import OP

    tl = result.timeline
    codes = tl.codes
    kind = codes.column("kind")
    pipe = np.where(kind == OP, codes.column("op_pipe"), -1)
    return {"start": tl.array("start"), "end": tl.array("end"),
            "occ": codes.column("occupancy"), "pipe": pipe,
            "where": np.array(codes.texts("where"), dtype=object)[codes.codes],
            "name": np.array(codes.texts("name"), dtype=object)[codes.codes],
            "pipe_names": np.array(PIPE_NAMES)}


def pipe_busy(c: dict, p: int, a: int, b: int) -> int:
    """Issue-occupancy cycles of pipe `p` inside [a, b)."""
    m = (c["pipe"] == p) & (c["end"] > a) & (c["start"] < b)
    s0 = np.maximum(c["start"][m], a)
    e0 = np.minimum(c["start"][m] + np.minimum(c["occ"][m], c["end"][m] - c["start"][m]), b)
    return int(np.clip(e0 - s0, 0, None).sum())


def mte2_gaps(c: dict, latency: int) -> list[tuple[int, int, str, bool]]:
    """MTE2's idle gaps: (start, cycles, location of the copy after it, a flag stall)."""
    p = list(c["pipe_names"]).index("MTE2")
    m = c["pipe"] == p
    order = np.argsort(c["start"][m], kind="stable")
    s, e, o, w = (c[k][m][order] for k in ("start", "end", "occ", "where"))
    busy_end = np.maximum.accumulate(s + np.minimum(o, e - s))
    gaps = s[1:] - busy_end[:-1]
    return [(int(busy_end[i]), int(gaps[i]), w[i + 1], abs(int(gaps[i]) - latency) <= 8)
            for i in np.flatnonzero(gaps > 0)]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="resnet50")
    ap.add_argument("--size", type=int, default=224)
    ap.add_argument("--width", type=float, default=1.0)
    ap.add_argument("--pipeline", default=None, help="an npu-lower pipeline (default: npu-compile's)")
    ap.add_argument("--gaps", type=int, default=0, help="also list MTE2 waits of at least this many cycles")
    args = ap.parse_args(argv)

    from cnn import build
    from npu.target import get_target

    latency = get_target("ascend910").path("gm_to_l1").latency
    report, result = simulate_model(build(args.model, args.size, args.width), args.pipeline)
    c = columns(result)
    index = {n: k for k, n in enumerate(c["pipe_names"])}
    gaps = mte2_gaps(c, latency)
    flags, waits = defaultdict(lambda: [0, 0]), defaultdict(int)
    for _, cycles, where, is_flag in gaps:
        if is_flag:
            flags[where][0] += 1
            flags[where][1] += cycles
        else:
            waits[where] += cycles
    print(f"{args.model} {args.size}x{args.size} one core: {report['cycles']} cycles")
    print(f"{'op':44} {'excl':>7} {'window':>7} " + " ".join(f"{p:>6}" for p in PIPES)
          + f" {'flags':>6} {'stall':>6} {'waits':>6}")
    prev = 0
    for r in sorted(report["per_op"], key=lambda r: r["last_cycle"]):
        a, b, w = prev, r["last_cycle"], r["location"]
        busy = [pipe_busy(c, index[p], a, b) for p in PIPES]
        print(f"{r['op'].split(' (')[0][-44:]:44} {r['exclusive_cycles']:>7.0f} {b - a:>7} "
              + " ".join(f"{v:>6}" for v in busy)
              + f" {flags[w][0]:>6} {flags[w][1]:>6} {waits[w]:>6}")
        prev = b
    n_flags = sum(v[0] for v in flags.values())
    print(f"MTE2 idle: {n_flags} flag stalls of one GM latency ({sum(v[1] for v in flags.values())} "
          f"cycles), other waits {sum(waits.values())} cycles")
    if args.gaps:
        names = {r["location"]: r["op"].split(" (")[0] for r in report["per_op"]}
        for at, cycles, where, is_flag in gaps:
            if not is_flag and cycles >= args.gaps:
                print(f"  MTE2 waits {cycles} cycles at {at} before {names.get(where, where)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

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
results), each charged to the op whose copy follows the gap. `--bytes` adds
each op's own GM reads (MTE2's bytes of its instructions, wherever they
ran: npu-prefetch's in the op before), the least a conv needs (its input
map, or the rows a row-skip downsample reads, its weights and bias once,
from the ONNX conv: a residual it adds is not counted, nor a summed
conv's second map), its mads' cycles and their ideal (MACs / 16^3: no
padding of M or K).

    .venv/bin/python bench/cnn_pipes.py [--model resnet50] [--size 224]
                                       [--pipeline 'npu-lower{...}'] [--gaps 2000] [--bytes]
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
            "nbytes": codes.column("nbytes"), "pipe_names": np.array(PIPE_NAMES)}


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


def own_work(c: dict, model) -> tuple[dict, dict, dict]:
    """Per location: MTE2's bytes and the cube's busy cycles of the op's own
    instructions; per conv node name: (least GM bytes, ideal cube cycles)."""
    from cnn_breakdown import conv_specs

    m2 = c["pipe"] == list(c["pipe_names"]).index("MTE2")
    mm = c["pipe"] == list(c["pipe_names"]).index("M")
    loaded, mads = defaultdict(int), defaultdict(int)
    for w, b in zip(c["where"][m2], c["nbytes"][m2]):
        loaded[w] += int(b)
    for w, o in zip(c["where"][mm], c["occ"][mm]):
        mads[w] += int(o)
    least = {}
    for name, (ch, h, w, cout, k, stride, pad) in conv_specs(model).items():
        ho = (h + 2 * pad - k) // stride + 1
        rows = ho if k == 1 and stride > 1 and pad == 0 else h  # a row-skip downsample's
        least[name] = (ch * rows * w * 2 + k * k * ch * cout * 2 + cout * 2,
                       ho * ho * cout * ch * k * k / 16 ** 3)
    return loaded, mads, least


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="resnet50")
    ap.add_argument("--size", type=int, default=224)
    ap.add_argument("--width", type=float, default=1.0)
    ap.add_argument("--pipeline", default=None, help="an npu-lower pipeline (default: npu-compile's)")
    ap.add_argument("--gaps", type=int, default=0, help="also list MTE2 waits of at least this many cycles")
    ap.add_argument("--bytes", action="store_true", help="also each op's own GM reads and mads "
                    "against a conv's least bytes and ideal cube cycles")
    args = ap.parse_args(argv)

    from cnn import build
    from npu.target import get_target

    latency = get_target("ascend910").path("gm_to_l1").latency
    model = build(args.model, args.size, args.width)
    report, result = simulate_model(model, args.pipeline)
    c = columns(result)
    if args.bytes:
        loaded, mads, least = own_work(c, model)
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
          + f" {'flags':>6} {'stall':>6} {'waits':>6}"
          + (f" {'MB':>6} {'leastMB':>7} {'mads':>6} {'ideal':>6}" if args.bytes else ""))
    prev = 0
    for r in sorted(report["per_op"], key=lambda r: r["last_cycle"]):
        a, b, w = prev, r["last_cycle"], r["location"]
        busy = [pipe_busy(c, index[p], a, b) for p in PIPES]
        print(f"{r['op'].split(' (')[0][-44:]:44} {r['exclusive_cycles']:>7.0f} {b - a:>7} "
              + " ".join(f"{v:>6}" for v in busy)
              + f" {flags[w][0]:>6} {flags[w][1]:>6} {waits[w]:>6}"
              + (own_columns(loaded[w], mads[w], least.get(r["op"].split(" (")[0]))
                 if args.bytes else ""))
        prev = b
    n_flags = sum(v[0] for v in flags.values())
    print(f"MTE2 idle: {n_flags} flag stalls of one GM latency ({sum(v[1] for v in flags.values())} "
          f"cycles), other waits {sum(waits.values())} cycles")
    if args.bytes:
        print(f"MTE2 loaded {sum(loaded.values()) / 1e6:.2f} MB (the convs' least "
              f"{sum(v[0] for v in least.values()) / 1e6:.2f} MB), mads {sum(mads.values())} cycles "
              f"(the convs' ideal {sum(v[1] for v in least.values()):.0f})")
    if args.gaps:
        names = {r["location"]: r["op"].split(" (")[0] for r in report["per_op"]}
        for at, cycles, where, is_flag in gaps:
            if not is_flag and cycles >= args.gaps:
                print(f"  MTE2 waits {cycles} cycles at {at} before {names.get(where, where)}")
    return 0


def own_columns(loaded: int, mads: int, least: tuple[int, float] | None) -> str:
    if least is None:
        return f" {loaded / 1e6:>6.2f} {'':>7} {mads:>6} {'':>6}"
    return f" {loaded / 1e6:>6.2f} {least[0] / 1e6:>7.2f} {mads:>6} {least[1]:>6.0f}"


if __name__ == "__main__":
    sys.exit(main())

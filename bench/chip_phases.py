"""A many-core BERT layer phase by phase: the stretches between chip barriers.

bench/op_timeline.py's windows of top-level ops are coarse on a many-core
program (one core's view, ops on shares under `scf.if`). Here each phase runs
from one chip barrier's release to the next's (the last core's arrival plus
`sync_all_cycles`); per phase it prints the ops in it (their ONNX names), the
last core to arrive, and for that core each pipe's occupancy (the cycles its
instructions hold the pipe, waits excluded): a phase far longer than its
busiest pipe is latency or pipelining, one close to its MTE2 is the bytes
each core moves (docs/multicore.md, "BERT seq 512 on 32 cores").

    .venv/bin/python bench/chip_phases.py [--seq 512] [--cores 32] [--layers 2] [--pipeline-options 'prefetch=false']
        [--detail 13,14]   (those phases core by core: when each core's pipes but MTE2 are
                            done, when its MTE2 is, its loads by op)
        [--floors]         (first each phase's floors, as for a CNN below)
    .venv/bin/python bench/chip_phases.py --model resnet50 [--cores 32] [--size 224] [--width 64]
    (or resnet18, mobilenetv2: f16 as bench/chip.py's rows; --width: ResNet's stem channels)

With --model (bench/chip.py's CNN rows) each phase gets its floors on the
split it has: `used` the cores with any work in it, `pipe` the busiest pipe
of any core (its occupancy) and which, `MB` the GM bytes its transfers
move (every core's, re-reads included), `bus` the cycles of the chip's GM
bus those bytes take (L2 hits excluded: the memory system's calendar),
`cube/n` all cores' cube cycles over the launch's cores, `floor` the larger
of pipe and bus, and `excess` = cycles - floor - the barrier that ends it.

Another grid for an op: `--pipeline-options 'split-cores-grids=512x3072x768:16x2'`
(npu-split-cores' `grids`: a matmul's M x N x K and its column x row parts).
"""

from __future__ import annotations

import argparse
import sys
from bisect import bisect_right
from collections import Counter

import numpy as np


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seq", type=int, default=512)
    p.add_argument("--cores", type=int, default=32)
    p.add_argument("--layers", type=int, default=1, help="encoder layers (the 12-layer model's "
                   "later layers start at the previous one's ln2)")
    p.add_argument("--model", default="bert", choices=("bert", "resnet18", "resnet50", "mobilenetv2"))
    p.add_argument("--onnx", metavar="FILE", help="an exported model instead (e.g. a transformers "
                   "export): its phases as BERT's, random inputs as npu-run makes them")
    p.add_argument("--size", type=int, default=224, help="a CNN's image size")
    p.add_argument("--width", type=int, default=64, help="a ResNet's stem channels")
    p.add_argument("--pipeline-options", default="", help="more npu-lower options, e.g. 'prefetch=false'")
    p.add_argument("--detail", default="", help="phases (e.g. '13,14') to show core by core (a "
                   "CNN: with the phase table, after the floors)")
    p.add_argument("--floors", action="store_true", help="BERT: the phases' floors too (as --model "
                   "gives a CNN's), before the phases")
    args = p.parse_args()

    import npu
    from npu.frontend.bert import bert_layer
    from npu.ir import functions
    from npu.simulator import simulate
    from npu.simulator.hazards import PIPE_NAMES
    from npu.simulator.instruction import OP

    from op_timeline import tag_top_level

    pipeline = f"npu-lower{{cores={args.cores} {args.pipeline_options}}}"
    if args.onnx:
        from argparse import Namespace

        from npu.tools.run_model import model_inputs
        kernel = npu.compile(args.onnx, target="ascend910", pipeline=pipeline)
        x = model_inputs(kernel, Namespace(inputs=None, seed=0), args.onnx)
    elif args.model == "bert":
        kernel = npu.compile(bert_layer(args.seq, 768, 12, 3072, layers=args.layers),
                             target="ascend910", where="bert_layer.onnx", pipeline=pipeline)
        x = [np.random.default_rng(1).standard_normal((1, args.seq, 768)).astype(np.float32)]
    else:
        from npu.frontend.cnn import mobilenet_v2, resnet
        model = (mobilenet_v2(size=args.size, dtype=np.float16) if args.model == "mobilenetv2" else
                 resnet(int(args.model[6:]), size=args.size, width=args.width, dtype=np.float16))
        kernel = npu.compile(model, target="ascend910", where=f"{args.model}.onnx",
                             pipeline=pipeline)
        p0 = kernel.interface.inputs[0]
        x = [np.random.default_rng(1).standard_normal(p0.shape).astype(p0.numpy_dtype)]
    func = functions(kernel.module)[0]
    labels = tag_top_level(func)
    extra = [v for v in list(func.regions[0].blocks[0].arguments)[len(kernel.interface.roles):]
             if str(v.type) != "index"]
    import npu.simulator.core as sim_core
    from npu.simulator.memory_system import MemorySystem

    # the launch's memory system, kept for its bus calendar (`_bus_cycles`):
    # simulate() makes it and reports only its totals
    memsys: list = []

    def keep(target):
        memsys.append(MemorySystem(target))
        return memsys[-1]

    sim_core.MemorySystem = keep
    try:
        res = simulate(kernel.module, kernel.interface.arguments(kernel.check_inputs(x), extra),
                       target=kernel.target, numerics=False)
    finally:
        sim_core.MemorySystem = MemorySystem
    runs = res.core_traces or [(res.trace_entries, res.timeline)]
    bus = memsys[-1] if memsys else None
    # a chip barrier's entry ends at its release (the last core's arrival plus
    # sync_all_cycles), the same cycle on every core
    trace0, tl0 = runs[0]
    releases = [tl0.end[i] for i, (instr, _, _) in enumerate(trace0) if getattr(instr, "chip", False)]
    what = (args.onnx if args.onnx else f"BERT layer seq={args.seq}" if args.model == "bert"
            else args.model)
    print(f"{what} on {len(runs)} cores: {res.cycles:,} cycles, {len(releases)} chip barriers")
    if args.model != "bert" or args.floors:
        _floors(runs, releases, res.cycles, kernel.target, bus)
        if args.model != "bert" and not args.detail:
            return 0
    print(f"{'phase':>5} {'from':>8} {'to':>8} {'cycles':>7} {'last':>4}  ops; the last core's pipes")
    begin = 0
    for k, end in enumerate(releases + [res.cycles]):
        per_core = []  # (its last instruction's end, pipe occupancy, ops) per core
        for trace, tl in runs:
            busy: Counter = Counter()
            ops: dict[str, None] = {}
            done = begin
            for i, (instr, _, _) in enumerate(trace):
                if instr.kind != OP or not begin <= tl.start[i] < end:
                    continue
                busy[PIPE_NAMES[instr.pipe]] += instr.occupancy
                ops[labels[int(instr.where.split(":")[1]) - 1][1]] = None
                done = max(done, tl.end[i])
            per_core.append((done, busy, ops))
        last = max(range(len(runs)), key=lambda c: per_core[c][0])
        _, busy, ops = per_core[last]
        print(f"{k:>5} {begin:>8} {end:>8} {end - begin:>7} {last:>4}  {','.join(ops)}; "
              + " ".join(f"{p} {c}" for p, c in busy.most_common() if c >= 100))
        if str(k) in args.detail.split(","):
            _detail(runs, labels, begin, end)
        begin = end
    return 0


def _detail(runs, labels, begin: int, end: int) -> None:
    """Each core's view of one phase: when its pipes but MTE2 are done (a
    core arrives at a chip barrier then: its loads stream on through it),
    when its MTE2 is, and MTE2's occupancy by top-level op (a prefetched
    weight copy counts under the op it was cloned into or after)."""
    from npu.simulator.hazards import PIPE_NAMES
    from npu.simulator.instruction import OP

    for c, (trace, tl) in enumerate(runs):
        ready = mte2 = begin
        loads: Counter = Counter()
        for i, (instr, _, _) in enumerate(trace):
            if instr.kind != OP or not begin <= tl.start[i] < end:
                continue
            if PIPE_NAMES[instr.pipe] == "MTE2":
                mte2 = max(mte2, tl.end[i])
                loads[labels[int(instr.where.split(":")[1]) - 1][1]] += instr.occupancy
            else:
                ready = max(ready, tl.end[i])
        print(f"{'':>5} core {c:>2}: done {ready - begin:>6}, MTE2 done {mte2 - begin:>6}; MTE2 "
              + ", ".join(f"{op} {n}" for op, n in loads.items()))


def _floors(runs, releases: list[int], cycles: int, target, memsys) -> int:
    """Each phase's span against its floors (see the module's docstring)."""
    from npu.simulator.hazards import PIPE_NAMES
    from npu.simulator.instruction import OP

    sync = target.sync_all_cycles
    ends = releases + [cycles]
    # per phase: per core its pipes' occupancy; the phase's GM bytes
    busy = [[Counter() for _ in runs] for _ in ends]
    moved = [0] * len(ends)
    for c, (trace, tl) in enumerate(runs):
        for i, (instr, _, _) in enumerate(trace):
            if instr.kind != OP:
                continue
            k = min(bisect_right(ends, tl.start[i]), len(ends) - 1)
            busy[k][c][PIPE_NAMES[instr.pipe]] += instr.occupancy
            moved[k] += instr.nbytes if instr.gm_operand is not None else 0
    print(f"{'phase':>5} {'from':>8} {'cycles':>7} {'used':>4} {'pipe':>10} {'bus':>6} "
          f"{'cube/n':>6} {'MB':>6} {'floor':>6} {'excess':>6}")
    begin, total = 0, Counter()
    for k, end in enumerate(ends):
        used = [b for b in busy[k] if b]
        top = max(((b.most_common(1)[0][1], b.most_common(1)[0][0]) for b in used),
                  default=(0, "-"))
        cube = sum(b["M"] for b in used) / len(runs)
        bus = _bus_cycles(memsys, begin, end) if memsys is not None else 0.0
        floor = max(top[0], bus)
        barrier = sync if end < cycles else 0
        excess = end - begin - floor - barrier
        total.update(span=end - begin, floor=floor, bus=bus, cube=cube, barrier=barrier,
                     excess=excess)
        print(f"{k:>5} {begin:>8} {end - begin:>7} {len(used):>4} {top[1]:>4} {top[0]:>5} "
              f"{bus:>6.0f} {cube:>6.0f} {moved[k] / 1e6:>6.2f} {floor:>6.0f} {excess:>6.0f}")
        begin = end
    print(f"total {total['span']:,} cycles: floors {total['floor']:,.0f} (the bus's "
          f"{total['bus']:,.0f}, the cube's over the chip {total['cube']:,.0f}), barriers "
          f"{total['barrier']:,}, excess {total['excess']:,.0f}")
    return 0


def _bus_cycles(memsys, begin: int, end: int) -> float:
    """Cycles of the chip's GM bus that transfers took in [begin, end): the
    bytes the calendar's bins in it gave out over the bus's rate."""
    b0, b1 = begin // memsys.bin_cycles, min(-(-end // memsys.bin_cycles), memsys.room.size)
    used = memsys.bin_bytes * max(b1 - b0, 0) - float(memsys.room[b0:b1].sum())
    return used / memsys.target.gm_chip_bytes_per_cycle


if __name__ == "__main__":
    sys.path.insert(0, __file__.rsplit("/", 1)[0])
    sys.exit(main())

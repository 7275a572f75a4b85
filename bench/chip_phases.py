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

Another grid for an op: `--pipeline-options 'split-cores-grids=512x3072x768:16x2'`
(npu-split-cores' `grids`: a matmul's M x N x K and its column x row parts).
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter

import numpy as np


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seq", type=int, default=512)
    p.add_argument("--cores", type=int, default=32)
    p.add_argument("--layers", type=int, default=1, help="encoder layers (the 12-layer model's "
                   "later layers start at the previous one's ln2)")
    p.add_argument("--pipeline-options", default="", help="more npu-lower options, e.g. 'prefetch=false'")
    args = p.parse_args()

    import npu
    from npu.frontend.bert import bert_layer
    from npu.ir import functions
    from npu.simulator import simulate
    from npu.simulator.hazards import PIPE_NAMES
    from npu.simulator.instruction import OP

    from op_timeline import tag_top_level

    pipeline = f"npu-lower{{cores={args.cores} {args.pipeline_options}}}"
    kernel = npu.compile(bert_layer(args.seq, 768, 12, 3072, layers=args.layers),
                         target="ascend910", where="bert_layer.onnx", pipeline=pipeline)
    func = functions(kernel.module)[0]
    labels = tag_top_level(func)
    x = np.random.default_rng(1).standard_normal((1, args.seq, 768)).astype(np.float32)
    extra = [v for v in list(func.regions[0].blocks[0].arguments)[len(kernel.interface.roles):]
             if str(v.type) != "index"]
    res = simulate(kernel.module, kernel.interface.arguments(kernel.check_inputs([x]), extra),
                   target=kernel.target, numerics=False)
    runs = res.core_traces or [(res.trace_entries, res.timeline)]
    # a chip barrier's entry ends at its release (the last core's arrival plus
    # sync_all_cycles), the same cycle on every core
    trace0, tl0 = runs[0]
    releases = [tl0.end[i] for i, (instr, _, _) in enumerate(trace0) if getattr(instr, "chip", False)]
    print(f"BERT layer seq={args.seq} on {len(runs)} cores: {res.cycles:,} cycles, "
          f"{len(releases)} chip barriers")
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
        begin = end
    return 0


if __name__ == "__main__":
    sys.path.insert(0, __file__.rsplit("/", 1)[0])
    sys.exit(main())

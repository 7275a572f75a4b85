"""Where the BERT layer's time goes between and inside ops: every top-level
op of the lowered function (a loop, a transfer, a flag) with its simulated
window, and each wait at top level that held a pipe, with the op whose
set_flag it waited for. A wait for the previous op's last store is a true
dependency through GM; a wait whose set comes from an earlier op's loop is
a balancing (loop-carried) wait. A wait's cycles are how long its pipe sat
at it; they cost time only when that pipe had other work queued. `--loops` adds, for the loops of the named
ops, each pipe's busy cycles and the cycles each flag kept a pipe waiting.

    .venv/bin/python bench/op_timeline.py [--seq 128] [--loops ln1,ln2] [--min-wait 100]
                                          [--pipeline 'npu-lower{cores=1 prefetch=true}']
"""

from __future__ import annotations

import argparse
import re
import sys

import numpy as np
from mlir import ir


def tag_top_level(func) -> list[tuple[str, str]]:
    """Give every op under the k-th top-level op the location T:k+1:1 (the
    simulator keeps one location per instruction); returns (op name, label)."""
    labels = []
    for k, child in enumerate(func.regions[0].blocks[0].operations):
        op = child.operation
        names = re.findall(r'"([^"]+)"\(', str(op.location))
        labels.append((op.name, names[0] if names else "-"))
        loc = ir.Location.file("T", k + 1, 1, context=op.context)
        stack = [op]
        while stack:
            o = stack.pop()
            o.location = loc
            stack.extend(x.operation for r in o.regions for b in r.blocks for x in b.operations)
    return labels


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--seq", type=int, default=128)
    p.add_argument("--loops", default="", help="ops whose loops get per-pipe busy and wait cycles")
    p.add_argument("--min-wait", type=int, default=100, help="top-level waits shorter than this are left out")
    p.add_argument("--pipeline", default="npu-lower{cores=1}", help="e.g. 'npu-lower{prefetch=true}'")
    args = p.parse_args()

    import npu
    from npu.frontend.bert import bert_layer
    from npu.ir import functions
    from npu.simulator import simulate
    from npu.simulator.hazards import PIPE_NAMES
    from npu.simulator.instruction import OP, WAIT

    kernel = npu.compile(bert_layer(args.seq, 768, 12, 3072), target="ascend910", where="bert_layer.onnx",
                          pipeline=args.pipeline)
    func = functions(kernel.module)[0]
    labels = tag_top_level(func)
    x = np.random.default_rng(1).standard_normal((1, args.seq, 768)).astype(np.float32)
    extra = [v for v in list(func.regions[0].blocks[0].arguments)[len(kernel.interface.roles):]
             if str(v.type) != "index"]  # the core index is the launch's, not an array
    res = simulate(kernel.module, kernel.interface.arguments(kernel.check_inputs([x]), extra),
                   target=kernel.target, numerics=False)
    trace, tl = res.trace_entries, res.timeline
    node_of = [int(instr.where.split(":")[1]) - 1 for instr, _, _ in trace]
    set_of = {w: s for s, w in tl.flows}
    nodes: dict[int, dict] = {}
    for i, (instr, _, _) in enumerate(trace):
        n = nodes.setdefault(node_of[i], {"first": None, "last": 0, "entries": []})
        n["entries"].append(i)
        if instr.kind == OP:
            n["first"] = tl.start[i] if n["first"] is None else min(n["first"], tl.start[i])
            n["last"] = max(n["last"], tl.end[i])
    print(f"BERT layer seq={args.seq}: {res.cycles} cycles, {len(res.hazards)} hazards")
    print(f"{'node':>5} {'op':<10} {'what':<22} {'start':>8} {'end':>8} {'cycles':>8}  waited for")
    for k in sorted(nodes):
        n, (name, label) = nodes[k], labels[k]
        if n["first"] is not None:
            print(f"{k:>5} {label:<10} {name:<22} {n['first']:>8} {n['last']:>8} "
                  f"{n['last'] - n['first']:>8}")
            continue
        i = n["entries"][0]
        instr = trace[i][0]
        if instr.kind != WAIT or tl.end[i] - tl.start[i] < args.min_wait or i not in set_of:
            continue
        src = node_of[set_of[i]]
        print(f"{k:>5} {label:<10} {'wait ' + instr.flag_text:<22} {tl.start[i]:>8} {tl.end[i]:>8} "
              f"{tl.end[i] - tl.start[i]:>8}  set after node {src} ({labels[src][1]} {labels[src][0]})")
    for k in sorted(nodes):
        if labels[k][1] not in args.loops.split(",") or labels[k][0] != "scf.for":
            continue
        busy: dict[str, int] = {}
        waits: dict[str, int] = {}
        for i in nodes[k]["entries"]:
            instr = trace[i][0]
            pipe = PIPE_NAMES[instr.pipe]
            if instr.kind == OP:
                busy[pipe] = busy.get(pipe, 0) + instr.occupancy
            elif instr.kind == WAIT:
                key = f"{pipe} waits {instr.flag_text}"
                waits[key] = waits.get(key, 0) + tl.end[i] - tl.start[i]
        n = nodes[k]
        print(f"\nnode {k} ({labels[k][1]} loop) {n['last'] - n['first']} cycles; busy: "
              + ", ".join(f"{p} {c}" for p, c in busy.items()))
        for key, c in sorted(waits.items(), key=lambda kv: -kv[1]):
            if c:
                print(f"    {key}: {c}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

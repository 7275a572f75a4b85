"""One BERT-base encoder layer (hidden 768, 12 heads, FFN 3072, seq 128,
batch 1) from ONNX: compile time, total simulated cycles, per-op cycles
against each op's own lower bound, and the GM workspace against its lower
bound. Numerics are checked against onnxruntime.

    .venv/bin/python bench/bert_layer.py [--seq 128] [--hidden 768] [--heads 12] [--ffn 3072]
                                         [--pipeline 'npu-lower{cores=1 fuse-attention=false}']
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np


def ideal_bound(target, seq: int, hidden: int, heads: int, ffn: int) -> dict:
    """The problem's ideal: every weight read once from GM in f16, x read and
    y written once in f32 (GM bandwidth), against the cube's block rate for
    the six matmuls and the two attention products; the larger one."""
    f = target.fractal

    def blocks(m, k, n):
        return -(-m // f) * -(-k // f) * -(-n // f)

    cube = (4 * blocks(seq, hidden, hidden) + 2 * blocks(seq, hidden, ffn)
            + 2 * heads * blocks(seq, hidden // heads, seq)) / target.cube_blocks_per_cycle
    weight_bytes = 2 * (4 * hidden * hidden + 2 * hidden * ffn)
    io_bytes = 4 * 2 * seq * hidden
    gm = (weight_bytes + io_bytes) / target.path("gm_to_l1").bytes_per_cycle
    return {"cube": int(cube), "gm": int(gm), "ideal": int(max(cube, gm))}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--seq", type=int, default=128)
    p.add_argument("--hidden", type=int, default=768)
    p.add_argument("--heads", type=int, default=12)
    p.add_argument("--ffn", type=int, default=3072)
    p.add_argument("--pipeline", default="npu-lower{cores=1}",
                   help="e.g. 'npu-lower{fuse-attention=false}' for the figures without attention fusion")
    args = p.parse_args()

    import onnxruntime

    import npu
    from npu.frontend.bert import bert_layer
    from npu.frontend.compile import CompileError

    model = bert_layer(args.seq, args.hidden, args.heads, args.ffn)
    try:
        kernel = npu.compile(model, target="ascend910", where="bert_layer.onnx",
                             pipeline=args.pipeline)
    except CompileError as e:
        print(e, file=sys.stderr)
        return 1
    x = np.random.default_rng(1).standard_normal((1, args.seq, args.hidden)).astype(np.float32)
    t0 = time.perf_counter()
    (y,), report = kernel(x)
    sim_seconds = time.perf_counter() - t0
    (want,) = onnxruntime.InferenceSession(model.SerializeToString()).run(None, {"x": x})
    err = float(np.abs(y - want).max())
    print(f"BERT layer seq={args.seq} hidden={args.hidden} heads={args.heads} ffn={args.ffn}")
    stages = ", ".join(f"{k} {v:.1f} s" for k, v in kernel.stage_seconds.items())
    print(f"compile time          {kernel.compile_seconds:.2f} s ({stages}; simulation {sim_seconds:.1f} s)")
    print(f"simulated cycles      {report['cycles']}")
    print(f"program lower bound   {report['bound_cycles']} ({report['bound_unit']}: this program's traffic and issue)")
    ideal = ideal_bound(kernel.target, args.seq, args.hidden, args.heads, args.ffn)
    print(f"problem's ideal       {ideal['ideal']} (cube {ideal['cube']}, GM traffic of weights and "
          f"activations once {ideal['gm']})")
    print(f"sum of per-op bounds  {report['per_op_bound_cycles']}")
    ws = report.get("gm_workspace") or {}
    if ws:
        print(f"GM workspace          {ws['allocated']} B (lower bound {ws['lower_bound']} B, "
              f"sum of temporaries {ws['sum']} B, {ws['algorithm']})")
    print(f"max |error| vs onnxruntime  {err:.4g} (max |y| {float(np.abs(want).max()):.3g})")
    print(f"\n{'op':<34} {'instr':>8} {'span cycles':>12} {'bound':>10}  unit")
    for row in report["per_op"]:
        print(f"{row['op'][:34]:<34} {row['instructions']:>8} {row['span_cycles']:>12} "
              f"{row['bound_cycles']:>10}  {row['bound_unit']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Simulated against published Ascend 910 measurements (issue 14).

Published figures used (the only measured, citable ones found):

  [AIB] Y. Xiao, Z. Wang, "AIbench: a Tool for Benchmarking Huawei Ascend AI
        Processors", CCF Transactions on High Performance Computing, 2024,
        doi:10.1007/s42514-024-00187-x. Abstract: an Ascend 910 chip
        provides 216 TFLOPS fp16 from the matrix unit and 3390 GFLOPS from
        the vector unit (all cores).

Rows (ascend910 preset, all 32 cores, timing-only simulation):

  matmul     4096x4096x1024 fp16 through npu-lower{cores=32}: 2MNK / time
  vector     one core streaming fp16 vadd over UB-resident data (no GM),
             times 32 cores: FLOP/cycle x cores x clock

ratio = simulated / measured (1 is perfect; above 1 the model is optimistic).

Blind spots (what the model cannot show): no published per-op timings of
transposes, fractalization or GM-bound vector ops were found, so those
have no row; AIBench's matrix figure is for the best shape it tried, ours
is one shape; the vector row assumes AIBench counted one FLOP per fp16
lane per add (its op and dtype are not stated in the abstract); the model
has no clock throttling, no DMA descriptor or kernel launch overheads, no
bank conflicts in UB/L1, no HBM refresh or page effects, and its L2 is a
capacity window, not a cache with sets and ways.

Run: .venv/bin/python bench/fidelity.py
"""

from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from multicore import _mm  # noqa: E402

from npu.ir import make_context, parse_module  # noqa: E402
from npu.pipeline import run_pipeline  # noqa: E402
from npu.simulator import simulate  # noqa: E402
from npu.target import get_target  # noqa: E402

MEASURED_MATMUL_TFLOPS = 216.0   # [AIB]
MEASURED_VECTOR_GFLOPS = 3390.0  # [AIB]


def matmul_tflops(target) -> float:
    m, k, n = 4096, 1024, 4096
    text, _ = _mm("mm", m, k, n)
    module = parse_module(text, make_context())
    run_pipeline(module, f"builtin.module(npu-lower{{cores={target.cores}}})", target)
    args = module.body.operations[0].regions[0].blocks[0].arguments
    inputs = [np.zeros([int(x) for x in str(a.type).split("<")[1].split("x")[:-1]], np.float16)
              for a in list(args)[:3]]
    res = simulate(module, inputs, target=target, numerics=False)
    seconds = res.cycles / (target.clock_ghz * 1e9)
    return 2 * m * n * k / seconds / 1e12


def vector_gflops(target, repeats: int = 255, rounds: int = 64) -> float:
    lanes = target.lanes(2)
    n = repeats * lanes
    ub = f'memref<{n}xf16, "ub">'
    strides = ("dst_blk_stride = 1 : i64, dst_rep_stride = 8 : i64, src0_blk_stride = 1 : i64, "
               "src0_rep_stride = 8 : i64, src1_blk_stride = 1 : i64, src1_rep_stride = 8 : i64")
    lines = [f"func.func @vstream(%g: memref<{lanes}xf16, \"gm\">) {{",
             f"  %a = memref.alloc() : {ub}", f"  %b = memref.alloc() : {ub}"]
    for buf in ("a", "b"):
        lines.append(f'  "cce.vdup"(%{buf}) {{dst_blk_stride = 1 : i64, dst_rep_stride = 8 : i64, '
                     f'mask = {lanes} : i64, repeat = {repeats} : i64, scalar = 1.0 : f64}} : '
                     f"({ub}) -> ()")
    lines.append('  "cce.pipe_barrier"() {pipe = "V"} : () -> ()')
    for _ in range(rounds):
        lines.append(f'  "cce.vadd"(%b, %a, %a) {{{strides}, mask = {lanes} : i64, '
                     f"repeat = {repeats} : i64}} : ({ub}, {ub}, {ub}) -> ()")
    lines += ["  return", "}", ""]
    module = parse_module("\n".join(lines), make_context())
    res = simulate(module, [np.zeros(lanes, np.float16)], target=target, numerics=False)
    flops = rounds * n
    return flops / res.cycles * target.cores * target.clock_ghz


def main() -> None:
    t = get_target("ascend910")
    rows = [("matmul 4096x4096x1024 fp16, 32 cores (TFLOPS)", matmul_tflops(t),
             MEASURED_MATMUL_TFLOPS),
            ("vector fp16 add, UB-resident, 32 cores (GFLOPS)", vector_gflops(t),
             MEASURED_VECTOR_GFLOPS)]
    print(f"{'row':<50} {'simulated':>10} {'measured':>10} {'sim/meas':>9}  source")
    for name, sim, meas in rows:
        print(f"{name:<50} {sim:>10.1f} {meas:>10.1f} {sim / meas:>9.2f}  [AIB]")


if __name__ == "__main__":
    main()

"""Matmul strategies and tilings on the simulator (thesis 6.4.1, Fig. 9-10).

For (M, N, K) = (512, 768, 768) and (512, 768, 3072), fp16 in / fp32 out on
ascend910, every strategy with the cost model's tiling and a few fixed
tilings (the thesis's (256,128,256), (128,256,128), IS/WS (32,768,32)) is
compiled through the real pipeline (npu-lower-matmul, [npu-double-buffer,]
npu-plan-memory, npu-insert-sync) and simulated strictly. Columns:

  cycles     simulated cycles
  bound      the simulator's lower bound for this program: max over the cube
             (MNK/16^3 block products) and every data path (bytes moved /
             bandwidth); the busiest resource named after it
  ratio      cycles / bound
  ideal      max(cube cycles, compulsory GM traffic / bandwidth): A and B
             read once, C written once; ratio_ideal = cycles / ideal
  GM bytes   bytes read from GM (gm_to_l1) + written (ub_to_gm), as
             simulated; the model's prediction is checked against them

The os-pipe row is the pipelined OS schedule (`schedule=pipelined`, the
default of `npu-lower` with double buffering; run with --double-buffer to see
it as `npu-lower` compiles it).

Run: .venv/bin/python bench/matmul.py [--double-buffer] [--shapes 512x768x768,...]
                                      [--options resident-a=false]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from dataclasses import dataclass

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "test", "python",
                                "matmul"))

from mm_common import blocks, nz, nz_matmul_program  # noqa: E402

from npu.ir import make_context, parse_module  # noqa: E402
from npu.costmodel.matmul.fitting import MatmulShape  # noqa: E402
from npu.costmodel.matmul.tiling import choose_tiling  # noqa: E402
from npu.passes import registry  # noqa: E402
from npu.pipeline import run_pipeline  # noqa: E402
from npu.simulator import simulate  # noqa: E402
from npu.target import get_target  # noqa: E402

# (strategy, tiles or None for the cost model's choice)
CONFIGS = [
    ("os", None),
    ("os", (256, 128, 256)),
    ("os", (256, 64, 256)),
    ("os", (128, 256, 128)),
    ("os", (128, 128, 128)),
    ("os", (64, 256, 64)),
    ("is", None),
    ("is", (32, 768, 32)),
    ("ws", None),
    ("ws", (32, 768, 32)),
    ("auto", None),
    # The pipelined OS schedule (flat (tile, L1 chunk) loop, L0 ping-pong,
    # C drained in pieces; cost-model tiles); its back end sinks set_flags
    # past runs of same-pipe transfers, as `npu-lower` does by default.
    ("os-pipe", None),
]
PIPELINED = "schedule=pipelined"


@dataclass
class Row:
    strategy: str
    tiles: str
    cycles: int
    bound: int
    bound_unit: str
    ideal: int
    gm_read: int
    gm_write: int
    model_read: int
    model_write: int
    seconds: float


def ideal_bound(M: int, N: int, K: int, target) -> int:
    f = target.fractal
    cube = target.cube_cycles(M * N * K // (f * f * f))
    read = (M * N + N * K) * 2 / target.path("gm_to_l1").bytes_per_cycle
    write = M * K * 4 / target.path("ub_to_gm").bytes_per_cycle
    return int(max(cube, read, write))


def run_one(M: int, N: int, K: int, strategy: str, tiles, backend: str, target,
            extra: str = "") -> Row:
    pipelined = strategy == "os-pipe"
    if pipelined:
        strategy = "os"
        backend = backend.replace("npu-insert-sync", "npu-insert-sync{sink-sets=true}")
    opts = [f"strategy={strategy}"] + ([PIPELINED] if pipelined else []) + extra.split()
    if tiles:
        opts += [f"m={tiles[0]}", f"n={tiles[1]}", f"k={tiles[2]}"]
    shape = MatmulShape(M, N, K)
    # The model as the pass asks it (the pipelined schedule's ranking, A's
    # row strip resident unless resident-a=false).
    choice = choose_tiling(shape, target, strategy, *(tiles or (0, 0, 0)), pipelined=pipelined,
                           resident_a=pipelined and "resident-a=false" not in extra)
    ctx = make_context()
    module = parse_module(nz_matmul_program(M, N, K), ctx)
    run_pipeline(module, f"npu-lower-matmul{{{' '.join(opts)}}}," + backend, target)
    rng = np.random.default_rng(0)
    a = rng.uniform(-1, 1, (M, N)).astype(np.float16)
    b = rng.uniform(-1, 1, (N, K)).astype(np.float16)
    c0 = np.zeros((blocks(K), blocks(M), 16, 16), np.float32)
    t0 = time.time()
    res = simulate(module, [nz(a), nz(b), c0], target=target, strict=True)
    seconds = time.time() - t0
    got = res.outputs[2].transpose(1, 2, 0, 3).reshape(M, K)
    want = a.astype(np.float32) @ b.astype(np.float32)
    err = float(np.abs(got - want).max())
    assert err <= 1e-3 * float(np.abs(want).max()), f"wrong result: max error {err}"
    by = res.report["bytes"]
    t = choice.traffic
    return Row(choice.strategy + ("(auto)" if strategy == "auto" else "") + ("-pipe" if pipelined else ""),
               f"({choice.tiles.m},{choice.tiles.n},{choice.tiles.k})" + ("" if tiles else "*"),
               res.cycles, int(res.report["bound_cycles"]), str(res.report.get("bound_unit", "")),
               ideal_bound(M, N, K, target), by.get("gm_to_l1", 0), by.get("ub_to_gm", 0),
               t.read_bytes(shape), t.write_bytes(shape), seconds)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--shapes", default="512x768x768,512x768x3072")
    p.add_argument("--double-buffer", action="store_true", help="add npu-double-buffer")
    p.add_argument("--target", default="ascend910")
    p.add_argument("--options", default="", help="more npu-lower-matmul options, e.g. "
                   "'resident-a=false'")
    args = p.parse_args(argv)
    target = get_target(args.target)
    known = registry()
    missing = [n for n in ("npu-plan-memory", "npu-insert-sync") if n not in known]
    if missing:
        print(f"error: the back end is incomplete ({', '.join(missing)} not registered)", file=sys.stderr)
        return 1
    backend = ",".join((["npu-double-buffer"] if args.double_buffer else [])
                       + ["npu-plan-memory", "npu-insert-sync"])
    print(f"target {target.name}; pipeline: npu-lower-matmul,{backend}; simulated strictly "
          f"(races, bounds, capacity checked)")
    print("* = tiles chosen by the cost model")
    for shape_text in args.shapes.split(","):
        M, N, K = (int(x) for x in shape_text.split("x"))
        print(f"\n(M, N, K) = ({M}, {N}, {K}), fp16 x fp16 -> fp32")
        head = (f"{'strategy':<9} {'tiles (m,n,k)':<16} {'cycles':>9} {'bound':>8} {'ratio':>6} "
                f"{'ideal':>7} {'r_ideal':>7} {'GM read B':>10} {'GM write B':>10} {'model ok':>8} bound unit")
        print(head)
        print("-" * len(head))
        for strategy, tiles in CONFIGS:
            try:
                r = run_one(M, N, K, strategy, tiles, backend, target, args.options)
            except Exception as e:  # a tiling that does not fit this shape, or a back-end failure
                first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
                print(f"{strategy:<9} {str(tiles):<16} failed: {first}")
                continue
            ok = r.gm_read == r.model_read and r.gm_write == r.model_write
            print(f"{r.strategy:<9} {r.tiles:<16} {r.cycles:>9} {r.bound:>8} {r.cycles / r.bound:>6.2f} "
                  f"{r.ideal:>7} {r.cycles / r.ideal:>7.2f} {r.gm_read:>10} {r.gm_write:>10} "
                  f"{'yes' if ok else 'NO':>8} {r.bound_unit}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

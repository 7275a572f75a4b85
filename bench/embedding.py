"""The embedding lookup (`ascend.gather`, `npu-lower-gather`): simulated
cycles against the GM bound, over table sizes, hidden sizes, id counts,
element types and cores.

The GM bound is the bytes the lookup must move over the busier mover: the
gathered rows read (GM -> UB) and written (UB -> GM), each at its path's
bytes per cycle (`target.paths`), per core when split; the table's size
does not matter (only the chosen rows are read). `+latency` adds one GM
round trip (a load's and a store's latency, which any kernel moving data
GM -> UB -> GM pays at least once): the floor small lookups meet. Ids are
uniform over the
vocabulary, negative ones included. Simulation is strict (0 hazards).

    .venv/bin/python bench/embedding.py [--cores 1 4]
"""

from __future__ import annotations

import argparse

import numpy as np

from npu.ir import block_dim, functions, make_context, parse_module
from npu.pipeline import run_pipeline
from npu.simulator import simulate
from npu.target import get_target

CASES = [  # vocab, hidden, ids, dtype
    (1000, 768, 128, "f32"),
    (30522, 768, 128, "f32"),
    (1000, 768, 128, "f16"),
    (1000, 768, 512, "f32"),
    (1000, 64, 128, "f32"),
    (101, 48, 14, "f32"),
    (30, 20, 6, "f32"),    # 80-byte rows: realigned in UB
]
NP = {"f32": np.float32, "f16": np.float16}


def program(vocab: int, hidden: int, ids: int, dtype: str) -> str:
    t, i, o = (f'memref<{vocab}x{hidden}x{dtype}, "gm">', f'memref<{ids}xi32, "gm">',
               f'memref<{ids}x{hidden}x{dtype}, "gm">')
    return (f"func.func @emb(%t: {t}, %i: {i}, %o: {o}) {{\n"
            f'  "ascend.gather"(%t, %i, %o) {{axis = 0 : i64}} : ({t}, {i}, {o}) -> ()\n'
            "  return\n}\n")


def run(vocab: int, hidden: int, ids: int, dtype: str, cores: int) -> tuple[int, float, int, int]:
    target = get_target()
    module = parse_module(program(vocab, hidden, ids, dtype), make_context())
    run_pipeline(module, f"npu-lower{{cores={cores}}}", target)
    rng = np.random.default_rng(0)
    table = rng.standard_normal((vocab, hidden)).astype(NP[dtype])
    idx = rng.integers(-vocab, vocab, ids).astype(np.int32)
    res = simulate(module, [table, idx, np.zeros((ids, hidden), NP[dtype])], target=target,
                   strict=True)
    assert np.array_equal(res.outputs[2], table[np.where(idx < 0, idx + vocab, idx)])
    used = block_dim(functions(module)[0])  # the cores it was split over
    nbytes = ids * hidden * np.dtype(NP[dtype]).itemsize / used
    bound = max(nbytes / target.path("gm_to_ub").bytes_per_cycle,
                nbytes / target.path("ub_to_gm").bytes_per_cycle)
    return res.cycles, bound, len(res.hazards), used


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cores", type=int, nargs="+", default=[1, 4])
    args = parser.parse_args()
    lat = get_target().path("gm_to_ub").latency + get_target().path("ub_to_gm").latency
    print(f"{'table':>12} {'ids':>5} {'type':>4} {'cores':>5} {'cycles':>8} {'GM bound':>9} "
          f"{'ratio':>6} {'+latency':>9} {'ratio':>6}")
    for vocab, hidden, ids, dtype in CASES:
        for cores in args.cores:
            cycles, bound, hazards, used = run(vocab, hidden, ids, dtype, cores)
            assert hazards == 0
            print(f"{vocab:>6}x{hidden:<5} {ids:>5} {dtype:>4} {used:>5} {cycles:>8} "
                  f"{bound:>9.0f} {cycles / bound:>6.2f} {bound + lat:>9.0f} "
                  f"{cycles / (bound + lat):>6.2f}")


if __name__ == "__main__":
    main()

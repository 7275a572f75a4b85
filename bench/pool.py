"""Benchmark of pooling on one core (issue 27): the CNN pools, compiled from
one-node ONNX models through the whole pipeline and simulated.

Per case: simulated cycles; the ideal bound, the largest of
  * GM reads (the input once) / gm_to_ub bytes per cycle (MTE2),
  * GM writes (the output once) / ub_to_gm bytes per cycle (MTE3),
  * the pooling arithmetic alone on the vector unit (done separably: kw - 1
    ops over the rows the windows read, kh - 1 over the output, +1 scaling
    for avg; 256 bytes a repeat, one repeat a cycle);
the program's own bound (the simulator's busiest pipe over the work this
program issues: band rows read twice, the vnchwconv transposes, the
per-transfer latency left out); and cycles over each. Global pools are
row reductions (`ascend.reduce_*`), their vector term one pass over the input.
The "nc1hwc0" rows pool an f16 conv result as it lies (`ascend.pool2d` with
`layout = "nc1hwc0"`, compiled from ascend IR: a conv always precedes it in
a network), with the same ideal.

    .venv/bin/python bench/pool.py [--target ascend910] [--quick] [--json]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "test" / "python" / "pooling"))
from pool_models import F16, F32, NUMPY, pool_model, run_ort  # noqa: E402

import npu  # noqa: E402
from npu.dialects.ascend_pool import Pool2d  # noqa: E402
from npu.target import get_target  # noqa: E402

# (name, op, NCHW, attributes): ResNet's stem pool, GoogLeNet/DenseNet-style
# average pools, the ResNet-18/50 and MobileNetV2 heads.
CASES = [
    ("resnet stem max 3x3/2", "MaxPool", [1, 64, 112, 112],
     dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])),
    ("avg 2x2/2 (densenet transition)", "AveragePool", [1, 128, 56, 56],
     dict(kernel_shape=[2, 2], strides=[2, 2])),
    ("avg 3x3/1 pad 1 (inception)", "AveragePool", [1, 192, 28, 28],
     dict(kernel_shape=[3, 3], strides=[1, 1], pads=[1, 1, 1, 1])),
    ("max 3x3/2 ceil (squeezenet)", "MaxPool", [1, 96, 109, 109],
     dict(kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1)),
    ("resnet-18 head gap", "GlobalAveragePool", [1, 512, 7, 7], {}),
    ("resnet-50 head gap", "GlobalAveragePool", [1, 2048, 7, 7], {}),
    ("mobilenetv2 head gap", "GlobalAveragePool", [1, 1280, 7, 7], {}),
]
QUICK = {"resnet stem max 3x3/2", "resnet-18 head gap"}
CASES_5HD = [CASES[0], CASES[2]]  # the stem pool; an average pool with pads


@dataclass
class Row:
    case: str
    dtype: str
    cycles: int
    ideal: int
    limit: str
    own_bound: int
    vs_ideal: float
    vs_own: float
    max_err: float


def ideal_bound(op: str, shape, attrs: dict, es: int, target) -> tuple[int, str]:
    n, c, h, w = shape
    if op.startswith("Global"):
        ho = wo = 1
        vector = math.ceil(n * c * h * w * es / 256)
    else:
        kernel = attrs["kernel_shape"]
        pads = tuple(attrs.get("pads", [0, 0, 0, 0]))
        strides = tuple(attrs.get("strides", [1, 1]))
        pool = Pool2d("avg" if op == "AveragePool" else "max", tuple(kernel), strides, (1, 1),
                      (pads[0], pads[1], pads[2], pads[3]))
        ho, wo = pool.out_size(h, w)
        if attrs.get("ceil_mode"):  # one more window where the floor rule drops a partial one
            ho, wo = (-(-(h + pads[0] + pads[2] - kernel[0]) // strides[0]) + 1,
                      -(-(w + pads[1] + pads[3] - kernel[1]) // strides[1]) + 1)
        rows = min(h, (ho - 1) * strides[0] + kernel[0])
        ops = (kernel[1] - 1) * rows * wo + (kernel[0] - 1 + (op == "AveragePool")) * ho * wo
        vector = math.ceil(max(ops, ho * wo) * n * c * es / 256)
    terms = {"MTE2": math.ceil(n * c * h * w * es / target.path("gm_to_ub").bytes_per_cycle),
             "MTE3": math.ceil(n * c * ho * wo * es / target.path("ub_to_gm").bytes_per_cycle),
             "V": vector * target.vector_cycles("simple")}
    top = max(terms.values())
    return top, "=".join(k for k, v in terms.items() if v == top)


def run_case(name: str, op: str, shape, attrs: dict, elem: int, target_name: str) -> Row:
    target = get_target(target_name)
    model = pool_model(op, shape, elem, **attrs)
    x = np.random.default_rng(0).standard_normal(shape).astype(NUMPY[elem])
    want = run_ort(model, {"x": x})[0]
    (got,), report = npu.compile(model, target=target_name, cores=1)(x)
    err = float(np.abs(got.astype(np.float64) - want.astype(np.float64)).max())
    ideal, limit = ideal_bound(op, shape, attrs, np.dtype(NUMPY[elem]).itemsize, target)
    own = int(report["bound_cycles"])
    cycles = int(report["cycles"])
    return Row(name, "f16" if elem == F16 else "f32", cycles, ideal, limit, own,
               round(cycles / ideal, 2), round(cycles / own, 2), err)


def run_case_5hd(name: str, op: str, shape, attrs: dict, target_name: str) -> Row:
    from npu.dialects.ascend_pool import pool2d_5hd_numpy
    from npu.ir import make_context, parse_module
    from npu.pipeline import run_pipeline
    from npu.simulator import simulate

    target = get_target(target_name)
    n, c, h, w = shape
    pads = tuple(attrs.get("pads", [0, 0, 0, 0]))
    p = Pool2d("avg" if op == "AveragePool" else "max", tuple(attrs["kernel_shape"]),
               tuple(attrs.get("strides", [1, 1])), (1, 1), pads,
               int(attrs.get("count_include_pad", 0)))
    x5 = [n, -(-c // 16), h, w, 16]
    y5 = [n, x5[1], *p.out_size(h, w), 16]
    types = [f'memref<{"x".join(map(str, s))}xf16, "gm">' for s in (x5, y5)]
    fields = ", ".join(f"{k} = {v}" for k, v in p.attrs().items())
    text = (f"func.func @pool(%x: {types[0]}, %y: {types[1]}) {{\n"
            f'  "ascend.pool2d"(%x, %y) {{{fields}, layout = "nc1hwc0"}} : ({types[0]}, {types[1]}) -> ()\n'
            "  return\n}\n")
    module = parse_module(text, make_context())
    run_pipeline(module, "npu-lower{cores=1}", target)
    x = np.random.default_rng(0).standard_normal(x5).astype(np.float16)
    res = simulate(module, [x, np.zeros(y5, np.float16)], target=target)
    err = float(np.abs(res.outputs[1].astype(np.float64) - pool2d_5hd_numpy(x, p)).max())
    ideal, limit = ideal_bound(op, shape, attrs, 2, target)
    own, cycles = int(res.report["bound_cycles"]), int(res.cycles)
    return Row(f"{name} nc1hwc0", "f16", cycles, ideal, limit, own, round(cycles / ideal, 2),
               round(cycles / own, 2), err)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--target", default="ascend910")
    ap.add_argument("--quick", action="store_true", help="two cases, f16 only (smoke test)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    rows = []
    for elem in ([F16] if args.quick else [F16, F32]):
        for name, op, shape, attrs in CASES:
            if args.quick and name not in QUICK:
                continue
            rows.append(run_case(name, op, shape, attrs, elem, args.target))
    for name, op, shape, attrs in CASES_5HD[:1 if args.quick else None]:
        rows.append(run_case_5hd(name, op, shape, attrs, args.target))
    if args.json:
        print(json.dumps([asdict(r) for r in rows], indent=1))
        return 0
    print(f"pooling on one core of {args.target} (simulated cycles)")
    print(f"{'case':<34} {'type':<4} {'cycles':>8} {'ideal':>8} {'limit':<5} {'own bound':>9} "
          f"{'x ideal':>7} {'x own':>6} {'max err':>8}")
    for r in rows:
        print(f"{r.case:<34} {r.dtype:<4} {r.cycles:>8} {r.ideal:>8} {r.limit:<5} {r.own_bound:>9} "
              f"{r.vs_ideal:>7.2f} {r.vs_own:>6.2f} {r.max_err:>8.1e}")
    print("ideal = max(input bytes / MTE2 rate, output bytes / MTE3 rate, the separable pooling "
          "arithmetic on V); own bound = the simulator's busiest pipe for the issued work "
          "(without per-transfer latency); max err against onnxruntime (nc1hwc0 rows: the "
          "numpy semantics)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

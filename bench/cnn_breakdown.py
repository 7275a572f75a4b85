"""Where a CNN's one-core time goes (issue 27): every op of the compiled model
(`npu.frontend.report`'s per-op rows: exclusive cycles, which sum to the run's
cycles, and the op's span) beside, for each conv, the same layer compiled
alone (`bench/conv.py`'s module: NC1HWC0 f16 in and out, a bias, no other
epilogue) and its cube bound. The gap between the model's cycles and the
sum of the convs alone is the time outside the conv main loops: epilogues,
pooling, the fc, layout conversions, launch gaps between kernels.

    .venv/bin/python bench/cnn_breakdown.py [--model resnet50] [--size 224] [--no-alone] [--json out]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))


def conv_specs(model) -> dict[str, tuple]:
    """{ONNX conv node name: bench/conv.py spec (C, H, W, Cout, K, stride, pad)}."""
    import onnx
    from onnx import numpy_helper

    inferred = onnx.shape_inference.infer_shapes(model)
    shapes = {v.name: [d.dim_value for d in v.type.tensor_type.shape.dim]
              for v in list(inferred.graph.value_info) + list(inferred.graph.input)}
    inits = {t.name: numpy_helper.to_array(t).shape for t in model.graph.initializer}
    specs = {}
    for node in model.graph.node:
        if node.op_type != "Conv":
            continue
        attrs = {a.name: list(a.ints) if a.ints else a.i for a in node.attribute}
        groups = attrs.get("group", 1)
        if groups != 1:
            continue
        _, c, h, w = shapes[node.input[0]]
        cout, _, k, _ = inits[node.input[1]]
        specs[node.name] = (c, h, w, cout, k, attrs.get("strides", [1, 1])[0], attrs.get("pads", [0] * 4)[0])
    return specs


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="resnet50")
    ap.add_argument("--size", type=int, default=224)
    ap.add_argument("--width", type=float, default=1.0)
    ap.add_argument("--no-alone", action="store_true", help="skip compiling each conv alone")
    ap.add_argument("--json", help="write the rows here")
    args = ap.parse_args(argv)

    import npu
    from cnn import build, ideal_bound
    from npu.target import get_target

    target = get_target("ascend910")
    model = build(args.model, args.size, args.width)
    kernel = npu.compile(model, target="ascend910", cores=1)
    x = np.random.default_rng(0).standard_normal((1, 3, args.size, args.size)).astype(np.float16)
    _, report = kernel(x, numerics=False)
    cycles = int(report["cycles"])
    ideal, _, _ = ideal_bound(model, target)
    specs = conv_specs(model)
    alone: dict[tuple, dict] = {}
    if not args.no_alone:
        import conv as conv_bench
        for spec in sorted(set(specs.values())):
            alone[spec] = conv_bench.run("model conv", spec, target)
    rows, by_cat = [], defaultdict(float)
    print(f"{args.model} {args.size}x{args.size} one core: {cycles} cycles, ideal {ideal} "
          f"({cycles / ideal:.2f}x)")
    print(f"{'op':<44} {'excl':>9} {'span':>8} {'alone':>8} {'ideal':>8} {'excl/alone':>10}  fused")
    for r in report["per_op"]:
        name = r["op"].split(" (")[0]
        kind = r["op"][r["op"].rfind("(") + 1:-1]
        spec = specs.get(name)
        a = alone.get(spec)
        row = {"op": name, "type": kind, "exclusive": r["exclusive_cycles"], "span": r["span_cycles"],
               "bound": r["bound_cycles"], "members": [m.split(" (")[0].rsplit("/", 1)[-1] for m in r["members"]],
               "spec": spec, "alone": a["cycles"] if a else None, "cube": round(a["cube"]) if a else None,
               "ideal": round(a["ideal"]) if a else None}
        rows.append(row)
        by_cat[kind] += row["exclusive"]
        ratio = f"{row['exclusive'] / row['alone']:.2f}" if a else ""
        print(f"{name[-44:]:<44} {row['exclusive']:>9.0f} {row['span']:>8} {row['alone'] or '':>8} "
              f"{row['ideal'] or '':>8} {ratio:>10}  {','.join(row['members'])}")
    print("exclusive cycles by op type: " + ", ".join(
        f"{k} {v:.0f} ({100 * v / cycles:.1f}%)" for k, v in sorted(by_cat.items(), key=lambda kv: -kv[1])))
    if alone:
        conv_rows = [r for r in rows if r["alone"]]
        s_ex = sum(r["exclusive"] for r in conv_rows)
        s_al = sum(r["alone"] for r in conv_rows)
        s_cu = sum(r["cube"] for r in conv_rows)
        s_id = sum(r["ideal"] for r in conv_rows)
        print(f"convs: {len(conv_rows)}, in the model {s_ex:.0f}, alone {s_al}, cube {s_cu}, "
              f"ideal with maps through GM {s_id}; "
              f"model - sum(alone) = {cycles - s_al}")
    if args.json:
        Path(args.json).write_text(json.dumps({"cycles": cycles, "ideal": ideal, "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

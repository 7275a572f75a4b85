"""The corpus of real exports (test/models/): each model family's variants
(TorchScript or dynamo exporter, eager or sdpa attention) side by side, with
simulated cycles, the program's own bound, and each variant's cycles over the
family's fastest (the spread the issue bounds at 3%). Numerics are checked
against onnxruntime on every row.

    .venv/bin/python bench/exports.py [--target ascend910] [--models bert,gpt2]
"""

from __future__ import annotations

import argparse
import os
import sys
from collections import defaultdict

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODELS = os.path.join(ROOT, "test", "models")
sys.path.insert(0, os.path.join(ROOT, "test", "python", "frontend"))

from test_real_exports import model_inputs  # noqa: E402


def run(path: str, target: str) -> dict:
    import onnx
    import onnxruntime

    import npu

    feeds = model_inputs(onnx.load(path), np.random.default_rng(0))
    kernel = npu.compile(path, target=target, cores=1)
    outputs, report = kernel(*[feeds[p.name] for p in kernel.interface.inputs])
    expected = onnxruntime.InferenceSession(path).run(kernel.output_names, feeds)
    error = max(float(np.max(np.abs(g.astype(np.float64) - w))) for g, w in zip(outputs, expected))
    return {"cycles": report["cycles"], "bound": report["bound_cycles"],
            "unit": report["bound_unit"], "error": error}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", default="ascend910")
    parser.add_argument("--models", default="", help="comma-separated families (default: all)")
    args = parser.parse_args()
    wanted = {m for m in args.models.split(",") if m}
    families: dict[str, list[str]] = defaultdict(list)
    for f in sorted(os.listdir(MODELS)):
        if f.endswith(".onnx") and not f.endswith("_dynamic.onnx"):
            family, variant = f[:-5].split("_", 1)
            if not wanted or family in wanted:
                families[family].append(variant)
    print("| model | variant | cycles | own bound (unit) | cycles / bound | / fastest variant "
          "| max abs error vs onnxruntime |")
    print("|---|---|---|---|---|---|---|")
    for family, variants in families.items():
        rows = {v: run(os.path.join(MODELS, f"{family}_{v}.onnx"), args.target) for v in variants}
        fastest = min(r["cycles"] for r in rows.values())
        for v, r in rows.items():
            print(f"| {family} | {v} | {r['cycles']:,} | {r['bound']:,} ({r['unit']}) | "
                  f"{r['cycles'] / r['bound']:.2f} | {r['cycles'] / fastest:.3f} | {r['error']:.2e} |")
        spread = max(r["cycles"] for r in rows.values()) / fastest
        print(f"| {family} | **spread** | | | | **{spread:.3f}** | |")


if __name__ == "__main__":
    main()

"""Whole models on the whole chip (ascend910): cycles over 1, 2, 8 and 32 cores.

Each model is compiled with `npu-lower{cores=N}` (fusion first, then
npu-split-cores: every op or fused group on its own split, chip barriers
where a later op reads or writes what another core touched) and simulated
as one launch, timing only (`numerics=False`: the same cycles; the numerics
are checked against onnxruntime by test/python/multicore/test_models.py).

  cycles    simulated cycles of the launch (its slowest core)
  speedup   1-core cycles / cycles
  launched  npu.block_dim (the split may use fewer cores than asked)
  barriers  chip barriers (cce.sync_all) in the program
  own       the program's own bound: its busiest core's busiest unit or data
            path, or the chip bus (report["bound_cycles"]); own x = cycles / own
  ideal     the problem's ideal on the chip: max(all cube cycles / 32 cores
            (report["chip"]), the model's GM bytes once / chip GM bandwidth):
            its inputs, outputs and weights as the model gives them
            (`npu.frontend.problem`), not the compiled arguments, whose layouts
            vary with the core count (MobileNetV2's depthwise weights)
  ratio     cycles / ideal
  limit     what bounds the launch: the slowest core's cube (M), its GM
            movers (MTE2/MTE3) or the chip GM bus; ties within 2% all named

Run: .venv/bin/python bench/chip.py [--cores 1,2,8,32] [--rows bert128,...,mobilenetv2] [--f32]
     [--pipeline-options 'split-cores-split-k=128x3072x768:4x32'] (more npu-lower options)
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import numpy as np

from npu.frontend.compile import compile as npu_compile
from npu.frontend.problem import model_chip
from npu.simulator import simulate

ROOT = Path(__file__).resolve().parents[1]


def _bert(seq: int, layers: int = 1) -> str:
    import onnx

    from npu.frontend.bert import bert_layer

    path = os.path.join(tempfile.gettempdir(), f"npu_chip_bert{seq}x{layers}.onnx")
    if not os.path.exists(path):
        onnx.save(bert_layer(seq=seq, layers=layers), path)
    return path


DTYPE = {"f16": np.float16, "f32": np.float32}  # the CNN rows' dtype (--f32: as torchvision exports)


def _resnet(depth: int, dtype: str = "f16") -> str:
    import onnx

    from npu.frontend.cnn import resnet

    suffix = "" if dtype == "f16" else f"_{dtype}"
    path = os.path.join(tempfile.gettempdir(), f"npu_chip_resnet{depth}{suffix}.onnx")
    if not os.path.exists(path):
        onnx.save(resnet(depth, size=224, dtype=DTYPE[dtype]), path)
    return path


def _mobilenet(dtype: str = "f16") -> str:
    import onnx

    from npu.frontend.cnn import mobilenet_v2

    suffix = "" if dtype == "f16" else f"_{dtype}"
    path = os.path.join(tempfile.gettempdir(), f"npu_chip_mobilenetv2{suffix}.onnx")
    if not os.path.exists(path):
        onnx.save(mobilenet_v2(size=224, dtype=DTYPE[dtype]), path)
    return path


ROWS = {
    "bert128": ("BERT-base layer, seq 128", lambda: _bert(128)),
    "bert512": ("BERT-base layer, seq 512", lambda: _bert(512)),
    "bert128x12": ("BERT-base 12 layers, seq 128", lambda: _bert(128, 12)),
    "ffn": ("README example (examples/ffn_block.onnx)", lambda: str(ROOT / "examples/ffn_block.onnx")),
    "resnet18": ("ResNet-18, 224x224, f16", lambda: _resnet(18)),
    "resnet50": ("ResNet-50, 224x224, f16", lambda: _resnet(50)),
    "mobilenetv2": ("MobileNetV2, 224x224, f16", _mobilenet),
}
CNN_ROWS = {"resnet18": lambda: _resnet(18, "f32"), "resnet50": lambda: _resnet(50, "f32"),
            "mobilenetv2": lambda: _mobilenet("f32")}


def _limit(rep: dict) -> str:
    b = rep["bounds"]
    candidates = {"cube": b["M"], "per-core MTE": max(b["MTE2"], b["MTE3"]),
                  "chip GM bw": rep["memory_system"]["chip_bus_bound_cycles"]}
    top = max(candidates.values())
    return "+".join(k for k, v in candidates.items() if v >= 0.98 * top)


def run(path: str, cores: int, options: str = "") -> dict:
    kernel = npu_compile(path, target="ascend910",
                         pipeline=f"npu-lower{{cores={cores}{' ' + options if options else ''}}}")
    func = kernel.module.body.operations[0]
    extra = [v for v in list(func.regions[0].blocks[0].arguments)[len(kernel.interface.roles):]
             if str(v.type) != "index"]
    inputs = [np.random.default_rng(0).standard_normal(p.shape).astype(p.numpy_dtype)
              for p in kernel.interface.inputs]
    t0 = time.perf_counter()
    res = simulate(kernel.module, kernel.interface.arguments(inputs, extra), target=kernel.target,
                   numerics=False)
    rep = res.report
    chip = model_chip(rep, kernel.interface.inputs + kernel.interface.outputs,
                      kernel.model_constant_bytes, kernel.target)
    text = str(kernel.module)
    core0 = rep["cores"][0]["busy_cycles"] if rep.get("cores") else None
    return {"cycles": res.cycles, "launched": rep.get("block_dim", 1),
            "barriers": text.count("hivm.sync_all"), "own": rep["bound_cycles"],
            **dict(zip(("ideal", "ideal_unit"), (chip["bound_cycles"], chip["bound_unit"]))),
            "program_ideal": rep["chip"]["bound_cycles"], "limit": _limit(rep), "core0": core0,
            "seconds": time.perf_counter() - t0}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cores", default="1,2,8,32")
    ap.add_argument("--rows", default=",".join(ROWS))
    ap.add_argument("--pipeline-options", default="",
                    help="more npu-lower options for every count but 1, e.g. "
                         "'split-cores-split-k=128x3072x768:4x32'")
    ap.add_argument("--f32", action="store_true",
                    help="the CNN rows in f32 (as torchvision exports them); other rows refused")
    args = ap.parse_args()
    counts = [int(c) for c in args.cores.split(",")]
    print(f"{'model':<40} {'cores':>5} {'launched':>8} {'barriers':>8} {'cycles':>10} "
          f"{'speedup':>8} {'own':>8} {'own x':>6} {'ideal':>8} {'ratio':>7}  limit (ideal by)")
    for key in args.rows.split(","):
        title, make = ROWS[key]
        if args.f32:
            if key not in CNN_ROWS:
                ap.error(f"--f32: row '{key}' has no f32 form (only {', '.join(CNN_ROWS)})")
            title, make = title.replace("f16", "f32"), CNN_ROWS[key]
        path = make()
        base = None
        for n in counts:
            r = run(path, n, args.pipeline_options if n > 1 else "")
            base = base or r["cycles"]
            print(f"{title:<40} {n:>5} {r['launched']:>8} {r['barriers']:>8} {r['cycles']:>10,} "
                  f"{base / r['cycles']:>7.2f}x {r['own']:>8,} {r['cycles'] / r['own']:>5.2f}x "
                  f"{r['ideal']:>8,} {r['cycles'] / r['ideal']:>6.2f}x"
                  f"  {r['limit']} ({r['ideal_unit']})", flush=True)


if __name__ == "__main__":
    main()

"""Turnaround at model scale: what a user waits for, per stage, and the memory
it takes. Each configuration runs in a fresh Python process that reports its
own CPU seconds (`time.process_time`), wall seconds and peak RSS
(`ru_maxrss`) after each stage:

  compile     npu.compile of the ONNX file (import, linalg -> ascend, npu-lower)
  timing      the simulation with numerics=False (cycles and every check)
  numerics    the simulation with full numerics (a second process)

The project's sources are compiled to bytecode once before the runs (into the
tree's `__pycache__`, as any first import does), and the children may read it
even where PYTHONDONTWRITEBYTECODE is set: a user waits for the compile of a
model, not for Python's compile of our sources, which happens once per install.

Default: the 12-layer BERT-base encoder at seq 128 (`npu.frontend.bert`), on
one core and on all 32 of ascend910; `--model resnet50` the ResNet-50 of
`npu.frontend.cnn` (batch 1, `--size` 224). Wall-clock figures, so run it on
a quiet machine and compare before and after a change in one session.

    .venv/bin/python bench/turnaround.py [--model bert|resnet50] [--layers 12] [--seq 128]
        [--size 224] [--cores 1,32]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

CHILD = r"""
import json, resource, sys, time
import numpy as np
import npu

path, cores, numerics = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1"
def mark():
    return {"cpu_s": round(time.process_time(), 2), "wall_s": round(time.perf_counter() - t0, 2),
            "rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)}
t0 = time.perf_counter()
kernel = npu.compile(path, cores=cores)
compiled = mark()
inputs = [np.random.default_rng(0).standard_normal(p.shape).astype(p.numpy_dtype)
          for p in kernel.interface.inputs]
_, report = kernel(*inputs, numerics=numerics)
done = mark()
print(json.dumps({"compile": compiled, "run": done, "cycles": report["cycles"],
                  "instructions": report["instructions"]}))
"""


def model(name: str, layers: int, seq: int, size: int) -> tuple[str, str]:
    """(path of the ONNX file, the title line)."""
    import onnx

    if name == "resnet50":
        from npu.frontend.cnn import resnet

        path = os.path.join(tempfile.gettempdir(), f"npu_turnaround_resnet50_{size}.onnx")
        if not os.path.exists(path):
            onnx.save(resnet(depth=50, size=size), path)
        return path, f"ResNet-50, batch 1, {size}x{size}, ascend910"
    from npu.frontend.bert import bert_layer

    path = os.path.join(tempfile.gettempdir(), f"npu_turnaround_bert{seq}x{layers}.onnx")
    if not os.path.exists(path):
        onnx.save(bert_layer(seq=seq, layers=layers), path)
    return path, f"BERT-base, {layers} layers, seq {seq}, ascend910"


ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGES = ("python", "passes", "dialects", "simulator")


def user_env() -> dict[str, str]:
    """This process's environment, without the switch that keeps bytecode off disk."""
    return {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def compile_sources() -> None:
    """Bytecode for the project's modules, as an installed package's first import leaves it."""
    subprocess.run([sys.executable, "-m", "compileall", "-q", *(os.path.join(ROOT, p) for p in PACKAGES)],
                   env=user_env(), check=True, stdout=subprocess.DEVNULL)


def measure(path: str, cores: int, numerics: bool) -> dict:
    done = subprocess.run([sys.executable, "-c", CHILD, path, str(cores), "1" if numerics else "0"],
                          capture_output=True, text=True, check=True, env=user_env())
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", choices=("bert", "resnet50"), default="bert")
    ap.add_argument("--layers", type=int, default=12)
    ap.add_argument("--size", type=int, default=224, help="ResNet-50's input size")
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--cores", default="1,32")
    args = ap.parse_args()
    path, title = model(args.model, args.layers, args.seq, args.size)
    compile_sources()
    print(title)
    print(f"{'cores':>5} {'stage':<9} {'CPU s':>7} {'wall s':>7} {'peak RSS MB':>12} "
          f"{'cycles':>11} {'instructions':>13} {'instr / CPU s':>14}")
    for cores in (int(c) for c in args.cores.split(",")):
        timing = measure(path, cores, numerics=False)
        full = measure(path, cores, numerics=True)
        c = timing["compile"]
        print(f"{cores:>5} {'compile':<9} {c['cpu_s']:>7} {c['wall_s']:>7} {c['rss_mb']:>12}")
        for stage, r in (("timing", timing), ("numerics", full)):
            cpu = round(r["run"]["cpu_s"] - r["compile"]["cpu_s"], 2)
            wall = round(r["run"]["wall_s"] - r["compile"]["wall_s"], 2)
            rate = int(r["instructions"] / cpu) if cpu > 0 else 0
            print(f"{cores:>5} {stage:<9} {cpu:>7} {wall:>7} {r['run']['rss_mb']:>12} "
                  f"{r['cycles']:>11,} {r['instructions']:>13,} {rate:>14,}", flush=True)


if __name__ == "__main__":
    main()

"""The hivm back end on the examples: code size and what the new stages cost.

For each `examples/*.mlir`, compiled with `npu-lower` (default options):

  static      hivm instructions in the binary (npu-as: every op incl. constants,
              loop markers and `hivm.addr`) and its size in bytes
  hw instr    hivm hardware instructions in the program text (copies, loads, mad,
              vector, sync; no constants or scalar ops)
  dynamic     instructions the simulator dispatched (same at both levels)
  cycles      simulated cycles at the cce and at the hivm level (must be equal)
  lower ms    wall time of `npu-lower{emit=cce}` (everything before hivm)
  +hivm ms    added by `npu-lower-cce-to-hivm`; +encode ms: `npu-as` encoding
              (median of --repeat runs each; the machine is shared, so noisy)

    .venv/bin/python bench/hivm.py [--json] [--repeat 3] [--no-simulate]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

from npu.dialects import hivm
from npu.hivm.binary import encode
from npu.ir import make_context, parse_module, walk
from npu.pipeline import run_pipeline
from npu.simulator import simulate
from npu.simulator.core import find_entry
from npu.target import get_target
from npu.simulator.run_inputs import random_inputs

ROOT = Path(__file__).resolve().parent.parent
HARDWARE = set(hivm.ALL_OPS) - {"hivm.addr", "hivm.set_vector_mask"}


def _timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def measure(path: Path, repeat: int, sim: bool) -> dict:
    target = get_target()
    text = path.read_text()
    lower, to_hivm, enc = [], [], []
    for _ in range(repeat):
        module = parse_module(text, make_context())
        lower.append(_timed(lambda: run_pipeline(module, "npu-lower{cores=1 emit=cce}", target)))
        cce_text = str(module)
        to_hivm.append(_timed(lambda: run_pipeline(module, "npu-lower-cce-to-hivm", target)))
        binary = b""

        def _encode() -> None:
            nonlocal binary
            binary = encode(module)
        enc.append(_timed(_encode))
    from npu.hivm.disasm import decode_entries

    _, entries = decode_entries(binary, path.name, make_context())
    row = {"example": path.stem, "static": len(entries), "bytes": len(binary),
           "hw_instructions": sum(1 for op in walk(module.operation) if op.name in HARDWARE),
           "lower_ms": 1e3 * statistics.median(lower),
           "hivm_ms": 1e3 * statistics.median(to_hivm), "encode_ms": 1e3 * statistics.median(enc)}
    if sim:
        cce_module = parse_module(cce_text, make_context())
        inputs = random_inputs(find_entry(cce_module, None), 0)
        at_cce = simulate(cce_module, [a.copy() for a in inputs], target=target)
        at_hivm = simulate(module, [a.copy() for a in inputs], target=target)
        same = all(a.tobytes() == b.tobytes() for a, b in zip(at_cce.outputs, at_hivm.outputs))
        row.update(dynamic=at_hivm.instructions, cce_cycles=at_cce.cycles,
                   hivm_cycles=at_hivm.cycles, same_outputs=same)
    return row


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--json", action="store_true")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--no-simulate", dest="simulate", action="store_false")
    args = p.parse_args()
    rows = [measure(path, args.repeat, args.simulate) for path in sorted((ROOT / "examples").glob("*.mlir"))]
    if args.json:
        print(json.dumps(rows, indent=2))
        return
    print(f"{'example':<22} {'static':>6} {'bytes':>7} {'hw instr':>8} {'dynamic':>8} "
          f"{'cce cycles':>10} {'hivm cycles':>11} {'same':>5} {'lower ms':>9} {'+hivm ms':>8} "
          f"{'+encode ms':>10}")
    for r in rows:
        print(f"{r['example']:<22} {r['static']:>6} {r['bytes']:>7} {r['hw_instructions']:>8} "
              f"{r.get('dynamic', '-'):>8} {r.get('cce_cycles', '-'):>10} {r.get('hivm_cycles', '-'):>11} "
              f"{str(r.get('same_outputs', '-')):>5} {r['lower_ms']:>9.1f} {r['hivm_ms']:>8.1f} "
              f"{r['encode_ms']:>10.1f}")


if __name__ == "__main__":
    main()

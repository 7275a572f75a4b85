"""The performance cliffs of issue 26 on ascend910, one core: each case's
simulated cycles against its bound, checked against numpy / onnxruntime.

  * fused softmax and layernorm rows around the vector repeat stride
    (2,040 f32 columns; 128 rows): bound = GM bytes read and written once
    over the GM bandwidth (bench/fusion.py's), and vocabulary-sized
    softmax rows: 16x30522 (not whole 32-byte blocks), 16x32000 (resident
    in UB, two slots) and 16x32768 (128 KB rows: UB cannot hold two
    whole, so the two slots share one stored piece of the row);
    each row also gives the program's own bound (its busiest unit: GM
    reads and writes run side by side, so a kernel can beat the first);
  * reduce_sum over 1024x2048 in f16 and f32 along the last axis
    (double-buffered): bound = max(GM reads, GM writes, vector repeats)
    (bench/vector.py's);
  * a BERT-base layer at ViT's 197 tokens against 208, the next multiple
    of 16 (bench/bert_layer.py's model; --no-bert skips them).

    .venv/bin/python bench/cliffs.py [--no-bert]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "test", "python", "fusion"))
sys.path.insert(0, HERE)

ROW_CASES = [("softmax", 128, n) for n in (2040, 2048, 3072, 4096)] \
    + [("layernorm", 128, n) for n in (2040, 2048, 3072, 4096)] \
    + [("softmax", 16, n) for n in (30522, 32000, 32768)]


def row_case(kind: str, rows: int, n: int, target) -> tuple[str, int, int, str]:
    """(status, cycles, bound, own) of a fused row kernel in f32. The bound
    is the issue's: the bytes read and written once over one GM path. `own`
    is the program's own bound (its busiest unit's work, from the report):
    GM reads (MTE2) and writes (MTE3) run side by side on this target, so a
    kernel can beat the issue's bound, and softmax's exp makes V the limit."""
    from fusion import gm_bound, run_ascend
    from row_patterns import layernorm, softmax

    from npu.pipeline import PipelineError

    text = softmax((rows,), n) if kind == "softmax" else layernorm(rows, n, residual=False)
    ideal = 2 * rows * n * 4 + (2 * n * 4 if kind == "layernorm" else 0)
    try:
        report = run_ascend(text, "npu-lower{cores=1}", target)
    except PipelineError as e:
        return f"fails: {str(e).splitlines()[0][-70:]}", 0, gm_bound(target, ideal), "-"
    own = f"own {report['bound_cycles']} ({report['bound_unit']})"
    return "ok", int(report["cycles"]), gm_bound(target, ideal), own


def bert(seq: int) -> int:
    import onnxruntime

    import npu
    from npu.frontend.bert import bert_layer

    model = bert_layer(seq, 768, 12, 3072)
    kernel = npu.compile(model, target="ascend910", where="bert_layer.onnx", cores=1)
    x = np.random.default_rng(1).standard_normal((1, seq, 768)).astype(np.float32)
    (y,), report = kernel(x)
    (want,) = onnxruntime.InferenceSession(model.SerializeToString()).run(None, {"x": x})
    np.testing.assert_allclose(y, want, rtol=2e-2, atol=1e-2 * float(np.abs(want).max()))
    return int(report["cycles"])


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--no-bert", action="store_true")
    args = p.parse_args()
    from vector import reduce_case, run_case

    from npu.target import get_target

    target = get_target("ascend910")
    print(f"{'case':<34} {'cycles':>9} {'bound':>9} {'ratio':>6}  note")
    for kind, rows, n in ROW_CASES:
        t0 = time.perf_counter()
        status, cycles, bound, own = row_case(kind, rows, n, target)
        ratio = f"{cycles / bound:>6.2f}" if cycles else f"{'-':>6}"
        print(f"{f'{kind} {rows}x{n} f32':<34} {cycles or '-':>9} {bound:>9} {ratio}  "
              f"{status} ({time.perf_counter() - t0:.0f} s); {own}", flush=True)
    rng = np.random.default_rng(0)
    for elem in ("f16", "f32"):
        case = reduce_case(1024, 2048, elem, rng, target)
        row = run_case(case, target)[-1]  # double-buffered, as npu-lower runs it
        print(f"{case.name:<34} {row.cycles:>9} {row.bound:>9} {row.ratio:>6.2f}  "
              f"{'ok' if row.correct else 'WRONG'} ({row.mode})", flush=True)
    if not args.no_bert:
        at = {seq: bert(seq) for seq in (197, 208)}
        for seq, cycles in at.items():
            print(f"{f'BERT-base layer seq {seq}':<34} {cycles:>9} {at[208]:>9} "
                  f"{cycles / at[208]:>6.2f}  against seq 208")
    return 0


if __name__ == "__main__":
    sys.exit(main())

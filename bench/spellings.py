"""One BERT-base-like layer written each way exporters write it
(`npu.frontend.spellings`): every GELU spelling, every attention-scale
spelling, K^T by two transposes, pre-norm; simulated cycles against the
problem's ideal (`bench/bert_layer.py`'s `ideal_bound`), with
`npu-canonicalize` (the default pipeline) and, for comparison, without it.
The spread is each row's cycles over the reference row of its GELU family
(erf: "canonical", tanh: "tanh_op"); pre-norm is another computation (its
ratio to the ideal is what compares). Numerics are checked against
onnxruntime with `--check`.

    .venv/bin/python bench/spellings.py [--seqs 128,256] [--hidden 768] [--heads 12]
                                        [--ffn 3072] [--no-before] [--check]
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from bert_layer import ideal_bound  # noqa: E402

# (row label, spelling fields): the reference first, then one field changed at a time.
ROWS = (
    ("gelu canonical  x*(0.5*(1+erf))", {}),
    ("gelu torch      (x*(1+erf))*0.5", {"gelu": "torch"}),
    ("gelu hf         (x*0.5)*(1+erf)", {"gelu": "hf"}),
    ("gelu halved     (x*(1+erf))/2", {"gelu": "halved"}),
    ("gelu sqrt_half  erf(x*sqrt(1/2))", {"gelu": "sqrt_half"}),
    ("gelu op         Gelu (opset 20)", {"gelu": "op"}),
    ("gelu tanh_op    Gelu tanh", {"gelu": "tanh_op"}),
    ("gelu tanh       gelu_new, Pow(x,3)", {"gelu": "tanh"}),
    ("gelu tanh_cube  gelu_new, x*x*x", {"gelu": "tanh_cube"}),
    ("gelu tanh_torch 0.5*(x*(1+tanh))", {"gelu": "tanh_torch"}),
    ("gelu fast       tanh(c*x*(1+k*x*x))", {"gelu": "fast"}),
    ("scale div       QK^T / sqrt(d)", {"scale": "div"}),
    ("scale q         (Q/sqrt(d)) K^T", {"scale": "q"}),
    ("scale qk        sdpa: Q, K by d^-1/4", {"scale": "qk"}),
    ("scale proj      BART: q_proj(x)*s", {"scale": "proj"}),
    ("K^T two         transpose(1,2),(-1,-2)", {"k_t": "two"}),
    ("K^T dynamo      heads as [B*H,S,D]", {"k_t": "dynamo"}),
    ("norm pre        GPT-2 pre-norm", {"norm": "pre"}),
    ("LN ops          LayerNorm spelled out", {"ln": "ops"}),
    ("ts sdpa         torch GELU, sdpa scale", {"gelu": "torch", "scale": "qk", "k_t": "two"}),
    ("dynamo sdpa     + dynamo K^T", {"gelu": "torch", "scale": "qk", "k_t": "dynamo"}),
)


def reference_row(fields: dict) -> str:
    """The row `fields` is compared with: erf GELU "canonical", tanh GELU the Gelu op."""
    from npu.frontend.spellings import TANH_GELUS

    want = {"gelu": "tanh_op"} if fields.get("gelu") in TANH_GELUS else {}
    return next(label for label, f in ROWS if f == want)


def run(spelling, seq: int, args, pipeline: str, check: bool) -> tuple[int, float | None]:
    import onnxruntime

    import npu
    from npu.frontend import spellings as sp

    model = sp.layer(seq, args.hidden, args.heads, args.ffn, spelling)
    kernel = npu.compile(model, target="ascend910", where="layer.onnx", pipeline=pipeline)
    x = np.random.default_rng(1).standard_normal((1, seq, args.hidden)).astype(np.float32)
    (y,), report = kernel(x)
    err = None
    if check:
        (want,) = onnxruntime.InferenceSession(model.SerializeToString()).run(None, {"x": x})
        err = float(np.abs(y - want).max())
    return report["cycles"], err


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--seqs", default="128,256")
    p.add_argument("--hidden", type=int, default=768)
    p.add_argument("--heads", type=int, default=12)
    p.add_argument("--ffn", type=int, default=3072)
    p.add_argument("--no-before", action="store_true",
                   help="skip the runs without npu-canonicalize")
    p.add_argument("--check", action="store_true", help="max |error| against onnxruntime")
    p.add_argument("--rows", default="", help="only the rows whose label contains one of these "
                   "comma-separated words (the reference rows always run)")
    args = p.parse_args()

    from npu.frontend.spellings import Spelling
    from npu.target import get_target

    seqs = [int(s) for s in args.seqs.split(",")]
    target = get_target("ascend910")
    print(f"BERT-base-like layer, hidden {args.hidden}, {args.heads} heads, FFN {args.ffn}: "
          "simulated cycles, / the problem's ideal, spread over the reference row of the same "
          "GELU family; 'before': without npu-canonicalize")
    ideals = {seq: ideal_bound(target, seq, args.hidden, args.heads, args.ffn)["ideal"]
              for seq in seqs}
    cols = f"{'cycles':>8} {'ratio':>6} {'spread':>7}" + ("" if args.no_before else
                                                          f" {'before':>8} {'ratio':>6}")
    print(f"{'':<41}" + "".join(f"| {f'seq {seq}, ideal {ideals[seq]}':<{len(cols) + 1}}"
                                for seq in seqs))
    print(f"{'spelling':<41}" + "".join(f"| {cols} " for _ in seqs)
          + ("| max|err|" if args.check else ""))
    results: dict[tuple[str, int], int] = {}
    words = [w for w in args.rows.split(",") if w]
    references = {reference_row(fields) for _, fields in ROWS}
    for label, fields in ROWS:
        if words and label not in references and not any(w in label for w in words):
            continue
        line = f"{label:<41}"
        errs = []
        for seq in seqs:
            ideal = ideals[seq]
            cycles, err = run(Spelling(**fields), seq, args, "npu-lower{cores=1}", args.check)
            results[(label, seq)] = cycles
            ref = results.get((reference_row(fields), seq), cycles)
            line += f"| {cycles:>8} {cycles / ideal:5.2f}x {100 * (cycles / ref - 1):+6.1f}%"
            if not args.no_before:
                before, _ = run(Spelling(**fields), seq, args, "npu-lower{cores=1 canonicalize=false}", False)
                line += f" {before:>8} {before / ideal:5.2f}x"
            line += " "
            if err is not None:
                errs.append(err)
        print(line + (f"| {max(errs):.2g}" if errs else ""), flush=True)
    real_exports(args.check)
    return 0


def real_exports(check: bool) -> None:
    """Layer 0 of ViT as each exporter wrote it (test/models/), side by side."""
    import onnx
    import onnxruntime

    import npu
    from npu.frontend import spellings as sp

    models = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "test", "models")
    rows = [name for name in sp.EXPORT_LAYERS if os.path.exists(os.path.join(models, name + ".onnx"))]
    if not rows:
        return
    print("\nreal exports (test/models/), layer 0 [1, 17, 32]: cycles, spread over the first, "
          "and without npu-canonicalize")
    first = None
    for name in rows:
        model = sp.subgraph(onnx.load(os.path.join(models, name + ".onnx")), *sp.EXPORT_LAYERS[name])
        x = np.random.default_rng(1).standard_normal(sp.EXPORT_LAYERS[name][2]).astype(np.float32)
        cycles, outputs = {}, {}
        for key, pipeline in (("after", "npu-lower{cores=1}"),
                              ("before", "npu-lower{cores=1 canonicalize=false}")):
            (outputs[key],), report = npu.compile(model, where=name, pipeline=pipeline)(x)
            cycles[key] = report["cycles"]
        y = outputs["after"]
        first = first or cycles["after"]
        err = ""
        if check:
            (want,) = onnxruntime.InferenceSession(model.SerializeToString()).run(
                None, {model.graph.input[0].name: x})
            err = f"  max|err| {float(np.abs(y - want).max()):.2g}"
        print(f"{name:<20} {cycles['after']:>8} {100 * (cycles['after'] / first - 1):+6.1f}%"
              f"   before {cycles['before']:>8}{err}")


if __name__ == "__main__":
    sys.exit(main())

"""Fusion on ascend910, one core: cycles and GM bytes moved unfused
(`npu-lower{fuse=false}`) and fused (`npu-lower`, which runs npu-fuse), against
the problem's ideal bound: the larger of the cube's cycles (sum over matmuls
of M*N*K / 16^3 blocks at the target's block rate) and the minimal GM traffic
(inputs, weights and outputs once) over the GM bandwidth. Every run is
checked against numpy / onnxruntime before its figures are printed.

    .venv/bin/python bench/fusion.py [--seq 128] [--skip-bert] [--bert-seq 128 512]
                                     [--options prefetch=false]

Columns: cycles unfused and fused, the speedup, GM bytes moved unfused and
fused (every GM read and write the simulator counted), the ideal bound and
fused / ideal. BERT layers run at sequence 128 and 512 by default (about
two minutes in all on an idle core).
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


def gm_bytes(report: dict) -> int:
    moved = report["bytes"]
    return sum(n for path, n in moved.items() if path.startswith("gm_") or path.endswith("_gm"))


def gm_bound(target, nbytes: int) -> int:
    return -(-nbytes // target.path("gm_to_ub").bytes_per_cycle)


# npu-lower options every row adds (--options), e.g. "prefetch=false".
EXTRA_OPTIONS = ""


def lower(options: str = "") -> str:
    """The npu-lower pipeline with `options` and the --options of the run."""
    both = " ".join(o for o in (options, EXTRA_OPTIONS) if o)
    return f"npu-lower{{cores=1 {both}}}" if both else "npu-lower{cores=1}"


def run_ascend(text: str, pipeline: str, target):
    from npu.ir import (arg_attrs, constant_data, functions, make_context, memref_element,
                        memref_shape, parse_module)
    from npu.pipeline import run_pipeline
    from npu.reference import evaluate
    from npu.simulator import simulate

    module = parse_module(text, make_context())
    func = functions(module)[0]
    args = func.regions[0].blocks[0].arguments
    rng = np.random.default_rng(0)
    dtypes = {"f16": np.float16, "f32": np.float32}
    ins = [rng.standard_normal(memref_shape(a.type)).astype(dtypes[memref_element(a.type)])
           for a in args]
    for k, a in enumerate(args):  # host constants: their own data (a bias)
        attr = arg_attrs(func, k).get("npu.constant")
        if attr is not None:
            ins[k] = constant_data(attr, memref_shape(a.type), memref_element(a.type))
    want = evaluate(functions(module)[0], [a.copy() for a in ins])
    run_pipeline(module, pipeline, target)
    result = simulate(module, [a.copy() for a in ins], target=target, strict=True)
    for got, exp in zip(result.outputs, want):
        np.testing.assert_allclose(got.astype(np.float64), exp.astype(np.float64),
                                   rtol=2e-3, atol=2e-3 * float(np.abs(exp).max()))
    return result.report


def run_onnx(model, feeds: dict, pipeline: str, target_name: str):
    import onnxruntime

    import npu

    kernel = npu.compile(model, target=target_name, pipeline=pipeline)
    outs, report = kernel(*feeds.values())
    want = onnxruntime.InferenceSession(model.SerializeToString()).run(None, feeds)
    for got, exp in zip(outs, want):
        np.testing.assert_allclose(got, exp, rtol=2e-2, atol=1e-2 * float(np.abs(exp).max()))
    return report


def ffn_in_model(seq: int, hidden: int, ffn: int):
    """x @ W + b, then GELU (erf form): the FFN's first half."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    w = (rng.standard_normal((hidden, ffn)) / np.sqrt(hidden)).astype(np.float32)
    b = (rng.standard_normal(ffn) * 0.02).astype(np.float32)
    nodes = [helper.make_node("MatMul", ["x", "w"], ["h0"], name="ffn_in"),
             helper.make_node("Add", ["h0", "b"], ["h1"], name="ffn_bias"),
             helper.make_node("Gelu", ["h1"], ["y"], name="gelu")]
    graph = helper.make_graph(
        nodes, "ffn_in", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [seq, hidden])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [seq, ffn])],
        [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)], ir_version=9)


def qkv_model(seq: int, hidden: int):
    """Q, K and V projections with their biases: three matmuls reading x."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    nodes, inits, outs = [], [], []
    for p in "qkv":
        inits += [numpy_helper.from_array((rng.standard_normal((hidden, hidden)) / np.sqrt(hidden))
                                          .astype(np.float32), f"w{p}"),
                  numpy_helper.from_array((rng.standard_normal(hidden) * 0.02).astype(np.float32), f"b{p}")]
        nodes += [helper.make_node("MatMul", ["x", f"w{p}"], [f"{p}0"], name=f"{p}_proj"),
                  helper.make_node("Add", [f"{p}0", f"b{p}"], [p], name=f"{p}_bias")]
        outs.append(helper.make_tensor_value_info(p, TensorProto.FLOAT, [seq, hidden]))
    graph = helper.make_graph(
        nodes, "qkv", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [seq, hidden])], outs, inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)], ir_version=9)


def row(name: str, unfused: dict, fused: dict, ideal: int, note: str = "") -> None:
    print(f"{name:<30} {unfused['cycles']:>10} {fused['cycles']:>10} "
          f"{unfused['cycles'] / fused['cycles']:>7.2f}x {gm_bytes(unfused):>11} "
          f"{gm_bytes(fused):>11} {ideal:>9} {fused['cycles'] / ideal:>7.2f}x  {note}")


def long_rows(target, n: int) -> None:
    """Rows longer than UB: the fused two-pass kernel reads its inputs twice
    and writes once (its own traffic bound), against the ideal of once each.
    The unfused lowering cannot lower rows past the vector repeat stride."""
    from row_patterns import layernorm, softmax

    from npu.pipeline import PipelineError

    rows = 8
    print(f"\nrows of {n} (longer than UB): two-pass kernels; own bound = its GM traffic "
          "(2 reads + 1 write) / bandwidth")
    print(f"{'case':<30} {'unfused':>10} {'fused':>10} {'GM B fused':>11} {'own bound':>10} "
          f"{'fused/own':>9} {'ideal':>9} {'fused/ideal':>11}")
    cases = [(f"softmax {rows}x{n} f32", softmax((rows,), n), 1),
             (f"softmax {rows}x{n} f16", softmax((rows,), n, "f16"), 1),
             (f"layernorm {rows}x{n} f32", layernorm(rows, n, residual=False), 1),
             (f"add+layernorm {rows}x{n} f32", layernorm(rows, n), 2)]
    for name, text, inputs in cases:
        es = 2 if "f16" in name else 4
        t0 = time.perf_counter()
        try:
            unfused = str(run_ascend(text, lower("fuse=false"), target)["cycles"])
        except PipelineError:
            unfused = "n/a"
        fused = run_ascend(text, lower(), target)
        params = 2 * n * es if "layernorm" in name else 0  # gamma, beta
        own = gm_bound(target, gm_bytes(fused))
        ideal = gm_bound(target, (inputs + 1) * rows * n * es + params)
        print(f"{name:<30} {unfused:>10} {fused['cycles']:>10} {gm_bytes(fused):>11} {own:>10} "
              f"{fused['cycles'] / own:>8.2f}x {ideal:>9} {fused['cycles'] / ideal:>10.2f}x  "
              f"program bound {fused['bound_cycles']} ({fused['bound_unit']}); "
              f"{time.perf_counter() - t0:.0f} s")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--seq", type=int, default=128)
    p.add_argument("--hidden", type=int, default=768)
    p.add_argument("--heads", type=int, default=12)
    p.add_argument("--ffn", type=int, default=3072)
    p.add_argument("--mlp-width", type=int, default=1536,
                   help="N of the standalone matmul+bias+GELU (its ND output must be "
                        "defractalized, which needs 16 rows and their transpose in UB)")
    p.add_argument("--bert-seq", type=int, nargs="*", default=[128, 512])
    p.add_argument("--attention-seq", type=int, nargs="*", default=[128, 512],
                   help="seqs of the attention case (heads x seq x hidden/heads, f32 inputs)")
    p.add_argument("--skip-bert", action="store_true")
    p.add_argument("--long-rows", type=int, default=100000,
                   help="row length of the long-row cases (rows longer than UB: the two-pass "
                        "kernel); 0 skips them")
    p.add_argument("--options", default="",
                   help="npu-lower options added to both pipelines, e.g. 'prefetch=false'")
    args = p.parse_args()
    global EXTRA_OPTIONS
    EXTRA_OPTIONS = args.options

    from attention_patterns import attention
    from row_patterns import layernorm, softmax

    from bert_layer import ideal_bound
    from npu.frontend.bert import bert_layer, self_attention
    from npu.target import get_target

    target = get_target("ascend910")
    seq, hidden, heads, ffn = args.seq, args.hidden, args.heads, args.ffn
    print(f"ascend910, one core; cycles unfused / fused; GM bytes moved; ideal bound "
          f"(max of cube cycles and minimal GM bytes / {target.path('gm_to_ub').bytes_per_cycle} B "
          "per cycle)\n")
    print(f"{'case':<30} {'unfused':>10} {'fused':>10} {'speedup':>8} {'GM B unf.':>11} "
          f"{'GM B fused':>11} {'ideal':>9} {'fused/ideal':>8}")
    cases = [(f"softmax {heads}x{seq}x{seq} f32", softmax((heads, seq), seq), 2 * heads * seq * seq * 4),
             (f"softmax {heads}x{seq}x{seq} f16", softmax((heads, seq), seq, "f16"),
              2 * heads * seq * seq * 2),
             (f"add+layernorm {seq}x{hidden} f32", layernorm(seq, hidden),
              (3 * seq * hidden + 2 * hidden) * 4),
             (f"layernorm {seq}x{hidden} f16", layernorm(seq, hidden, "f16", residual=False),
              (2 * seq * hidden + 2 * hidden) * 2)]
    for name, text, minimal in cases:
        t0 = time.perf_counter()
        unfused = run_ascend(text, lower("fuse=false"), target)
        fused = run_ascend(text, lower(), target)
        row(name, unfused, fused, gm_bound(target, minimal),
            f"program bound {fused['bound_cycles']} ({fused['bound_unit']}); "
            f"{time.perf_counter() - t0:.0f} s")
    f = target.fractal
    # BERT's out-projection and its residual add + layernorm at seq 512 (two
    # row tiles of 256): the matmul's bias and row-major store fused into its
    # drain, the layernorm one row kernel after it. Both halves are bound by
    # MTE2 (A read K/k = 3 times, B M/m = 2 times; each layernorm chunk's
    # loads pay the GM latency before its vector work): overlapping them
    # gains nothing on this target (README "Overlap between ops").
    from matmul_patterns import matmul_layernorm

    mm_m, mm_k = 512, hidden
    t0 = time.perf_counter()
    text = matmul_layernorm(mm_m, hidden, mm_k)
    unfused = run_ascend(text, lower("fuse=false"), target)
    fused = run_ascend(text, lower(), target)
    cube = (mm_m // f) * (hidden // f) * (mm_k // f) // target.cube_blocks_per_cycle
    minimal = 2 * (mm_m * hidden + hidden * mm_k) + 4 * (mm_k + 2 * mm_m * mm_k + 2 * mm_k)
    row(f"matmul+layernorm {mm_m}x{hidden}x{mm_k}", unfused, fused,
        max(cube, gm_bound(target, minimal)),
        f"cube {cube}, GM {gm_bound(target, minimal)}; program bound {fused['bound_cycles']} "
        f"({fused['bound_unit']}); {time.perf_counter() - t0:.0f} s")
    head = hidden // heads
    for s in args.attention_seq:
        # Q, K^T, V in and the context out once (f32); the cube's blocks of
        # Q.K^T and P.V.
        blocks = 2 * heads * -(-s // f) * -(-head // f) * -(-s // f)
        cube = blocks // target.cube_blocks_per_cycle
        gm = gm_bound(target, 4 * heads * s * head * 4)
        t0 = time.perf_counter()
        text = attention(heads, s, head)
        unfused = run_ascend(text, lower("fuse=false"), target)
        fused = run_ascend(text, lower(), target)
        row(f"attention {heads}x{s}x{head} f32", unfused, fused, max(cube, gm),
            f"cube {cube}, GM {gm}; program bound {fused['bound_cycles']} "
            f"({fused['bound_unit']}); {time.perf_counter() - t0:.0f} s")
    if args.long_rows:
        long_rows(target, args.long_rows)
    x = np.random.default_rng(1).standard_normal((seq, hidden)).astype(np.float32)
    model = ffn_in_model(seq, hidden, args.mlp_width)
    unfused = run_onnx(model, {"x": x}, lower("fuse=false"), "ascend910")
    fused = run_onnx(model, {"x": x}, lower(), "ascend910")
    cube = (seq // f) * (hidden // f) * (args.mlp_width // f) // target.cube_blocks_per_cycle
    minimal = 2 * (seq * hidden + hidden * args.mlp_width) + 4 * (args.mlp_width + seq * args.mlp_width)
    row(f"matmul+bias+GELU {seq}x{hidden}x{args.mlp_width}", unfused, fused,
        max(cube, gm_bound(target, minimal)), f"cube {cube}, GM {gm_bound(target, minimal)}")
    # BERT's ffn_in as it reaches npu-fuse (Nz f16 A, a host-constant bias
    # row, GELU, the cast to ffn_out's f16 A): the epilogue computed in f16
    # (epilogue-f16) against the same fused epilogue in f32.
    from matmul_patterns import matmul_epilogue

    text = matmul_epilogue(seq, hidden, ffn, ("bias_row", "gelu", "cast"), "f16")
    unfused = run_ascend(text, lower("fuse-epilogue-f16=false"), target)
    fused = run_ascend(text, lower(), target)
    cube = (seq // f) * (hidden // f) * (ffn // f) // target.cube_blocks_per_cycle
    minimal = 2 * (seq * hidden + hidden * ffn + seq * ffn) + 4 * ffn
    row(f"mm+bias+GELU->f16 {seq}x{hidden}x{ffn}", unfused, fused,
        max(cube, gm_bound(target, minimal)),
        f"cube {cube}, GM {gm_bound(target, minimal)}; unfused: fused in f32 "
        "(fuse-epilogue-f16=false)")
    # Matmul chains alone (npu-fuse chains): the FFN pair with its f16
    # intermediate kept in L1 against the same program with it in GM
    # (fuse-chains=false). BERT's (seq x 768 x 3072) is refused: its 768 KiB
    # intermediate does not fit L1 beside ffn_in's 960 KiB working set.
    from matmul_patterns import ffn_pair

    def third(x: int) -> int:  # a third, in whole 16-wide blocks (ffn_pair's fractals)
        return max(f, x // 3 // f * f)

    for m, n, width in ((seq, third(hidden), third(ffn)), (seq, hidden, ffn)):
        text = ffn_pair(m, n, width)
        unfused = run_ascend(text, lower("fuse-chains=false"), target)
        fused = run_ascend(text, lower(), target)
        cube = 2 * (m // f) * (n // f) * (width // f) // target.cube_blocks_per_cycle
        minimal = 2 * (m * n + 2 * n * width) + 4 * (width + m * n)
        row(f"FFN pair {m}x{n}x{width} chain", unfused, fused,
            max(cube, gm_bound(target, minimal)),
            f"cube {cube}, GM {gm_bound(target, minimal)}; unfused: fuse-chains=false")
    # Horizontal fusion alone: unfused = every fusion on but npu-fuse-horizontal.
    model = qkv_model(seq, hidden)
    unfused = run_onnx(model, {"x": x}, lower("fuse-horizontal=false"), "ascend910")
    fused = run_onnx(model, {"x": x}, lower(), "ascend910")
    cube = 3 * (seq // f) * (hidden // f) * (hidden // f) // target.cube_blocks_per_cycle
    minimal = 4 * seq * hidden + 3 * (2 * hidden * hidden + 4 * hidden + 4 * seq * hidden)
    row(f"Q/K/V proj+bias {seq}x{hidden}x3x{hidden}", unfused, fused,
        max(cube, gm_bound(target, minimal)),
        f"cube {cube}, GM {gm_bound(target, minimal)}; unfused: fuse-horizontal=false")
    # The attention kernel computing its Q/K/V projection (npu-fuse-attention-
    # projection) against the projection's own kernel before it (every other
    # fusion on in both).
    for s in args.attention_seq:
        model = self_attention(s, hidden, heads)
        xs = np.random.default_rng(1).standard_normal((1, s, hidden)).astype(np.float32)
        t0 = time.perf_counter()
        unfused = run_onnx(model, {"x": xs}, lower("fuse-attention-projection=false"), "ascend910")
        fused = run_onnx(model, {"x": xs}, lower(), "ascend910")
        blocks = (3 * -(-s // f) * (hidden // f) * (hidden // f)
                  + 2 * heads * -(-s // f) * -(-head // f) * -(-s // f))
        cube = blocks // target.cube_blocks_per_cycle
        minimal = 4 * s * hidden * 2 + 3 * (2 * hidden * hidden + 4 * hidden)
        row(f"Q/K/V proj + attention {s}", unfused, fused, max(cube, gm_bound(target, minimal)),
            f"cube {cube}, GM {gm_bound(target, minimal)}; unfused: "
            f"fuse-attention-projection=false; {time.perf_counter() - t0:.0f} s")
    if not args.skip_bert:
        for s in args.bert_seq:
            model = bert_layer(s, hidden, heads, ffn)
            x = np.random.default_rng(1).standard_normal((1, s, hidden)).astype(np.float32)
            t0 = time.perf_counter()
            unfused = run_onnx(model, {"x": x}, lower("fuse=false"), "ascend910")
            fused = run_onnx(model, {"x": x}, lower(), "ascend910")
            ideal = ideal_bound(target, s, hidden, heads, ffn)
            row(f"BERT layer seq {s}", unfused, fused, ideal["ideal"],
                f"cube {ideal['cube']}, GM {ideal['gm']}; {time.perf_counter() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())

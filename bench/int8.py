"""The int8 cube against fp16: matmuls, and quantised models against their float originals.

For each target (ascend910, ascend310; one core unless --cores) and shape, the same matmul
A (M x N) x B (N x K) in int8 (i8 x i8 -> i32, 16x32 and 32x16 Nz fractals)
and in fp16 (f16 x f16 -> f32) is compiled through the default `npu-lower`
pipeline and simulated strictly; the int8 result is checked exactly against
numpy, the fp16 one against an f32 product. Columns:

  cycles     simulated cycles
  bound      the simulator's own lower bound for this program (the busiest
             resource: cube block products or a data path's bytes)
  ideal      the problem's: max(cube cycles at the type's rate over the
             cores, A and B read once and C written once over the GM
             bandwidth)
  x ideal    cycles / ideal
  vs f16     int8 cycles / fp16 cycles (the cube's int8 rate is 2x)

Then the models (ascend910, `npu-lower{cores=1}`; an MLP, the BERT layer and
torchvision's ResNet-18 at 64 x 64): a float model and the
QDQ model onnxruntime's `quantize_static` makes of it (int8 weights per
channel, int8 activations), each compiled and simulated; the QDQ model is
checked against onnxruntime run node by node (its fused int8 kernels depend
on the host CPU). Columns: cycles of each, their ratio, the int8 matmuls and
convs (MatMulInteger and ConvInteger nodes in the report) and the largest difference from
onnxruntime.

Run: .venv/bin/python bench/int8.py [--shapes 1024x1024x1024,...]
     [--targets ascend910,ascend310] [--cores N] [--models mlp,bert,resnet18,resnet18_224 | --models none]
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np
import onnx

from npu.ir import make_context, parse_module
from npu.pipeline import run_pipeline
from npu.reference_int8 import defractalize_blocks, fractalize_blocks
from npu.simulator import simulate
from npu.target import Target, get_target

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, os.path.join(ROOT, "test", "python", "int8"))

from qdq_models import mlp, quantized, reference  # noqa: E402

# (a, b, c) element types and fractal shapes of each form.
FORMS = {"int8": (("i8", "i8", "i32"), ((16, 32), (32, 16), (16, 16))),
         "fp16": (("f16", "f16", "f32"), ((16, 16), (16, 16), (16, 16)))}


def nz_shape(rows: int, cols: int, block: tuple[int, int]) -> tuple[int, ...]:
    r0, c0 = block
    return (-(-cols // c0), -(-rows // r0), r0, c0)


def program(M: int, N: int, K: int, form: str) -> tuple[str, list[tuple[int, ...]]]:
    """The matmul on Nz GM operands and the operands' shapes."""
    types, blocks = FORMS[form]
    shapes = [nz_shape(M, N, blocks[0]), nz_shape(N, K, blocks[1]), nz_shape(M, K, blocks[2])]
    mem = [f'memref<{"x".join(map(str, s))}x{t}, "gm">' for s, t in zip(shapes, types)]
    text = (f"func.func @mm(%a: {mem[0]}, %b: {mem[1]}, %c: {mem[2]}) {{\n"
            f'  "ascend.matmul"(%a, %b, %c) : ({", ".join(mem)}) -> ()\n  return\n}}\n')
    return text, shapes


def ideal_cycles(M: int, N: int, K: int, form: str, target: Target, cores: int) -> int:
    """max(the cube's cycles at the type's rate, compulsory GM traffic / bandwidth)."""
    f = target.fractal
    if form == "int8":
        cube = target.cube_cycles_int8(-(-M // f) * -(-N // target.fractal_k_int8) * -(-K // f))
        in_bytes = 1
    else:
        cube = target.cube_cycles(-(-M // f) * -(-N // f) * -(-K // f))
        in_bytes = 2
    read = (M * N + N * K) * in_bytes / target.path("gm_to_l1").bytes_per_cycle
    write = M * K * 4 / target.path("ub_to_gm").bytes_per_cycle
    return int(max(cube / cores, read, write))


def run(M: int, N: int, K: int, form: str, target: Target, cores: int) -> dict:
    text, shapes = program(M, N, K, form)
    module = parse_module(text, make_context())
    run_pipeline(module, f"npu-lower{{cores={cores}}}", target)
    rng = np.random.default_rng(0)
    if form == "int8":
        a = rng.integers(-128, 128, (M, N), dtype=np.int8)
        b = rng.integers(-128, 128, (N, K), dtype=np.int8)
        c = np.zeros(shapes[2], np.int32)
    else:
        a = rng.uniform(-1, 1, (M, N)).astype(np.float16)
        b = rng.uniform(-1, 1, (N, K)).astype(np.float16)
        c = np.zeros(shapes[2], np.float32)
    res = simulate(module, [fractalize_blocks(a, shapes[0]), fractalize_blocks(b, shapes[1]), c],
                   target=target, strict=True)
    got = defractalize_blocks(res.outputs[2])[:M, :K]
    if form == "int8":
        want = a.astype(np.int32) @ b.astype(np.int32)
        assert np.array_equal(got, want), "int8 matmul: wrong result"
    else:
        want = a.astype(np.float32) @ b.astype(np.float32)
        err = float(np.abs(got - want).max())
        assert err <= 1e-3 * float(np.abs(want).max()), f"fp16 matmul: max error {err}"
    return {"cycles": res.cycles, "bound": int(res.report["bound_cycles"]),
            "unit": str(res.report.get("bound_unit", "")),
            "ideal": ideal_cycles(M, N, K, form, target, cores)}


def _models(names: list[str]) -> list[tuple[str, object, tuple]]:
    from npu.frontend.bert import bert_layer

    out = []
    if "mlp" in names:  # BERT's FFN shape: 128 x 768 -> 3072 -> 768, ReLU
        out.append(("MLP 128x768x3072x768", mlp(128, 768, 3072, 768, 0.05), (128, 768)))
    if "bert" in names:
        out.append(("BERT layer seq 128", bert_layer(128, 768, 12, 3072), (1, 128, 768)))
    if "resnet18" in names:  # torchvision's, exported at 64 x 64 (test/models/cnn)
        model = onnx.load(os.path.join(ROOT, "test", "models", "cnn", "resnet18_ts.onnx"))
        _rename_input(model, "x")
        out.append(("ResNet-18 64x64 (torchvision export)", model, (1, 3, 64, 64)))
    if "resnet18_224" in names:  # npu.frontend.cnn's, batch norm folded (as exporters write it)
        from npu.frontend.cnn import resnet

        model = resnet(18, 224, batchnorm=False)
        _rename_input(model, "x")
        out.append(("ResNet-18 224x224", model, (1, 3, 224, 224)))
    return out


def _rename_input(model, name: str) -> None:
    """The first graph input renamed (`quantized` calibrates an input "x")."""
    old = model.graph.input[0].name
    for node in model.graph.node:
        node.input[:] = [name if i == old else i for i in node.input]
    model.graph.input[0].name = name


def run_models(names: list[str]) -> None:
    import npu

    print("\n| model | f16 cycles | int8 (QDQ) cycles | int8 / f16 | int8 matmuls, convs | max diff "
          "from onnxruntime |")
    print("|---|---|---|---|---|---|")
    for title, model, shape in _models(names):
        qdq = quantized(model, shape)
        x = np.random.default_rng(2).standard_normal(shape).astype(np.float32)
        cycles = {}
        for form, m in (("f16", model), ("int8", qdq)):
            kernel = npu.compile(m, target="ascend910", where=f"{form}.onnx",
                                 pipeline="npu-lower{cores=1}")
            (y,), report = kernel(x)
            cycles[form] = report["cycles"]
        (want,) = reference(qdq, {"x": x})
        int8 = ", ".join(str(sum(1 for r in report["per_op"] if f"({kind})" in r["op"]))
                         for kind in ("MatMulInteger", "ConvInteger"))
        diff = float(np.abs(y - want).max())
        step = _output_step(qdq)
        print(f"| {title} | {cycles['f16']:,} | {cycles['int8']:,} | "
              f"{cycles['int8'] / cycles['f16']:.2f} | {int8} | {diff:.3g}"
              f"{f' ({diff / step:.2f} steps)' if step else ''} |", flush=True)


def _output_step(model) -> float:
    """The quantisation step of the output when a DequantizeLinear makes it, else 0."""
    from onnx import numpy_helper

    out = model.graph.output[0].name
    node = next(n for n in model.graph.node if out in n.output)
    if node.op_type != "DequantizeLinear":
        return 0.0
    scale = next(t for t in model.graph.initializer if t.name == node.input[1])
    return float(numpy_helper.to_array(scale).reshape(-1)[0])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--shapes", default="1024x1024x1024,512x768x768,128x768x3072",
                   help="M x N x K matmuls to run, or 'none'")
    p.add_argument("--targets", default="ascend910,ascend310")
    p.add_argument("--cores", type=int, default=1)
    p.add_argument("--models", default="mlp,bert,resnet18",
                   help="quantised models to run (mlp, bert, resnet18, resnet18_224), or 'none'")
    args = p.parse_args(argv)
    print("| target | M x N x K | form | cycles | bound (unit) | ideal | x ideal | vs f16 |")
    print("|---|---|---|---|---|---|---|---|")
    for name in args.targets.split(","):
        target = get_target(name)
        for spec in [] if args.shapes == "none" else args.shapes.split(","):
            M, N, K = (int(v) for v in spec.split("x"))
            rows = {form: run(M, N, K, form, target, args.cores) for form in ("fp16", "int8")}
            for form, r in rows.items():
                ratio = r["cycles"] / rows["fp16"]["cycles"]
                print(f"| {name} | {spec} | {form} | {r['cycles']:,} | {r['bound']:,} "
                      f"({r['unit']}) | {r['ideal']:,} | {r['cycles'] / r['ideal']:.3f} | "
                      f"{ratio:.2f} |", flush=True)
    if args.models != "none":
        run_models(args.models.split(","))
    return 0


if __name__ == "__main__":
    sys.exit(main())

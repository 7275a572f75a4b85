"""Digests of the IR the compiler produces for a fixed set of modules, so that
a change meant only to make compiling faster can be shown not to change what
is compiled.

The set: the `examples/*.mlir` lowered to hivm and to cce, the three
`bench/compile_time.py` families at 1, 10 and 50 ops, and a BERT encoder of 1
and 2 layers through the frontend (the imported linalg, the `ascend` module
and the lowered module each digested apart); `--large` adds the families at
200 ops and 12 layers of BERT. The CNNs (the conv lowering's programs: the
cube's convs with their epilogues, the stem's NCHW image and pool, row-skip
downsamples, depthwise convs, int8 convs, batches, row runs over cores) go
through the frontend's `compile`: a tiny ResNet-18 and MobileNetV2 on one
and four cores, one of batch 2, a QDQ int8 ResNet; `--large` adds ResNet-18,
ResNet-50 and MobileNetV2 at 224x224 on 1 and 32 cores. Each module is printed with its locations, and
the SHA-256 of the text is recorded.

    .venv/bin/python bench/ir_digest.py --write before.json   # before the change
    .venv/bin/python bench/ir_digest.py --check before.json   # after: exit 1 on any difference
"""

from __future__ import annotations

import argparse
import hashlib
import json
import pathlib
import sys
from typing import Iterator

from mlir import ir

from npu.ir import make_context, parse_module
from npu.pipeline import run_pipeline
from npu.target import get_target

sys.path.insert(0, str(pathlib.Path(__file__).parent))
import compile_time  # noqa: E402  (the bench families)

ROOT = pathlib.Path(__file__).resolve().parent.parent


def _digest(module: ir.Module) -> str:
    text = module.operation.get_asm(enable_debug_info=True)
    return hashlib.sha256(text.encode()).hexdigest()


def _lowered(text: str, pipeline: str) -> str:
    module = parse_module(text, make_context())
    run_pipeline(module, pipeline, get_target("ascend910"))
    return _digest(module)


def _bert(layers: int) -> Iterator[tuple[str, str]]:
    from npu.frontend.bert import bert_layer
    from npu.frontend.compile import import_linalg, linalg_to_ascend

    ctx = make_context()
    linalg, inputs, outputs, locate = import_linalg(bert_layer(layers=layers), ctx, "bert.onnx")
    yield f"bert:{layers}/linalg", _digest(linalg)
    module = linalg_to_ascend(linalg, inputs, outputs, locate, "bert.onnx", ctx)
    yield f"bert:{layers}/ascend", _digest(module)
    run_pipeline(module, "npu-lower{cores=1}", get_target("ascend910"))
    yield f"bert:{layers}/lowered", _digest(module)


def _compiled(model, name: str, cores: int) -> str:
    """The digest of an ONNX model compiled for `cores` cores (weights elided:
    they are the frontend's, which a change to a lowering leaves alone). The
    model's file has a fixed path: the locations name it."""
    import os
    import tempfile

    import onnx

    from npu.frontend.compile import compile as npu_compile

    path = os.path.join(tempfile.gettempdir(), f"ir_digest_{name.replace(':', '_')}.onnx")
    onnx.save(model, path)
    kernel = npu_compile(path, target="ascend910", pipeline=f"npu-lower{{cores={cores}}}")
    text = kernel.module.operation.get_asm(enable_debug_info=True, large_elements_limit=64)
    return hashlib.sha256(text.encode()).hexdigest()


def _cnns(large: bool) -> Iterator[tuple[str, object, tuple[int, ...]]]:
    """(name, model, cores) of the CNN set."""
    import numpy as np

    from npu.frontend.cnn import mobilenet_v2, resnet

    tiny = dict(size=64, dtype=np.float16)
    yield "resnet18:tiny", lambda: resnet(18, layers=[1, 1, 1, 1], **tiny), (1, 4)
    yield "resnet50:tiny", lambda: resnet(50, layers=[1, 1, 1, 1], **tiny), (1, 4)
    yield "resnet18:tiny-b2", lambda: resnet(18, layers=[1, 1, 1, 1], batch=2, **tiny), (1,)
    yield "resnet18:tiny-f32", lambda: resnet(18, layers=[1, 1, 1, 1], size=64), (1,)
    yield "mobilenetv2:tiny", lambda: mobilenet_v2(size=64, width_mult=0.5, dtype=np.float16), (1, 4)

    def int8() -> object:
        sys.path.insert(0, str(ROOT / "test" / "python" / "int8"))
        from qdq_models import quantized

        model = resnet(18, size=32, layers=[1, 1, 1, 1], batchnorm=False)
        old = model.graph.input[0].name  # `quantized` calibrates an input "x"
        for node in model.graph.node:
            node.input[:] = ["x" if i == old else i for i in node.input]
        model.graph.input[0].name = "x"
        return quantized(model, (1, 3, 32, 32))

    yield "resnet18:int8", int8, (1,)
    if large:
        full = dict(size=224, dtype=np.float16)
        yield "resnet18:224", lambda: resnet(18, **full), (1, 32)
        yield "resnet50:224", lambda: resnet(50, **full), (1, 32)
        yield "mobilenetv2:224", lambda: mobilenet_v2(**full), (1, 32)


def digests(only: str | None = None, large: bool = False) -> Iterator[tuple[str, str]]:
    """(module name, digest) for every module of the set (names containing
    `only`); `large` adds the 200-op families and a 12-layer BERT."""
    def wanted(name: str) -> bool:
        return only is None or only in name

    for path in sorted((ROOT / "examples").glob("*.mlir")):
        for emit in ("hivm", "cce"):
            name = f"examples/{path.name}@{emit}"
            if wanted(name):
                yield name, _lowered(path.read_text(), f"npu-lower{{cores=1 emit={emit}}}")
    for family, make in compile_time.FAMILIES.items():
        for n in (1, 10, 50) + ((200,) if large else ()):
            name = f"{family}:{n}"
            if wanted(name):
                yield name, _lowered(make(n), "npu-lower{cores=1}")
    for layers in (1, 2) + ((12,) if large else ()):
        if wanted(f"bert:{layers}"):
            yield from _bert(layers)
    for name, make, cores in _cnns(large):
        names = [f"{name}/cores={c}" for c in cores]
        if any(wanted(n) for n in names):
            model = make()
            for n, c in zip(names, cores):
                if wanted(n):
                    yield n, _compiled(model, name, c)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    mode = ap.add_mutually_exclusive_group(required=True)
    mode.add_argument("--write", metavar="JSON", help="record the digests")
    mode.add_argument("--check", metavar="JSON", help="compare with recorded digests")
    ap.add_argument("--only", default=None, help="only the modules whose name contains this")
    ap.add_argument("--large", action="store_true", help="add the 200-op families and BERT-12 "
                    "(a few minutes)")
    args = ap.parse_args()

    reference = json.loads(pathlib.Path(args.check).read_text()) if args.check else {}
    found: dict[str, str] = {}
    differing = []
    for name, digest in digests(args.only, args.large):
        found[name] = digest
        verdict = ""
        if args.check:
            verdict = "same" if reference.get(name) == digest else "DIFFERENT"
            if verdict != "same":
                differing.append(name)
        print(f"{name:<48} {digest[:16]} {verdict}", flush=True)
    if args.write:
        pathlib.Path(args.write).write_text(json.dumps(found, indent=1) + "\n")
        return 0
    if differing:  # (a module the reference lacks counts as differing)
        print(f"{len(differing)} module(s) differ: {', '.join(differing)}")
        return 1
    print(f"all {len(found)} digests identical")
    return 0


if __name__ == "__main__":
    sys.exit(main())

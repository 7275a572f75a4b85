"""torch-mlir's pipeline with the shape reification left out where every type
is known: the same IR as the whole pipeline, on every model of the corpus."""

from __future__ import annotations

import glob
import os

import onnx
import pytest

from npu.frontend import onnx_import, torch_pipeline

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
CORPUS = sorted(glob.glob(os.path.join(ROOT, "test", "models", "**", "*.onnx"), recursive=True)
                + [os.path.join(ROOT, "examples", "ffn_block.onnx")])
# One of each kind by default (a block, a CNN, a transformer); all with --runslow.
DEFAULT = {"ffn_block.onnx", "resnet18_ts.onnx", "bert_ts_sdpa.onnx"}


def _torch_context():
    from torch_mlir import ir as tir
    from torch_mlir.dialects import torch as torch_d

    ctx = tir.Context()
    torch_d.register_dialect(ctx)
    return tir, ctx


def test_the_parts_are_torch_mlirs_pipeline():
    """The three parts join to what `torch-onnx-to-torch-backend-pipeline`
    expands to in the pinned torch-mlir: a new version that changes it fails
    here, not in a model's numbers."""
    from torch_mlir.passmanager import PassManager

    tir, ctx = _torch_context()
    with ctx:
        whole = str(PassManager.parse("builtin.module(torch-onnx-to-torch-backend-pipeline)"))
        parts = ",".join([torch_pipeline.CONVERT, torch_pipeline.SHAPES, torch_pipeline.FINISH])
        assert str(PassManager.parse(f"builtin.module({parts})")) == whole


@pytest.mark.parametrize("type_text,known", [
    ("!torch.vtensor<[2,3],f32>", True),
    ("!torch.vtensor<[],si64>", True),
    ("!torch.list<vtensor<[2],f16>>", True),
    ("!torch.int", True),
    ("!torch.vtensor<[?,3],f32>", False),
    ("!torch.vtensor<*,f32>", False),
    ("!torch.vtensor<[2],unk>", False),
    ("!torch.vtensor", False),
    ("!torch.tensor<[2],f32>", True),
    ("!torch.list<vtensor>", True),
    ("!torch.list<optional<vtensor>>", True),
    ("!torch.list<vtensor<[?],f32>>", False),
])
def test_known_types(type_text, known):
    assert torch_pipeline.known_type(type_text) is known


@pytest.mark.parametrize("body,needed", [
    ("return %a : !torch.vtensor<[4],f32>", False),
    ("%0 = torch.tensor_static_info_cast %a : !torch.vtensor<[4],f32> to !torch.vtensor<[?],f32>\n"
     "  %1 = torch.tensor_static_info_cast %0 : !torch.vtensor<[?],f32> to !torch.vtensor<[4],f32>\n"
     "  return %1 : !torch.vtensor<[4],f32>", True),
    ("%c0 = torch.constant.int 0\n"
     "  %0 = torch.aten.size.int %a, %c0 : !torch.vtensor<[4],f32>, !torch.int -> !torch.int\n"
     "  return %a : !torch.vtensor<[4],f32>", True),
])
def test_unknown_types_and_shape_ops_need_the_shape_passes(body, needed):
    tir, ctx = _torch_context()
    with ctx:
        module = tir.Module.parse(
            "func.func @f(%a: !torch.vtensor<[4],f32>) -> !torch.vtensor<[4],f32> "
            f"attributes {{torch.onnx_meta.opset_version = 17 : si64}} {{\n  {body}\n}}")
        assert torch_pipeline.needs_shape_reification(module.operation, tir) is needed


def _import(path: str, monkeypatch, full: bool) -> tuple[str, list[bool]]:
    """The model's linalg text, and whether each module asked for the shape
    passes; `full` forces them."""
    asked: list[bool] = []
    decide = torch_pipeline.needs_shape_reification

    def spy(module_op, tir):
        asked.append(decide(module_op, tir))
        return True if full else asked[-1]

    with monkeypatch.context() as patch:
        patch.setattr(torch_pipeline, "needs_shape_reification", spy)
        text = onnx_import.import_onnx(onnx.load(path)).mlir
    return text, asked


@pytest.mark.parametrize("path", [
    pytest.param(p, id=os.path.basename(p),
                 marks=() if os.path.basename(p) in DEFAULT else pytest.mark.slow)
    for p in CORPUS if "dynamic" not in os.path.basename(p)])
def test_corpus_imports_the_same_without_the_shape_passes(path, monkeypatch):
    fast, asked = _import(path, monkeypatch, full=False)
    assert asked == [False], "every type of the corpus is known after the conversion"
    whole, _ = _import(path, monkeypatch, full=True)
    assert fast == whole

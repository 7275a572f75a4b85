"""The corpus of real exports (test/models/, made by make_exports.py from
HuggingFace configs with torch.onnx's TorchScript and dynamo exporters):
each compiles unmodified, int64 token ids and masks included, and matches
onnxruntime (about a second each)."""

from __future__ import annotations

import os

import numpy as np
import onnx
import onnxruntime
import pytest
from onnx import TensorProto, helper

import npu
from npu.frontend.compile import CompileError, InputError

MODELS = os.path.join(os.path.dirname(__file__), "..", "..", "models")
STATIC = sorted(f[:-5] for f in os.listdir(MODELS)
                if f.endswith(".onnx") and not f.endswith("_dynamic.onnx"))
# By default each model family runs one of its four exports; between them
# the first six cover both exporters and both attention implementations
# (llama, roberta and whisperenc have only their ts_eager export here). The
# others run with --runslow (bench/exports.py compares all four's cycles).
DEFAULT = {"bartenc_dynamo_eager", "bert_ts_sdpa", "distilbert_dynamo_sdpa", "gpt2_ts_eager",
           "t5enc_ts_sdpa", "vit_dynamo_eager", "llama_ts_eager", "roberta_ts_eager",
           "whisperenc_ts_eager"}
EXPORTS = [pytest.param(n, marks=() if n in DEFAULT else pytest.mark.slow) for n in STATIC]


def model_inputs(model: onnx.ModelProto, rng) -> dict[str, np.ndarray]:
    """Token ids in the vocabulary (100), masks of ones with a padded tail,
    pixels in [-1, 1]: what a tokenizer or an image processor gives."""
    feeds = {}
    for value in model.graph.input:
        shape = [d.dim_value for d in value.type.tensor_type.shape.dim]
        if value.type.tensor_type.elem_type == TensorProto.INT64:
            if "mask" in value.name:
                mask = np.ones(shape, np.int64)
                mask[..., -3:] = 0
                feeds[value.name] = mask
            else:
                feeds[value.name] = rng.integers(0, 100, shape).astype(np.int64)
        else:
            feeds[value.name] = rng.uniform(-1, 1, shape).astype(np.float32)
    return feeds


@pytest.mark.parametrize("name", EXPORTS)
def test_export_compiles_unmodified_and_matches_onnxruntime(name):
    path = os.path.join(MODELS, f"{name}.onnx")
    model = onnx.load(path)
    feeds = model_inputs(model, np.random.default_rng(0))
    kernel = npu.compile(path)
    assert [p.numpy_dtype for p in kernel.interface.inputs] == [feeds[p.name].dtype
                                                                 for p in kernel.interface.inputs]
    outputs, report = kernel(*[feeds[p.name] for p in kernel.interface.inputs])
    expected = onnxruntime.InferenceSession(path).run(kernel.output_names, feeds)
    assert report["cycles"] > 0
    for got, want in zip(outputs, expected):
        assert got.shape == want.shape and got.dtype == want.dtype
        # Matmul operands are f16 on the cube (accumulation in f32).
        np.testing.assert_allclose(got, want, rtol=2e-2, atol=5e-3)


def _int64_model(constant: int) -> onnx.ModelProto:
    """ids (int64) + a constant -> int64 output, and a float mask made from it."""
    nodes = [helper.make_node("Add", ["ids", "c"], ["shifted"], name="shift"),
             helper.make_node("Cast", ["shifted"], ["f"], to=TensorProto.FLOAT, name="to_float")]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("ids", TensorProto.INT64, [2, 20])],
        [helper.make_tensor_value_info("shifted", TensorProto.INT64, [2, 20]),
         helper.make_tensor_value_info("f", TensorProto.FLOAT, [2, 20])],
        [helper.make_tensor("c", TensorProto.INT64, [], [constant])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def test_int64_data_runs_as_i32_and_is_widened_back():
    model = _int64_model(-7)
    kernel = npu.compile(model)
    assert kernel.interface.inputs[0].dtype == "i32" and kernel.interface.inputs[0].host_type == "int64"
    ids = np.arange(-20, 20, dtype=np.int64).reshape(2, 20) * 1000
    (shifted, f), _ = kernel(ids)
    assert shifted.dtype == np.int64
    np.testing.assert_array_equal(shifted, ids - 7)
    np.testing.assert_array_equal(f, (ids - 7).astype(np.float32))


def test_int64_input_outside_i32_is_refused_naming_the_element():
    kernel = npu.compile(_int64_model(1))
    ids = np.zeros((2, 20), np.int64)
    ids[1, 3] = 2 ** 31
    with pytest.raises(InputError, match=r"input 'ids': element \[1, 3\] is 2147483648, outside i32"):
        kernel(ids)


def test_int64_constant_outside_i32_is_a_located_error():
    with pytest.raises(CompileError, match=r"node 'shift' \(Add\): int64 constant 'c' holds "
                                           r"-3000000000, which does not fit i32"):
        npu.compile(_int64_model(-3_000_000_000))

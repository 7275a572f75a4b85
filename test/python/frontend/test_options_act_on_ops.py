"""An npu-lower option acting on ops a model has none of (a conv lowering's on
a model without a conv, the matmul lowering's on one without a matmul) is
refused by npu-run and `npu.compile` in one line, as every option that does
not apply is (`npu.passes.applies.OnOps`): a non-zero exit, no traceback, no
output file. Where the model has such an op, and at the defaults, it is taken."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

import npu
from npu.frontend.compile import CompileError
from npu.tools import npu_run
from onnx_models import mlp, model


def conv() -> "onnx.ModelProto":  # noqa: F821 - a model without a matmul
    w = np.random.default_rng(0).standard_normal((16, 16, 3, 3)).astype(np.float32) / 12
    return model([helper.make_node("Conv", ["x", "w"], ["y"], kernel_shape=[3, 3],
                                   pads=[1, 1, 1, 1])],
                 [("x", [1, 16, 8, 8])], [("y", [1, 16, 8, 8])], [("w", w)])


@pytest.mark.parametrize("options,why", [
    ("conv-cube-residual=always", "conv-cube-residual: does not apply: the program has no conv"),
    ("conv-cube-bias=never", "conv-cube-bias: does not apply: the program has no conv"),
    ("fuse-conv-chains=true", "fuse-conv-chains: does not apply: the program has no conv"),
])
def test_npu_run_refuses_a_conv_option_on_a_model_without_a_conv(options, why, tmp_path, capsys):
    src = tmp_path / "mlp.onnx"
    src.write_bytes(mlp().SerializeToString())
    out = tmp_path / "out.npz"
    code = npu_run.main([str(src), "--cores", "1", "--pipeline", f"npu-lower{{{options}}}",
                         "-o", str(out)])
    err = capsys.readouterr().err
    assert code == 1 and err == f"{src}: error: npu-lower: {why}\n"
    assert not out.exists()


def test_npu_compile_refuses_a_matmul_option_on_a_model_without_a_matmul():
    for options in ("m=64", "matmul-schedule=pipelined"):
        with pytest.raises(CompileError) as e:
            npu.compile(conv(), pipeline=f"npu-lower{{{options}}}", cores=1)
        name = options.split("=")[0]
        assert str(e.value) == (f"<model>: error: npu-lower: {name}: does not apply: the "
                                "program has no matmul")


def test_options_acting_on_the_models_ops_are_taken():
    """The model's own lowering's options, and another's at its default."""
    npu.compile(conv(), pipeline="npu-lower{ub-fraction=0.9 m=0}", cores=1)
    npu.compile(mlp(), pipeline="npu-lower{m=32 conv-cube-residual=auto}", cores=1)


def test_npu_run_refuses_cube_residual_on_resnet18(tmp_path, capsys):
    """ResNet-18 has convs and residual Adds, but each Add reads a 3x3 conv's
    result or a 1x1 stride-2 downsample's: no conv the option acts on."""
    from npu.frontend.cnn import resnet

    src = tmp_path / "resnet18.onnx"
    src.write_bytes(resnet(18, size=32, width=16, classes=10, layers=[1, 1, 1, 1],
                           dtype=np.float16).SerializeToString())
    out = tmp_path / "out.npz"
    code = npu_run.main([str(src), "--cores", "1", "--pipeline",
                         "npu-lower{conv-cube-residual=always}", "-o", str(out)])
    err = capsys.readouterr().err
    assert code == 1 and err == (f"{src}: error: npu-lower: conv-cube-residual: does not apply: "
                                 "the program has no 1x1 stride-1 conv whose result an f16 Add "
                                 "reads (a residual)\n")
    assert not out.exists()


def batch_matmul() -> "onnx.ModelProto":  # noqa: F821 - a batched product, no softmax
    return model([helper.make_node("MatMul", ["a", "b"], ["y"])],
                 [("a", [2, 16, 32]), ("b", [2, 32, 16])], [("y", [2, 16, 16])], [])


@pytest.mark.parametrize("options", ["attention-softmax=f32", "fuse-attention=false",
                                     "attention-tile=fewest"])
def test_npu_compile_refuses_attention_options_without_an_attention(options):
    """A batch_matmul whose result no softmax carries into another is not
    attention's Q.K^T: the attention passes have nothing to act on."""
    with pytest.raises(CompileError) as e:
        npu.compile(batch_matmul(), pipeline=f"npu-lower{{{options}}}", cores=1)
    name = options.split("=")[0]
    assert str(e.value) == (f"<model>: error: npu-lower: {name}: does not apply: the program has "
                            "no attention (a batch_matmul whose result, through its softmax, "
                            "another batch_matmul reads)")


@pytest.mark.parametrize("options,why", [
    ("conv-cube-bias=always", "the program has no 1x1 conv with a bias whose result is f16 or "
                              "cast to f16"),
    ("fuse-conv-pool=false", "the program has no conv whose result a max pool reads"),
    ("conv-depthwise=vector", "the program has no depthwise conv (layout \"nc1hwc0_bd\", "
                              "group_channels = 1)"),
    ("fuse-conv-chains=true", "the program has no conv whose result a 1x1 stride-1 conv reads "
                              "as its input map"),
])
def test_npu_compile_refuses_conv_options_without_their_conv(options, why):
    """A 3x3 conv, no bias, no pool: the model has a conv but none the
    option acts on."""
    with pytest.raises(CompileError) as e:
        npu.compile(conv(), pipeline=f"npu-lower{{{options}}}", cores=1)
    name = options.split("=")[0]
    assert str(e.value) == f"<model>: error: npu-lower: {name}: does not apply: {why}"

"""DenseNet's concats in NC1HWC0 (`slices._concat_blocks`): each layer's
input is Concat(all maps before it) of f32 pool and conv results, whose
channels are whole C1 blocks. The concat is their blocks side by side, each
producer writing its blocks in place, and each layer's concat the prefix of
the next one's bytes, so no concat copies anything and the BatchNorm that
reads it stays NC1HWC0 (before: every map transposed to NCHW, the concat
copied in NCHW, BN in NCHW and a transpose back for the 1x1 conv).
DenseNet-121 at 224 on 32 cores 1,891,733 -> 738,041 cycles."""

from __future__ import annotations

import numpy as np
import pytest

import npu

from cnn_onnx import bn_params, make, ort_run


def _dense_net(layers: int = 3, growth: int = 16, c0: int = 32, size: int = 16, default_bn=False):
    """A stem conv, then `layers` pre-activation dense layers (Concat, BN,
    ReLU, 1x1 conv, ReLU, 3x3 conv) and the block's BN + ReLU, f32 as
    torchvision exports it, BN statistics drawn at random (`default_bn`:
    torchvision's initial ones, a BN that is one scalar multiply)."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(3)

    def weight(name, shape):
        fan = int(np.prod(shape[1:]))
        return numpy_helper.from_array((rng.standard_normal(shape) / np.sqrt(fan)).astype(np.float32),
                                       name)

    inits = [weight("w0", (c0, 3, 3, 3))]
    nodes = [helper.make_node("Conv", ["x", "w0"], ["f0"], name="conv0", kernel_shape=[3, 3],
                              pads=[1] * 4)]
    feats, c = ["f0"], c0
    for i in range(layers + 1):
        cat = feats[0] if len(feats) == 1 else f"cat{i}"
        if len(feats) > 1:
            nodes.append(helper.make_node("Concat", list(feats), [cat], name=f"l{i}/concat", axis=1))
        inits += bn_params(f"bn{i}", c, rng) if not default_bn else [
            numpy_helper.from_array(np.full(c, v, np.float32), f"bn{i}.{k}")
            for k, v in (("scale", 1), ("bias", 0), ("mean", 0), ("var", 1))]
        nodes += [helper.make_node("BatchNormalization", [cat] + [f"bn{i}.{k}" for k in (
                      "scale", "bias", "mean", "var")], [f"n{i}"], name=f"l{i}/bn"),
                  helper.make_node("Relu", [f"n{i}"], [f"r{i}"], name=f"l{i}/relu1")]
        if i == layers:
            break
        inits += [weight(f"w1_{i}", (4 * growth, c, 1, 1)), weight(f"w2_{i}", (growth, 4 * growth, 3, 3))]
        nodes += [helper.make_node("Conv", [f"r{i}", f"w1_{i}"], [f"b{i}"], name=f"l{i}/conv1",
                                   kernel_shape=[1, 1]),
                  helper.make_node("Relu", [f"b{i}"], [f"s{i}"], name=f"l{i}/relu2"),
                  helper.make_node("Conv", [f"s{i}", f"w2_{i}"], [f"g{i}"], name=f"l{i}/conv2",
                                   kernel_shape=[3, 3], pads=[1] * 4)]
        feats.append(f"g{i}")
        c += growth
    return make(nodes, [("x", TensorProto.FLOAT, [1, 3, size, size])],
                [(f"r{layers}", TensorProto.FLOAT, [1, c, size, size])], inits)


@pytest.mark.parametrize("cores", [1, 4])
def test_dense_concats_copy_nothing(cores: int):
    model = _dense_net()
    x = np.random.default_rng(cores).standard_normal((1, 3, 16, 16)).astype(np.float32)
    want = ort_run(model, {"x": x})[0]
    kernel = npu.compile(model, cores=cores)
    (got,), report = kernel(x, strict=True)
    assert report["hazards"] == []
    # the cube multiplies in f16 (accumulating in f32)
    np.testing.assert_allclose(got, want, atol=2e-2, rtol=2e-2)
    ascend = kernel.stages["ascend"]
    # every producer writes its blocks of the last concat's bytes: no copy,
    # and no map goes to NCHW but the output (one transpose; before: one
    # per map, one per concat and the concats' NCHW copies)
    assert ascend.count('"ascend.insert_slice"') == 0
    assert ascend.count('"ascend.transpose"') == 1


def test_bn_on_a_concat_prefix_fuses_with_its_relu():
    """torchvision's initial BN is one scalar multiply: on each layer's
    concat (a view of the block's bytes, `fusion.rows.byte_view`) it joins
    the ReLU's fused kernel (before: left alone, "a partial view of its
    tensor", a GM round trip and a phase of its own on many cores;
    DenseNet-121 at 224 on 32 cores 738,041 -> 590,515 cycles)."""
    from mlir.ir import WalkResult

    from npu.ir import make_context, parse_module
    from npu.pipeline import run_pipeline
    from npu.target import get_target

    model = _dense_net(default_bn=True)
    x = np.random.default_rng(5).standard_normal((1, 3, 16, 16)).astype(np.float32)
    kernel = npu.compile(model, cores=1)
    (got,), _ = kernel(x, strict=True)
    np.testing.assert_allclose(got, ort_run(model, {"x": x})[0], atol=2e-2, rtol=2e-2)
    module = parse_module(kernel.stages["ascend"], make_context())
    run_pipeline(module, "builtin.module(npu-fuse)", get_target("ascend910"))
    parents = []

    def visit(op):
        if op.name == "ascend.muls":
            parent = op.parent
            parents.append(parent.name == "scf.execute_region" and "npu.fused" in parent.attributes)
        return WalkResult.ADVANCE

    module.operation.walk(visit)
    assert parents == [True] * 4


def _split_remark(model, cores: int, options: str = "") -> tuple[str, object]:
    from npu import diagnostics

    with diagnostics.collecting(diagnostics.DiagnosticEngine(display_name="dense")) as engine:
        kernel = npu.compile(model, cores=cores, pipeline="builtin.module(npu-lower{"
                             f"split-cores-remarks=true {options}}})")
    (said,) = [d.message for d in engine.diagnostics if "npu-split-cores:" in d.message]
    return said, kernel


def _check(model, kernel, seed: int) -> None:
    x = np.random.default_rng(seed).standard_normal((1, 3, 32, 32)).astype(np.float32)
    (got,), report = kernel(x, strict=True)
    assert report["hazards"] == []
    np.testing.assert_allclose(got, ort_run(model, {"x": x})[0], atol=2e-2, rtol=2e-2)


def test_bn_scale_and_shift_split_over_channel_blocks_and_rows():
    """A BN left as a per-channel mul and add on the concat's NC1HWC0 map
    (here unfused) splits as a grid of its channel blocks by runs of rows
    (`split_cores.channel_grid`), not over its 2 blocks alone."""
    model = _dense_net(size=32)
    said, kernel = _split_remark(model, 8, "fuse=false")
    assert "ascend.mul 2x4; ascend.add 2x4" in said, said
    _check(model, kernel, 7)


def test_bn_scale_and_shift_fuse_with_one_channel_block_a_core():
    """On many cores the per-channel scale and shift join the ReLU's fused
    kernel (`fusion.rows.per_block`: a row operand on a core of one channel
    block), split with one block a core: one kernel, no lone mul or add
    (DenseNet-121 with BN drawn at random on 32 cores 1,123,605 -> 956,664
    cycles)."""
    model = _dense_net(size=32)
    said, kernel = _split_remark(model, 8)
    assert "fused rows 2x4; conv epilogue 1x8" in said and "ascend.mul" not in said, said
    _check(model, kernel, 8)


def test_bn_of_more_blocks_than_cores_splits_over_its_blocks():
    """A per-channel mul and add on more channel blocks than cores (34 at
    7x7, DenseNet's fourth block) loop over their blocks, one latency-bound
    pass each: they split over every even cut of their blocks, however few
    bytes a core moves (`channel_grid.per_block_op`; two cores of 17 blocks
    took 29k cycles a phase; DenseNet-121 with BN drawn at random on 32
    cores 956,664 -> 757,772)."""
    model = _dense_net(layers=1, c0=544, size=7)
    said, kernel = _split_remark(model, 32)
    assert "ascend.mul 17; ascend.add 17" in said, said
    x = np.random.default_rng(9).standard_normal((1, 3, 7, 7)).astype(np.float32)
    (got,), report = kernel(x, strict=True)
    assert report["hazards"] == []
    np.testing.assert_allclose(got, ort_run(model, {"x": x})[0], atol=2e-2, rtol=2e-2)

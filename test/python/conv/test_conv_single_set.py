"""A conv of one band and one super tile in a single L0C set (issue 27,
1x1 1024->256 14 over 1.3x its ideal): all its rows' accumulators in L0C,
drained in pieces of ACC_BLOCKS blocks, its weights in pieces that taper
to one chunk (`tapered_pieces`). Numerics against onnxruntime; cycles
against bench/conv.py's layer (simulated, timing only)."""

from __future__ import annotations

import numpy as np

import npu
from conv_cases import conv_model, ort_run, random_input
from npu.costmodel.conv.accumulators import ACC_BLOCKS, single_set
from npu.costmodel.conv.first_band import tapered_pieces
from npu.costmodel.conv.tiling import ConvShape, choose_tiling
from npu.target import get_target

T = get_target("ascend910")
L0C_HALF = T.capacity("l0c") // 2 // T.fractal_bytes(4)
CUBE = dict(rtol=2e-2, atol=2e-2)

# ResNet-50's layer3.x.conv1
WIDE = ConvShape(c1=64, h=14, w=14, co1=16, kh=1, kw=1, ho=14, wo=14, stride_h=1,
                 dilation_h=1, pad_top=0, out_bytes=2)


def test_1x1_1024_to_256_takes_one_band_in_one_l0c_set():
    """13 M fractals x 16 blocks = 208 of L0C's 256 fractals: one band, one
    super tile, 8 accumulators of 2 blocks (two bands of 9 and 5 rows
    before: 23,524 cycles against 20,498)."""
    tiling = choose_tiling(WIDE, T)
    assert (tiling.rows, tiling.n1, tiling.kc) == (14, 16, 4) and tiling.weights_resident
    assert single_set(WIDE, tiling.rows, tiling.n1, L0C_HALF)
    assert tiling.accumulators == 8 and tiling.acc_tiles(16) == [(2 * j, 2) for j in range(8)]
    assert tiling.m1 * tiling.n1 > L0C_HALF


def test_tapered_pieces_end_in_one_chunk():
    """64 K rows in chunks of 4: 4, 3, 3, 2, 2, 1, 1 chunks; every row once."""
    pieces = tapered_pieces(64, 4)
    assert [rows for _, rows in pieces] == [16, 12, 12, 8, 8, 4, 4]
    assert [k0 for k0, _ in pieces] == [0, 16, 28, 40, 48, 56, 60]
    assert [rows for _, rows in tapered_pieces(10, 3)] == [6, 3, 1]  # 2, 1, 1 chunks (the last of 1 row)


def test_two_bands_keep_two_sets():
    """More than one band (or super tile): half of L0C a set, as before."""
    assert not single_set(WIDE, 9, 16, L0C_HALF)
    tall = ConvShape(c1=64, h=28, w=28, co1=16, kh=1, kw=1, ho=28, wo=28, stride_h=1,
                     dilation_h=1, pad_top=0, out_bytes=2)
    tiling = choose_tiling(tall, T)
    assert tiling.m1 * min(tiling.n1, tall.co1) <= L0C_HALF and tiling.accumulators == 2


def test_single_set_with_a_narrow_last_accumulator_matches_onnxruntime():
    """1x1 256->272 on 13x13: one band of 11 M fractals x 17 blocks (187
    fractals), 9 accumulators, the last of one block."""
    shape = ConvShape(c1=16, h=13, w=13, co1=17, kh=1, kw=1, ho=13, wo=13, stride_h=1,
                      dilation_h=1, pad_top=0, out_bytes=4)
    tiling = choose_tiling(shape, T)
    assert (tiling.rows, tiling.n1) == (13, 17) and tiling.accumulators == -(-17 // ACC_BLOCKS)
    assert tiling.acc_tiles(17)[-1] == (16, 1)
    m = conv_model(c=256, cout=272, k=1, h=13, w=13, pads=(0, 0, 0, 0))
    x = random_input(m)
    kernel = npu.compile(m, pipeline="npu-lower{cores=1}")
    (got,), _ = kernel(x)
    np.testing.assert_allclose(got, ort_run(m, {"x": x})[0], **CUBE)


def test_pieces_taper_only_where_the_weights_are_most_of_the_bytes():
    """1x1 1024->256 14 (512 KB of weights, 401 KB of map) tapers; MobileNetV2's
    1x1 384->96 14 (74 KB against 150 KB) keeps its doubling pieces, and
    so does a conv of two bands or one that the cube paces."""
    assert WIDE.tapers(14, 16, True, True)
    assert not WIDE.tapers(9, 16, True, True) and not WIDE.tapers(14, 16, True, False)
    assert not WIDE.tapers(14, 8, True, True) and not WIDE.tapers(14, 16, False, True)
    projection = ConvShape(c1=24, h=14, w=14, co1=6, kh=1, kw=1, ho=14, wo=14, stride_h=1,
                           dilation_h=1, pad_top=0, out_bytes=2)
    assert not projection.tapers(14, 6, True, True)
    pieces = WIDE.first_pieces(13, 16, 4, T, taper=True)
    assert pieces == tapered_pieces(64, 4) and pieces != WIDE.first_pieces(13, 16, 4, T)


def test_relu_epilogue_drains_each_accumulator_after_its_last_mads():
    """ResNet-50's layer3 conv1 with its ReLU (an epilogue member, nothing
    loaded): each accumulator of the last chunk drains right after its own
    mads, as a conv of no epilogue does, not all eight after the last mad
    (the drains and stores then overlap the later mads: in the model 20,885
    -> 20,157 cycles a conv). Numerics against onnxruntime."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    inits = []

    def conv(name: str, i: str, o: str, n_in: int, n_out: int):
        w = (rng.standard_normal((n_out, n_in, 1, 1)) / np.sqrt(n_in)).astype(np.float16)
        b = (rng.standard_normal(n_out) * 0.5).astype(np.float16)
        inits.extend([numpy_helper.from_array(w, f"{name}_w"), numpy_helper.from_array(b, f"{name}_b")])
        return helper.make_node("Conv", [i, f"{name}_w", f"{name}_b"], [o], kernel_shape=[1, 1],
                                name=name)

    # a cheap conv first: c1 reads an NC1HWC0 map, as in a model
    nodes = [conv("pre", "x", "a", 64, 1024), helper.make_node("Relu", ["a"], ["h"]),
             conv("c1", "h", "b", 1024, 256), helper.make_node("Relu", ["b"], ["y"])]
    f16 = TensorProto.FLOAT16
    graph = helper.make_graph(nodes, "c1", [helper.make_tensor_value_info("x", f16, [1, 64, 14, 14])],
                              [helper.make_tensor_value_info("y", f16, [1, 256, 14, 14])], inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=9)
    x = np.random.default_rng(1).standard_normal((1, 64, 14, 14)).astype(np.float16)
    (got,), report = npu.compile(m, cores=1)(x)
    want = ort_run(m, {"x": x})[0]
    assert (want == 0).mean() > 0.2  # the ReLU bites
    np.testing.assert_allclose(got.astype(np.float32), want.astype(np.float32), **CUBE)
    c1 = next(r for r in report["per_op"] if r["op"].startswith("c1 "))
    assert c1["exclusive_cycles"] <= 22_750, c1  # 23,317 with the drains after the last mad

"""npu-prefetch's conv form (`passes/prefetch/conv.py`): a conv's first
resident weight pieces load in the previous op's idle MTE2 tail (on many
cores, before the chip barrier). The outputs are bit for bit those without
it, strict simulation finds no hazard, and the program is not slower."""

from __future__ import annotations

import numpy as np
import pytest

import npu
from npu.frontend.cnn import resnet


# The 4-core network is wide enough to be launched on 4 cores: at width 8
# the split keeps a network this small on one core, and the case tested one.
@pytest.mark.parametrize("cores, size, width", [(1, 32, 8), (4, 64, 32)])
def test_conv_weights_prefetched_same_bits_no_hazards(cores, size, width):
    model = resnet(18, size=size, width=width, classes=10, layers=[1, 1, 1, 1], dtype=np.float16)
    x = np.random.default_rng(0).standard_normal((1, 3, size, size)).astype(np.float16)
    runs = {}
    for convs in (False, True):
        kernel = npu.compile(model, pipeline=f"npu-lower{{prefetch-convs={str(convs).lower()}}}",
                             cores=cores)
        (out,), report = kernel(x, strict=True)
        assert report["hazards"] == []
        assert report["chip"]["launched"] == cores
        runs[convs] = out, int(report["cycles"]), kernel.stages["lowered"]
    (off, off_cycles, off_ir), (on, on_cycles, on_ir) = runs[False], runs[True]
    np.testing.assert_array_equal(on, off)
    assert on_cycles < off_cycles
    # Some conv's resident weights are copied before an op that is not that conv.
    assert on_ir != off_ir


def _chain(c: int, hw: int, convs: list[tuple[int, ...]]):
    """An f16 ONNX chain of convs (out channels, kernel[, stride]), each with
    a bias and ReLU, on a 1 x c x hw x hw input."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    c_in, nodes, inits, x = c, [], [], "x"
    out_hw = hw
    for i, (cout, k, *stride) in enumerate(convs):
        step = stride[0] if stride else 1
        out_hw = (out_hw + 2 * (k // 2) - k) // step + 1
        w = (rng.standard_normal((cout, c, k, k)) / np.sqrt(c * k * k)).astype(np.float16)
        b = (rng.standard_normal(cout) * 0.1).astype(np.float16)
        inits += [numpy_helper.from_array(w, f"w{i}"), numpy_helper.from_array(b, f"b{i}")]
        nodes += [helper.make_node("Conv", [x, f"w{i}", f"b{i}"], [f"c{i}"], name=f"conv{i}",
                                   kernel_shape=[k, k], pads=[k // 2] * 4, strides=[step, step]),
                  helper.make_node("Relu", [f"c{i}"], [f"r{i}"], name=f"relu{i}")]
        x, c = f"r{i}", cout
    graph = helper.make_graph(
        nodes, "chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT16, [1, c_in, hw, hw])],
        [helper.make_tensor_value_info(x, TensorProto.FLOAT16, [1, c, out_hw, out_hw])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])



@pytest.mark.slow  # two ResNet-50 layers at 14x14: ~10 s
def test_gm_bound_conv_weights_cut_to_fit_beside_previous_conv():
    """ResNet-50's 3x3 256->256 then 1x1 256->1024 at 14x14 on one core: the
    1x1's 512 KB of weights do not fit in L1 beside the 3x3's tail, so its
    first pieces get a buffer of their own and load there (`conv_split.py`);
    the outputs are bit for bit those without prefetching, with no hazard,
    and the chain is faster (ResNet-50's 1x1 1024->256, 3x3 and 1x1 at 14x14:
    184,364 -> 180,730 cycles)."""
    model = _chain(256, 14, [(256, 3), (1024, 1)])
    x = np.random.default_rng(1).standard_normal((1, 256, 14, 14)).astype(np.float16)
    runs = {}
    for convs in (False, True):
        kernel = npu.compile(model, pipeline=f"npu-lower{{prefetch-convs={str(convs).lower()}}}",
                             cores=1)
        (out,), report = kernel(x, strict=True)
        assert report["hazards"] == []
        runs[convs] = out, int(report["cycles"])
    (off, off_cycles), (on, on_cycles) = runs[False], runs[True]
    np.testing.assert_array_equal(on, off)
    assert on_cycles < off_cycles


def _between(func, attr: str) -> int:
    """The `cce.mad`s from the first copy into the L1 buffer marked `attr`
    to the first read of it (in program order)."""
    from npu.ir import view_root

    ops = [op.operation for op in func.regions[0].blocks[0].operations]
    buf = next(op.results[0] for op in ops if attr in op.attributes)
    first = next(i for i, op in enumerate(ops) if op.name == "cce.copy_gm_to_l1"
                 and view_root(op.operands[1]) == buf)
    read = next(i for i, op in enumerate(ops) if op.name == "cce.load_l1_to_l0b"
                and view_root(op.operands[0]) == buf)
    return sum(op.name == "cce.mad" for op in ops[first:read])


def _prefetch_off_on(model, x: np.ndarray, measure) -> list[tuple]:
    """(output, cycles, `measure` of the cce function) with npu-prefetch's
    conv prefetch off, then on, on one core; each run free of hazards."""
    from npu.ir import functions

    runs = []
    for convs in ("false", "true"):
        options = f"prefetch-convs={convs}"
        kernel = npu.compile(model, pipeline=f"npu-lower{{{options}}}", cores=1)
        (out,), report = kernel(x, strict=True)
        assert report["hazards"] == []
        cce = npu.compile(model, pipeline=f"npu-lower{{{options} emit=cce}}", cores=1)
        runs.append((out, int(report["cycles"]), measure(functions(cce.module)[0])))
    return runs


@pytest.mark.slow  # ResNet-50's layer4 convs at 7x7: ~12 s
def test_streamed_conv_first_tile_loads_during_previous_conv():
    """ResNet-50's layer4 ends its blocks with a 1x1 512->2048 at 7x7 whose
    2 MB of weights stream through L1 tile by tile: its first tile now loads
    during the previous conv's last tile (`conv_streamed.py`), before that
    conv's last mads, not behind its map's wait for the previous conv's
    store. Same bits, no hazard, fewer cycles (173,565 against 175,525 without it)."""
    from npu.passes.lower_conv.weights import STREAMED_ATTR

    model = _chain(512, 7, [(512, 1), (2048, 1)])
    x = np.random.default_rng(2).standard_normal((1, 512, 7, 7)).astype(np.float16)
    (off, off_cycles, off_mads), (on, on_cycles, on_mads) = _prefetch_off_on(
        model, x, lambda func: _between(func, STREAMED_ATTR))
    np.testing.assert_array_equal(on, off)
    assert off_mads == 0  # behind the previous conv's every mad (and its store)
    assert on_mads > 0
    assert on_cycles < off_cycles


def _copies_before_read(func, attr: str) -> int:
    """The copies into the L1 buffer marked `attr` before the first read of
    it (in program order)."""
    from npu.ir import view_root

    ops = [op.operation for op in func.regions[0].blocks[0].operations]
    buf = next(op.results[0] for op in ops if attr in op.attributes)
    read = next(i for i, op in enumerate(ops) if op.name == "cce.load_l1_to_l0b"
                and view_root(op.operands[0]) == buf)
    return sum(op.name == "cce.copy_gm_to_l1" and view_root(op.operands[1]) == buf
               for op in ops[:read])


@pytest.mark.slow  # ResNet-50's layer3.0 conv1 and conv2: ~15 s
def test_streamed_first_tile_in_pieces_loads_whole_during_previous_conv():
    """ResNet-50's layer3.0: a 1x1 512->256 at 28x28, then the 3x3 256->256
    stride 2 whose 1.2 MB of weights stream. Its first tile loads in pieces
    (1, 1, 2, 4 ... chunks, the cube starting on the first); every piece now
    loads in the 1x1's idle MTE2 tail (`conv_streamed.first_tile` takes the
    copies past the cube's reads of the earlier pieces), where only the
    first (8 KB of 295 KB) did, the cube then starved behind the rest
    queued after the map. Same bits, no hazard, fewer cycles."""
    from npu.passes.lower_conv.weights import STREAMED_ATTR

    model = _chain(512, 28, [(256, 1), (256, 3, 2)])
    x = np.random.default_rng(3).standard_normal((1, 512, 28, 28)).astype(np.float16)
    (off, off_cycles, off_copies), (on, on_cycles, on_copies) = _prefetch_off_on(
        model, x, lambda func: _copies_before_read(func, STREAMED_ATTR))
    np.testing.assert_array_equal(on, off)
    assert off_copies == 1  # the first piece, then the cube reads it
    assert on_copies > 4  # the whole first tile before any read
    assert on_cycles < off_cycles
    print(f"cycles {off_cycles} -> {on_cycles}, first-tile copies {off_copies} -> {on_copies}")


@pytest.mark.slow  # three ResNet-50 layer2 convs at 28x28: ~10 s
def test_up_front_weights_load_two_ops_early():
    """A 3x3 128->128, a 1x1 128->512, then a 1x1 512->128 at 28x28 (as in
    ResNet-50's layer2). The last one is MTE2-bound: npu-lower-conv loads
    its 128 KB of weights before its map, behind its bias copy's wait for
    the previous conv's vector work, and the conv form left them (they
    wait for nothing). Now they load in the 3x3's idle MTE2 tail
    (`conv_up_front.py`), where before prefetching gained nothing (86,267
    cycles either way; 85,398 now). Same bits, no hazard."""
    model = _chain(128, 28, [(128, 3), (512, 1), (128, 1)])
    x = np.random.default_rng(4).standard_normal((1, 128, 28, 28)).astype(np.float16)
    (off, off_cycles, _), (on, on_cycles, _) = _prefetch_off_on(model, x, lambda func: None)
    np.testing.assert_array_equal(on, off)
    assert on_cycles < off_cycles
    print(f"cycles {off_cycles} -> {on_cycles}")

"""The problem's compulsory GM bytes (`npu.frontend.problem`): the model's
inputs, outputs and weights once, in the types the device holds them in,
whatever layout the program chose (the chip ideal of npu.compile's report,
npu-run's and bench/chip.py's)."""

from __future__ import annotations

import math

import numpy as np
from onnx import TensorProto, helper

import npu
from npu.frontend.problem import model_gm_bytes
from npu.simulator import simulate
from onnx_models import mlp, model


def test_mlp_counts_the_model_not_the_program():
    """An f32 MLP: its weights as f16 (the cube's type), its biases f32 and
    x and probs once, 178,176 bytes; the program's arguments hold the biases
    broadcast to 256 rows (its compulsory bytes are larger)."""
    m = mlp(batch=256, d_in=128, d_hidden=512, d_out=128)
    kernel = npu.compile(m, target="ascend910", pipeline="npu-lower{cores=1}")
    ports = kernel.interface.inputs + kernel.interface.outputs
    want = 2 * 256 * 128 * 4 + (128 * 512 + 512 * 128) * 2 + (512 + 128) * 4
    assert model_gm_bytes(m, ports) == want
    x = np.zeros((256, 128), np.float32)
    _, report = kernel(x, numerics=False)
    # npu.compile's (and so npu-run's) report takes the model's bytes; the
    # program's arguments hold more
    chip = report["chip"]
    assert (chip["min_gm_bytes"], chip["gm_bytes_of"]) == (want, "model")
    target = kernel.target
    assert chip["bound_cycles"] == math.ceil(max(chip["cube_cycles"] / target.cores,
                                                 want / target.gm_chip_bytes_per_cycle))
    program = simulate(kernel.module, kernel.interface.arguments([x]), target=target,
                       numerics=False).report["chip"]
    assert program["gm_bytes_of"] == "program" and program["min_gm_bytes"] > want


def test_host_only_and_scalar_constants_are_not_counted():
    """A Reshape's shape (read on the host), a scalar scale (an immediate)
    and a weight read by the cube through a Transpose (folded on the host,
    f16 on device) next to an f16 bias read by an Add."""
    w = np.ones((32, 16), np.float32)  # transposed to [16, 32] on the host
    bias = np.ones(32, np.float16)
    nodes = [helper.make_node("Transpose", ["w"], ["wt"], perm=[1, 0]),
             helper.make_node("MatMul", ["x", "wt"], ["h"]),
             helper.make_node("Mul", ["h", "scale"], ["s"]),
             helper.make_node("Cast", ["s"], ["s16"], to=TensorProto.FLOAT16),
             helper.make_node("Add", ["s16", "bias"], ["a"]),
             helper.make_node("Reshape", ["a", "shape"], ["y"])]
    m = model(nodes, [("x", [4, 16])], [("y", [2, 64], TensorProto.FLOAT16)],
              [("w", w), ("scale", np.array(0.5, np.float32)), ("bias", bias),
               ("shape", np.array([2, 64], np.int64))])

    class Port:
        def __init__(self, shape, dtype):
            self.shape, self.dtype = shape, dtype

    ports = [Port((4, 16), "f32"), Port((2, 64), "f16")]
    assert model_gm_bytes(m, ports) == 4 * 16 * 4 + 2 * 64 * 2 + 32 * 16 * 2 + 32 * 2


def test_a_gathered_table_counts_the_rows_it_can_read():
    """Token embeddings (1,000 rows of 64 f32) read by 16 ids through a
    Reshape (their count from shape inference) and position embeddings
    (512 rows) read by a constant run of 16 positions: 16 rows of each,
    not the tables (278 KB), and a 2-row table under 16 ids whole; read
    by anything else as well, a table counts whole."""
    rng = np.random.default_rng(0)
    words = rng.standard_normal((1000, 64)).astype(np.float32)
    positions = rng.standard_normal((512, 64)).astype(np.float32)
    kinds = rng.standard_normal((2, 64)).astype(np.float32)
    nodes = [helper.make_node("Reshape", ["ids", "flat"], ["ids1"]),
             helper.make_node("Gather", ["words", "ids1"], ["w"]),
             helper.make_node("Gather", ["positions", "pos"], ["p"]),
             helper.make_node("Gather", ["kinds", "ids1"], ["k"]),
             helper.make_node("Add", ["w", "p"], ["wp"]),
             helper.make_node("Add", ["wp", "k"], ["y"])]
    inits = [("words", words), ("positions", positions), ("kinds", kinds),
             ("pos", np.arange(16, dtype=np.int64)), ("flat", np.array([16], np.int64))]
    m = model(nodes, [("ids", [1, 16], TensorProto.INT64)], [("y", [16, 64])], inits)

    class Port:
        def __init__(self, shape, dtype):
            self.shape, self.dtype = shape, dtype

    ports = [Port((1, 16), "i32"), Port((16, 64), "f32")]
    io = 16 * 4 + 16 * 64 * 4
    rows = (16 + 16 + 2) * 64 * 4 + 16 * 4  # and the 16 positions, i64 as i32
    assert model_gm_bytes(m, ports) == io + rows
    # the word table also read whole by an op: it counts whole
    m.graph.node.append(helper.make_node("ReduceSum", ["words"], ["total"], keepdims=0))
    m.graph.output.append(helper.make_tensor_value_info("total", TensorProto.FLOAT, []))
    assert model_gm_bytes(m, ports) == io + rows + (1000 - 16) * 64 * 4

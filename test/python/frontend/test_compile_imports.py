"""What a compile loads: `npu.compile` of an ONNX model imports neither the
simulator nor the Python modules of linalg that torch-mlir's bindings build
when an op of that dialect is looked at as an OpView (each ~0.2-0.3 CPU s of
every compile, BERT-12's included), and the weights it detaches and attaches
again are those of the model."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np

from onnx_models import mlp

CHILD = r"""
import json, sys
import onnx
sys.path.insert(0, sys.argv[2])
from onnx_models import mlp
import npu
before = set(sys.modules)
kernel = npu.compile(mlp(), target="ascend910")
print(json.dumps(sorted(set(sys.modules) - before)))
"""


def test_compile_loads_no_simulator_nor_torch_linalg(tmp_path):
    from pathlib import Path

    here = str(Path(__file__).resolve().parent)
    done = subprocess.run([sys.executable, "-c", CHILD, str(tmp_path), here],
                          capture_output=True, text=True, check=True)
    loaded = set(json.loads(done.stdout.strip().splitlines()[-1]))
    assert "npu.passes.lower" in loaded  # the compile did run in the child
    assert not {m for m in loaded if m == "npu.simulator" or m.startswith("npu.simulator.")}
    assert "torch_mlir.dialects.linalg" not in loaded


def test_tensor_limit_is_the_simulators():
    from npu.frontend.onnx_checks import MAX_TENSOR_BYTES
    from npu.simulator.run_inputs import MAX_ARGUMENT_BYTES

    assert MAX_TENSOR_BYTES == MAX_ARGUMENT_BYTES


def test_detached_weights_come_back_in_order():
    """Every large constant of the function body is detached and attached
    again with its own data (the walk sees the body's ops, not the bodies
    of its linalg ops)."""
    from mlir import ir

    from npu.frontend.onnx_import import import_onnx
    from npu.frontend.onnx_weights import WEIGHT_ATTR, attach_weights
    from npu.ir import make_context, parse_module

    imported = import_onnx(mlp(), "<model>", detach_weights=True)
    weights = dict(imported.weights)
    assert len(weights) >= 2 and all(a.size >= 256 for a in weights.values())
    module = parse_module(imported.mlir, make_context())
    attach_weights(module, imported.weights)
    func = module.body.operations[0]
    constants = [op.operation for op in func.regions[0].blocks[0].operations
                 if op.operation.name == "arith.constant"]
    assert not any(WEIGHT_ATTR in op.attributes for op in constants)
    data = [np.asarray(ir.DenseElementsAttr(op.attributes["value"])) for op in constants
            if isinstance(op.results[0].type, ir.RankedTensorType)
            and np.prod(ir.RankedTensorType(op.results[0].type).shape) >= 256]
    assert len(data) == len(weights)
    for got, want in zip(data, weights.values()):
        np.testing.assert_array_equal(got.reshape(want.shape), want)

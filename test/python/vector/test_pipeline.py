"""The vector lowerings through the real back end: memory planning and sync
insertion, with and without double buffering, simulated strictly (races,
bounds, uninitialised reads) and not serialized: the pipes overlap, so a
missing dependency would show up as a race or a wrong result."""

from __future__ import annotations

import numpy as np
import pytest

from npu.ir import make_context, parse_module
from npu.passes import registry
from npu.pipeline import run_pipeline
from npu.target import get_target
from vec_common import backend_stages, func, memref

pytestmark = pytest.mark.skipif("npu-insert-sync" not in registry(),
                                reason="npu-insert-sync is not registered yet")


def simulate_pipeline(source: str, lowering: str, inputs, double_buffer: bool):
    from npu.simulator import simulate

    module = parse_module(source, make_context())
    run_pipeline(module, ",".join([lowering] + backend_stages(double_buffer)), get_target())
    return simulate(module, [np.array(a, copy=True) for a in inputs], strict=True,
                    serialize=False)


def _cases():
    rng = np.random.default_rng(11)
    n = 5000
    a = rng.uniform(-4, 4, n).astype(np.float16)
    b = rng.uniform(-4, 4, n).astype(np.float16)
    t = memref([n], "f16")
    small = "npu-lower-elementwise{max-chunk=1024}"
    x = rng.uniform(-4, 4, (40, 256)).astype(np.float16)
    bias = rng.uniform(-4, 4, 256).astype(np.float16)
    col = rng.uniform(-4, 4, (40, 1)).astype(np.float16)
    tr = rng.uniform(-4, 4, (3, 48, 40)).astype(np.float32)
    hd = rng.uniform(-4, 4, (2, 37, 3, 16)).astype(np.float16)
    return {
        "add": (func("f", "ascend.add", [t, t, t]), small, [a, b, np.zeros_like(a)], a + b),
        "exp": (func("f", "ascend.exp", [t, t]), small, [a, np.zeros_like(a)],
                np.exp(a.astype(np.float32)).astype(np.float16)),
        "tanh": (func("f", "ascend.tanh", [t, t]), small, [a, np.zeros_like(a)],
                 np.tanh(a.astype(np.float64)).astype(np.float16)),
        "cast": (func("f", "ascend.cast", [t, memref([n], "f32")], 'round_mode = "none"'), small,
                 [a, np.zeros(n, np.float32)], a.astype(np.float32)),
        "bias_row": (func("f", "ascend.add", [memref([40, 256], "f16"), memref([256], "f16"),
                                              memref([40, 256], "f16")]),
                     "npu-lower-elementwise{max-chunk=4096}", [x, bias, np.zeros_like(x)],
                     x + bias),
        "column": (func("f", "ascend.mul", [memref([40, 256], "f16"), memref([40, 1], "f16"),
                                            memref([40, 256], "f16")]),
                   "npu-lower-elementwise{max-chunk=4096}", [x, col, np.zeros_like(x)], x * col),
        "transpose": (func("f", "ascend.transpose", [memref([3, 48, 40], "f32"),
                                                     memref([3, 40, 48], "f32")],
                           "permutation = array<i64: 0, 2, 1>"),
                      "npu-lower-transpose{max-rows=16 max-cols=16}",
                      [tr, np.zeros((3, 40, 48), np.float32)], tr.transpose(0, 2, 1)),
        "heads": (func("f", "ascend.transpose", [memref([2, 37, 3, 16], "f16"),
                                                 memref([2, 3, 37, 16], "f16")],
                       "permutation = array<i64: 0, 2, 1, 3>"),
                  "npu-lower-transpose{max-rows=8}", [hd, np.zeros((2, 3, 37, 16), np.float16)],
                  hd.transpose(0, 2, 1, 3)),
        "reduce_max": (func("f", "ascend.reduce_max", [memref([40, 256], "f16"),
                                                       memref([40], "f16")]),
                       "npu-lower-reduce{max-chunk=4096}", [x, np.zeros(40, np.float16)],
                       x.max(-1)),
    }


CASES = _cases()
TANH_ATOL = 4 * float(np.finfo(np.float16).eps)


@pytest.mark.parametrize("double_buffer", [False, True], ids=["single", "double"])
@pytest.mark.parametrize("name", list(CASES))
def test_through_backend(name, double_buffer):
    source, lowering, inputs, expected = CASES[name]
    res = simulate_pipeline(source, lowering, inputs, double_buffer)
    out = res.outputs[-1]
    if name == "exp":
        np.testing.assert_allclose(out.astype(np.float64), expected.astype(np.float64),
                                   rtol=float(np.finfo(np.float16).eps))
    elif name == "tanh":
        np.testing.assert_allclose(out.astype(np.float64), expected.astype(np.float64),
                                   rtol=TANH_ATOL, atol=TANH_ATOL)
    else:
        assert np.array_equal(out, expected)
    assert not res.hazards

"""`row_broadcast` (whether a host-constant operand shaped like C repeats one
row per column block: a bias the frontend broadcast) against the plain
element-by-element comparison, bit for bit: -0.0 against +0.0 and NaN
payloads count as different rows, whatever the element width."""

from __future__ import annotations

import numpy as np
import pytest

from npu.costmodel.fusion.epilogue import row_broadcast
from npu.ir import make_context, parse_module, retype_constant


def _argument(data: np.ndarray, element: str):
    """The `npu.constant` argument holding `data` (shape [C1, R1, 16, 16])."""
    shape = "x".join(map(str, data.shape))
    zero = "0" if element.startswith("i") else "0.0"
    ctx = make_context()
    module = parse_module(f"""func.func @f(%w: memref<{shape}x{element}, "gm">
        {{npu.constant = dense<{zero}> : tensor<{shape}x{element}>}}) {{
  return
}}""", ctx)
    func = module.body.operations[0].operation
    value = func.regions[0].blocks[0].arguments[0]
    retype_constant(value, data)
    return module, value


def _reference(data: np.ndarray) -> bool:
    bits = data.view(f"u{data.itemsize}").reshape(-1, data.shape[-4], data.shape[-3] * data.shape[-2],
                                                  data.shape[-1])
    return bool(np.array_equal(bits, np.broadcast_to(bits[:1, :, :1, :], bits.shape)))


@pytest.mark.parametrize("dtype,element", [(np.float16, "f16"), (np.float32, "f32"),
                                           (np.int8, "i8")])
def test_row_broadcast_matches_the_elementwise_comparison(dtype, element):
    rng = np.random.default_rng(0)
    row = rng.standard_normal((3, 1, 1, 16)).astype(dtype)
    same = np.broadcast_to(row, (3, 2, 16, 16)).copy()
    cases = [same]
    for where, value in (((1, 1, 7, 3), -0.0), ((2, 0, 15, 15), np.nan), ((0, 1, 0, 0), 1.0)):
        other = same.copy()
        if np.issubdtype(dtype, np.integer):
            other[where] = other[where] ^ 1
        else:
            other[where] = value if value != -0.0 else -other[where] if other[where] else -0.0
        cases.append(other)
    zeros = np.zeros((3, 2, 16, 16), dtype)
    signed = zeros.copy()
    if not np.issubdtype(dtype, np.integer):
        signed[0, 0, 5, 2] = -0.0  # equal as a number, not as bits
        cases += [zeros, signed]
    answers = []
    for data in cases:
        module, value = _argument(data, element)  # the module held while its value is read
        answers.append(row_broadcast(value))
        assert answers[-1] == _reference(data)
    assert answers[0] and not any(answers[1:4])
    if not np.issubdtype(dtype, np.integer):
        assert answers[4] and not answers[5]  # -0.0 is another bit pattern than +0.0


def test_answers_are_kept_per_constant_data():
    # The answer is cached by where the constant's data lives in its
    # context: two arguments with other data in one context must not share
    # it, and the same data asked again (through a core's subview) is the
    # same answer.
    row = np.arange(16, dtype=np.float32).reshape(1, 1, 1, 16)
    same = np.broadcast_to(row, (2, 2, 16, 16)).copy()
    other = same.copy()
    other[1, 1, 9, 4] += 1
    ctx = make_context()
    shape = "2x2x16x16xf32"
    module = parse_module(f"""func.func @f(%a: memref<{shape}, "gm"> {{npu.constant = dense<0.0> : tensor<{shape}>}},
    %b: memref<{shape}, "gm"> {{npu.constant = dense<0.0> : tensor<{shape}>}}) {{
  %v = memref.subview %b[0, 0, 0, 0] [2, 2, 16, 16] [1, 1, 1, 1] : memref<{shape}, "gm"> to memref<{shape}, strided<[512, 256, 16, 1]>, "gm">
  return
}}""", ctx)
    func = module.body.operations[0].operation
    a, b = func.regions[0].blocks[0].arguments
    retype_constant(a, same)
    retype_constant(b, other)
    sub = next(iter(func.regions[0].blocks[0].operations)).operation.results[0]
    for _ in range(2):
        assert row_broadcast(a)
        assert not row_broadcast(b)
        assert not row_broadcast(sub)

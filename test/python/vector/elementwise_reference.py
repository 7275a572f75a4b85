"""What the npu-lower-elementwise tests share: the lowerings they run, the
ops' numpy meaning (computed in float64, rounded once) and the chunk the
pass picks."""

from __future__ import annotations

import numpy as np

from npu.target import get_target
from vec_common import NP

# With a cap of 256 elements a chunk, 1000 elements are 3 chunks plus an
# overlapped tail: the multi-chunk path on a small tensor.
SMALL_CHUNKS = "npu-lower-elementwise{max-chunk=256}"
LOWER = "npu-lower-elementwise"

BINARY = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide,
          "max": np.maximum, "min": np.minimum}
SCALAR = {"adds": (np.add, 0.5), "muls": (np.multiply, -3.0), "maxs": (np.maximum, 0.25),
          "mins": (np.minimum, -0.75)}


def _rsqrt(x):
    return 1 / np.sqrt(x)


UNARY = {"relu": lambda x: np.maximum(x, 0), "abs": np.abs, "neg": np.negative, "exp": np.exp,
         "ln": np.log, "sqrt": np.sqrt, "rsqrt": _rsqrt, "reciprocal": lambda x: 1 / x,
         "tanh": np.tanh, "sigmoid": lambda x: 1 / (1 + np.exp(-x))}


def reference(op: str, elem: str, *args: np.ndarray) -> np.ndarray:
    """numpy in float64, rounded once to the element type."""
    with np.errstate(all="ignore"):
        if op in BINARY:
            r = BINARY[op](*(a.astype(np.float64) for a in args))
        elif op in SCALAR:
            fn, s = SCALAR[op]
            r = fn(args[0].astype(np.float64), s)
        else:
            r = UNARY[op](args[0].astype(np.float64))
        return r.astype(NP[elem])


def chunk_of(op_bytes_per_elem: int, lanes: int) -> int:
    """The chunk the pass picks with the default ub-fraction (0.5)."""
    ub = get_target().capacity("ub")
    return (ub // 2 // op_bytes_per_elem) // lanes * lanes

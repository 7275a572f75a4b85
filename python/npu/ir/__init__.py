"""Shared IR helpers: contexts, parsing with real file locations, walks,
attribute and type accessors, and op builders.

Passes, the simulator and the tools use these instead of re-writing a walk or
a builder each. Everything here is thin over the upstream `mlir` bindings;
the submodules (parsing, walks, accessors, builders) are re-exported here,
so callers write `from npu import ir as nir` and `nir.walk(...)`.
"""

from __future__ import annotations

from .parsing import *  # noqa: F401,F403
from .walks import *  # noqa: F401,F403
from .accessors import *  # noqa: F401,F403
from .builders import *  # noqa: F401,F403


def __getattr__(name: str):
    """`NUMPY_DTYPES` imports numpy on first use: the tools that only parse,
    transform and print IR never need it."""
    if name == "NUMPY_DTYPES":
        import numpy as np

        table = {"f16": np.float16, "f32": np.float32, "i8": np.int8, "i32": np.int32,
                 "i64": np.int64, "i16": np.int16}
        globals()["NUMPY_DTYPES"] = table
        return table
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

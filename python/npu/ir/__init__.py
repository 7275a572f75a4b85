"""Shared IR helpers: contexts, parsing with real file locations, walks,
attribute and type accessors, and op builders.

Passes, the simulator and the tools use these instead of re-writing a walk or
a builder each. Everything here is thin over the upstream `mlir` bindings;
the submodules (parsing, walks, accessors, builders, core_values) are re-exported here,
so callers write `from npu import ir as nir` and `nir.walk(...)`.

The bottom layer with `npu.dialects`: may import `npu.dialects`,
`npu.diagnostics` and `npu.target`.
"""

from __future__ import annotations

from .parsing import *  # noqa: F401,F403
from .walks import *  # noqa: F401,F403
from .accessors import *  # noqa: F401,F403
from .builders import *  # noqa: F401,F403
from .core_values import *  # noqa: F401,F403


def __getattr__(name: str):
    """`NUMPY_DTYPES` imports numpy on first use (see `accessors.numpy_dtypes`)."""
    if name == "NUMPY_DTYPES":
        table = numpy_dtypes()
        globals()["NUMPY_DTYPES"] = table
        return table
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

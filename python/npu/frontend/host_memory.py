"""Handing the compiler's freed memory back to the operating system.

A model's weights pass through several short-lived forms on the way in (the
ONNX protobuf, the importer's MLIR context, the linalg module). Once a stage
is done they are garbage, but some sit in reference cycles (MLIR contexts and
the operations that point back at them) until the collector runs, and glibc
keeps freed heap pages mapped unless asked to return them. Between stages
the compiler asks for both, so that its peak is one stage's, not the sum.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
from functools import lru_cache


@lru_cache(maxsize=1)
def _malloc_trim():
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    return getattr(ctypes.CDLL(name), "malloc_trim", None)  # glibc only


# Below this, a model's stages leave too little garbage to be worth a full
# collection (tens of milliseconds, on every compile of a small model).
WORTH_BYTES = 64 << 20


def model_bytes(source) -> int:
    """The size of an ONNX source (path, bytes or proto); 0 for anything else."""
    import os

    if isinstance(source, (bytes, bytearray)):
        return len(source)
    if isinstance(source, (str, os.PathLike)):
        path = os.fspath(source)
        return os.path.getsize(path) if path.endswith(".onnx") and os.path.exists(path) else 0
    graph = getattr(source, "graph", None)
    if graph is not None and hasattr(graph, "initializer"):
        return _tensor_bytes(graph)
    byte_size = getattr(source, "ByteSize", None)
    return byte_size() if callable(byte_size) else 0


def _tensor_bytes(graph) -> int:
    """The bytes of a model's initializers and `Constant` values, from their
    dims and types: what makes a model large, without the data. Asking the
    proto for its `ByteSize` serialised it in effect: 0.65 CPU s of BERT-12
    (324 MB), twice per `npu.compile` of a proto."""
    from onnx.helper import tensor_dtype_to_np_dtype

    tensors = list(graph.initializer)
    tensors += [a.t for node in graph.node if node.op_type == "Constant"
                for a in node.attribute if a.HasField("t")]
    total = 0
    for t in tensors:
        count = 1
        for d in t.dims:
            count *= d
        try:
            total += count * tensor_dtype_to_np_dtype(t.data_type).itemsize
        except (KeyError, TypeError, ValueError):  # undefined or unknown type: its encoded size
            total += t.ByteSize()
    return total


def release_after(source) -> None:
    """`trim()` when `source` is a model large enough to be worth it. No
    collection: what a stage drops is freed by reference counting (the
    importer's one cycle is broken where it is made), and on BERT-12 the two
    full collections here found 0 and 9 objects for 0.08 CPU s."""
    if model_bytes(source) >= WORTH_BYTES:
        trim()


def release() -> None:
    """Collect cycles, then return the free heap to the OS (where glibc can)."""
    gc.collect()
    trim()


def trim() -> None:
    """Return the free heap to the OS (where glibc can)."""
    malloc_trim = _malloc_trim()
    if malloc_trim is not None:
        malloc_trim(0)

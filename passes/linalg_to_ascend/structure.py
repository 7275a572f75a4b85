"""Read the structure of `linalg` ops: indexing maps, iterators, operands.

The evaluator (`linalg_eval`) and the conversion to `ascend` both look at
linalg ops through these accessors, so neither re-derives a map.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from mlir import ir

# A map result is the loop dimension it reads (int) or a constant 0 (None):
# `(d0, d1) -> (d0, 0)` is [0, None].
MapResults = list


@dataclass
class Structured:
    op: ir.Operation
    inputs: list[ir.Value]
    outputs: list[ir.Value]
    maps: list[MapResults]       # one per operand, inputs first
    iterators: list[str]         # "parallel" | "reduction" per loop
    loop_sizes: list[int]

    @property
    def reduction_dims(self) -> list[int]:
        return [i for i, k in enumerate(self.iterators) if k == "reduction"]


class UnsupportedOp(ValueError):
    """`op` cannot be handled; `reason` says why (the caller adds the location)."""

    def __init__(self, op: ir.Operation, reason: str) -> None:
        super().__init__(reason)
        self.op = op
        self.reason = reason


def map_results(attr: ir.Attribute, op: ir.Operation) -> tuple[int, MapResults]:
    amap = ir.AffineMapAttr(attr).value
    out: MapResults = []
    for expr in amap.results:
        if isinstance(expr, ir.AffineDimExpr):
            out.append(ir.AffineDimExpr(expr).position)
        elif isinstance(expr, ir.AffineConstantExpr) and ir.AffineConstantExpr(expr).value == 0:
            out.append(None)
        else:
            raise UnsupportedOp(op, f"indexing map {amap} is not a projected permutation")
    return amap.n_dims, out


def tensor_shape(value: ir.Value) -> list[int]:
    t = ir.RankedTensorType(value.type)
    if not t.has_static_shape:
        raise ValueError("dynamic shape")
    return list(t.shape)


def element_name(value_or_type) -> str:
    t = value_or_type.type if isinstance(value_or_type, ir.Value) else value_or_type
    if isinstance(t, (ir.RankedTensorType, ir.MemRefType)):
        t = ir.ShapedType(t).element_type
    return str(t)


def structured(op: ir.Operation) -> Structured:
    """The structure of a linalg op that carries `indexing_maps` (generic,
    matmul, batch_matmul, ...)."""
    view = op.opview
    inputs, outputs = list(view.inputs), list(view.outputs)
    if "indexing_maps" not in op.attributes:
        raise UnsupportedOp(op, "has no indexing maps")
    n_dims = 0
    maps = []
    for attr in op.attributes["indexing_maps"]:
        n_dims, results = map_results(attr, op)
        maps.append(results)
    if "iterator_types" in op.attributes:
        iterators = ["reduction" if "reduction" in str(a) else "parallel"
                     for a in op.attributes["iterator_types"]]
    else:  # named contractions: a loop missing from the output is a reduction
        out_dims = set(d for d in maps[-1] if d is not None)
        iterators = ["parallel" if d in out_dims else "reduction" for d in range(n_dims)]
    sizes = [0] * n_dims
    for value, results in zip(inputs + outputs, maps):
        for axis, d in enumerate(results):
            if d is not None:
                sizes[d] = tensor_shape(value)[axis]
    return Structured(op, inputs, outputs, maps, iterators, sizes)


def to_loop_space(array: np.ndarray, results: MapResults, n_loops: int) -> np.ndarray:
    """View `array` (indexed by `results`) with one axis per loop, size 1
    where the operand does not depend on the loop (broadcasts lazily)."""
    keep = [i for i, d in enumerate(results) if d is not None]
    index = tuple(slice(None) if d is not None else 0 for d in results)
    a = array[index] if len(keep) != len(results) else array
    dims = [results[i] for i in keep]
    a = np.transpose(a, np.argsort(dims)) if dims else a
    shape = [1] * n_loops
    for d, size in zip(sorted(dims), a.shape):
        shape[d] = size
    return a.reshape(shape)


def from_loop_space(array: np.ndarray, results: MapResults) -> np.ndarray:
    """Inverse of `to_loop_space` for an output: pick the loops the output
    map names (others must be size 1), in the map's order."""
    dims = [d for d in results if d is not None]
    n = array.ndim
    drop = tuple(i for i in range(n) if i not in dims)
    a = array.reshape([s for i, s in enumerate(array.shape) if i not in drop]) if drop else array
    order = sorted(dims)
    a = np.transpose(a, [order.index(d) for d in dims])
    shape = [a.shape[dims.index(d)] if d is not None else 1 for d in results]
    return a.reshape(shape)

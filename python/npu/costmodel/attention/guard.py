"""sdpa's NaN guard on the probabilities, `Where(IsNaN(P), 0, P)`, as part
of the attention pattern (torch's dynamo exporter writes it after the
softmax of the default attention).

The guard is exact inside the fused kernel because of where NaN can come
from: P = exp(s - m) / sum(exp(s - m)) per row has a NaN only when the row
max m is not finite (a NaN score, a +inf score, or every score -inf), and
then the whole row is NaN. So the guard zeroes whole rows, those whose max
is not finite, and the context of such a row is 0 @ V (0, or NaN in the
columns where V holds an inf or a NaN). The kernel zeroes those rows of P
before P.V, so the cube computes exactly that, and keeps their row sum of 0
from dividing (`npu-lower-attention`, `nan_guard`)."""

from __future__ import annotations

from typing import Callable

import numpy as np
from mlir import ir

from npu import ir as nir


def is_zero_constant(value: ir.Value) -> bool:
    """`value` is a function argument holding the constant 0 everywhere."""
    data = nir.constant_argument(value)
    return data is not None and bool(np.all(data == 0))


def match_guard(probs: ir.Value, readers: Callable[[ir.Value], list[ir.Operation]],
                root: Callable[[ir.Value], ir.Value]) -> tuple[ir.Operation, ir.Operation] | None:
    """(cmp, select) when the probabilities' root `probs` is read by exactly
    `cmp(P, P) {ne}` (true on NaN) and `select(that, 0, P)`, the compare's
    result by the select alone; None otherwise. `readers(root)`: the ops
    reading a root besides its writer."""
    rs = readers(probs)
    if sorted(r.name for r in rs) != ["ascend.cmp", "ascend.select"]:
        return None
    cmp = next(r for r in rs if r.name == "ascend.cmp")
    select = next(r for r in rs if r.name == "ascend.select")
    if (nir.str_attr(cmp, "predicate") != "ne" or root(cmp.operands[0]) != probs
            or root(cmp.operands[1]) != probs):
        return None
    mask = root(cmp.operands[2])
    cond, zero, kept = select.operands[0], select.operands[1], select.operands[2]
    if root(cond) != mask or readers(mask) != [select] or root(kept) != probs:
        return None
    if not is_zero_constant(zero) or nir.memref_shape(select.operands[3]) != nir.memref_shape(kept):
        return None
    return cmp, select

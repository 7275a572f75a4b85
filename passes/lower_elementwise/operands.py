"""The ops the elementwise lowering handles and its GM inputs, each with
how it broadcasts to the output (`npu.costmodel.vector.broadcast`)."""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir

from npu.costmodel.vector.recipes import BINARY, BROADCAST, CMP, SCALAR, SELECT, UNARY

# Ops whose inputs broadcast (numpy) to the output.
BROADCASTING = tuple(BINARY) + (CMP, SELECT, BROADCAST)
HANDLED = BROADCASTING + tuple(SCALAR) + tuple(UNARY) + ("ascend.cast", "ascend.clamp")


# ----------------------------------------------------------------------------
# Operands and views
# ----------------------------------------------------------------------------


@dataclass
class Input:
    """A GM input (`value`: a 1-D view of the elements one lowering sees) and
    how it broadcasts to the output."""

    value: ir.Value
    kind: str  # "full" | "scalar" | "row" | "column"
    elem: str
    aliases_out: bool = False  # the same GM memref as the output

"""The ascend, cce and hivm dialects.

The IRDL files beside this module define the ops; `load_dialects` loads them
once per context. `verify` runs the declarative rules IRDL cannot express
(memory spaces, element types, shape relations) and reports each violation
as an error at the op's location.
"""

from __future__ import annotations

from pathlib import Path

from mlir import ir
from mlir.dialects import irdl

from npu.dialects.rules import verify_op

_DIR = Path(__file__).resolve().parent
DIALECT_FILES = ("ascend.irdl.mlir", "cce.irdl.mlir", "hivm.irdl.mlir")
_LOADED_ATTR = "_npu_dialects_loaded"


def load_dialects(ctx: ir.Context) -> None:
    """Load the three IRDL dialects into `ctx` (idempotent per context)."""
    if getattr(ctx, _LOADED_ATTR, False):
        return
    with ctx, ir.Location.unknown():
        for name in DIALECT_FILES:
            definition = ir.Module.parse((_DIR / name).read_text())
            irdl.load_dialects(definition)
    setattr(ctx, _LOADED_ATTR, True)


def verify(root: ir.Operation) -> bool:
    """Run MLIR's verifier and our rules over `root`; False if any error."""
    from npu import diagnostics
    from npu.ir import walk

    try:
        root.verify()
    except ir.MLIRError as e:
        from npu.dialects.irdl_errors import explain, ops_at

        for d in e.error_diagnostics:
            diagnostics.current().emit_mlir(d, explain(d.message, ops_at(root, d.location)))
        return False
    ok = True
    for op in walk(root):
        if op.name.split(".", 1)[0] in ("ascend", "cce", "hivm"):
            ok &= verify_op(op)
    return ok

"""The ascend, cce and hivm dialects.

The IRDL files beside this module define the ops; `load_dialects` loads them
once per context. `verify` runs the declarative rules IRDL cannot express
(memory spaces, element types, shape relations) and reports each violation
as an error at the op's location.
"""

from __future__ import annotations

import sys
import types
from pathlib import Path

from mlir import ir
from mlir.dialects import irdl

from npu.dialects.rules import verify_op

_DIR = Path(__file__).resolve().parent
DIALECT_FILES = ("ascend.irdl.mlir", "cce.irdl.mlir", "hivm.irdl.mlir")
_LOADED_ATTR = "_npu_dialects_loaded"


def _register_python_namespaces() -> None:
    """Every Python view of an op (`block.operations`, `walk`) asks the
    bindings for the op's dialect module `mlir.dialects.<name>`; IRDL dialects
    have none, and a failed import is retried (a file-system search) for
    every op. An empty module per dialect makes the lookup a dictionary hit
    (33x faster op enumeration; insert-sync on a BERT layer spent most of its
    time there)."""
    for name in ("ascend", "cce", "hivm"):
        sys.modules.setdefault(f"mlir.dialects.{name}", types.ModuleType(f"mlir.dialects.{name}"))


def load_dialects(ctx: ir.Context) -> None:
    """Load the three IRDL dialects into `ctx` (idempotent per context)."""
    _register_python_namespaces()
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
        for d in e.error_diagnostics:
            diagnostics.current().emit_mlir(d)
        return False
    ok = True
    for op in walk(root):
        if op.name.split(".", 1)[0] in ("ascend", "cce", "hivm"):
            ok &= verify_op(op)
    return ok

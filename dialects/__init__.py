"""The ascend, cce and hivm dialects.

The IRDL files beside this module define the ops; `load_dialects` loads them
once per context. `verify` runs the declarative rules IRDL cannot express
(memory spaces, element types, shape relations) and reports each violation
as an error at the op's location.

With `npu.ir` this is the bottom layer: the verifier rules read IR through
`npu.ir`'s accessors and walks (`npu.dialects.walks` holds the walks they
share), `npu.ir`'s parser loads the dialects; module by module neither
imports the other back. May import: `npu.ir`, `npu.target`,
`npu.diagnostics`.
"""

from __future__ import annotations

import sys
import types

from mlir import ir
from mlir.dialects import irdl

from npu import diagnostics
from npu.dialects.definitions import DIALECT_FILES, DIALECT_NAMES, dialect_text
from npu.dialects.irdl_errors import explain, ops_at
from npu.dialects.rules import value_facts_kept, verify_op
from npu.dialects.walks import walk_held

_LOADED_ATTR = "_npu_dialects_loaded"


def _register_python_modules() -> None:
    """Name this package as where the bindings find our dialects' Python modules.

    Each time the MLIR bindings wrap an op they import `mlir.dialects.<its
    dialect>` to find an op class; a failed import is not remembered, so
    without this every wrap of an ascend/cce/hivm op searched the file
    system again (60k-225k times per compile). `npu.dialects.<name>` exists
    for each of ours; once imported, the bindings cache the dialect as loaded.
    """
    from mlir._mlir_libs import _mlir

    if __name__ not in _mlir.globals.dialect_search_modules:
        _mlir.globals.append_dialect_search_prefix(__name__)
    for name in DIALECT_NAMES:
        _mlir.globals._check_dialect_module_loaded(name)


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
    _register_python_modules()
    with ctx, ir.Location.unknown():
        for name in DIALECT_FILES:
            definition = ir.Module.parse(dialect_text(name))
            irdl.load_dialects(definition)
    setattr(ctx, _LOADED_ATTR, True)


def verify(root: ir.Operation) -> bool:
    """Run MLIR's verifier and our rules over `root`; False if any error."""
    try:
        root.verify()
    except ir.MLIRError as e:
        for d in e.error_diagnostics:
            diagnostics.current().emit_mlir(d, explain(d.message, ops_at(root, d.location)))
        return False
    ok = True
    # (MLIR's walk: the caller holds `root`, which keeps the ops alive)
    with value_facts_kept():
        for op in walk_held(root, _ruled):
            ok &= verify_op(op)
    return ok


def _ruled(op: ir.Operation) -> bool:
    """Ops our rules cover: the three dialects' and functions."""
    name = op.name
    return name.startswith(("ascend.", "cce.", "hivm.")) or name == "func.func"

"""Registry of per-op verification rules written in Python.

Rules live in `ascend.py`, `cce.py`, `hivm.py` (and `launch.py`, on
`func.func`); each registers with
`@rule("cce.mad", ...)` a function that raises `RuleError(message)`.
"""

from __future__ import annotations

from typing import Callable

from mlir import ir

RULES: dict[str, list[Callable[[ir.Operation], None]]] = {}


class RuleError(Exception):
    pass


def rule(*op_names: str):
    def register(fn: Callable[[ir.Operation], None]):
        for name in op_names:
            RULES.setdefault(name, []).append(fn)
        return fn
    return register


def verify_op(op: ir.Operation) -> bool:
    from npu import diagnostics

    _load_rule_modules()
    for fn in RULES.get(op.name, ()):
        try:
            fn(op)
        except RuleError as e:
            diagnostics.emit_error(f"'{op.name}' op {e}", op.location)
            return False
    return True


_loaded = False


def _load_rule_modules() -> None:
    global _loaded
    if not _loaded:
        _loaded = True
        import importlib
        for mod in ("ascend", "cce", "hivm", "launch"):
            try:
                importlib.import_module(f"npu.dialects.{mod}")
            except ModuleNotFoundError as e:
                if e.name != f"npu.dialects.{mod}":
                    raise

"""Registry of per-op verification rules written in Python.

Rules live in `ascend.py`, `cce.py`, `hivm.py` (and `launch.py`, on
`func.func`); each registers with
`@rule("cce.mad", ...)` a function that raises `RuleError(message)`.
"""

from __future__ import annotations

import contextlib
import contextvars
from typing import Any, Callable, Iterator

from mlir import ir

RULES: dict[str, list[Callable[[ir.Operation], None]]] = {}

# Facts a rule derives from a value (hivm's constant operands), kept while one
# `npu.dialects.verify` runs: it changes nothing, so a value's facts cannot
# change under it. A lowered BERT-12 (32 cores) has 53k constant operands over
# a few thousand distinct hoisted constants; reading each one's producer cost
# about 3 us. None outside a run: a rule called on its own reads afresh.
VALUE_FACTS: contextvars.ContextVar[dict | None] = contextvars.ContextVar(
    "npu_rule_value_facts", default=None)


_UNKNOWN = object()


def value_fact(value: ir.Value, read: Callable[[ir.Value], Any]) -> Any:
    """`read(value)`, once per value and `read` while a verification runs."""
    facts = VALUE_FACTS.get()
    if facts is None:
        return read(value)
    key = (read, value)
    known = facts.get(key, _UNKNOWN)
    if known is _UNKNOWN:
        known = facts[key] = read(value)
    return known


@contextlib.contextmanager
def value_facts_kept() -> Iterator[None]:
    """`VALUE_FACTS` holds a fresh dictionary inside (one verification run)."""
    token = VALUE_FACTS.set({})
    try:
        yield
    finally:
        VALUE_FACTS.reset(token)


class RuleError(Exception):
    pass


def rule(*op_names: str):
    def register(fn: Callable[[ir.Operation], None]):
        for name in op_names:
            RULES.setdefault(name, []).append(fn)
        return fn
    return register


def verify_op(op: ir.Operation) -> bool:
    _load_rule_modules()
    for fn in RULES.get(op.name, ()):
        try:
            fn(op)
        except RuleError as e:
            from npu import diagnostics  # (on an error only: verify_op runs per op)

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

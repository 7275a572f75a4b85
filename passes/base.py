"""The shape every pass takes: a small class with a `name` (its flag), typed
options, and `run(module)` doing one transformation.

`Pass.to_callable` adapts an instance to `PassManager.add`, so our Python
passes and upstream passes run in one `mlir.passmanager.PassManager`.
"""

from __future__ import annotations

import math
import os
import re
import traceback
from dataclasses import dataclass
from typing import Any, ClassVar, Sequence

from mlir import ir

from npu import diagnostics
from npu.ir import ops_named
from npu.target import Target, get_target


@dataclass(frozen=True)
class Option:
    """A typed pass option, spelled `name=value` in pipelines."""

    name: str
    type: type
    default: Any
    help: str
    choices: tuple = ()

    def parse(self, text: str) -> Any:
        if self.type is bool:
            if text.lower() in ("1", "true", "yes", "on", ""):
                return True
            if text.lower() in ("0", "false", "no", "off"):
                return False
            raise ValueError(f"expected a boolean, got '{text}'")
        if self.type is int:
            try:
                value = int(text, 0)
            except ValueError:
                raise ValueError(f"expected an integer, got '{text}'") from None
        elif self.type is float:
            try:
                value = float(text)
            except ValueError:
                raise ValueError(f"expected a number, got '{text}'") from None
        else:
            value = text
        if self.choices and value not in self.choices:
            raise ValueError(f"expected one of {', '.join(map(str, self.choices))}, got '{text}'")
        return value


class PassError(Exception):
    """A user-facing pass failure at an op's location."""

    def __init__(self, message: str, op: ir.Operation | ir.OpView | None = None):
        super().__init__(message)
        self.message = message
        self.op = op.operation if op is not None else None


def drop_empty_work(module: ir.Operation, names: Sequence[str]) -> None:
    """Erase the ops named `names` whose output (the last operand: ascend ops
    are destination-passing) has no elements: they compute nothing, so the
    correct program for them is empty. An op with an empty input but a
    non-empty output (a reduction over an empty axis, a matmul with an empty
    reduction dimension) is an error at the op: the lowerings do not
    produce an identity fill."""
    for op in ops_named(module, *names):
        sizes = [_elements(v.type) for v in op.operands]
        if not sizes or min(sizes) > 0:
            continue
        if sizes[-1] == 0:
            op.erase()
            continue
        i = sizes.index(0)
        raise PassError(f"operand #{i} ({op.operands[i].type}) has no elements but the output "
                        f"has {sizes[-1]}: an empty reduction or contraction is not supported",
                        op)


def _elements(t: ir.Type) -> int:
    return math.prod(t.shape) if isinstance(t, ir.MemRefType) else 1


def check_ub_fraction(value: float, op: ir.Operation | ir.OpView | None = None) -> None:
    """The `ub-fraction` option of the lowerings: a share of UB in (0, 1]."""
    if not 0.0 < value <= 1.0:
        raise PassError(f"ub-fraction must be in (0, 1], got {value}", op)


class OptionError(ValueError):
    pass


_OPTION_RE = re.compile(r"\s*([A-Za-z0-9_-]+)(?:\s*=\s*(\"[^\"]*\"|'[^']*'|\{[^}]*\}|[^\s]*))?")


def split_options(text: str) -> list[tuple[str, str]]:
    """MLIR pass-option syntax: space-separated `key=value` pairs."""
    pairs = []
    pos = 0
    text = text.strip()
    while pos < len(text):
        m = _OPTION_RE.match(text, pos)
        if not m or m.end() == pos:
            raise OptionError(f"malformed pass options '{text}'")
        value = m.group(2) if m.group(2) is not None else ""
        if value[:1] in "\"'{" and len(value) >= 2:
            value = value[1:-1]
        pairs.append((m.group(1), value))
        pos = m.end()
        while pos < len(text) and text[pos] in " ,":
            pos += 1
    return pairs


class Pass:
    name: ClassVar[str]
    summary: ClassVar[str]
    options: ClassVar[Sequence[Option]] = ()

    def __init__(self, target: Target | None = None, **values: Any):
        self.target = target or get_target()
        known = {o.name.replace("-", "_"): o for o in self.options}
        for key in values:
            if key.replace("-", "_") not in known:
                raise OptionError(f"pass '{self.name}' has no option '{key}'")
        for attr, opt in known.items():
            setattr(self, attr, values.get(attr, values.get(opt.name, opt.default)))

    @classmethod
    def from_option_string(cls, text: str, target: Target | None = None) -> "Pass":
        by_name = {o.name: o for o in cls.options}
        values = {}
        for key, raw in split_options(text):
            opt = by_name.get(key)
            if opt is None:
                known = ", ".join(by_name) or "none"
                raise OptionError(f"pass '{cls.name}' has no option '{key}' (options: {known})")
            try:
                values[key.replace("-", "_")] = opt.parse(raw)
            except ValueError as e:
                raise OptionError(f"bad value for option '{key}' of pass '{cls.name}': {e}") from None
        return cls(target, **values)

    def run(self, module: ir.Operation) -> None:  # pragma: no cover - interface
        raise NotImplementedError

    # -- diagnostics helpers for subclasses ---------------------------------
    def remark(self, op: ir.Operation | ir.OpView, message: str) -> None:
        diagnostics.emit_remark(message, op.operation.location)

    def to_callable(self):
        """Adapter for `PassManager.add`: failures become located errors."""
        from npu.dialects import verify

        def run(op, pass_) -> None:
            try:
                self.run(op.operation)
            except PassError as e:
                loc = e.op.location if e.op is not None else op.location
                diagnostics.emit_error(e.message, loc)
                pass_.signal_pass_failure()
                return
            except Exception as e:  # an internal bug, not the user's input
                if os.environ.get("NPU_DEBUG"):
                    traceback.print_exc()
                diagnostics.emit_error(
                    f"internal error in pass '{self.name}': {type(e).__name__}: {e} "
                    "(set NPU_DEBUG=1 for a traceback)", op.location)
                pass_.signal_pass_failure()
                return
            if not verify(op.operation):
                pass_.signal_pass_failure()

        run.__name__ = self.name.replace("-", "_")
        return run

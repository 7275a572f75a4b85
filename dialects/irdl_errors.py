"""Readable versions of IRDL's generic verifier messages.

IRDL says `'"nearest"' does not satisfy the constraint` or `expected base
type 'builtin.memref' but got 'builtin.f16'`: no op name, no attribute name,
no allowed values. The constraints are declared in the `*.irdl.mlir` files,
so this module reads them once and re-checks the op the message points at
in Python, to say which attribute or operand is wrong and what is allowed:

    'ascend.cast' op attribute 'round_mode' must be one of "rint", "floor",
    "ceil", "trunc", "round", "none"; got "nearest"
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from typing import Iterable

from mlir import ir

from npu.dialects.definitions import DIALECT_FILES, dialect_text
from npu.dialects.walks import walk

_BASE_TEXT = {"!builtin.memref": "a memref", "#builtin.integer": "an integer attribute",
              "#builtin.float": "a float attribute", "#builtin.dense_array": "a dense array",
              "#builtin.string": "a string attribute"}

# IRDL messages that carry no op, attribute or operand name.
_GENERIC = (re.compile(r"^'(?P<value>.*)' does not satisfy the constraint$", re.S),
            re.compile(r"^expected base (type|attribute) '(?P<want>[^']*)' but got '(?P<got>[^']*)'$"),
            re.compile(r"^expected '(?P<want>[^']*)' but got '(?P<got>.*)'$", re.S),
            re.compile(r"^op expects exactly (?P<n>\d+) operands, but got (?P<m>\d+)$"))


@dataclass(frozen=True)
class Constraint:
    """One IRDL constraint: `is` a value, `base` of a kind, or `any_of` others."""

    kind: str
    value: str = ""
    options: tuple["Constraint", ...] = ()

    def allows(self, text: str, base: str) -> bool:
        if self.kind == "is":
            return text == self.value
        if self.kind == "base":
            return self.value.lstrip("!#") == base
        return any(c.allows(text, base) for c in self.options)

    def describe(self) -> str:
        if self.kind == "is":
            return self.value
        if self.kind == "base":
            return _BASE_TEXT.get(self.value, f"a {self.value}")
        if all(c.kind == "is" for c in self.options):
            return "one of " + ", ".join(c.value for c in self.options)
        return " or ".join(c.describe() for c in self.options)


@dataclass
class OpConstraints:
    operands: list[tuple[str, Constraint]] = field(default_factory=list)
    variadic: bool = False  # some operand group takes any number: counts are not checked here
    attributes: dict[str, Constraint] = field(default_factory=dict)


_OPERATION = re.compile(r"irdl\.operation @(\w+) \{(.*?)\n  \}", re.S)
_DEFINE = re.compile(r"(%\w+) = irdl\.(is|base|any_of)\s*(.*)")


def _parse_irdl(text: str) -> dict[str, OpConstraints]:
    dialect = re.search(r"irdl\.dialect @(\w+)", text).group(1)
    ops = {}
    for name, body in _OPERATION.findall(text):
        values: dict[str, Constraint] = {}
        spec = OpConstraints()
        for line in body.splitlines():
            line = line.strip()
            m = _DEFINE.match(line)
            if m:
                var, kind, rest = m.groups()
                if kind == "any_of":
                    names = re.findall(r"%\w+", rest)
                    values[var] = Constraint("any_of", options=tuple(values[n] for n in names))
                else:
                    values[var] = Constraint(kind, rest.strip().strip('"') if kind == "base" else rest.strip())
            elif line.startswith("irdl.operands("):
                spec.operands = [(n, values[v]) for n, v in
                                 re.findall(r"(\w+): (?:variadic |optional )?(%\w+)", line)]
                spec.variadic = "variadic " in line or "optional " in line
            elif line.startswith("irdl.attributes"):
                spec.attributes = {n: values[v] for n, v in re.findall(r'"(\w+)" = (%\w+)', line)}
        ops[f"{dialect}.{name}"] = spec
    return ops


@functools.cache
def constraints() -> dict[str, OpConstraints]:
    table: dict[str, OpConstraints] = {}
    for name in DIALECT_FILES:
        table.update(_parse_irdl(dialect_text(name)))
    return table


def _base_of_type(t: ir.Type) -> str:
    return "builtin.memref" if isinstance(t, ir.MemRefType) else f"builtin.{t}"


def _base_of_attr(a: ir.Attribute) -> str:
    for cls, base in ((ir.BoolAttr, "builtin.bool"), (ir.IntegerAttr, "builtin.integer"),
                      (ir.FloatAttr, "builtin.float"), (ir.StringAttr, "builtin.string"),
                      (ir.DenseI64ArrayAttr, "builtin.dense_array")):
        if isinstance(a, cls):
            return base
    return "builtin.attribute"


def violation(op: ir.Operation) -> str | None:
    """The first IRDL constraint `op` breaks, as a sentence; None if none."""
    spec = constraints().get(op.name)
    if spec is None:
        return None
    prefix = f"'{op.name}' op"
    # With a variadic group, which operand is which needs the segment sizes:
    # operands are then left to IRDL's own message.
    if not spec.variadic and len(op.operands) != len(spec.operands):
        names = ", ".join(n for n, _ in spec.operands)
        return (f"{prefix} expects {len(spec.operands)} operands ({names}), "
                f"got {len(op.operands)}")
    for i, ((name, c), value) in enumerate(zip([] if spec.variadic else spec.operands,
                                               op.operands)):
        if not c.allows(str(value.type), _base_of_type(value.type)):
            return f"{prefix} operand #{i} ('{name}') must be {c.describe()}, got {value.type}"
    for name, c in spec.attributes.items():
        if name not in op.attributes:
            return f"{prefix} requires attribute '{name}' ({c.describe()})"
        attr = op.attributes[name]
        if not c.allows(str(attr), _base_of_attr(attr)):
            return f"{prefix} attribute '{name}' must be {c.describe()}; got {attr}"
    return None


def explain(message: str, candidates: Iterable[ir.Operation]) -> str:
    """`message` itself, or, when it is one of IRDL's anonymous ones, what the
    op at its location (one of `candidates`) actually breaks."""
    if not any(p.match(message) for p in _GENERIC):
        return message
    for op in candidates:
        better = violation(op)
        if better is not None:
            return better
    return message


def ops_at(root: ir.Operation, location: ir.Location) -> list[ir.Operation]:
    """Ops of our dialects under `root` whose location is `location`."""
    where = str(location)
    return [op for op in walk(root) if op.name.split(".", 1)[0] in ("ascend", "cce", "hivm")
            and str(op.location) == where]


def explain_in_text(message: str, text: str, location: ir.Location) -> str:
    """`explain` for text that failed to parse because of IRDL: the text is
    parsed again with our ops unregistered (so unverified), only to look at
    the op at `location`."""
    if not any(p.match(message) for p in _GENERIC):
        return message
    ctx = ir.Context()
    ctx.allow_unregistered_dialects = True
    try:
        with ctx:
            module = ir.Module.parse(text)
    except ir.MLIRError:
        return message
    return explain(message, ops_at(module.operation, location))  # while `module` lives

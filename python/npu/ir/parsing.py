"""Contexts and parsing with real file locations."""

from __future__ import annotations

import re
import sys

from mlir import ir

from npu import diagnostics
from npu.dialects import load_dialects, verify
from npu.dialects.irdl_errors import explain_in_text


# The bindings have a Python class for dense arrays of i1/i8/i16/i32/i64/f32/
# f64 only, and their caster raises TypeError on any other element type
# (`array<ui8: 1>`, `array<bf16: 1.0>`, all valid MLIR). Every read of such an
# attribute (`op.attributes[...]`, iterating an ArrayAttr or DictAttr) then
# failed, or aborted the process when the read happened inside C++. Input is
# the user's: those arrays stay plain `ir.Attribute`s, which our verifiers
# reject with a located error where an array<i64: ...> is expected.
# i64 first: nearly every array read is one, and each failed cast raises.
_DENSE_ARRAY_CLASSES = (ir.DenseI64ArrayAttr, ir.DenseI32ArrayAttr, ir.DenseBoolArrayAttr,
                        ir.DenseI8ArrayAttr, ir.DenseI16ArrayAttr, ir.DenseF32ArrayAttr,
                        ir.DenseF64ArrayAttr)


def _dense_array_or_plain(attr: ir.Attribute) -> ir.Attribute:
    for cls in _DENSE_ARRAY_CLASSES:
        try:
            return cls(attr)
        except ValueError:
            pass
    return attr


def _install_dense_array_caster() -> None:
    """Replace the upstream dense-array caster (process-wide, keyed by TypeID)."""
    with ir.Context():
        typeid = ir.DenseI64ArrayAttr.get([]).typeid
    ir.register_type_caster(typeid, replace=True)(_dense_array_or_plain)


_install_dense_array_caster()


def make_context() -> ir.Context:
    """A context with upstream dialects and ascend/cce/hivm loaded."""
    ctx = ir.Context()
    load_dialects(ctx)
    diagnostics.attach_to_context(ctx)
    return ctx


class ParseError(Exception):
    pass


# Input MLIR's parser does not reject but aborts the process on (an assertion
# in the LLVM 22 build): a dense array of `index` (`array<index: 0, 1>`); in
# linalg.generic's custom form, an iterator type that is not a string
# (`iterator_types = ["parallel", 30]`: its parser casts each to StringAttr;
# npu-run fuzz case run-2671 on this corpus). `at`, when the pattern has it,
# is the column reported.
_PARSER_CRASHES = (
    (re.compile(r"array\s*<\s*index\b"),
     "dense arrays of 'index' are not supported (use array<i64: ...>)"),
    (re.compile(r'linalg\.generic(?<!"linalg\.generic)\s*\{.*?\biterator_types\s*=\s*\[\s*'
                r'(?:"[^"\n]*"\s*,\s*)*(?P<at>)(?!\s*["\]])'),
     "linalg.generic's iterator_types must be strings (\"parallel\", \"reduction\", \"window\")"),
)


def _reject_parser_crashes(text: str, ctx: ir.Context) -> None:
    """Report what would abort MLIR's parser as an ordinary located error."""
    for lineno, line in enumerate(text.splitlines(), start=1):
        code = line.split("//", 1)[0]
        for pattern, message in _PARSER_CRASHES:
            m = pattern.search(code)
            if m:
                col = m.start("at" if "at" in pattern.groupindex else 0) + 1
                diagnostics.emit_error(message, ir.Location.file("-", lineno, col, context=ctx))
                raise ParseError()


def parse_module(text: str, ctx: ir.Context, first_line: int = 1) -> ir.Module:
    """Parse `text` whose first line is line `first_line` of the input file.

    Leading newlines keep locations those of the original file (needed for
    `--split-input-file`). Errors go to the current diagnostics engine and
    raise `ParseError`; our declarative verifiers run after a clean parse.
    """
    padded = "\n" * (first_line - 1) + text
    _reject_parser_crashes(padded, ctx)
    with ctx:
        try:
            module = ir.Module.parse(padded)
        except ir.MLIRError as e:
            for d in e.error_diagnostics:
                diagnostics.current().emit_mlir(d, explain_in_text(d.message, padded, d.location))
            if not e.error_diagnostics:
                diagnostics.emit_error(str(e))
            raise ParseError() from None
    if not verify(module.operation):
        raise ParseError()
    return module


__all__ = ["ParseError", "make_context", "parse_module"]


class SourceError(Exception):
    """An input file that cannot be read as text (the tools make it a usage error)."""


def read_source(path: str) -> tuple[str, str]:
    """(name used in diagnostics, text) of the file at `path`, or of stdin for "-"."""
    if path == "-":
        return "<stdin>", sys.stdin.read()
    try:
        with open(path, encoding="utf-8") as f:
            return path, f.read()
    except OSError as e:
        raise SourceError(f"cannot read '{path}': {e.strerror}") from None
    except UnicodeDecodeError:
        raise SourceError(f"cannot read '{path}': not a UTF-8 text file") from None

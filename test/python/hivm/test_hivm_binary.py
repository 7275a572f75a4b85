"""The binary form: random hivm programs survive encoding and decoding
unchanged, and corrupt binaries are rejected at the offset of the bad
instruction (never with another exception)."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from mlir import ir

from npu.dialects import hivm
from npu.hivm.binary import (HIVM_OPS, OP_HIVM, PIPES, ROUND_MODES, BinaryError, EncodeError,
                             attr_fields, encode)
from npu.hivm.disasm import decode, decode_entries
from npu.ir import make_context, parse_module
from npu.pipeline import run_pipeline
from npu.target import get_target

EXAMPLES = sorted((Path(__file__).resolve().parents[3] / "examples").glob("*.mlir"))
_CTX = make_context()


class Program:
    """Text of a random kernel: values in scope by type, nested loops and ifs."""

    def __init__(self, draw):
        self.draw = draw
        self.n = 0
        self.lines: list[str] = []

    def new(self) -> str:
        self.n += 1
        return f"%v{self.n}"

    def const(self, scope: dict, t: str) -> str:
        v = self.new()
        if t == "f32":
            value = self.draw(st.floats(-1e6, 1e6, allow_nan=False, width=32))
            self.lines.append(f"{v} = arith.constant {value:e} : f32")
        elif t == "i1":
            self.lines.append(f"{v} = arith.constant {self.draw(st.booleans())!s}".lower() + "")
        else:
            lo, hi = (-(2**63), 2**63 - 1) if t == "i64" else (0, 2**20)
            self.lines.append(f"{v} = arith.constant {self.draw(st.integers(lo, hi))} : {t}")
        scope.setdefault(t, []).append(v)
        return v

    def pick(self, scope: dict, t: str) -> str:
        if not scope.get(t) or self.draw(st.integers(0, 3)) == 0:
            return self.const(scope, t)
        return self.draw(st.sampled_from(scope[t]))

    def hivm_op(self, scope: dict, name: str) -> None:
        n_operands = {"hivm.set_vector_mask": 2, hivm.SET_FMATRIX: 1, hivm.SET_PADDING: 1,
                      hivm.IMG2COL: 4}.get(name)
        if name == "hivm.addr":
            terms = [self.pick(scope, "index") for _ in range(self.draw(st.integers(0, 3)))]
            scales = [self.draw(st.integers(-(2**40), 2**40)) for _ in terms]
            v = self.new()
            types = ", ".join(["index"] * len(terms))
            self.lines.append(f'{v} = "hivm.addr"({", ".join(terms)}) {{base = '
                              f'{self.draw(st.integers(0, 2**40))} : i64, scales = array<i64'
                              f'{": " if scales else ""}{", ".join(map(str, scales))}>}} : '
                              f"({types}) -> i64")
            scope.setdefault("i64", []).append(v)
            return
        if name == hivm.SCALAR_LOAD:  # a scalar load, then an assert (ASSERT opcode)
            v = self.new()
            self.lines.append(f'{v} = "{name}"({self.pick(scope, "i64")}) : (i64) -> i32')
            scope.setdefault("i32", []).append(v)
            self.lines.append(f'cf.assert {self.pick(scope, "i1")}, "index {self.n} out of range"')
            return
        if n_operands is None:
            n_operands = (0 if name in hivm.SYNC_OPS or name == hivm.SYNC_ALL
                          else len(hivm.ADDRESS_SPACES[name]) + 1)
        operands = [self.pick(scope, "i64") for _ in range(n_operands)]
        attrs = []
        for attr, kind in attr_fields(name):
            if kind == "type":
                value = self.draw(st.sampled_from(["f16", "i8"] if name == "hivm.mad"
                                                  else ["f16", "f32", "i8", "i32"]))
            elif kind == "f64":
                value = f"{self.draw(st.floats(-1e3, 1e3, allow_nan=False)):.17e} : f64"
            elif kind == "u8":
                value = f"{self.draw(st.integers(0, 7))} : i64"
            elif kind == "pipe":
                value = '"' + self.draw(st.sampled_from(PIPES[:-1] if attr != "pipe" else PIPES)) + '"'
            elif kind == "round":
                value = '"' + self.draw(st.sampled_from(ROUND_MODES)) + '"'
            else:  # offsets
                values = self.draw(st.lists(st.integers(0, 2**32 - 1), min_size=16, max_size=16))
                value = f"array<i64: {', '.join(map(str, values))}>"
            attrs.append(f"{attr} = {value}")
        attr_text = f" {{{', '.join(attrs)}}}" if attrs else ""
        types = ", ".join(["i64"] * n_operands)
        self.lines.append(f'"{name}"({", ".join(operands)}){attr_text} : ({types}) -> ()')

    def block(self, scope: dict, depth: int) -> None:
        for _ in range(self.draw(st.integers(0, 5))):
            kind = self.draw(st.sampled_from(["hivm", "hivm", "arith", "for", "if"]
                                             if depth < 2 else ["hivm", "arith"]))
            if kind == "hivm":
                # the chip barrier only in the function's body (its verifier)
                names = HIVM_OPS if depth == 0 else [n for n in HIVM_OPS if n != hivm.SYNC_ALL]
                self.hivm_op(scope, self.draw(st.sampled_from(names)))
            elif kind == "arith":
                op = self.draw(st.sampled_from(["addi", "muli", "subi", "maxsi", "remui"]))
                a, b = self.pick(scope, "index"), self.pick(scope, "index")
                v = self.new()
                self.lines.append(f"{v} = arith.{op} {a}, {b} : index")
                scope.setdefault("index", []).append(v)
            elif kind == "for":
                lb, ub, step = (self.pick(scope, "index") for _ in range(3))
                init = self.pick(scope, "i64")
                iv, acc, res = self.new(), self.new(), self.new()
                self.lines.append(f"{res} = scf.for {iv} = {lb} to {ub} step {step} "
                                  f"iter_args({acc} = {init}) -> (i64) {{")
                inner = {k: list(v) for k, v in scope.items()}
                inner.setdefault("index", []).append(iv)
                inner.setdefault("i64", []).append(acc)
                self.block(inner, depth + 1)
                self.lines.append(f"scf.yield {self.pick(inner, 'i64')} : i64")
                self.lines.append("}")
                scope.setdefault("i64", []).append(res)
            else:
                cond = self.pick(scope, "i1")
                res = self.new()
                self.lines.append(f"{res} = scf.if {cond} -> (index) {{")
                inner = {k: list(v) for k, v in scope.items()}
                self.block(inner, depth + 1)
                self.lines.append(f"scf.yield {self.pick(inner, 'index')} : index")
                self.lines.append("} else {")
                inner = {k: list(v) for k, v in scope.items()}
                self.block(inner, depth + 1)
                self.lines.append(f"scf.yield {self.pick(inner, 'index')} : index")
                self.lines.append("}")
                scope.setdefault("index", []).append(res)


@st.composite
def programs(draw) -> str:
    p = Program(draw)
    args = draw(st.lists(st.tuples(st.integers(1, 4096), st.sampled_from(["f16", "f32", "i8", "i32"])),
                         min_size=0, max_size=3))
    p.block({}, 0)
    sig = ", ".join(f'%a{i}: memref<{n}x{t}, "gm">' for i, (n, t) in enumerate(args))
    body = "\n    ".join(p.lines)
    return f"func.func @k({sig}) attributes {{npu.note = \"x\"}} {{\n    {body}\n    return\n}}\n"


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs())
def test_random_programs_survive_encode_decode(text):
    # Parsed without the npu rules: any 64-bit word and address must survive.
    module = ir.Module.parse(text, _CTX)
    binary = encode(module)
    again = decode(binary, "random.npub", _CTX)
    assert str(again) == str(module)
    assert encode(again) == binary


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_examples_round_trip(path):
    module = parse_module(path.read_text(), make_context())
    run_pipeline(module, "npu-lower{cores=1}", get_target())
    binary = encode(module)
    assert str(decode(binary, "ex.npub", make_context())) == str(module)


def test_converting_l0c_move_round_trips():
    """The L0C -> UB move's conversion lives in its word (convert field):
    it survives the binary form and the listing names it."""
    from npu.hivm.disasm import listing

    f = 16
    t = lambda *s, e="f16": f'memref<{"x".join(map(str, s))}x{e}, "gm">'  # noqa: E731
    text = (f'func.func @k(%a: {t(2, 2, f, f)}, %b: {t(2, 2, f, f)}, %y: {t(2, 2, f, f)}) {{\n'
            f'  %c = memref.alloc() : {t(2, 2, f, f, e="f32")}\n'
            f'  "ascend.matmul"(%a, %b, %c) : ({t(2, 2, f, f)}, {t(2, 2, f, f)}, '
            f'{t(2, 2, f, f, e="f32")}) -> ()\n'
            f'  %r = memref.alloc() : {t(2, 2, f, f, e="f32")}\n'
            f'  "ascend.relu"(%c, %r) : ({t(2, 2, f, f, e="f32")}, {t(2, 2, f, f, e="f32")}) -> ()\n'
            f'  "ascend.cast"(%r, %y) {{round_mode = "rint"}} : ({t(2, 2, f, f, e="f32")}, '
            f'{t(2, 2, f, f)}) -> ()\n  return\n}}\n')
    module = parse_module(text, make_context())
    run_pipeline(module, "npu-lower{cores=1 matmul-drain-convert=true}", get_target())
    binary = encode(module)
    assert str(decode(binary, "k.npub", make_context())) == str(module)
    moves = [line for line in listing(binary, "k.npub", make_context()).splitlines()
             if "hivm.copy_l0c_to_ub" in line]
    assert moves and all("[l0c_copy" in m and "convert=1" in m for m in moves)


def _example_binary() -> bytes:
    module = parse_module(EXAMPLES[0].read_text(), _CTX)
    run_pipeline(module, "npu-lower{cores=1}", get_target())
    return encode(module)


_BINARY = _example_binary()
_OFFSETS = [e[0] for e in decode_entries(_BINARY, "x", _CTX)[1]]


@settings(max_examples=150, deadline=None)
@given(st.integers(0, len(_BINARY) - 1), st.integers(1, 255))
def test_corruption_is_rejected_or_decodes(position, flip):
    """A flipped byte either still decodes (it hit a value, e.g. a constant) or
    is a BinaryError at an instruction boundary or in the header; never a crash."""
    data = bytearray(_BINARY)
    data[position] ^= flip
    try:
        decode(bytes(data), "bad.npub", _CTX)
    except BinaryError as e:
        first_code = _OFFSETS[0]
        assert e.offset < first_code or e.offset in _OFFSETS or e.offset >= position - 4, e


def test_an_instruction_after_yield_is_rejected():
    """Swapping a YIELD with the instruction before it leaves an instruction
    after the block's terminator: a BinaryError there (hypothesis found one
    such flip that crashed in MLIR instead)."""
    from npu.hivm.binary import OP_YIELD

    entries = decode_entries(_BINARY, "x", _CTX)[1]
    i = next(i for i in range(len(entries) - 1) if entries[i + 1][2] == OP_YIELD)
    (at, first, *_), (_, yield_bytes, *_) = entries[i], entries[i + 1]
    data = bytearray(_BINARY)
    data[at:at + len(first) + len(yield_bytes)] = yield_bytes + first
    with pytest.raises(BinaryError) as e:
        decode(bytes(data), "bad.npub", _CTX)
    assert e.value.offset == at + len(yield_bytes)
    assert "after YIELD" in e.value.message


def test_bad_opcode_names_its_instruction_offset():
    data = bytearray(_BINARY)
    at = _OFFSETS[5]
    data[at:at + 2] = struct.pack("<H", OP_HIVM + len(HIVM_OPS))
    with pytest.raises(BinaryError) as e:
        decode(bytes(data), "bad.npub", _CTX)
    assert e.value.offset == at and "unknown opcode" in e.value.message


def test_cce_has_no_binary_form():
    module = parse_module(EXAMPLES[0].read_text(), _CTX)
    run_pipeline(module, "npu-lower{cores=1 emit=cce}", get_target())
    with pytest.raises(EncodeError, match=r"'cce\.[a-z_0-9]+' has no binary encoding"):
        encode(module)

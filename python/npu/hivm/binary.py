"""The binary form of a hivm kernel: encoding (`encode`) and decoding (`decode`).

Layout (little-endian; dialects/README.md, "Binary form", is the contract):

    header   "NPUB", u16 version, u16 flags (0)
             str module attributes, str function name, str function attributes,
             u16 argument count, str per argument type     (str = u32 length + UTF-8)
             u32 code size in bytes
    code     instructions, each  u16 opcode, u16 payload length, payload

Every SSA value is a register, numbered in definition order: the kernel
arguments first, then each instruction's results (a loop defines its
induction variable and iteration arguments at `FOR` and its results at
`END`). Registers are u16. Loops and branches stay structured: `FOR ...
YIELD END`, `IF ... YIELD [ELSE ... YIELD] END`, so the decoder rebuilds
the same `scf` ops and the disassembly prints the same text.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from mlir import ir

from npu import ir as nir
from npu.dialects import hivm

MAGIC = b"NPUB"
VERSION = 1

OP_CONST, OP_ARITH = 0x01, 0x02
OP_FOR, OP_IF, OP_ELSE, OP_YIELD, OP_END, OP_RETURN = 0x10, 0x11, 0x12, 0x13, 0x14, 0x15
OP_ASSERT = 0x16  # cf.assert: u16 condition, then its message (u32 length + UTF-8)
OP_HIVM = 0x40  # + index in HIVM_OPS

HIVM_OPS: tuple[str, ...] = hivm.ALL_OPS
TYPES = ("index", "i1", "i8", "i16", "i32", "i64", "f16", "f32", "f64")
ARITH_OPS = ("arith.addi", "arith.subi", "arith.muli", "arith.divsi", "arith.divui",
             "arith.remsi", "arith.remui", "arith.floordivsi", "arith.ceildivsi",
             "arith.ceildivui", "arith.maxsi", "arith.minsi", "arith.maxui", "arith.minui",
             "arith.andi", "arith.ori", "arith.xori", "arith.shli", "arith.shrsi", "arith.shrui",
             "arith.cmpi", "arith.select", "arith.index_cast", "arith.index_castui",
             "arith.extsi", "arith.extui", "arith.trunci")
PIPES = ("S", "V", "M", "MTE1", "MTE2", "MTE3", "ALL")
ROUND_MODES = ("rint", "floor", "ceil", "trunc", "round", "none")
NO_PREDICATE = 0xFF


def attr_fields(name: str) -> tuple[tuple[str, str], ...]:
    """(attribute, encoding) of a hivm op's attributes, in payload order:
    `type` u8 (TYPES), `f64`, `i64`, `offsets` (u8 count + u32 each),
    `scales` (i64 per operand), `pipe` u8 (PIPES), `round` u8, `u8`."""
    if name in ("hivm.set_flag", "hivm.wait_flag"):
        return (("src", "pipe"), ("dst", "pipe"), ("event", "u8"))
    if name == "hivm.pipe_barrier":
        return (("pipe", "pipe"),)
    if name == "hivm.addr":
        return (("base", "i64"), ("scales", "scales"))
    fields: list[tuple[str, str]] = []
    if name == "hivm.mad" or name in hivm.VECTOR_OPS:
        fields.append(("dtype", "type"))
    if name == "hivm.vconv":
        fields += [("src_dtype", "type"), ("round_mode", "round")]
    if name in hivm.VECTOR_SCALAR or name in ("hivm.vdup", hivm.VECTOR_AXPY):
        fields.append(("scalar", "f64"))
    if name == "hivm.vnchwconv":
        fields += [("src_offsets", "offsets"), ("dst_offsets", "offsets")]
    return tuple(fields)


@dataclass
class BinaryError(Exception):
    """A corrupt binary or a program the binary form cannot hold."""

    offset: int
    message: str

    def __str__(self) -> str:
        return f"at byte offset {self.offset} (0x{self.offset:x}): {self.message}"


class EncodeError(Exception):
    """An op the binary form cannot hold; reported at the op's location."""

    def __init__(self, op: ir.Operation, message: str):
        super().__init__(message)
        self.op = op


# ----------------------------------------------------------------------------
# Encoding
# ----------------------------------------------------------------------------


class _Writer:
    def __init__(self) -> None:
        self.regs: dict[ir.Value, int] = {}
        self.code = bytearray()
        self.count = 0  # instructions

    def define(self, value: ir.Value) -> None:
        if len(self.regs) >= 0xFFFF:
            raise BinaryError(len(self.code), "more than 65535 registers")
        self.regs[value] = len(self.regs)

    def reg(self, value: ir.Value, op: ir.Operation) -> bytes:
        r = self.regs.get(value)
        if r is None:
            raise _OpError(op, "uses a value defined outside the kernel")
        return struct.pack("<H", r)

    def emit(self, opcode: int, payload: bytes = b"") -> None:
        self.code += struct.pack("<HH", opcode, len(payload)) + payload
        self.count += 1


class _OpError(Exception):
    def __init__(self, op: ir.Operation, message: str):
        super().__init__(message)
        self.op = op


def _type_code(t: ir.Type, op: ir.Operation) -> int:
    text = str(t)
    if text not in TYPES:
        raise _OpError(op, f"has a value of type {text}, which the binary form cannot hold")
    return TYPES.index(text)


def _str(text: str) -> bytes:
    data = text.encode()
    return struct.pack("<I", len(data)) + data


def _attr_dict_text(op: ir.Operation, skip: tuple[str, ...]) -> str:
    items = [op.attributes[i] for i in range(len(op.attributes))]
    kept = [f"{a.name} = {a.attr}" for a in items if a.name not in skip]
    return "{" + ", ".join(kept) + "}"


def encode(module: ir.Module) -> bytes:
    """The binary of the module's one hivm kernel. Raises `EncodeError` (with
    the op) for anything that is not hivm, scf or integer arith."""
    funcs = nir.functions(module)
    if len(funcs) != 1:
        raise EncodeError(module.operation, f"the binary holds one kernel; the module has "
                          f"{len(funcs)} functions")
    func_op = funcs[0]
    w = _Writer()
    args = list(func_op.regions[0].blocks[0].arguments)
    for a in args:
        w.define(a)
    try:
        _encode_block(w, func_op.regions[0].blocks[0])
    except _OpError as e:
        raise EncodeError(e.op, str(e)) from None
    header = bytearray(MAGIC + struct.pack("<HH", VERSION, 0))
    header += _str(_attr_dict_text(module.operation, ()))
    header += _str(nir.symbol_name(func_op))
    header += _str(_attr_dict_text(func_op, ("sym_name", "function_type")))
    header += struct.pack("<H", len(args))
    for a in args:
        header += _str(str(a.type))
    return bytes(header) + struct.pack("<I", len(w.code)) + bytes(w.code)


def _encode_block(w: _Writer, block: ir.Block) -> None:
    for op_view in block.operations:
        _encode_op(w, op_view.operation)


def _regs(w: _Writer, values, op: ir.Operation) -> bytes:
    values = list(values)
    return struct.pack("<B", len(values)) + b"".join(w.reg(v, op) for v in values)


def _encode_op(w: _Writer, op: ir.Operation) -> None:
    name = op.name
    if name == "arith.constant":
        attr = op.attributes["value"]
        t = op.results[0].type
        if isinstance(attr, ir.BoolAttr):
            value = struct.pack("<q", int(ir.BoolAttr(attr).value))
        elif isinstance(attr, ir.FloatAttr):
            value = struct.pack("<d", ir.FloatAttr(attr).value)
        elif isinstance(attr, ir.IntegerAttr):
            value = struct.pack("<q", ir.IntegerAttr(attr).value)
        else:
            raise _OpError(op, f"constant {attr} is not a scalar")
        w.emit(OP_CONST, struct.pack("<B", _type_code(t, op)) + value)
        w.define(op.results[0])
    elif name in ARITH_OPS:
        extra = ({op.attributes[i].name for i in range(len(op.attributes))}
                 - {"predicate", "overflowFlags"})
        if extra:
            raise _OpError(op, f"has attributes {sorted(extra)} the binary form cannot hold")
        pred = nir.int_attr(op, "predicate") if "predicate" in op.attributes else NO_PREDICATE
        flags = 0
        if "overflowFlags" in op.attributes:
            text = str(op.attributes["overflowFlags"])
            flags = ("nsw" in text) | ("nuw" in text) << 1
        w.emit(OP_ARITH, struct.pack("<BBBB", ARITH_OPS.index(name),
                                     _type_code(op.results[0].type, op), pred, flags)
               + _regs(w, op.operands, op))
        w.define(op.results[0])
    elif name == "scf.for":
        operands = list(op.operands)
        w.emit(OP_FOR, b"".join(w.reg(v, op) for v in operands[:3]) + _regs(w, operands[3:], op))
        body = op.regions[0].blocks[0]
        for a in body.arguments:
            w.define(a)
        _encode_block(w, body)
        w.emit(OP_END)
        for r in op.results:
            w.define(r)
    elif name == "scf.if":
        types = bytes(_type_code(r.type, op) for r in op.results)
        has_else = len(op.regions[1].blocks) > 0
        w.emit(OP_IF, w.reg(op.operands[0], op) + struct.pack("<BB", has_else, len(types)) + types)
        _encode_block(w, op.regions[0].blocks[0])
        if has_else:
            w.emit(OP_ELSE)
            _encode_block(w, op.regions[1].blocks[0])
        w.emit(OP_END)
        for r in op.results:
            w.define(r)
    elif name == "scf.yield":
        w.emit(OP_YIELD, _regs(w, op.operands, op))
    elif name == "func.return":
        w.emit(OP_RETURN, _regs(w, op.operands, op))
    elif name == "cf.assert":
        msg = ir.StringAttr(op.attributes["msg"]).value if "msg" in op.attributes else ""
        w.emit(OP_ASSERT, w.reg(op.operands[0], op) + _str(msg))
    elif name in HIVM_OPS:
        payload = _regs(w, op.operands, op) + _encode_attrs(op)
        w.emit(OP_HIVM + HIVM_OPS.index(name), payload)
        for r in op.results:
            w.define(r)
    else:
        raise _OpError(op, f"'{name}' has no binary encoding (only hivm, scf and integer arith "
                       "ops: lower the program to hivm first)")


def _encode_attrs(op: ir.Operation) -> bytes:
    out = bytearray()
    for attr, kind in attr_fields(op.name):
        if attr not in op.attributes:
            raise _OpError(op, f"is missing the attribute '{attr}'")
        a = op.attributes[attr]
        if kind == "type":
            out += struct.pack("<B", _type_code(ir.TypeAttr(a).value, op))
        elif kind == "f64":
            out += struct.pack("<d", ir.FloatAttr(a).value)
        elif kind == "i64":
            out += struct.pack("<q", ir.IntegerAttr(a).value)
        elif kind == "u8":
            value = ir.IntegerAttr(a).value
            if not 0 <= value <= 0xFF:
                raise _OpError(op, f"attribute '{attr}' = {value} does not fit its byte")
            out += struct.pack("<B", value)
        elif kind in ("pipe", "round"):
            table = PIPES if kind == "pipe" else ROUND_MODES
            out += struct.pack("<B", table.index(ir.StringAttr(a).value))
        elif kind == "offsets":
            values = list(ir.DenseI64ArrayAttr(a))
            if len(values) > 0xFF or any(not 0 <= v <= 0xFFFFFFFF for v in values):
                raise _OpError(op, f"attribute '{attr}' does not fit 255 u32 entries")
            out += struct.pack("<B", len(values)) + b"".join(struct.pack("<I", v) for v in values)
        elif kind == "scales":
            out += b"".join(struct.pack("<q", v) for v in ir.DenseI64ArrayAttr(a))
    return bytes(out)

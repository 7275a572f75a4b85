"""Decode the binary form of a hivm kernel (`npu.hivm.binary`) back into MLIR.

The decoder trusts nothing: every header field, opcode, payload length,
register number, enum value and the nesting of `FOR`/`IF`/`ELSE`/`END` is
checked, and the first problem is a `BinaryError` naming the byte offset of
the instruction (or header field) at fault. Each rebuilt op's location is
`<file>:1:<byte offset of its instruction>`, so the verifier and the
simulator report problems of a binary program at the instruction's offset.
`listing` prints one line per instruction with its offset, raw bytes and
decoded configuration word.
"""

from __future__ import annotations

import struct

from mlir import ir

from npu import ir as nir
from npu.dialects import hivm
from npu.hivm.binary import (ARITH_OPS, HIVM_OPS, MAGIC, NO_PREDICATE, OP_ARITH, OP_CONST,
                             OP_ASSERT, OP_ELSE, OP_END, OP_FOR, OP_HIVM, OP_IF, OP_RETURN, OP_YIELD, PIPES,
                             ROUND_MODES, TYPES, VERSION, BinaryError, attr_fields)

_NAMES = {OP_CONST: "CONST", OP_ARITH: "ARITH", OP_FOR: "FOR", OP_IF: "IF", OP_ELSE: "ELSE",
          OP_YIELD: "YIELD", OP_END: "END", OP_RETURN: "RETURN", OP_ASSERT: "ASSERT"}


class _Reader:
    """Bounds-checked reads from one region of the binary."""

    def __init__(self, data: bytes, pos: int, end: int, at: int):
        self.data, self.pos, self.end, self.at = data, pos, end, at

    def take(self, fmt: str):
        size = struct.calcsize(fmt)
        if self.pos + size > self.end:
            raise BinaryError(self.at, f"truncated: needs {size} more byte(s) at offset {self.pos}")
        values = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += size
        return values if len(values) > 1 else values[0]

    def text(self) -> str:
        n = self.take("<I")
        if self.pos + n > self.end:
            raise BinaryError(self.at, f"a {n}-byte string runs past the end of the header")
        raw = self.data[self.pos:self.pos + n]
        self.pos += n
        try:
            return raw.decode()
        except UnicodeDecodeError:
            raise BinaryError(self.at, "a header string is not UTF-8") from None


def _enum(table: tuple[str, ...], code: int, what: str, at: int) -> str:
    if code >= len(table):
        raise BinaryError(at, f"{what} code {code} is out of range (0..{len(table) - 1})")
    return table[code]


def _parse_attr(text: str, what: str, at: int) -> ir.Attribute:
    try:
        return ir.Attribute.parse(text)
    except ir.MLIRError:
        raise BinaryError(at, f"the {what} '{text}' does not parse") from None


def decode(data: bytes, filename: str, ctx: ir.Context) -> ir.Module:
    """The module a binary encodes; raises BinaryError on any corruption."""
    return decode_entries(data, filename, ctx)[0]


def decode_entries(data: bytes, filename: str, ctx: ir.Context) -> tuple[ir.Module, list]:
    """The module and, per instruction, (offset, raw bytes, opcode, op or None)."""
    if data[:4] != MAGIC:
        raise BinaryError(0, "not a hivm binary (bad magic)")
    head = _Reader(data, 4, len(data), 0)
    version, _flags = head.take("<HH")
    if version != VERSION:
        raise BinaryError(4, f"version {version} is not supported (expected {VERSION})")
    with ctx, ir.Location.file(filename, 1, 0):
        module = ir.Module.create()
        head.at = head.pos
        module_attrs = ir.DictAttr(_parse_attr(head.text(), "module attributes", head.at))
        name = head.text()
        head.at = head.pos
        func_attrs = ir.DictAttr(_parse_attr(head.text(), "function attributes", head.at))
        n_args = head.take("<H")
        arg_types = []
        for _ in range(n_args):
            head.at = head.pos
            text = head.text()
            try:
                arg_types.append(ir.Type.parse(text))
            except ir.MLIRError:
                raise BinaryError(head.at, f"argument type '{text}' does not parse") from None
        code_size = head.take("<I")
        code_start = head.pos
        if code_start + code_size != len(data):
            raise BinaryError(code_start - 4, f"code size {code_size} does not match the "
                              f"{len(data) - code_start} bytes that follow")
        for i in range(len(module_attrs)):
            module.operation.attributes[module_attrs[i].name] = module_attrs[i].attr
        func_type = ir.FunctionType.get(arg_types, [])
        with ir.InsertionPoint(module.body):
            func_op = ir.Operation.create(
                "func.func", regions=1,
                attributes={"sym_name": ir.StringAttr.get(name),
                            "function_type": ir.TypeAttr.get(func_type)})
        for i in range(len(func_attrs)):
            func_op.attributes[func_attrs[i].name] = func_attrs[i].attr
        block = func_op.regions[0].blocks.append(*arg_types)
        decoder = _Decoder(data, code_start, filename)
        decoder.run(block)
    return module, decoder.entries


def listing(data: bytes, filename: str, ctx: ir.Context) -> str:
    """One line per instruction: byte offset, raw bytes, mnemonic and operands,
    and for a constant configuration word its decoded fields."""
    _module, entries = decode_entries(data, filename, ctx)
    lines = [f"; {filename}: {len(entries)} instructions, {len(data)} bytes"]
    for offset, raw, opcode, op in entries:
        mnemonic = op.name if op is not None else _NAMES[opcode]
        text = mnemonic
        if op is not None and op.name in hivm.CONFIG_KIND:
            # img2col has two words (its window word before the config word)
            kinds = (("img2col_pos", 2),) if op.name == hivm.IMG2COL else ()
            for kind, at in kinds + ((hivm.CONFIG_KIND[op.name], len(op.operands) - 1),):
                word = op.operands[at].owner
                if isinstance(word, ir.OpView) and word.operation.name == "arith.constant":
                    value = ir.IntegerAttr(word.operation.attributes["value"]).value
                    fields = " ".join(f"{k}={v}" for k, v in hivm.decode_img2col(kind, value).items()) \
                        if kind in hivm.IMG2COL_WORDS else \
                        " ".join(f"{k}={v}" for k, v in hivm.decode(kind, value).items())
                    text += f"  [{kind} 0x{value & (2**64 - 1):016x}: {fields}]"
        elif op is not None and opcode == OP_CONST:
            text += f" {op.attributes['value']}"
        lines.append(f"{offset:08x}: {raw.hex():<24} {text}")
    return "\n".join(lines) + "\n"


def _yielded(block: ir.Block) -> bool:
    """Whether `block` already ends with its terminator (a corrupt binary may
    put more instructions after it)."""
    ops = block.operations
    return len(ops) > 0 and ops[len(ops) - 1].name == "scf.yield"


class _Decoder:
    def __init__(self, data: bytes, start: int, filename: str):
        self.data, self.pos, self.filename = data, start, filename
        self.regs: list[ir.Value] = []
        self.at = start
        self.entries: list[tuple[int, bytes, int, ir.Operation | None]] = []
        self.last: ir.Operation | None = None

    def fail(self, message: str) -> BinaryError:
        return BinaryError(self.at, message)

    def run(self, block: ir.Block) -> None:
        self.regs = list(block.arguments)
        # Open structured ops: [op, the block it sits in, an announced else still to come].
        stack: list[list] = []
        current = block
        returned = False
        while self.pos < len(self.data):
            self.at = self.pos
            if returned:
                raise self.fail("instructions after RETURN")
            r = _Reader(self.data, self.pos, len(self.data), self.at)
            opcode, length = r.take("<HH")
            end = r.pos + length
            if end > len(self.data):
                raise self.fail(f"payload of {length} bytes runs past the end of the code")
            p = _Reader(self.data, r.pos, end, self.at)
            self.pos = end
            loc = ir.Location.file(self.filename, 1, self.at)
            if opcode not in (OP_END, OP_ELSE) and _yielded(current):
                raise self.fail("instructions after YIELD in the same block")
            parent = current
            with loc, ir.InsertionPoint(current):
                if opcode == OP_FOR:
                    lb, ub, step = (self.reg(p.take("<H")) for _ in range(3))
                    inits = self.reg_list(p)
                    op = ir.Operation.create("scf.for", results=[v.type for v in inits],
                                             operands=[lb, ub, step, *inits], regions=1)
                    current = op.regions[0].blocks.append(ir.IndexType.get(),
                                                          *[v.type for v in inits])
                    self.regs.extend(current.arguments)
                    stack.append([op, parent, False])
                elif opcode == OP_IF:
                    cond = self.reg(p.take("<H"))
                    has_else, n = p.take("<BB")
                    types = [ir.Type.parse(_enum(TYPES, p.take("<B"), "type", self.at))
                             for _ in range(n)]
                    op = ir.Operation.create("scf.if", results=types, operands=[cond], regions=2)
                    current = op.regions[0].blocks.append()
                    stack.append([op, parent, bool(has_else)])
                elif opcode == OP_ELSE:
                    if not stack or stack[-1][0].name != "scf.if" or not stack[-1][2]:
                        raise self.fail("ELSE outside an IF that has an else branch")
                    stack[-1][2] = False  # the else branch is open now
                    current = stack[-1][0].regions[1].blocks.append()
                elif opcode == OP_END:
                    if not stack:
                        raise self.fail("END without an open FOR or IF")
                    op, current, else_pending = stack.pop()
                    if else_pending:
                        raise self.fail("END before the ELSE branch the IF announced")
                    self.regs.extend(op.results)
                elif opcode == OP_YIELD:
                    ir.Operation.create("scf.yield", operands=self.reg_list(p))
                elif opcode == OP_RETURN:
                    if stack:
                        raise self.fail("RETURN inside an open FOR or IF")
                    ir.Operation.create("func.return", operands=self.reg_list(p))
                    returned = True
                elif opcode == OP_ASSERT:
                    cond = self.reg(p.take("<H"))
                    msg = ir.StringAttr.get(p.text())
                    ir.Operation.create("cf.assert", operands=[cond], attributes={"msg": msg})
                elif opcode == OP_CONST:
                    self.const(p)
                elif opcode == OP_ARITH:
                    self.arith(p)
                elif OP_HIVM <= opcode < OP_HIVM + len(HIVM_OPS):
                    self.hivm_op(HIVM_OPS[opcode - OP_HIVM], p)
                else:
                    raise self.fail(f"unknown opcode 0x{opcode:04x}")
            if p.pos != end:
                raise self.fail(f"payload has {end - p.pos} byte(s) more than "
                                f"{_NAMES.get(opcode) or HIVM_OPS[opcode - OP_HIVM]} uses")
            self.entries.append((self.at, bytes(self.data[self.at:end]), opcode,
                                 self.last if opcode in (OP_CONST, OP_ARITH) or opcode >= OP_HIVM
                                 else None))
        self.at = self.pos
        if stack:
            raise self.fail("the code ends inside an open FOR or IF")
        if not returned:
            raise self.fail("the code ends without RETURN")

    def reg(self, number: int) -> ir.Value:
        if number >= len(self.regs):
            raise self.fail(f"register r{number} is used before it is defined "
                            f"({len(self.regs)} defined)")
        return self.regs[number]

    def reg_list(self, p: _Reader) -> list[ir.Value]:
        return [self.reg(p.take("<H")) for _ in range(p.take("<B"))]

    def const(self, p: _Reader) -> None:
        t = ir.Type.parse(_enum(TYPES, p.take("<B"), "type", self.at))
        if isinstance(t, (ir.F16Type, ir.F32Type, ir.F64Type)):
            attr = ir.FloatAttr.get(t, p.take("<d"))
        else:
            value = p.take("<q")
            if str(t) == "i1":
                value &= 1
            attr = ir.IntegerAttr.get(t, value)
        self.last = ir.Operation.create("arith.constant", results=[t], attributes={"value": attr})
        self.regs.append(self.last.results[0])

    def arith(self, p: _Reader) -> None:
        name = _enum(ARITH_OPS, p.take("<B"), "arith op", self.at)
        t = ir.Type.parse(_enum(TYPES, p.take("<B"), "type", self.at))
        pred, flags = p.take("<BB")
        operands = self.reg_list(p)
        attrs = {}
        if flags > 3:
            raise self.fail(f"overflow flags {flags} are out of range (0..3)")
        if flags:
            names = [n for bit, n in ((1, "nsw"), (2, "nuw")) if flags & bit]
            attrs["overflowFlags"] = ir.Attribute.parse(f"#arith.overflow<{', '.join(names)}>")
        if name == "arith.cmpi":
            if pred > 9:
                raise self.fail(f"cmpi predicate {pred} is out of range (0..9)")
            attrs["predicate"] = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), pred)
        elif pred != NO_PREDICATE:
            raise self.fail(f"'{name}' carries a predicate")
        self.last = ir.Operation.create(name, results=[t], operands=operands, attributes=attrs)
        self.regs.append(self.last.results[0])

    def hivm_op(self, name: str, p: _Reader) -> None:
        operands = self.reg_list(p)
        attrs: dict[str, ir.Attribute] = {}
        for attr, kind in attr_fields(name):
            if kind == "type":
                attrs[attr] = ir.TypeAttr.get(ir.Type.parse(_enum(TYPES, p.take("<B"), "type",
                                                                  self.at)))
            elif kind == "f64":
                attrs[attr] = nir.f64_attr(p.take("<d"))
            elif kind == "i64":
                attrs[attr] = nir.i64_attr(p.take("<q"))
            elif kind == "u8":
                attrs[attr] = nir.i64_attr(p.take("<B"))
            elif kind in ("pipe", "round"):
                table = PIPES if kind == "pipe" else ROUND_MODES
                attrs[attr] = ir.StringAttr.get(_enum(table, p.take("<B"), kind, self.at))
            elif kind == "offsets":
                attrs[attr] = nir.i64_array_attr([p.take("<I") for _ in range(p.take("<B"))])
            elif kind == "scales":
                attrs[attr] = nir.i64_array_attr([p.take("<q") for _ in operands])
        results = ([ir.IntegerType.get_signless(64)] if name == "hivm.addr" else
                   [ir.IntegerType.get_signless(32)] if name == hivm.SCALAR_LOAD else [])
        op = self.last = ir.Operation.create(name, results=results, operands=operands,
                                             attributes=attrs)
        self.regs.extend(op.results)


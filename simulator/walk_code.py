"""The scalar walk's flat code for the compiled walker (`_cengine.Walker`,
`csrc/walk.c`), made from the decoder's closures: each closure the walker
can run carries a `code` tuple (program.py, decode_views.py, hivm_decode.py,
scalar_loads.py) saying what it computes.

Why: on a launch every core walks the whole program with its own block
index; BERT-base x12 on 32 cores dispatches 461k entries through some 1.5M
closure calls, 0.57 CPU s of walking once every instruction is decoded
(the decoding itself, once per distinct word and address set, stays
Python: the dispatch's `resolve`). The closures stay the reference: the
walker computes Python's integers on int64 and gives a core back to them
(`walk` returns None) wherever it cannot be exact (walk.h).

A program is compiled only if every closure of its walk has a `code` and
every slot its code reads holds an int (constants, the block index) or is
written by code: the cce level (views as operands), float arithmetic and
scalar loads keep the Python walk (`compile_walk` returns None).
"""

from __future__ import annotations

from array import array

from npu.simulator.scalar_unit import INT_BINARY

# csrc/walk.h's opcodes and binary kinds, in its order
(W_BINARY, W_CMPI, W_SELECT, W_COPY, W_ADDR, W_COST, W_ASSERT, W_MASK, W_REG, W_SYNC,
 W_DISPATCH, W_FOR, W_IF) = range(13)
BINARY = {name: k for k, name in enumerate((
    "arith.addi", "arith.subi", "arith.muli", "arith.divsi", "arith.divui", "arith.remsi",
    "arith.remui", "arith.floordivsi", "arith.ceildivsi", "arith.ceildivui", "arith.maxsi",
    "arith.minsi", "arith.maxui", "arith.minui", "arith.andi", "arith.ori", "arith.xori",
    "arith.shli", "arith.shrsi", "arith.shrui"))}
assert set(BINARY) <= set(INT_BINARY)
MAX_CARRIED = 16  # walk.h
MAX_KEYS = 23
INT64 = (-(1 << 63), (1 << 63) - 1)


class NotCompiled(Exception):
    """The walk has something the walker does not run."""


class _Emitter:
    def __init__(self) -> None:
        self.resolvers: list = []
        self.keys: list[int] = []
        self.objects: list = []
        self.reads: set[int] = set()
        self.writes: set[int] = set()

    def read(self, *slots: int) -> list[int]:
        self.reads.update(slots)
        return list(slots)

    def write(self, *slots: int) -> list[int]:
        self.writes.update(slots)
        return list(slots)

    def body(self, fns: list) -> list[int]:
        out: list[int] = []
        for fn in fns:
            code = getattr(fn, "code", None)
            if code is None:
                raise NotCompiled(getattr(fn, "__qualname__", repr(fn)))
            out += self.op(code)
        return out

    def op(self, code: tuple) -> list[int]:
        kind = code[0]
        if kind == "binary":
            _, name, r, a, b = code
            if name not in BINARY:
                raise NotCompiled(name)
            return [W_BINARY, BINARY[name], *self.write(r), *self.read(a, b)]
        if kind == "cmpi":
            _, pred, r, a, b = code
            if not 0 <= pred <= 9:
                raise NotCompiled(f"cmpi predicate {pred}")
            return [W_CMPI, pred, *self.write(r), *self.read(a, b)]
        if kind == "select":
            _, r, c, t, f = code
            return [W_SELECT, *self.write(r), *self.read(c, t, f)]
        if kind == "copy":
            return [W_COPY, *self.write(code[1]), *self.read(code[2])]
        if kind == "addr":
            _, r, base, terms = code
            words = [W_ADDR, *self.write(r), base, len(terms)]
            for s, c in terms:
                words += [*self.read(s), c]
            return words
        if kind == "cost":
            return [W_COST, code[1]]
        if kind == "assert":
            return [W_ASSERT, *self.read(code[1])]
        if kind == "mask":
            return [W_MASK, *self.read(code[1], code[2])]
        if kind == "reg":
            return [W_REG, code[1], *self.read(code[2])]
        if kind == "sync":
            self.objects.append(code[1])
            return [W_SYNC, len(self.objects) - 1, code[2]]
        if kind == "dispatch":
            _, resolve, pre, keys = code
            if len(keys) > MAX_KEYS:
                raise NotCompiled("a dispatch of too many operands")
            self.resolvers.append(resolve)
            self.keys.append(len(keys))
            self.read(*(s for s in keys if s >= 0))
            return [W_DISPATCH, len(self.resolvers) - 1, pre, len(keys), *keys]
        if kind == "for":
            _, lb, ub, step, iv, cost, inits, bargs, results, yields, body = code
            n = len(inits)
            if n > MAX_CARRIED or len(bargs) != n or len(results) != n or \
                    len(yields) not in (0, n):
                raise NotCompiled("scf.for's carried values")
            words = [W_FOR, *self.read(lb, ub, step), *self.write(iv), cost, n,
                     *self.read(*inits), *self.write(*bargs), *self.write(*results)]
            inner = self.body(body)
            return words + [len(yields), *self.read(*yields), len(inner), *inner]
        if kind == "if":
            _, cond, cost, results, then_body, then_yields, else_body, else_yields = code
            then_code, else_code = self.body(then_body), self.body(else_body)
            return [W_IF, *self.read(cond), cost, len(results), *self.write(*results),
                    len(then_yields), *self.read(*then_yields), len(else_yields),
                    *self.read(*else_yields), len(then_code), len(else_code),
                    *then_code, *else_code]
        raise NotCompiled(kind)


def _int_array(values) -> array | None:
    """The values as int64 words, or None when one is not an int or does not fit."""
    try:
        return array("q", values)
    except (TypeError, OverflowError):
        return None


def compile_walk(program, walker_type):
    """A `walker_type` (`_cengine.Walker`) running `program`'s walk, or None
    when the walk has what it does not run (NotCompiled)."""
    emit = _Emitter()
    try:
        code = _int_array(emit.body(program.body))
    except NotCompiled:
        return None
    if code is None:
        return None
    env = program.env
    block = -1 if program.block_slot is None else program.block_slot
    values = array("q", bytes(8 * len(env)))
    tags = bytearray(len(env))
    ints = set(emit.writes)
    for s, v in enumerate(env):
        if type(v) is int or type(v) is bool:
            if INT64[0] <= v <= INT64[1]:
                values[s] = v
                tags[s] = type(v) is bool
                ints.add(s)
    if block >= 0:
        ints.add(block)
    if not emit.reads <= ints:  # a view, a float, or a value no code writes
        return None
    return walker_type(code.tobytes(), values.tobytes(), bytes(tags), block,
                       tuple(emit.resolvers), array("q", emit.keys).tobytes(),
                       tuple(emit.objects))

"""Decode `hivm` instructions into the same `Instr` objects as `cce` ones.

Nothing here looks at cce: the counts come from the instruction's packed
configuration word, decoded with the layouts of `npu.dialects.hivm`
(dialects/README.md), the lane mask from the mask register
(`hivm.set_vector_mask`), the element types from the `dtype` attributes, and
the buffers from the op names. The units (`mte`, `cube_unit`,
`vector_unit`) then see a context with the cce attribute names and operand
order, so semantics, costs and checks are shared by both levels.

Addresses and configuration words are run-time values (SSA operands), so an
instruction is decoded when it is dispatched, once per distinct (word,
mask) of the op (and once per distinct op name, word, mask, element types
and attributes read across ops: `decode_cache`), and each address becomes
a view of its buffer: the whole on-chip
buffer, or the GM argument whose padded extent holds it (the kernel's
argument area, `npu.dialects.hivm.gm_arg_bases`).
"""

from __future__ import annotations

from typing import Callable

from mlir import ir

from npu.dialects import hivm
from npu.dialects.cce_img2col import PAD_VALUE
from npu.simulator import cube_unit, img2col, mte, vector_unit
from npu.simulator.decode_cache import InstrCache, attributes_of
from npu.simulator.errors import INVALID, UNSUPPORTED, SimulationError
from npu.simulator.hivm_context import HivmDecodeContext
from npu.simulator.hivm_views import HivmProgram
from npu.simulator.instruction import (BARRIER, SET, WAIT, DecodeContext, Instr, OperandInfo,
                                       SyncInstr)

_CCE_DECODERS: dict[str, Callable[[DecodeContext], Instr]] = {
    **mte.decoders(), **cube_unit.decoders(), **vector_unit.decoders(), **img2col.decoders()}
_SYNC = {"hivm.set_flag": SET, "hivm.wait_flag": WAIT, "hivm.pipe_barrier": BARRIER,
         hivm.SYNC_ALL: BARRIER}
# hivm address operand -> position in the cce operand order the units use.
_COPY_ORDER = (1, 0)  # (dst, src) -> (src, dst)
_MAD_ORDER = (2, 0, 1)  # (c, a, b) -> (a, b, c)
_ESIZE = {"f16": 2, "f32": 4, "i8": 1, "i32": 4}
# The registers a compiled dispatch's key may read, as negative key sources
# (a source >= 0 is an env slot; walk_code.py, csrc/walk.c).
NO_REGISTER, MASK, FMATRIX, PADDING = -4, -1, -2, -3
_CUBE_OUT = {"f16": "f32", "i8": "i32"}


def _operand_order(name: str, n: int) -> tuple[int, ...]:
    if name in hivm.COPY_OPS or name in hivm.LOAD_OPS or name == hivm.IMG2COL:
        return _COPY_ORDER
    if name == "hivm.mad":
        return _MAD_ORDER
    return tuple(range(n))


_INFOS: dict[tuple[str, str], OperandInfo] = {}


def _operand_info(space: str, dtype: str) -> OperandInfo:
    """One (frozen) `OperandInfo` per space and element type, for every op."""
    info = _INFOS.get((space, dtype))
    if info is None:
        info = _INFOS[space, dtype] = OperandInfo(space, dtype, _ESIZE[dtype],
                                                  f"{space} address, {dtype}")
    return info


def _type_attr(op: ir.Operation, name: str, names: dict | None = None) -> str:
    """The name of a type attribute's type; `names` remembers them per
    attribute (attributes hash and compare by value): printing the type
    each time was 1% of a timing-only BERT-12 on 32 cores."""
    attr = op.attributes[name]
    got = None if names is None else names.get(attr)
    if got is None:
        got = str(ir.TypeAttr(attr).value)
        if names is not None:
            names[attr] = got
    return got


def _dtypes(op: ir.Operation, name: str, names: dict | None = None) -> list[str]:
    """Element type of each hivm address operand, in hivm order."""
    if name in hivm.COPY_OPS:
        return ["i8", "i8"]  # copies move bytes
    if name in hivm.LOAD_OPS or name == hivm.IMG2COL:
        return ["f16", "f16"]  # whole 512-byte fractals of 16x16 2-byte cells
    dtype = _type_attr(op, "dtype", names)
    if name == "hivm.mad":
        return [_CUBE_OUT.get(dtype, dtype), dtype, dtype]
    if name == "hivm.vconv":
        return [dtype, _type_attr(op, "src_dtype", names)]
    if name == hivm.VECTOR_CMP:
        return ["i8", dtype, dtype]
    if name == hivm.VECTOR_SELECT:
        return [dtype, "i8", dtype, dtype]
    return [dtype] * len(hivm.ADDRESS_SPACES[name])


def _state(decoder) -> HivmProgram:
    state = getattr(decoder, "hivm_state", None)
    if state is None:
        state = decoder.hivm_state = HivmProgram(decoder)
    return state


def scalar_op(decoder, op: ir.Operation, name: str | None = None) -> tuple[Callable | None, int] | None:
    """`hivm.addr` (one scalar issue) and `hivm.set_vector_mask` (free: the
    mask travels with the next vector dispatch, as the cce `mask` attribute
    does); None for instructions."""
    name = op.name if name is None else name  # the caller's: each `op.name` is a new str
    if name == "hivm.addr":
        base = ir.IntegerAttr(op.attributes["base"]).value
        scales = tuple(ir.DenseI64ArrayAttr(op.attributes["scales"]))
        terms = tuple(zip((decoder.use(v, op) for v in op.operands), scales))
        r = decoder.slot(op.results[0])

        def addr(env: list, r=r, base=base, terms=terms) -> None:
            env[r] = base + sum(env[s] * c for s, c in terms)
        addr.code = ("addr", r, base, terms)  # the compiled walk's (walk_code.py)
        return addr, decoder.issue
    if name == hivm.SCALAR_LOAD:
        state = _state(decoder)
        a = decoder.use(op.operands[0], op)
        r = decoder.slot(op.results[0])
        where = decoder.where_of(op.location)
        loads, pending = decoder.scalar_loads, decoder.pending

        def load(env: list) -> None:
            region, offset = state.view("gm", env[a], 4, name, 0, where)
            env[r], cycles = loads.load(region, region.base + offset * 4, "i32", where)
            pending[0] += cycles
        return load, 0
    if name == hivm.SET_FMATRIX:
        state = _state(decoder)
        word = decoder.use(op.operands[0], op)

        def set_fmatrix(env: list, word=word, reg=state.fmatrix) -> None:
            reg[0] = env[word]
        set_fmatrix.code = ("reg", FMATRIX, word)
        return set_fmatrix, 0
    if name == hivm.SET_PADDING:  # free like set_fmatrix; its word is checked at use
        state = _state(decoder)
        word = decoder.use(op.operands[0], op)

        def set_padding(env: list, word=word, reg=state.padding) -> None:
            reg[0] = env[word]
        set_padding.code = ("reg", PADDING, word)
        return set_padding, 0
    if name == "hivm.set_vector_mask":
        state = _state(decoder)
        hi, lo = (decoder.use(v, op) for v in op.operands)
        where = decoder.where_of(op.location)

        def set_mask(env: list, hi=hi, lo=lo, reg=state.mask) -> None:
            lanes = hivm.mask_lanes(env[hi], env[lo])
            if lanes is None:
                raise SimulationError(UNSUPPORTED, f"mask 0x{env[hi] & (2**64 - 1):016x}"
                                      f"{env[lo] & (2**64 - 1):016x} enables lanes that are not "
                                      "a leading run; the vector unit model supports leading "
                                      "runs only", where)
            reg[0] = lanes
        set_mask.code = ("mask", hi, lo)
        return set_mask, 0
    return None


def instruction(decoder, op: ir.Operation, pre_cost: int, name: str | None = None) -> Callable:
    """The dispatch closure of one hivm instruction."""
    where = decoder.where_of(op.location)
    name = op.name if name is None else name
    target = decoder.target
    instrs = InstrCache.of(decoder)
    if name in _SYNC:
        attrs = attributes_of(op)
        instr = instrs.find((name,), op, where, attrs)
        if instr is None:
            ctx = HivmDecodeContext(op, where, target, None, None, [])
            ctx.reads = []
            instr = SyncInstr(ctx, _SYNC[name], chip=name == hivm.SYNC_ALL).finish()
            instrs.keep((name,), ctx.reads, instr, attrs)
        append, pending = decoder.trace.append, decoder.pending

        def dispatch_sync(env: list, instr=instr, pre=pre_cost) -> None:
            append((instr, (), pending[0] + pre))
            pending[0] = 0
        dispatch_sync.code = ("sync", instr, pre_cost)
        return dispatch_sync
    if name not in hivm.ADDRESS_SPACES:
        raise SimulationError(UNSUPPORTED, f"the simulator cannot execute '{name}'", where)
    if name == hivm.IMG2COL:
        return _img2col_instruction(decoder, op, pre_cost, where)
    state = _state(decoder)
    spaces = hivm.ADDRESS_SPACES[name]
    dtypes = _dtypes(op, name, state.type_names)
    for d in dtypes:
        if d not in _ESIZE:
            raise SimulationError(INVALID, f"'{name}': unsupported element type {d}", where)
    order = _operand_order(name, len(spaces))
    infos = [None] * len(spaces)
    for k, (space, dtype) in enumerate(zip(spaces, dtypes)):
        infos[order[k]] = _operand_info(space, dtype)
    slots = tuple(decoder.use(v, op) for v in op.operands)
    addr_slots, word_slot = slots[:-1], slots[-1]
    is_vector = hivm.CONFIG_KIND[name] in hivm.VECTOR_KINDS
    cache: dict = {}
    build = _CCE_DECODERS["cce." + name[len("hivm."):]]
    append, pending, mask = decoder.trace.append, decoder.pending, state.mask
    # (cce operand index, hivm slot, space, esize) in cce order
    plan = tuple(sorted((order[k], addr_slots[k], spaces[k], _ESIZE[dtypes[k]])
                        for k in range(len(spaces))))
    addr_order = tuple(s for _, s, _, _ in plan)
    views_at: dict[tuple, tuple] = {}
    n_addrs = len(addr_order)
    a0, a1, a2 = (addr_order + (None, None, None))[:3]  # the common arities, unrolled
    operand_views = state.operand_views
    attrs: list = []  # `attributes_of(op)`, made at the first decode

    def decode(key, word: int, lanes: int | None) -> Instr:
        if hivm.reserved_bits(hivm.CONFIG_KIND[name], word):
            raise SimulationError(INVALID, f"'{name}': malformed configuration word "
                                  f"0x{word & (2**64 - 1):016x} (bits outside every field)",
                                  where)
        shared_key = (name, word, lanes, tuple(dtypes))
        if not attrs:  # the op's, once (for any of its words)
            attrs.append(attributes_of(op))
        instr = instrs.find(shared_key, op, where, attrs[0])
        if instr is None:
            ctx = HivmDecodeContext(op, where, target, word, lanes, infos)
            ctx.reads = []
            instr = build(ctx).finish()
            instrs.keep(shared_key, ctx.reads, instr, attrs[0])
        cache[key] = instr
        return instr

    def dispatch(env: list, pre=pre_cost) -> None:
        word = env[word_slot]
        key = (word, mask[0]) if is_vector else word
        instr = cache.get(key)
        if instr is None:
            instr = decode(key, word, mask[0] if is_vector else None)
        if n_addrs == 3:
            addrs = (instr, env[a0], env[a1], env[a2])
        elif n_addrs == 2:
            addrs = (instr, env[a0], env[a1])
        else:
            addrs = (instr, *[env[s] for s in addr_order])
        views = views_at.get(addrs)
        if views is None:  # checked once per distinct address set (loops repeat them)
            views = views_at[addrs] = operand_views(instr, plan, addrs[1:], name, where)
        append((instr, views, pending[0] + pre))
        pending[0] = 0

    def resolve(word: int, lanes: int | None, *addrs: int) -> tuple:
        """(instr, views) of a dispatch, through the same caches (the compiled
        walk calls it once per distinct key it has not seen)."""
        key = (word, lanes) if is_vector else word
        instr = cache.get(key)
        if instr is None:
            instr = decode(key, word, lanes)
        at = (instr, *addrs)
        views = views_at.get(at)
        if views is None:
            views = views_at[at] = operand_views(instr, plan, addrs, name, where)
        return instr, views
    keys = (word_slot, MASK if is_vector else NO_REGISTER) + addr_order
    dispatch.code = ("dispatch", resolve, pre_cost, keys)
    return dispatch


def _img2col_instruction(decoder, op: ir.Operation, pre_cost: int, where: str) -> Callable:
    """`hivm.img2col_l1_to_l0a (dst, src, pos, config)`: decoded from its two
    words, the feature-map register and the padding register, once per
    distinct set of the four. Its operands stay 2-byte cells whatever the
    word's b8 (as a load's: an int8 map is the f16 map of channel pairs)."""
    state = _state(decoder)
    target = decoder.target
    infos = [OperandInfo("l1", "f16", 2, "l1 address, f16"), OperandInfo("l0a", "f16", 2, "l0a address, f16")]
    dst, src, pos, word = (decoder.use(v, op) for v in op.operands)
    plan = ((0, src, "l1", 2), (1, dst, "l0a", 2))
    cache: dict = {}
    views_at: dict = {}
    append, pending, fmatrix, padding = (decoder.trace.append, decoder.pending, state.fmatrix,
                                         state.padding)

    def dispatch(env: list, pre=pre_cost) -> None:
        instr, views = resolve(fmatrix[0], env[pos], env[word], padding[0], env[src], env[dst])
        append((instr, views, pending[0] + pre))
        pending[0] = 0

    def resolve(fm: int | None, at: int, config: int, pad: int, src_at: int, dst_at: int) -> tuple:
        if fm is None:
            raise SimulationError(INVALID, f"'{op.name}' runs before the feature-map register is "
                                  "set (hivm.set_fmatrix)", where)
        key = (fm, at, config, pad)
        instr = cache.get(key)
        if instr is None:
            fields: dict[str, int] = {}
            for kind, value in zip(hivm.IMG2COL_WORDS + ("padding",), key):
                if hivm.reserved_bits(kind, value):
                    raise SimulationError(INVALID, f"'{op.name}': malformed {kind} word "
                                          f"0x{value & (2**64 - 1):016x} (bits outside every field)",
                                          where)
                fields.update(hivm.decode_img2col(kind, value))
            fields[PAD_VALUE] = fields.pop("value")  # the padding register's
            ctx = HivmDecodeContext(op, where, target, 0, None, infos)
            ctx.fields = fields
            instr = cache[key] = img2col.Img2col(ctx).finish()
        addrs = (instr, src_at, dst_at)
        views = views_at.get(addrs)
        if views is None:
            views = views_at[addrs] = state.operand_views(instr, plan, addrs[1:], op.name, where)
        return instr, views
    dispatch.code = ("dispatch", resolve, pre_cost, (FMATRIX, pos, word, PADDING, src, dst))
    return dispatch

"""Rules and helpers of the `hivm` dialect: packed 64-bit configuration words.

`CONFIG_LAYOUTS` is the one description of how each instruction class packs
its fields (dialects/README.md, `hivm` section). `encode` / `decode` convert
between field values and the word, so the cce -> hivm lowering, the
simulator, the binary listing and the verifier agree on one layout; the mask
register (`mask_words` / `mask_lanes`), the buffer of each address operand
(`ADDRESS_SPACES`) and the GM argument area (`gm_arg_bases`) are defined
here for the same reason. The rules check the `dtype` attributes and, when
an address or the config word is an `arith.constant`, its alignment, range
and fields (bits outside every field make a word malformed).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, replace
from typing import Mapping

from mlir import ir

from npu.dialects.opspec import (
    ARITH_TYPES, CAST_PAIRS, CMP_PREDICATES, F64, FLOAT_TYPES, I64, I64_ARRAY, LAST_EVENT, STR,
    TYPE, OpSpec, Operand, Range, check_sync_pipes, register)
from npu.dialects.rules import RuleError, value_fact
from npu.ir.accessors import element_type_name
from npu.target import Target


@dataclass(frozen=True)
class Field:
    """`width` bits starting at bit `lo` of the configuration word."""

    name: str
    lo: int
    width: int

    @property
    def max(self) -> int:
        return (1 << self.width) - 1


# Vector ops: strides in 32-byte blocks.
_VECTOR = (Field("dst_blk_stride", 0, 8), Field("src0_blk_stride", 8, 8),
           Field("src1_blk_stride", 16, 8), Field("dst_rep_stride", 24, 8),
           Field("src0_rep_stride", 32, 8), Field("src1_rep_stride", 40, 8),
           Field("repeat", 56, 8))

_COPY = (Field("n_burst", 0, 12), Field("burst_len", 16, 16),
         Field("src_gap", 32, 16), Field("dst_gap", 48, 16))
# What the L0C -> UB move does to the values on the way (the `convert` field:
# the index here; cce's `convert` attribute names it): "none" moves bytes,
# "f32_to_f16" rounds each f32 to the nearest f16 (ties to even), writing
# half the bytes it reads; "f32_to_f16_relu" does the same to max(x, 0) (the
# move's ReLU: the DaVinci L0C -> UB copy's CRMODE_F32toF16_RELU, which
# Ascend C's DataCopy with isRelu issues on dav_c100, the Ascend 910: CANN
# 8.1 ascendc/include/basic_api/impl/dav_c100/kernel_operator_data_copy_impl.h;
# at the path's rate, an estimate). burst_len and src_gap count 32-byte blocks
# of the source (f32), dst_gap blocks of the destination.
L0C_CONVERSIONS = ("none", "f32_to_f16", "f32_to_f16_relu")
# the conversions that write f16 from f32 (half the bytes they read)
L0C_HALVING = ("f32_to_f16", "f32_to_f16_relu")

CONFIG_LAYOUTS: Mapping[str, tuple[Field, ...]] = {
    # Copies: counts in 32-byte blocks.
    "copy": _COPY,
    # L0C -> UB: a copy word plus its conversion (`L0C_CONVERSIONS`).
    "l0c_copy": _COPY + (Field("convert", 12, 2),),
    # L1 -> L0A/L0B loads: strides in 512-byte fractals; b8 = 1: the
    # fractals hold 1-byte elements (a transposed int8 fractal is 32 x 16 in,
    # 16 x 32 out; 16 x 16 of 2-byte elements otherwise).
    "load": (Field("src_stride", 0, 16), Field("dst_stride", 16, 16),
             Field("transpose", 32, 1), Field("b8", 33, 1), Field("repeat", 56, 8)),
    # Cube: init = 1 overwrites C, 0 accumulates.
    "mad": (Field("m", 0, 12), Field("k", 12, 12), Field("n", 24, 12), Field("init", 63, 1)),
    "vector": _VECTOR,
    # vcmp: the vector layout plus its predicate (the index in `CMP_PREDICATES`).
    "compare": _VECTOR + (Field("predicate", 48, 3),),
    # vsel has four operands: 4-bit block strides, 8-bit repeat strides.
    "select": (Field("dst_blk_stride", 0, 4), Field("cond_blk_stride", 4, 4),
               Field("src0_blk_stride", 8, 4), Field("src1_blk_stride", 12, 4),
               Field("dst_rep_stride", 16, 8), Field("cond_rep_stride", 24, 8),
               Field("src0_rep_stride", 32, 8), Field("src1_rep_stride", 40, 8),
               Field("repeat", 56, 8)),
    # img2col (load3d, `hivm.set_fmatrix` + `hivm.img2col_l1_to_l0a`, see
    # dialects/README.md): the feature map register, the window/kernel-point
    # word (left_top_* signed 16-bit) and the geometry/repeat word (b8 = 1:
    # an int8 map, C0 = 32 one-byte channels; 16 two-byte ones otherwise).
    "fmatrix": (Field("fm_w", 0, 16), Field("fm_h", 16, 16), Field("pad_left", 32, 8),
                Field("pad_right", 40, 8), Field("pad_top", 48, 8), Field("pad_bottom", 56, 8)),
    "img2col_pos": (Field("c1", 0, 12), Field("fetch_w", 12, 8), Field("fetch_h", 20, 8),
                    Field("left_top_w", 32, 16), Field("left_top_h", 48, 16)),
    "img2col": (Field("stride_w", 0, 6), Field("stride_h", 6, 6), Field("kernel_w", 12, 8),
                Field("kernel_h", 20, 8), Field("dilation_w", 28, 8), Field("dilation_h", 36, 8),
                Field("dst_stride", 44, 8), Field("repeat_mode", 52, 1), Field("small_channel", 53, 1),
                Field("b8", 54, 1), Field("repeat", 56, 8)),
    # `hivm.set_padding`: the padding register img2col's taps in the pads
    # take (the vendor's SetLoadDataPaddingValue): the pad element's bits, the
    # low 8 for an int8 (b8) img2col, all 16 (an f16 pattern) otherwise.
    "padding": (Field("value", 0, 16),),
}
# Fields holding a two's complement value (the img2col window's top-left).
SIGNED_FIELDS = ("left_top_w", "left_top_h")
IMG2COL_WORDS = ("fmatrix", "img2col_pos", "img2col")
# Fields of the img2col words that carry the operands' type, not a cce attribute.
IMG2COL_TYPE_FIELDS = ("b8",)
# The layouts of vector-pipe instructions (they run under the mask register).
VECTOR_KINDS = ("vector", "compare", "select")

_MASK64 = (1 << 64) - 1


def config_field(kind: str, name: str) -> Field:
    for f in CONFIG_LAYOUTS[kind]:
        if f.name == name:
            return f
    raise KeyError(f"no field '{name}' in the {kind} configuration word")


def encode(kind: str, **fields: int) -> int:
    """Pack `fields` into a word, returned as a signed i64 (for `arith.constant`).

    Missing fields are 0; a value that does not fit its field raises ValueError.
    """
    word = 0
    known = {f.name: f for f in CONFIG_LAYOUTS[kind]}
    for name, value in fields.items():
        if name not in known:
            raise ValueError(f"no field '{name}' in the {kind} configuration word")
        f = known[name]
        value = int(value)
        if not 0 <= value <= f.max:
            raise ValueError(f"{kind} config field '{name}' = {value} does not fit in {f.width} bits")
        word |= value << f.lo
    return word - (1 << 64) if word >> 63 else word


def decode(kind: str, word: int) -> dict[str, int]:
    """Field values of a word (signed or unsigned 64-bit)."""
    word &= _MASK64
    return {f.name: (word >> f.lo) & f.max for f in CONFIG_LAYOUTS[kind]}


def encode_img2col(kind: str, fields: Mapping[str, int]) -> int:
    """`encode` for the img2col words: SIGNED_FIELDS as two's complement
    (in [-2^(w-1), 2^(w-1)); others as `encode`)."""
    plain = {}
    for f in CONFIG_LAYOUTS[kind]:
        value = int(fields.get(f.name, 0))
        if f.name in SIGNED_FIELDS:
            half = 1 << (f.width - 1)
            if not -half <= value < half:
                raise ValueError(f"{kind} config field '{f.name}' = {value} does not fit in "
                                 f"{f.width} signed bits")
            value &= f.max
        plain[f.name] = value
    return encode(kind, **plain)


def decode_img2col(kind: str, word: int) -> dict[str, int]:
    """`decode` with SIGNED_FIELDS sign-extended."""
    fields = decode(kind, word)
    for f in CONFIG_LAYOUTS[kind]:
        if f.name in SIGNED_FIELDS and fields[f.name] >> (f.width - 1):
            fields[f.name] -= 1 << f.width
    return fields


def reserved_bits(kind: str, word: int) -> int:
    """The bits of `word` that belong to no field (a well-formed word has none)."""
    used = 0
    for f in CONFIG_LAYOUTS[kind]:
        used |= f.max << f.lo
    return word & _MASK64 & ~used


def to_signed(value: int) -> int:
    """A 64-bit pattern as the signed i64 an `arith.constant` holds."""
    value &= _MASK64
    return value - (1 << 64) if value >> 63 else value


# ----------------------------------------------------------------------------
# Vector mask register and cce attribute names
# ----------------------------------------------------------------------------


def mask_words(active: int) -> tuple[int, int]:
    """(hi, lo) of the mask register with the first `active` lanes on, as signed i64."""
    lo = (1 << min(active, 64)) - 1
    hi = (1 << max(active - 64, 0)) - 1
    return to_signed(hi), to_signed(lo)


def mask_lanes(hi: int, lo: int) -> int | None:
    """Number of leading active lanes of a mask, or None when the set bits are
    not a prefix (lane e is on iff bit e of hi:lo)."""
    bits = ((hi & _MASK64) << 64) | (lo & _MASK64)
    count = bits.bit_length()
    return count if bits == (1 << count) - 1 else None


def word_field(kind: str, cce_name: str) -> str:
    """The word field holding a cce attribute: vector ops with one source call
    its strides `src_*` in cce and use the `src0_*` fields."""
    if kind in VECTOR_KINDS and cce_name.startswith("src_"):
        return "src0_" + cce_name[len("src_"):]
    return cce_name


def gm_arg_bases(arg_bytes: list[int], granule: int) -> list[int]:
    """Where each kernel argument starts in the GM argument area: in order, each
    rounded up to whole `granule`s (the runtime's allocation unit)."""
    bases, at = [], 0
    for n in arg_bytes:
        bases.append(at)
        at += -(-max(n, 1) // granule) * granule
    return bases


# ----------------------------------------------------------------------------
# Op tables
# ----------------------------------------------------------------------------

COPY_OPS = tuple(f"hivm.copy_{p}" for p in
                 ("gm_to_l1", "gm_to_ub", "ub_to_gm", "ub_to_l1", "ub_to_ub", "l0c_to_ub"))
LOAD_OPS = ("hivm.load_l1_to_l0a", "hivm.load_l1_to_l0b")
VECTOR_BINARY = tuple(f"hivm.{n}" for n in ("vadd", "vsub", "vmul", "vdiv", "vmax", "vmin"))
VECTOR_SCALAR = tuple(f"hivm.{n}" for n in ("vadds", "vmuls", "vmaxs", "vmins"))
VECTOR_FMA = ("hivm.vmadd", "hivm.vmla")
VECTOR_AXPY = "hivm.vaxpy"
VECTOR_UNARY = tuple(f"hivm.{n}" for n in ("vrelu", "vabs", "vexp", "vln", "vsqrt", "vrsqrt", "vrec"))
VECTOR_REDUCE = ("hivm.vcadd", "hivm.vcmax", "hivm.vcmin")
VECTOR_CMP = "hivm.vcmp"
VECTOR_SELECT = "hivm.vsel"
VECTOR_OPS = VECTOR_BINARY + VECTOR_SCALAR + VECTOR_UNARY + VECTOR_REDUCE + (
    "hivm.vconv", "hivm.vdup", "hivm.vnchwconv", VECTOR_CMP, VECTOR_SELECT) + VECTOR_FMA + (
    VECTOR_AXPY,)
SYNC_OPS = ("hivm.set_flag", "hivm.wait_flag", "hivm.pipe_barrier")
# Binary opcodes follow this order: ops added later go at the end, so the
# existing opcodes keep their numbers.
_ADDED = (VECTOR_CMP, VECTOR_SELECT, "hivm.vcmin") + VECTOR_FMA + (VECTOR_AXPY,)
SCALAR_LOAD = "hivm.load_gm_scalar"
SET_FMATRIX = "hivm.set_fmatrix"
IMG2COL = "hivm.img2col_l1_to_l0a"
# The chip-wide barrier (cce.sync_all); a sync op, numbered after the others.
SYNC_ALL = "hivm.sync_all"
# The img2col padding register (its own word, "padding"); numbered last.
SET_PADDING = "hivm.set_padding"
ALL_OPS = (COPY_OPS + LOAD_OPS + ("hivm.mad",) + tuple(n for n in VECTOR_OPS if n not in _ADDED)
           + ("hivm.set_vector_mask", "hivm.addr") + SYNC_OPS + _ADDED + (SCALAR_LOAD,)
           + (SET_FMATRIX, IMG2COL, SYNC_ALL, SET_PADDING))

# The buffer each address operand points into, in operand order (config excluded).
ADDRESS_SPACES: Mapping[str, tuple[str, ...]] = {
    **{n: tuple(reversed(n[len("hivm.copy_"):].split("_to_"))) for n in COPY_OPS},
    **{n: tuple(reversed(n[len("hivm.load_"):].split("_to_"))) for n in LOAD_OPS},
    "hivm.mad": ("l0c", "l0a", "l0b"),
    **{n: ("ub",) * 3 for n in VECTOR_BINARY + VECTOR_FMA + (VECTOR_CMP,)},
    VECTOR_SELECT: ("ub",) * 4,
    **{n: ("ub",) * 2 for n in VECTOR_SCALAR + VECTOR_UNARY + VECTOR_REDUCE
       + ("hivm.vconv", "hivm.vnchwconv", VECTOR_AXPY)},
    "hivm.vdup": ("ub",),
    IMG2COL: ("l0a", "l1"),
}

# Which layout each op's `config` operand uses.
CONFIG_KIND: Mapping[str, str] = {
    **{n: "copy" for n in COPY_OPS}, "hivm.copy_l0c_to_ub": "l0c_copy",
    **{n: "load" for n in LOAD_OPS}, "hivm.mad": "mad",
    **{n: "vector" for n in VECTOR_OPS}, VECTOR_CMP: "compare", VECTOR_SELECT: "select",
    SET_FMATRIX: "fmatrix", IMG2COL: "img2col", SET_PADDING: "padding",
}

# Element types per vector op (as in cce).
VECTOR_DTYPES: Mapping[str, tuple[str, ...]] = {
    **{n: ARITH_TYPES for n in VECTOR_BINARY if n != "hivm.vdiv"}, "hivm.vdiv": FLOAT_TYPES,
    **{n: FLOAT_TYPES for n in VECTOR_SCALAR + VECTOR_UNARY + VECTOR_REDUCE + VECTOR_FMA
       + (VECTOR_AXPY,)},
    "hivm.vdup": ARITH_TYPES, "hivm.vnchwconv": ARITH_TYPES,
    # vcmp: the sources' type (dst is i8); vsel: dst/src0/src1's (cond is i8).
    VECTOR_CMP: ARITH_TYPES, VECTOR_SELECT: ARITH_TYPES,
}


def _type_attr(op: ir.Operation, name: str) -> str:
    return element_type_name(ir.TypeAttr(op.attributes[name]).value)


def _check_dtype(op: ir.Operation, target: Target) -> None:
    allowed = VECTOR_DTYPES.get(op.name)
    dtype = _type_attr(op, "dtype")
    if allowed is not None and dtype not in allowed:
        raise RuleError(f"dtype must be one of {', '.join(allowed)}, got {dtype}")


def _check_conv_pair(op: ir.Operation, target: Target) -> None:
    pair = (_type_attr(op, "src_dtype"), _type_attr(op, "dtype"))
    if pair not in CAST_PAIRS:
        supported = ", ".join(f"{s}->{d}" for s, d in CAST_PAIRS)
        raise RuleError(f"unsupported conversion {pair[0]}->{pair[1]}; supported: {supported}")


def _constant_int(value: ir.Value) -> int | None:
    """The integer of an `arith.constant` producer, else None (config built at run time)."""
    return value_fact(value, _read_constant_int)


def _read_constant_int(value: ir.Value) -> int | None:
    owner = value.owner
    if not isinstance(owner, (ir.Operation, ir.OpView)) or owner.operation.name != "arith.constant":
        return None  # a block argument, or a value computed at run time
    attr = owner.operation.attributes["value"]
    return ir.IntegerAttr(attr).value if isinstance(attr, ir.IntegerAttr) else None


@functools.lru_cache(maxsize=4096)
def _read_word(kind: str, word: int) -> tuple[int, dict[str, int]]:
    """(`reserved_bits`, `decode`) of a word, once per distinct word: a
    program's instructions share a few hundred (the dict is not to be changed)."""
    return reserved_bits(kind, word), decode(kind, word)


def _check_config(op: ir.Operation, target: Target) -> None:
    """Check the fields of a constant config word (the last operand) and the
    constant addresses (aligned to their buffer's granule, inside it)."""
    operands = list(op.operands)  # (one binding call; one per operand read by index)
    for i, space in enumerate(ADDRESS_SPACES.get(op.name, ())):
        addr = _constant_int(operands[i])
        if addr is None or space == "gm":
            continue
        granule, capacity = target.granule(space), target.capacity(space)
        if addr % granule:
            raise RuleError(f"address operand #{i} = {addr} is not aligned to the "
                            f"{granule}-byte granule of {space}")
        if not 0 <= addr < capacity:
            raise RuleError(f"address operand #{i} = {addr} is outside {space} "
                            f"[0, {capacity})")
    word = _constant_int(operands[-1])
    if word is None:
        return
    kind = CONFIG_KIND[op.name]
    stray, fields = _read_word(kind, word)
    if stray:
        raise RuleError(f"malformed {kind} configuration word 0x{word & _MASK64:016x}: bits "
                        f"0x{stray:016x} belong to no field")
    if "repeat" in fields and not 1 <= fields["repeat"] <= target.max_repeat:
        raise RuleError(f"config field 'repeat' must be in [1, {target.max_repeat}] "
                        f"(target max_repeat), got {fields['repeat']}")
    if kind == "compare" and fields["predicate"] >= len(CMP_PREDICATES):
        raise RuleError(f"config field 'predicate' = {fields['predicate']} names no predicate "
                        f"(0..{len(CMP_PREDICATES) - 1}: {', '.join(CMP_PREDICATES)})")
    if kind in ("copy", "l0c_copy"):
        for name in ("n_burst", "burst_len"):
            if fields[name] < 1:
                raise RuleError(f"config field '{name}' must be >= 1, got 0")
    if kind == "l0c_copy" and fields["convert"] >= len(L0C_CONVERSIONS):
        raise RuleError(f"config field 'convert' = {fields['convert']} names no conversion "
                        f"(0..{len(L0C_CONVERSIONS) - 1}: {', '.join(L0C_CONVERSIONS)})")
    if kind == "mad":
        dtype = _type_attr(op, "dtype")
        check_mad_dims(fields["m"], fields["n"], fields["k"], dtype, target, "config field")


def _check_pos(op: ir.Operation, target: Target) -> None:
    """The img2col window/kernel-point word (operand 2) has no stray bits."""
    word = _constant_int(op.operands[2])
    if word is not None and reserved_bits("img2col_pos", word):
        raise RuleError(f"malformed img2col_pos configuration word 0x{word & _MASK64:016x}: bits "
                        f"0x{reserved_bits('img2col_pos', word):016x} belong to no field")


def check_mad_dims(m: int, n: int, k: int, in_dtype: str, target: Target, what: str) -> None:
    """m, k multiples of the fractal edge; n of the reduction block (32 for i8)."""
    n_step = target.fractal_k_int8 if in_dtype == "i8" else target.fractal
    for name, value, step in (("m", m, target.fractal), ("n", n, n_step), ("k", k, target.fractal)):
        if value < 1 or value % step:
            raise RuleError(f"{what} '{name}' must be a positive multiple of {step} "
                            f"(target fractal for {in_dtype}), got {value}")


def check_offsets_count(op: ir.Operation, target: Target) -> None:
    """vnchwconv transposes fractal x fractal tiles: one offset per row."""
    for name in ("src_offsets", "dst_offsets"):
        n = len(ir.DenseI64ArrayAttr(op.attributes[name]))
        if n != target.fractal:
            raise RuleError(f"attribute '{name}' must have {target.fractal} entries "
                            f"(one per row of a {target.fractal}x{target.fractal} tile), got {n}")


def _check_addr(op: ir.Operation, target: Target) -> None:
    n = len(ir.DenseI64ArrayAttr(op.attributes["scales"]))
    if n != len(op.operands):
        raise RuleError(f"has {len(op.operands)} operands but {n} scales (one per operand)")


def _addr(*names: str) -> tuple[Operand, ...]:
    return tuple(Operand(n) for n in names)


_OFFSETS = Range(0, None)


def _specs() -> list[OpSpec]:
    specs = [OpSpec(n, _addr("dst", "src", "config"), checks=(_check_config,)) for n in COPY_OPS + LOAD_OPS]
    specs.append(OpSpec("hivm.mad", _addr("c", "a", "b", "config"), attrs={"dtype": TYPE},
                        checks=(_check_config,)))
    for n in VECTOR_BINARY + VECTOR_FMA:
        specs.append(OpSpec(n, _addr("dst", "src0", "src1", "config"), attrs={"dtype": TYPE},
                            checks=(_check_dtype, _check_config)))
    for n in VECTOR_SCALAR + (VECTOR_AXPY,):
        specs.append(OpSpec(n, _addr("dst", "src", "config"), attrs={"dtype": TYPE, "scalar": F64},
                            checks=(_check_dtype, _check_config)))
    for n in VECTOR_UNARY + VECTOR_REDUCE:
        specs.append(OpSpec(n, _addr("dst", "src", "config"), attrs={"dtype": TYPE},
                            checks=(_check_dtype, _check_config)))
    specs.append(OpSpec(VECTOR_CMP, _addr("dst", "src0", "src1", "config"), attrs={"dtype": TYPE},
                        checks=(_check_dtype, _check_config)))
    specs.append(OpSpec(VECTOR_SELECT, _addr("dst", "cond", "src0", "src1", "config"),
                        attrs={"dtype": TYPE}, checks=(_check_dtype, _check_config)))
    specs += [
        OpSpec("hivm.vconv", _addr("dst", "src", "config"),
               attrs={"dtype": TYPE, "src_dtype": TYPE, "round_mode": STR},
               checks=(_check_conv_pair, _check_config)),
        OpSpec("hivm.vdup", _addr("dst", "config"), attrs={"dtype": TYPE, "scalar": F64},
               checks=(_check_dtype, _check_config)),
        OpSpec("hivm.vnchwconv", _addr("dst", "src", "config"),
               attrs={"dtype": TYPE, "src_offsets": I64_ARRAY, "dst_offsets": I64_ARRAY},
               ranges={"src_offsets": _OFFSETS, "dst_offsets": _OFFSETS},
               checks=(_check_dtype, check_offsets_count, _check_config)),
        OpSpec("hivm.set_vector_mask", _addr("hi", "lo")),
        OpSpec("hivm.addr", _addr("terms"), attrs={"base": I64, "scales": I64_ARRAY}, variadic=True,
               checks=(_check_addr,)),
        OpSpec(SCALAR_LOAD, _addr("addr")),
        OpSpec(SET_FMATRIX, _addr("config"), checks=(_check_config,)),
        OpSpec(SET_PADDING, _addr("config"), checks=(_check_config,)),
        OpSpec(IMG2COL, _addr("dst", "src", "pos", "config"), checks=(_check_config, _check_pos)),
    ]
    sync_attrs = {"src": STR, "dst": STR, "event": I64}
    for n in ("hivm.set_flag", "hivm.wait_flag"):
        specs.append(OpSpec(n, attrs=sync_attrs, ranges={"event": Range(0, LAST_EVENT)},
                            checks=(check_sync_pipes,)))
    specs.append(OpSpec("hivm.pipe_barrier", attrs={"pipe": STR}))
    specs.append(OpSpec(SYNC_ALL))
    return specs


# IRDL types every operand i64: no memref to check
SPECS = register([replace(s, scalar_operands=True) for s in _specs()])
assert set(SPECS) == set(ALL_OPS)

"""Rules and op tables of the `cce` dialect (instructions on memrefs).

One `OpSpec` per op says which memory space each operand lives in, which
element types it accepts and the ranges of its attributes; the few rules
that relate attributes to each other or to element types are functions
below. Limits come from the target; field widths from the hivm encoding the
op is eventually packed into.
"""

from __future__ import annotations

from typing import Mapping

from mlir import ir

from npu.dialects.cce_img2col import IMG2COL, img2col_specs
from npu.dialects.hivm import (CONFIG_LAYOUTS, L0C_CONVERSIONS, L0C_HALVING, check_mad_dims,
                               check_offsets_count)
from npu.dialects.opspec import (
    ARITH_TYPES, BOOL, CAST_PAIRS, CMP_PREDICATES, ELEMENT_TYPES, F64, FLOAT_TYPES, I64, I64_ARRAY, LANES,
    LAST_EVENT, MAX_REPEAT, STR, Bound, OpSpec, Operand, Range, check_sync_pipes,
    int_attr, memref_types, register, same_dtype)
from npu.dialects.rules import RuleError
from npu.ir.accessors import memref_element, str_attr
from npu.target import PATH_PIPES, Target

# ----------------------------------------------------------------------------
# Op names per category (passes and the simulator use these lists)
# ----------------------------------------------------------------------------

COPY_PATHS = ("gm_to_l1", "gm_to_ub", "ub_to_gm", "ub_to_l1", "ub_to_ub", "l0c_to_ub")
LOAD_PATHS = ("l1_to_l0a", "l1_to_l0b")
COPY_OPS = tuple(f"cce.copy_{p}" for p in COPY_PATHS)
LOAD_OPS = tuple(f"cce.load_{p}" for p in LOAD_PATHS)
VECTOR_BINARY = tuple(f"cce.{n}" for n in ("vadd", "vsub", "vmul", "vdiv", "vmax", "vmin"))
VECTOR_SCALAR = tuple(f"cce.{n}" for n in ("vadds", "vmuls", "vmaxs", "vmins"))
# Multiply-adds (read dst too; one rounding): vmadd dst = src0*dst + src1,
# vmla dst = src0*src1 + dst; vaxpy dst = scalar*src + dst.
VECTOR_FMA = ("cce.vmadd", "cce.vmla")
VECTOR_AXPY = "cce.vaxpy"
VECTOR_UNARY = tuple(f"cce.{n}" for n in ("vrelu", "vabs", "vexp", "vln", "vsqrt", "vrsqrt", "vrec"))
VECTOR_REDUCE = ("cce.vcadd", "cce.vcmax", "cce.vcmin")
VECTOR_CMP = "cce.vcmp"
VECTOR_SELECT = "cce.vsel"
# The slow class of the vector unit (target.vector_cycles_per_repeat["transcendental"]).
VECTOR_TRANSCENDENTAL = tuple(f"cce.{n}" for n in ("vexp", "vln", "vsqrt", "vrsqrt", "vrec", "vdiv"))
VECTOR_OPS = VECTOR_BINARY + VECTOR_SCALAR + VECTOR_UNARY + VECTOR_REDUCE + (
    "cce.vconv", "cce.vdup", "cce.vnchwconv", VECTOR_CMP, VECTOR_SELECT) + VECTOR_FMA + (VECTOR_AXPY,)


def vector_class(op_name: str) -> str:
    """The cost class of an arithmetic vector op (a key of the target's
    `vector_cycles_per_repeat`): what the simulator charges per repeat and
    what cost models sum over a recipe."""
    if op_name in VECTOR_TRANSCENDENTAL:
        return "transcendental"
    if op_name in VECTOR_FMA or op_name == VECTOR_AXPY:
        return "multiply_add"
    return "convert" if op_name == "cce.vconv" else "simple"


# cce.sync_all: the chip-wide barrier between the cores of a launch.
SYNC_ALL = "cce.sync_all"
SYNC_OPS = ("cce.set_flag", "cce.wait_flag", "cce.pipe_barrier", SYNC_ALL)
ALL_OPS = COPY_OPS + LOAD_OPS + ("cce.mad",) + VECTOR_OPS + SYNC_OPS + (IMG2COL,)

# (src space, dst space) of each data-movement op.
OP_SPACES: Mapping[str, tuple[str, str]] = {
    f"cce.{kind}_{p}": tuple(p.split("_to_"))  # type: ignore[misc]
    for kind, paths in (("copy", COPY_PATHS), ("load", LOAD_PATHS)) for p in paths
} | {IMG2COL: ("l1", "l0a")}

# The pipe each instruction runs on (synchronisation ops: None).
PIPE_OF: Mapping[str, str | None] = {
    **{f"cce.copy_{p}": PATH_PIPES[p] for p in COPY_PATHS},
    **{f"cce.load_{p}": PATH_PIPES[p] for p in LOAD_PATHS},
    "cce.mad": "M",
    **{n: "V" for n in VECTOR_OPS},
    **{n: None for n in SYNC_OPS},
    IMG2COL: PATH_PIPES["l1_to_l0a"],
}


def pipe_of(op_name: str) -> str | None:
    """Pipe an op issues to; None for synchronisation ops and non-cce ops."""
    return PIPE_OF.get(op_name)


# ----------------------------------------------------------------------------
# Element types
# ----------------------------------------------------------------------------

CUBE_SIGNATURES = (("f16", "f16", "f32"), ("i8", "i8", "i32"))  # (a, b, c)
# vconv operands are (dst, src).
VCONV_SIGNATURES = tuple((dst, src) for src, dst in CAST_PAIRS)

# ----------------------------------------------------------------------------
# Attribute ranges
# ----------------------------------------------------------------------------


def field_bound(kind: str, name: str) -> Bound:
    """Largest value the hivm config field `name` of layout `kind` holds."""
    f = next(f for f in CONFIG_LAYOUTS[kind] if f.name == name)
    return Bound(lambda t, op, m=f.max: m, f"{f.width}-bit field of the instruction")


def _vector_ranges(*operands: str, rep_only: tuple[str, ...] = (),
                   kind: str = "vector") -> dict[str, Range]:
    """repeat, mask and the block/repeat strides of `operands` (hivm names src -> src0),
    bounded by the fields of the `kind` word."""
    ranges = {"repeat": Range(1, MAX_REPEAT), "mask": Range(1, LANES)}
    for o in operands:
        field = "src0" if o == "src" else o
        ranges[f"{o}_blk_stride"] = Range(0, field_bound(kind, f"{field}_blk_stride"))
        ranges[f"{o}_rep_stride"] = Range(0, field_bound(kind, f"{field}_rep_stride"))
    for o in rep_only:
        field = "src0" if o == "src" else o
        ranges[f"{o}_rep_stride"] = Range(0, field_bound(kind, f"{field}_rep_stride"))
    return ranges


def _i64s(ranges: Mapping[str, Range]) -> dict[str, str]:
    return {name: I64 for name in ranges}


# ----------------------------------------------------------------------------
# Rules IRDL and the table cannot express
# ----------------------------------------------------------------------------


def _check_l0c_burst(op: ir.Operation, target: Target) -> None:
    """An L0C burst must move whole L0C granules (512-byte fractals)."""
    granule_blocks = target.granule("l0c") // target.vector_block_bytes
    burst_len = int_attr(op, "burst_len")
    if burst_len % granule_blocks:
        raise RuleError(f"an l0c burst must be a whole number of {target.granule('l0c')}-byte "
                        f"granules: 'burst_len' must be a multiple of {granule_blocks} blocks, "
                        f"got {burst_len}")


def l0c_conversion(op: ir.Operation) -> str:
    """The conversion of a `cce.copy_l0c_to_ub` (its optional `convert`
    attribute, one of `hivm.L0C_CONVERSIONS`; absent: "none")."""
    if "convert" not in op.attributes:
        return "none"
    attr = op.attributes["convert"]
    if not isinstance(attr, ir.StringAttr):
        raise RuleError(f"attribute 'convert' must be a string, got {attr}")
    return ir.StringAttr(attr).value


def _check_l0c_convert(op: ir.Operation, target: Target) -> None:
    """A converting move reads f32 and writes f16; a plain one keeps the type."""
    mode = l0c_conversion(op)
    if mode not in L0C_CONVERSIONS:
        raise RuleError(f"unknown conversion '{mode}' (one of {', '.join(L0C_CONVERSIONS)})")
    src, dst = (memref_element(t) for t in memref_types(op))
    want = ("f32", "f16") if mode in L0C_HALVING else (src, src)
    if (src, dst) != want:
        raise RuleError(f"convert = \"{mode}\" moves {want[0]} to {want[1]}, got {src} to {dst}")


def _check_predicate(op: ir.Operation, target: Target) -> None:
    pred = str_attr(op, "predicate")
    if pred not in CMP_PREDICATES:
        raise RuleError(f"unknown predicate '{pred}' (one of {', '.join(CMP_PREDICATES)})")


def _check_mad_dims(op: ir.Operation, target: Target) -> None:
    check_mad_dims(int_attr(op, "m"), int_attr(op, "n"), int_attr(op, "k"),
                   memref_element(memref_types(op)[0]), target, "attribute")


# ----------------------------------------------------------------------------
# The table
# ----------------------------------------------------------------------------


def _specs() -> list[OpSpec]:
    specs = []
    copy_ranges = {"n_burst": Range(1, field_bound("copy", "n_burst")),
                   "burst_len": Range(1, field_bound("copy", "burst_len")),
                   "src_gap": Range(0, field_bound("copy", "src_gap")),
                   "dst_gap": Range(0, field_bound("copy", "dst_gap"))}
    for name in COPY_OPS:
        src, dst = OP_SPACES[name]
        l0c = src == "l0c"  # may convert f32 -> f16 on the way (`convert`)
        specs.append(OpSpec(name, (Operand("src", src), Operand("dst", dst)),
                            same_dtype(2, ELEMENT_TYPES) + ((("f32", "f16"),) if l0c else ()),
                            _i64s(copy_ranges), copy_ranges,
                            (_check_l0c_burst, _check_l0c_convert) if l0c else ()))
    load_ranges = {"repeat": Range(1, MAX_REPEAT),
                   "src_stride": Range(0, field_bound("load", "src_stride")),
                   "dst_stride": Range(0, field_bound("load", "dst_stride"))}
    for name in LOAD_OPS:
        src, dst = OP_SPACES[name]
        specs.append(OpSpec(name, (Operand("src", src), Operand("dst", dst)),
                            same_dtype(2, ("f16", "i8")),
                            {**_i64s(load_ranges), "transpose": BOOL}, load_ranges))
    mad_ranges = {d: Range(1, field_bound("mad", d)) for d in ("m", "n", "k")}
    specs.append(OpSpec("cce.mad", (Operand("a", "l0a"), Operand("b", "l0b"), Operand("c", "l0c")),
                        CUBE_SIGNATURES, {**_i64s(mad_ranges), "accumulate": BOOL}, mad_ranges,
                        (_check_mad_dims,)))

    def ub(*names: str) -> tuple[Operand, ...]:
        return tuple(Operand(n, "ub") for n in names)

    binary = _vector_ranges("dst", "src0", "src1")
    for name in VECTOR_BINARY:
        types = FLOAT_TYPES if name == "cce.vdiv" else ARITH_TYPES
        specs.append(OpSpec(name, ub("dst", "src0", "src1"), same_dtype(3, types), _i64s(binary), binary))
    for name in VECTOR_FMA:
        specs.append(OpSpec(name, ub("dst", "src0", "src1"), same_dtype(3, FLOAT_TYPES), _i64s(binary),
                            binary))
    unary = _vector_ranges("dst", "src")
    for name in VECTOR_SCALAR + (VECTOR_AXPY,):
        specs.append(OpSpec(name, ub("dst", "src"), same_dtype(2, FLOAT_TYPES),
                            {**_i64s(unary), "scalar": F64}, unary))
    for name in VECTOR_UNARY:
        specs.append(OpSpec(name, ub("dst", "src"), same_dtype(2, FLOAT_TYPES), _i64s(unary), unary))
    specs.append(OpSpec("cce.vconv", ub("dst", "src"), VCONV_SIGNATURES,
                        {**_i64s(unary), "round_mode": STR}, unary))
    compare = _vector_ranges("dst", "src0", "src1", kind="compare")
    specs.append(OpSpec(VECTOR_CMP, ub("dst", "src0", "src1"), tuple(("i8", t, t) for t in ARITH_TYPES),
                        {**_i64s(compare), "predicate": STR}, compare, (_check_predicate,)))
    select = _vector_ranges("dst", "cond", "src0", "src1", kind="select")
    specs.append(OpSpec(VECTOR_SELECT, ub("dst", "cond", "src0", "src1"),
                        tuple((t, "i8", t, t) for t in ARITH_TYPES), _i64s(select), select))
    dup = _vector_ranges("dst")
    specs.append(OpSpec("cce.vdup", ub("dst"), same_dtype(1, ARITH_TYPES), {**_i64s(dup), "scalar": F64}, dup))
    reduce = _vector_ranges("src", rep_only=("dst",))
    for name in VECTOR_REDUCE:
        specs.append(OpSpec(name, ub("dst", "src"), same_dtype(2, FLOAT_TYPES), _i64s(reduce), reduce))
    nchw = {"repeat": Range(1, MAX_REPEAT),
            "src_rep_stride": Range(0, field_bound("vector", "src0_rep_stride")),
            "dst_rep_stride": Range(0, field_bound("vector", "dst_rep_stride"))}
    offsets = {"src_offsets": Range(0, None), "dst_offsets": Range(0, None)}
    specs.append(OpSpec("cce.vnchwconv", ub("dst", "src"), same_dtype(2, ARITH_TYPES),
                        {**_i64s(nchw), "src_offsets": I64_ARRAY, "dst_offsets": I64_ARRAY},
                        {**nchw, **offsets}, (check_offsets_count,)))

    for name in ("cce.set_flag", "cce.wait_flag"):
        specs.append(OpSpec(name, (), (), {"src": STR, "dst": STR, "event": I64},
                            {"event": Range(0, LAST_EVENT)}, (check_sync_pipes,)))
    specs.append(OpSpec("cce.pipe_barrier", (), (), {"pipe": STR}))
    specs.append(OpSpec(SYNC_ALL, (), (), {}))
    return specs


SPECS = register(_specs() + img2col_specs())
assert set(SPECS) == set(ALL_OPS)

"""The three dialects: the contract's ops exist, IRDL and the rule tables
agree, the rules read their limits from the target, and the ascend shape
helpers and hivm config packing are right."""

from __future__ import annotations

import dataclasses
import itertools
import re
from pathlib import Path

import numpy as np
import pytest
from mlir import ir

from npu import diagnostics
from npu.dialects import DIALECT_FILES, ascend, cce, hivm, opspec
from npu.dialects.rules import RuleError
from npu.ir import ParseError, make_context, parse_module
from npu.target import PATH_PIPES, get_target

REPO = Path(__file__).resolve().parents[3]
DIALECTS_DIR = REPO / "dialects"
TABLES = {"ascend": ascend.SPECS, "cce": cce.SPECS, "hivm": hivm.SPECS}


def contract_op_names() -> set[str]:
    """Op names in dialects/README.md, expanding `cce.vadd/vsub` and `hivm.load_l1_to_l0a/l0b`."""
    text = (DIALECTS_DIR / "README.md").read_text()
    ctx = make_context()
    names: set[str] = set()
    for match in re.finditer(r"`((ascend|cce|hivm)\.[a-z0-9_]+(?:/[a-z0-9_]+)*)(?![.\w])", text):
        first, *alternatives = match.group(1).split("/")
        dialect = match.group(2)
        if first.endswith(".py"):
            continue  # the rule modules `cce.py`, ..., not ops
        names.add(first)
        for alt in alternatives:
            full = f"{dialect}.{alt}"
            if not ctx.is_registered_operation(full):
                # `load_l1_to_l0a/l0b`: the alternative replaces the last segment.
                full = first.rsplit("_", 1)[0] + "_" + alt
            names.add(full)
    return names


def irdl_definitions() -> dict[str, dict[str, tuple[list[str], list[str]]]]:
    """dialect -> op -> (operand names, attribute names) as written in the IRDL files."""
    result = {}
    with ir.Context():
        for file_name in DIALECT_FILES:
            module = ir.Module.parse((DIALECTS_DIR / file_name).read_text())
            for dialect_op in module.body.operations:
                dialect = ir.StringAttr(dialect_op.attributes["sym_name"]).value
                ops = {}
                for op in dialect_op.regions[0].blocks[0].operations:
                    name = ir.StringAttr(op.attributes["sym_name"]).value
                    operands, attrs = [], []
                    for inner in op.regions[0].blocks[0].operations:
                        if inner.name == "irdl.operands":
                            operands = [ir.StringAttr(a).value for a in inner.attributes["names"]]
                        if inner.name == "irdl.attributes":
                            attrs = [ir.StringAttr(a).value for a in inner.attributes["attributeValueNames"]]
                    ops[name] = (operands, attrs)
                result[dialect] = ops
    return result


def test_every_contract_op_is_registered():
    names = contract_op_names()
    # The contract names at least the documented families of all three dialects.
    assert {"ascend.matmul", "ascend.reduce_max", "cce.mad", "cce.vnchwconv", "cce.vrec",
            "hivm.load_l1_to_l0b", "hivm.set_vector_mask", "hivm.pipe_barrier"} <= names
    ctx = make_context()
    missing = sorted(n for n in names if not ctx.is_registered_operation(n))
    assert not missing, f"ops of dialects/README.md not defined in IRDL: {missing}"


def test_irdl_and_rule_tables_agree():
    """Same ops, operand names and attribute names in IRDL and in the Python tables."""
    defs = irdl_definitions()
    assert set(defs) == set(TABLES)
    for dialect, table in TABLES.items():
        irdl_ops = {f"{dialect}.{n}" for n in defs[dialect]}
        assert irdl_ops == set(table), dialect
        for name, spec in table.items():
            operands, attrs = defs[dialect][name.split(".", 1)[1]]
            assert operands == [o.name for o in spec.operands], name
            assert set(attrs) == set(spec.attrs), name
            assert set(spec.ranges) <= set(spec.attrs), name


def test_contract_lists_every_defined_op():
    """Nothing is defined that the contract does not describe (hivm lists examples only)."""
    contract = contract_op_names()
    for dialect in ("ascend", "cce"):
        assert set(TABLES[dialect]) <= contract, sorted(set(TABLES[dialect]) - contract)


def test_op_category_lists_partition_the_dialects():
    assert set(ascend.ALL_OPS) == set(ascend.SPECS)
    assert len(ascend.ALL_OPS) == len(set(ascend.ALL_OPS))
    assert set(cce.ALL_OPS) == set(cce.SPECS) and len(cce.ALL_OPS) == len(set(cce.ALL_OPS))
    assert set(hivm.ALL_OPS) == set(hivm.SPECS)
    # Every single-instruction ascend op maps onto an existing cce op.
    for mapping in (ascend.BINARY_TO_CCE, ascend.SCALAR_TO_CCE, ascend.UNARY_TO_CCE):
        assert set(mapping.values()) <= set(cce.ALL_OPS)
    assert set(cce.VECTOR_TRANSCENDENTAL) <= set(cce.VECTOR_OPS)


def test_pipes_follow_the_target_paths():
    for path, pipe in PATH_PIPES.items():
        kind = "load" if path.startswith("l1_to_l0") else "copy"
        assert cce.pipe_of(f"cce.{kind}_{path}") == pipe
    assert cce.pipe_of("cce.mad") == "M"
    assert all(cce.pipe_of(n) == "V" for n in cce.VECTOR_OPS)
    assert all(cce.pipe_of(n) is None for n in cce.SYNC_OPS)
    assert set(cce.PIPE_OF) == set(cce.ALL_OPS)


# ----------------------------------------------------------------------------
# Verification through the real parse path
# ----------------------------------------------------------------------------

VADD = ('func.func @f(%d: memref<256xf16, "ub">) {{\n'
        '  "cce.vadd"(%d, %d, %d) {{repeat = {repeat} : i64, mask = {mask} : i64, '
        'dst_blk_stride = 1 : i64, dst_rep_stride = 8 : i64, src0_blk_stride = 1 : i64, '
        'src0_rep_stride = 8 : i64, src1_blk_stride = 1 : i64, src1_rep_stride = 8 : i64}} '
        ': (memref<256xf16, "ub">, memref<256xf16, "ub">, memref<256xf16, "ub">) -> ()\n'
        '  return\n}}\n')


def parse_errors(text: str) -> list[diagnostics.Diagnostic]:
    with diagnostics.collecting(diagnostics.DiagnosticEngine(display_name="input.mlir")) as engine:
        try:
            parse_module(text, make_context())
        except ParseError:
            pass
    return [d for d in engine.diagnostics if d.severity == "error"]


def test_valid_op_parses_without_diagnostics():
    assert parse_errors(VADD.format(repeat=2, mask=get_target().lanes(2))) == []


def test_rule_error_has_the_op_location():
    lanes = get_target().lanes(2)  # f16
    errors = parse_errors(VADD.format(repeat=2, mask=lanes + 1))
    assert len(errors) == 1
    (err,) = errors
    assert (err.line, err.col) == (2, 3)
    assert err.message == (f"'cce.vadd' op attribute 'mask' must be in [1, {lanes}] "
                           f"(lanes of one repeat for this element type), got {lanes + 1}")
    assert err.format().startswith("input.mlir:2:3: error: ")


def _first_op(module: ir.Module, name: str) -> ir.Operation:
    from npu.ir import ops_named
    return ops_named(module.operation, name)[0]


def test_limits_come_from_the_target():
    """A target with fewer repeats / events / a wider vector changes what verifies."""
    module = parse_module(VADD.format(repeat=200, mask=get_target().lanes(2)), make_context())
    op = _first_op(module, "cce.vadd")
    spec = cce.SPECS["cce.vadd"]
    base = get_target()
    opspec.check(spec, op, base)  # fine on the default target
    with pytest.raises(RuleError, match=r"'repeat' must be in \[1, 100\] \(target max_repeat\), got 200"):
        opspec.check(spec, op, dataclasses.replace(base, max_repeat=100))
    # Half as wide a vector unit: the full f16 mask no longer fits.
    narrow = dataclasses.replace(base, vector_bytes=base.vector_bytes // 2)
    with pytest.raises(RuleError, match=rf"'mask' must be in \[1, {narrow.lanes(2)}\]"):
        opspec.check(spec, op, narrow)

    flag = parse_module('func.func @f() {\n "cce.set_flag"() {src = "M", dst = "V", event = 5 : i64}'
                        ' : () -> ()\n return\n}\n', make_context())
    set_flag = _first_op(flag, "cce.set_flag")
    opspec.check(cce.SPECS["cce.set_flag"], set_flag, base)
    with pytest.raises(RuleError, match=r"'event' must be in \[0, 3\]"):
        opspec.check(cce.SPECS["cce.set_flag"], set_flag, dataclasses.replace(base, events_per_pipe_pair=4))


# ----------------------------------------------------------------------------
# ascend shape helpers
# ----------------------------------------------------------------------------


def test_nz_shape_pads_to_the_fractal():
    f = get_target().fractal
    assert ascend.nz_shape(30, 50) == [4, 2, f, f]
    assert ascend.nz_shape(f, f) == [1, 1, f, f]
    assert ascend.nz_shape(f + 1, 1) == [1, 2, f, f]
    assert ascend.fractalized_shape([3, 7, 40]) == [3, 3, 1, f, f]
    with pytest.raises(ValueError):
        ascend.fractalized_shape([16])


def test_nz_shape_matches_the_layout_formula():
    """dst[i][j][k][l] = src[j*f+k][i*f+l] covers exactly the padded matrix."""
    f = get_target().fractal
    rows, cols = 37, 20
    src = np.arange(rows * cols).reshape(rows, cols)
    padded = np.zeros((-(-rows // f) * f, -(-cols // f) * f), dtype=src.dtype)
    padded[:rows, :cols] = src
    dst = padded.reshape(padded.shape[0] // f, f, padded.shape[1] // f, f).transpose(2, 0, 1, 3)
    assert list(dst.shape) == ascend.nz_shape(rows, cols)
    i, j, k, l = 1, 2, 3, 4
    assert dst[i, j, k, l] == padded[j * f + k, i * f + l]


@pytest.mark.parametrize("shape,to", [
    ([4, 1], [4, 8]), ([8], [4, 8]), ([1], [2, 3, 4]), ([3, 8], [4, 8]),
    ([2, 8], [8]), ([4, 8], [4, 8]), ([1, 1], [5]), ([2, 1, 4], [2, 3, 4])])
def test_broadcastable_agrees_with_numpy(shape, to):
    try:
        numpy_ok = list(np.broadcast_shapes(tuple(shape), tuple(to))) == to
    except ValueError:
        numpy_ok = False
    assert ascend.broadcastable(shape, to) == numpy_ok


def test_reduce_and_transpose_shapes_agree_with_numpy():
    x = np.zeros((2, 3, 5))
    assert ascend.reduced_shape(x.shape) == list(x.sum(axis=-1).shape)
    assert ascend.reduced_shape([7]) == [1]
    for perm in itertools.permutations(range(3)):
        assert ascend.transposed_shape(x.shape, perm) == list(np.transpose(x, perm).shape)


def test_matmul_dims():
    text = ('func.func @f(%a: memref<4x2x16x16xf16, "gm">, %b: memref<3x4x16x16xf16, "gm">, '
            '%c: memref<3x2x16x16xf32, "gm">, %ba: memref<5x4x2x16x16xf16, "gm">, '
            '%bb: memref<5x3x4x16x16xf16, "gm">, %bc: memref<5x3x2x16x16xf32, "gm">) {\n'
            '  "ascend.matmul"(%a, %b, %c) : (memref<4x2x16x16xf16, "gm">, '
            'memref<3x4x16x16xf16, "gm">, memref<3x2x16x16xf32, "gm">) -> ()\n'
            '  "ascend.batch_matmul"(%ba, %bb, %bc) : (memref<5x4x2x16x16xf16, "gm">, '
            'memref<5x3x4x16x16xf16, "gm">, memref<5x3x2x16x16xf32, "gm">) -> ()\n'
            '  return\n}\n')
    module = parse_module(text, make_context())
    dims = ascend.matmul_dims(_first_op(module, "ascend.matmul"))
    assert dims == (32, 64, 48, 1)
    assert (dims.m, dims.n, dims.k, dims.batch) == (32, 64, 48, 1)
    assert ascend.matmul_dims(_first_op(module, "ascend.batch_matmul")) == (32, 64, 48, 5)


# ----------------------------------------------------------------------------
# hivm configuration words
# ----------------------------------------------------------------------------


def test_config_layouts_do_not_overlap():
    for kind, fields in hivm.CONFIG_LAYOUTS.items():
        used = 0
        for f in fields:
            bits = f.max << f.lo
            assert used & bits == 0, (kind, f.name)
            assert f.lo + f.width <= 64
            used |= bits


def test_config_encode_decode_round_trip():
    rng = np.random.default_rng(0)
    for kind, fields in hivm.CONFIG_LAYOUTS.items():
        for _ in range(50):
            values = {f.name: int(rng.integers(0, f.max + 1)) for f in fields}
            word = hivm.encode(kind, **values)
            assert -(1 << 63) <= word < (1 << 63)  # fits an i64 constant
            assert hivm.decode(kind, word) == values


def test_config_bit_positions_follow_the_contract():
    # README: copies n_burst bits 0-11, burst_len 16-31, src_gap 32-47, dst_gap 48-63.
    assert hivm.encode("copy", n_burst=1, burst_len=1, src_gap=1, dst_gap=1) == 1 | 1 << 16 | 1 << 32 | 1 << 48
    # mad init is bit 63: the word is negative as a signed i64.
    assert hivm.encode("mad", init=1) == -(1 << 63)
    assert hivm.encode("vector", repeat=255) % (1 << 64) == 255 << 56
    assert hivm.encode("load", transpose=1, repeat=1) == 1 << 32 | 1 << 56


def test_config_rejects_values_that_do_not_fit():
    with pytest.raises(ValueError, match="n_burst"):
        hivm.encode("copy", n_burst=4096)
    with pytest.raises(ValueError, match="no field"):
        hivm.encode("vector", mask=3)


def test_built_hivm_op_verifies_through_the_shared_builders():
    """What a cce -> hivm lowering does: encode a word, create the op, verify."""
    from mlir.dialects import arith

    from npu.dialects import verify
    from npu.ir import create_op

    ctx = make_context()
    module = parse_module("func.func @f(%d: i64, %s: i64) {\n  return\n}\n", ctx)
    func = module.body.operations[0]
    entry = func.regions[0].blocks[0]
    d, s = entry.arguments
    with ctx, ir.Location.unknown(), ir.InsertionPoint.at_block_begin(entry):
        good = arith.ConstantOp(ir.IntegerType.get_signless(64),
                                hivm.encode("vector", dst_blk_stride=1, src0_blk_stride=1,
                                            dst_rep_stride=8, src0_rep_stride=8, repeat=4))
        create_op("hivm.vexp", [d, s, good.result], dtype=ir.F16Type.get())
    with diagnostics.collecting() as engine:
        assert verify(module.operation)
        with ctx, ir.Location.unknown(), ir.InsertionPoint.at_block_begin(entry):
            zero_repeat = arith.ConstantOp(ir.IntegerType.get_signless(64), hivm.encode("vector"))
            create_op("hivm.vexp", [d, s, zero_repeat.result], dtype=ir.F16Type.get())
        assert not verify(module.operation)
    assert [d.message for d in engine.diagnostics] == [
        f"'hivm.vexp' op config field 'repeat' must be in [1, {get_target().max_repeat}] "
        "(target max_repeat), got 0"]

"""Bad hivm is reported at its location: by the verifier when the address or
word is a constant, by the simulator when it is computed at run time; the
lowering's own field check holds even for cce that skipped the verifier."""

from __future__ import annotations

import numpy as np
import pytest
from mlir import ir

from npu.ir import make_context, parse_module
from npu.passes.base import PassError
from npu.passes.lower_cce_to_hivm import LowerCCEToHIVM
from npu.simulator import SimulationError, simulate
from npu.target import get_target

TARGET = get_target()
# Copy one 32-byte block; the destination address is `%dst`, computed at run time.
COPY = """func.func @k(%a: memref<16xf16, "gm">) {{
  %i = arith.constant {index} : index
  %dst = "hivm.addr"(%i) {{base = 0 : i64, scales = array<i64: 1>}} : (index) -> i64
  %gm = arith.constant {gm} : i64
  %w0 = arith.constant 65537 : i64
  %extra = arith.constant {extra} : i64
  %w = arith.addi %w0, %extra : i64
  "hivm.copy_gm_to_ub"(%dst, %gm, %w) : (i64, i64, i64) -> ()
  return
}}
"""


def run(text: str):
    module = parse_module(text, make_context())
    return simulate(module, [np.zeros(16, np.float16)], target=TARGET)


def fault(text: str) -> SimulationError:
    with pytest.raises(SimulationError) as e:
        run(text)
    return e.value


def test_a_good_copy_runs():
    assert run(COPY.format(index=64, gm=0, extra=0)).cycles > 0


def test_address_outside_the_buffer():
    e = fault(COPY.format(index=262144, gm=0, extra=0))
    assert e.kind == "bounds" and "ub address 262144 is outside the buffer [0, 262144)" in e.message
    assert e.where.endswith(":8:3")


def test_write_running_past_the_buffer_end():
    e = fault(COPY.format(index=262144 - 16 * 2, gm=0, extra=2 << 16))  # 3 blocks from 32 B before the end
    assert e.kind == "bounds" and "outside" in e.message and e.where.endswith(":8:3")


def test_misaligned_address():
    e = fault(COPY.format(index=48, gm=0, extra=0))
    assert e.kind == "alignment" and "not aligned to 32 bytes" in e.message
    assert e.where.endswith(":8:3")


def test_gm_address_outside_every_argument():
    e = fault(COPY.format(index=0, gm=4096, extra=0))
    assert e.kind == "bounds" and "GM address 4096 is outside every kernel argument" in e.message


def test_malformed_word_built_at_run_time():
    e = fault(COPY.format(index=0, gm=0, extra=1 << 12))  # bit 12: between n_burst and burst_len
    assert e.kind == "invalid" and "malformed configuration word 0x0000000000011001" in e.message
    assert e.where.endswith(":8:3")


def test_vector_op_without_a_mask():
    text = """func.func @k() {
  %a = arith.constant 0 : i64
  %w = arith.constant 72057628531884289 : i64
  "hivm.vrelu"(%a, %a, %w) {dtype = f32} : (i64, i64, i64) -> ()
  return
}
"""
    module = parse_module(text, make_context())
    with pytest.raises(SimulationError, match=r":4:3: error: invalid: 'hivm.vrelu' runs with no "
                       r"lanes enabled"):
        simulate(module, [], target=TARGET)


def test_mask_wider_than_the_type():
    text = """func.func @k() {
  %a = arith.constant 0 : i64
  %all = arith.constant -1 : i64
  %w = arith.constant 72057628531884289 : i64
  "hivm.set_vector_mask"(%all, %all) : (i64, i64) -> ()
  "hivm.vrelu"(%a, %a, %w) {dtype = f32} : (i64, i64, i64) -> ()
  return
}
"""
    module = parse_module(text, make_context())
    with pytest.raises(SimulationError, match=r":6:3: error: invalid: 'hivm.vrelu' has mask 128; "
                       r"a repeat of this type has 1..64 lanes"):
        simulate(module, [], target=TARGET)


def test_lowering_checks_fields_even_without_the_verifier():
    """IRDL alone accepts n_burst = 4096; the lowering must not truncate it."""
    ctx = make_context()
    text = """func.func @k(%a: memref<262144xf16, "gm">) {
  %ub = memref.alloc() {npu.offset = 0 : i64} : memref<256xf16, "ub">
  "cce.copy_gm_to_ub"(%a, %ub) {n_burst = 4096 : i64, burst_len = 1 : i64, src_gap = 0 : i64, dst_gap = 0 : i64} : (memref<262144xf16, "gm">, memref<256xf16, "ub">) -> ()
  return
}
"""
    module = ir.Module.parse(text, ctx)  # MLIR's verifier (IRDL) only, not npu's rules
    with pytest.raises(PassError, match=r"n_burst = 4096 does not fit the 12-bit field \(bits 0-11\) "
                       r"of the copy configuration word \(0\.\.4095\)") as e:
        LowerCCEToHIVM(TARGET).run(module.operation)
    assert e.value.op.name == "cce.copy_gm_to_ub"


def test_cce_instruction_without_a_hivm_form_is_an_error_at_the_op(monkeypatch):
    """A cce instruction the hivm level does not know (here vcmin, with its
    hivm form taken away) is a located error, never a KeyError."""
    from npu.dialects import hivm

    monkeypatch.delitem(hivm.CONFIG_KIND, "hivm.vcmin")
    text = """func.func @k() {
  %x = memref.alloc() {npu.offset = 0 : i64} : memref<256xf16, "ub">
  %r = memref.alloc() {npu.offset = 512 : i64} : memref<16xf16, "ub">
  "cce.vcmin"(%r, %x) {repeat = 2 : i64, mask = 128 : i64, src_blk_stride = 1 : i64, src_rep_stride = 8 : i64, dst_rep_stride = 1 : i64} : (memref<16xf16, "ub">, memref<256xf16, "ub">) -> ()
  return
}
"""
    module = parse_module(text, make_context())
    with pytest.raises(PassError, match=r"'cce\.vcmin' has no hivm form") as e:
        LowerCCEToHIVM(TARGET).run(module.operation)
    assert e.value.op.name == "cce.vcmin"
    assert str(e.value.op.location).endswith(":4:3)")


def test_vcmp_predicate_built_at_run_time_names_no_predicate():
    """The verifier checks a constant predicate field; one computed at run
    time (6: past `ge`) is the simulator's error at the instruction."""
    text = """func.func @k() {
  %a = arith.constant 0 : i64
  %x = arith.constant 256 : i64
  %w0 = arith.constant 72066424524308737 : i64
  %p = arith.constant 1688849860263936 : i64
  %w = arith.addi %w0, %p : i64
  %lo = arith.constant -1 : i64
  "hivm.set_vector_mask"(%a, %lo) : (i64, i64) -> ()
  "hivm.vcmp"(%a, %x, %x, %w) {dtype = f32} : (i64, i64, i64, i64) -> ()
  return
}
"""
    module = parse_module(text, make_context())
    with pytest.raises(SimulationError, match=r":9:3: error: invalid: 'hivm.vcmp' config field "
                       r"'predicate' = 6 names no predicate"):
        simulate(module, [], target=TARGET)

"""hivm instructions that spell the same (op name, configuration word, mask,
element types and the attributes their decoder reads) are built once
(`simulator/decode_cache.py`): each static op gets a copy with its own
location; an op whose attributes answer a read differently is built anew."""

from __future__ import annotations

import numpy as np

from npu.ir import make_context, parse_module
from npu.simulator import simulate
from npu.target import get_target

# Copies GM -> UB -> GM twice with one word; flags on events 0 and 1.
PROGRAM = """func.func @k(%a: memref<16xf16, "gm">) {
  %i = arith.constant 0 : index
  %ub = "hivm.addr"(%i) {base = 0 : i64, scales = array<i64: 1>} : (index) -> i64
  %gm = arith.constant 0 : i64
  %w = arith.constant 65537 : i64
  "hivm.copy_gm_to_ub"(%ub, %gm, %w) : (i64, i64, i64) -> ()
  "hivm.set_flag"() {src = "MTE2", dst = "MTE3", event = 0 : i64} : () -> ()
  "hivm.wait_flag"() {src = "MTE2", dst = "MTE3", event = 0 : i64} : () -> ()
  "hivm.copy_ub_to_gm"(%gm, %ub, %w) : (i64, i64, i64) -> ()
  "hivm.set_flag"() {src = "MTE3", dst = "MTE2", event = 1 : i64} : () -> ()
  "hivm.wait_flag"() {src = "MTE3", dst = "MTE2", event = 1 : i64} : () -> ()
  "hivm.copy_gm_to_ub"(%ub, %gm, %w) : (i64, i64, i64) -> ()
  "hivm.set_flag"() {src = "MTE2", dst = "MTE3", event = 0 : i64} : () -> ()
  "hivm.wait_flag"() {src = "MTE2", dst = "MTE3", event = 0 : i64} : () -> ()
  "hivm.copy_ub_to_gm"(%gm, %ub, %w) : (i64, i64, i64) -> ()
  return
}
"""


def _instrs():
    module = parse_module(PROGRAM, make_context())
    x = np.arange(16, dtype=np.float16)
    res = simulate(module, [x], target=get_target())
    np.testing.assert_array_equal(res.outputs[0], x)
    return [instr for instr, _, _ in res.trace_entries]


def test_equal_instructions_share_their_build_and_keep_their_location():
    instrs = _instrs()
    loads = [i for i in instrs if i.name == "hivm.copy_gm_to_ub"]
    assert [i.where.rsplit(":", 2)[1] for i in loads] == ["6", "12"]
    assert loads[0] is not loads[1]
    assert loads[0].accesses is loads[1].accesses  # one build, two locations
    assert loads[1].who == ("hivm.copy_gm_to_ub", "MTE2", loads[1].where)
    assert loads[1].facts[-2] == loads[1].where


def test_an_attribute_read_differently_is_built_anew():
    sets = [i for i in _instrs() if i.name == "hivm.set_flag"]
    assert [s.key[2] for s in sets] == [0, 1, 0]
    assert [s.flag_text for s in sets] == ["MTE2 -> MTE3, event 0", "MTE3 -> MTE2, event 1",
                                           "MTE2 -> MTE3, event 0"]
    assert sets[0].key is sets[2].key and sets[1].key is not sets[0].key



def test_an_op_spelled_like_an_earlier_one_is_copied_without_probing(monkeypatch):
    """An op whose whole attribute set equals an earlier op's (of the same
    key) takes the copy kept for that set: no reads are probed. The event-1
    pair probes the event-0 build (and is built anew); the third pair is
    copied. With an attribute no decoder reads, the last pair is another
    attribute set: probed, it answers the reads alike and shares that build."""
    from npu.simulator import decode_cache

    probes = []
    real = decode_cache.answers
    monkeypatch.setattr(decode_cache, "answers",
                        lambda op, *a: probes.append(op.name) or real(op, *a))
    assert len(_instrs()) == 10
    assert probes == ["hivm.set_flag", "hivm.wait_flag"]  # the event-1 pair's
    probes.clear()
    head, tail = PROGRAM.rsplit('"hivm.set_flag"', 1)
    text = head + '"hivm.set_flag"' + tail.replace("event = 0 : i64", 'event = 0 : i64, npu.note = "x"')
    x = np.arange(16, dtype=np.float16)
    res = simulate(parse_module(text, make_context()), [x], target=get_target())
    np.testing.assert_array_equal(res.outputs[0], x)
    assert probes == ["hivm.set_flag", "hivm.wait_flag"] * 2  # event 1's, the noted pair's
    sets = [i for i, _, _ in res.trace_entries if i.name == "hivm.set_flag"]
    assert sets[0].key is sets[2].key and sets[2].where.rsplit(":", 2)[1] == "13"

"""The shortcuts compile-time work took must answer as the slow way did:
element type names from the type's class, and hivm's constant operands
remembered only inside one verification run."""

from __future__ import annotations

import numpy as np
from mlir import ir

from npu.dialects import rules
from npu.ir import element_type_name, make_context
from npu.reference_int8 import fractalize_blocks


def test_element_type_name_is_what_mlir_prints():
    with make_context():
        for text in ("f16", "f32", "bf16", "f64", "index", "i1", "i8", "i32", "i64", "si8", "ui8",
                     "f8E4M3FN", "complex<f32>", "memref<2x3xf16>"):
            t = ir.Type.parse(text)
            assert element_type_name(t) == str(t) == text
            assert element_type_name(ir.Type(t)) == text  # not downcast: printed


def test_value_facts_are_kept_only_inside_a_run():
    reads = []

    def read(value):
        reads.append(value)
        return len(reads)

    with make_context(), ir.Location.unknown():
        module = ir.Module.parse("func.func @f(%a: i64, %b: i64) { return }")
        a, b = module.body.operations[0].regions[0].blocks[0].arguments
        assert rules.value_fact(a, read) == 1 and rules.value_fact(a, read) == 2  # no run: afresh
        with rules.value_facts_kept():
            assert [rules.value_fact(v, read) for v in (a, b, a, b)] == [3, 4, 3, 4]
        with rules.value_facts_kept():  # a new run forgets the last one's
            assert rules.value_fact(a, read) == 5
        assert rules.VALUE_FACTS.get() is None


def test_fractalize_without_padding_matches_the_padded_path():
    rng = np.random.default_rng(0)
    src = rng.standard_normal((2, 32, 48)).astype(np.float16)
    out = fractalize_blocks(src, (2, 3, 2, 16, 16))
    ragged = fractalize_blocks(src[:, :30, :40], (2, 3, 2, 16, 16))  # the zero-padded path
    padded = np.zeros_like(src)
    padded[:, :30, :40] = src[:, :30, :40]
    assert out.base is None and not np.shares_memory(out, src)
    np.testing.assert_array_equal(out, src.reshape(2, 2, 16, 3, 16).transpose(0, 3, 1, 2, 4))
    np.testing.assert_array_equal(ragged, fractalize_blocks(padded, (2, 3, 2, 16, 16)))

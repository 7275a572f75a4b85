"""The node conformance cases expected to be refused, with the reason
(`test_onnx_node_conformance.py`: each must be refused with a message
containing its pattern; a case that starts passing must leave this table).
docs/onnx_conformance.md has the table by family and reason."""

# case -> (reason, a phrase of the refusal message)
KNOWN: dict[str, tuple[str, str]] = {
    "test_equal_string": ("dtype STRING is not taken at the graph boundary", "element type"),
    "test_equal_string_broadcast": ("dtype STRING is not taken at the graph boundary", "element type"),
    "test_identity_opt": ("optional or sequence input (no tensor shape)", "no shape declared"),
    "test_identity_sequence": ("optional or sequence input (no tensor shape)", "no shape declared"),
    "test_max_float64": ("DOUBLE arithmetic: f64 has no NPU type (refused, not computed in f32)", "DOUBLE data is not computed"),
    "test_min_float64": ("DOUBLE arithmetic: f64 has no NPU type (refused, not computed in f32)", "DOUBLE data is not computed"),
    "test_pow_types_int32_float32": ("Pow of an integer base by a float exponent (trunc(x^y) for a fractional y: exp/ln in f32 is inexact past 2^24)", "non-integer exponent"),
    "test_pow_types_int64_float32": ("Pow of an integer base by a float exponent (trunc(x^y) for a fractional y: exp/ln in f32 is inexact past 2^24)", "non-integer exponent"),
}

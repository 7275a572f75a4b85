"""ONNX's node conformance cases (`onnx.backend.test`), run through
`npu.compile` and the simulator.

The installed onnx wheel ships the generators of the node cases
(`onnx.backend.test.case.node`), not their `.pb` files: our families'
generator modules build the same models and data sets in memory (what onnx's own
`backend-test-tools generate-data` writes to disk), with the tolerances the
reference backend uses (rtol 1e-3, atol 1e-7).

A family is an ONNX op type; a case belongs to the family of its node
(the `_expanded` variants, the op's function body, are left out: they
test other ops). Inputs that the op's schema says are axes or shapes
(Reshape's `shape`, opset 18 reductions' `axes`, ...) are bound as
initializers, as every exporter writes them: a static compiler needs them
at compile time.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

import numpy as np

# Family -> the ONNX op type. One line per family: the claimed ones
# (onnx_import.SUPPORTED_OPS) and those other branches add (see KNOWN in the
# test for the cases that are not expected to pass yet).
CLAIMED = ("Abs", "Add", "Cast", "Clip", "Div", "Equal", "Erf", "Exp", "Flatten", "Gelu", "Gemm",
           "Greater", "GreaterOrEqual", "LayerNormalization", "Less", "LessOrEqual", "Log",
           "MatMul", "Max", "Min", "Mul", "Neg", "Pow", "Reciprocal", "ReduceMax", "ReduceMean",
           "ReduceSum", "ReduceSumSquare", "Relu", "Reshape", "Sigmoid", "Softmax", "Sqrt",
           "Squeeze", "Sub", "Tanh", "Transpose", "Unsqueeze", "Where", "Identity")
# Families other branches add (issue 26 item 2); every case is expected to
# fail until their op is in SUPPORTED_OPS.
EXTENDED = ("Gather", "GatherElements", "Concat", "Slice", "Split", "Expand", "Range", "Shape",
            "ConstantOfShape", "Not", "And", "Or", "Trilu", "IsNaN", "IsInf", "Pad")

# op type -> input positions that are axes or shapes (bound at compile time).
STATIC_INPUTS = {"Reshape": (1,), "Squeeze": (1,), "Unsqueeze": (1,), "ReduceSum": (1,),
                 "ReduceMean": (1,), "ReduceMax": (1,), "ReduceSumSquare": (1,), "Expand": (1,),
                 "Slice": (1, 2, 3, 4), "Split": (1,), "Range": (0, 1, 2),
                 "ConstantOfShape": (0,), "Trilu": (1,), "Pad": (1, 2, 3)}


@dataclass
class NodeCase:
    name: str
    family: str
    model: object                 # onnx.ModelProto, inputs already bound
    data_sets: list                # [(inputs, outputs)] for the remaining graph inputs
    rtol: float
    atol: float


def _family(model) -> str | None:
    nodes = model.graph.node
    return nodes[0].op_type if len(nodes) == 1 else None


def _bind_static_inputs(model, inputs: list, op: str):
    """The model with the axes/shape inputs turned into initializers, and the
    runtime inputs left."""
    import onnx
    from onnx import numpy_helper

    positions = STATIC_INPUTS.get(op, ())
    node = model.graph.node[0]
    static = {node.input[i] for i in positions if i < len(node.input) and node.input[i]}
    if not static:
        return model, inputs
    bound = onnx.ModelProto()
    bound.CopyFrom(model)
    kept, left = [], []
    for value, data in zip(model.graph.input, inputs):
        if value.name in static:
            bound.graph.initializer.append(numpy_helper.from_array(np.asarray(data), value.name))
        else:
            kept.append(value)
            left.append(data)
    del bound.graph.input[:]
    bound.graph.input.extend(kept)
    return bound, left


def _array(value) -> np.ndarray:
    """Data sets hold numpy arrays or, for types numpy lacks, TensorProtos."""
    from onnx import numpy_helper

    return numpy_helper.to_array(value) if hasattr(value, "HasField") else np.asarray(value)


# A family's generator module where its name is not the op type in lower case.
_MODULES = {"GreaterOrEqual": "greater_or_equal", "LessOrEqual": "less_or_equal",
            "And": "and_", "Or": "or_", "Not": "not_", "Range": "rangeop"}


def _generated_cases() -> list:
    """The cases of our families' generator modules only. `collect_testcases`
    runs every generator, pooling and recurrent references included: 5 CPU s
    of each test worker's collection, for cases we never use."""
    import importlib

    from onnx.backend.test.case import node

    for family in CLAIMED + EXTENDED:
        importlib.import_module(f"{node.__name__}.{_MODULES.get(family, family.lower())}")
    return node._NodeTestCases  # what collect_testcases returns, filled by the imports


@functools.lru_cache(maxsize=1)
def all_cases() -> tuple[NodeCase, ...]:
    """Every node case of a family in CLAIMED or EXTENDED, by name."""
    import warnings

    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        raw = _generated_cases()
    families = set(CLAIMED) | set(EXTENDED)
    out = []
    for c in raw:
        op = _family(c.model)
        if op not in families or re.search(r"_expanded", c.name):
            continue
        sets = []
        model = c.model
        for inputs, outputs in c.data_sets:
            model, left = _bind_static_inputs(c.model, [_array(x) for x in inputs], op)
            sets.append((left, [_array(x) for x in outputs]))
        out.append(NodeCase(c.name, op, model, sets, c.rtol, c.atol))
    return tuple(sorted(out, key=lambda c: c.name))


def cases_by_name() -> dict[str, NodeCase]:
    return {c.name: c for c in all_cases()}


class Mismatch(AssertionError):
    """The simulated outputs differ from the case's expected ones."""


def run_case(case: NodeCase) -> None:
    """Compile the case's model, simulate every data set and compare with its
    expected outputs; raises CompileError (a refusal) or Mismatch."""
    import npu

    kernel = npu.compile(case.model, where=case.name)
    for inputs, expected in case.data_sets:
        got, _ = kernel(*inputs)
        if len(got) != len(expected):
            raise Mismatch(f"{len(got)} outputs, expected {len(expected)}")
        for g, e in zip(got, expected):
            e = np.asarray(e)
            if g.shape != e.shape:
                raise Mismatch(f"output shape {list(g.shape)}, expected {list(e.shape)}")
            if e.dtype == bool or np.issubdtype(e.dtype, np.integer):
                if not np.array_equal(np.asarray(g).astype(e.dtype), e):
                    raise Mismatch(f"integer outputs differ: got {g.ravel()[:8]}, expected {e.ravel()[:8]}")
                continue
            try:
                np.testing.assert_allclose(np.asarray(g, np.float64), e.astype(np.float64),
                                           rtol=case.rtol, atol=case.atol)
            except AssertionError as err:
                raise Mismatch(str(err).strip().splitlines()[-1]) from None

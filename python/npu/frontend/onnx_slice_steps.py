"""`Slice` with a negative step: its starts clamped into range first.

ONNX clamps a negative step's start into [0, dim - 1] (like Python's slice).
torch-mlir lowers a negative-step slice to a flip and a dynamic slice whose
bounds it computes from the start as given, and a start past the end (the
conformance case `test_slice_neg_steps` starts at 20 of 20) gives an
out-of-range slice. With the bounds constant (the folder has made them so)
the start is clamped here, as ONNX defines it, to the same elements.
"""

from __future__ import annotations

import numpy as np


def clamp_negative_step_starts(model, types: dict | None = None) -> list[str]:
    """Clamp (in place) the starts of every Slice with a negative step and
    constant bounds whose start lies past the axis' end; the names changed."""
    graph = model.graph
    inits = {t.name: t for t in graph.initializer}
    slices = [n for n in graph.node if n.op_type == "Slice" and n.domain in ("", "ai.onnx")
              and len(n.input) >= 5 and all(x in inits for x in n.input[1:5] if x)]
    if not slices:
        return []
    from onnx import numpy_helper

    from npu.frontend.onnx_fold import inferred_types

    types = inferred_types(model) if types is None else types  # `onnx_fold.inferred_types`
    done = []
    for node in slices:
        dims = types.get(node.input[0], (None, 0))[0] if types else None
        if dims is None:
            continue
        starts = numpy_helper.to_array(inits[node.input[1]]).astype(np.int64)
        axes = (numpy_helper.to_array(inits[node.input[3]]).tolist() if node.input[3]
                else list(range(len(starts))))
        steps = numpy_helper.to_array(inits[node.input[4]]).tolist()
        clamped = starts.copy()
        for i, (axis, step) in enumerate(zip(axes, steps)):
            d = dims[axis % len(dims)]
            if step < 0 and starts[i] >= d:  # (a start before -d selects nothing: an empty result)
                clamped[i] = d - 1
        if np.array_equal(clamped, starts):
            continue
        name = f"{node.name}/starts"
        graph.initializer.append(numpy_helper.from_array(clamped, name))
        node.input[1] = name
        done.append(node.name)
    return done

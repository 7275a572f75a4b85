"""Old opsets brought up to one torch-mlir imports.

torch-mlir's ONNX lowering covers the operators' newer versions: a `Softmax`
of opset 11 (whose axis flattened the input to 2-D) is left unlowered. A
model whose default-domain opset is older than `MIN_IMPORT_OPSET` is
converted with onnx's own version converter first; when it cannot be, the
model is imported as it is and torch-mlir's refusal names the node.
"""

from __future__ import annotations

# Opset 13 rewrote Softmax/LogSoftmax/Hardmax's axis semantics and moved
# Squeeze/Unsqueeze/ReduceSum axes to inputs: what torch-mlir expects.
MIN_IMPORT_OPSET = 13


def default_opset(model) -> int | None:
    """The model's ai.onnx opset version (None when it imports none)."""
    return next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), None)


def upgrade_old_opset(model) -> object:
    """`model` converted to `MIN_IMPORT_OPSET` when its opset is older (node
    names and the IR version kept); the model itself otherwise."""
    from onnx import version_converter

    opset = default_opset(model)
    if opset is None or opset >= MIN_IMPORT_OPSET:
        return model
    try:
        converted = version_converter.convert_version(model, MIN_IMPORT_OPSET)
    except Exception:  # noqa: BLE001 - no adapter: torch-mlir names what it cannot lower
        return model
    if [n.name for n in converted.graph.node] != [n.name for n in model.graph.node]:
        # The converter rewrote nodes: name the new ones after their op, so
        # every node still has a unique name (locations and errors need one).
        seen = {n.name for n in converted.graph.node if n.name}
        for i, node in enumerate(converted.graph.node):
            if not node.name:
                name = f"{node.op_type}_v{i}"
                while name in seen:
                    name += "_"
                node.name = name
                seen.add(name)
    return converted

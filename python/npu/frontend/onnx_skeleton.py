"""What onnx's shape inference and checker see of a model: its graph without
the large float weights' bytes.

Both serialise the whole model and parse it back. The float weights' bytes,
which neither reads, made most of that work, and taking them out and putting
them back left a copy of every weight in protobuf's arena each time, alive as
long as the model. The skeleton declares each large float initializer as a
graph input of its type and shape instead (both accept that) and keeps the
small ones, whose values data propagation may read (shapes, axes, pads).
"""

from __future__ import annotations

import math

# Float initializers at least this large are declared, not carried.
WEIGHT_MIN_BYTES = 1024
_FLOAT_BYTES = {1: 4, 10: 2, 11: 8, 16: 2}  # FLOAT, FLOAT16, DOUBLE, BFLOAT16


def is_weight(tensor) -> bool:
    """A float initializer large enough to leave out (sized from its dims:
    its data is never read)."""
    size = _FLOAT_BYTES.get(tensor.data_type)
    return size is not None and math.prod(tensor.dims) * size >= WEIGHT_MIN_BYTES


def skeleton(model):
    """A new ModelProto: `model` with its weights declared as graph inputs."""
    import onnx

    skel = onnx.ModelProto()
    skel.ir_version = model.ir_version
    skel.opset_import.extend(model.opset_import)
    skel.functions.extend(model.functions)
    graph, out = model.graph, skel.graph
    out.name = graph.name
    out.node.extend(graph.node)
    out.input.extend(graph.input)
    out.output.extend(graph.output)
    out.value_info.extend(graph.value_info)
    out.sparse_initializer.extend(graph.sparse_initializer)
    declared = {v.name for v in graph.input}
    for tensor in graph.initializer:
        if not is_weight(tensor):
            out.initializer.add().CopyFrom(tensor)
        elif tensor.name not in declared:
            out.input.append(onnx.helper.make_tensor_value_info(tensor.name, tensor.data_type,
                                                                list(tensor.dims)))
    return skel


def infer_shapes(model, **options):
    """`onnx.shape_inference.infer_shapes` of the skeleton: the value types
    it finds are the model's (its weights appear as graph inputs)."""
    import onnx

    return onnx.shape_inference.infer_shapes(skeleton(model), **options)


def take_inferred(model, inferred) -> None:
    """Give `model` the value types and output shapes inference found."""
    del model.graph.value_info[:]
    model.graph.value_info.extend(inferred.graph.value_info)
    del model.graph.output[:]
    model.graph.output.extend(inferred.graph.output)

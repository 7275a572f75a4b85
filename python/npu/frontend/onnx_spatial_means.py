"""`ReduceMean` over every spatial dim written as `GlobalAveragePool`.

torchvision's ShuffleNetV2 and MnasNet end with `x.mean([2, 3])`, which
torch exports as `ReduceMean(axes=[2, 3], keepdims=0)`; GoogLeNet and RegNet
end with `AdaptiveAvgPool2d(1)`, exported as `GlobalAveragePool`. Both are
the mean of each channel's H x W plane, and one spelling must reach one
kernel: the pool runs on the conv's NC1HWC0 map (a [1, 1024, 7, 7] head:
28,756 cycles with its 1x1 conv on one core, against 122,649 as a
reduction of 49-value rows after a transpose back to NCHW). `keepdims=0`
adds a `Flatten` from axis 1 (drops the two 1s of [N, C, 1, 1])."""

from __future__ import annotations

_FLOATS = (1, 10)  # ONNX FLOAT, FLOAT16


def _axes(node, model) -> list[int] | None:
    """The node's axes: the attribute (opset < 18) or a constant input."""
    for a in node.attribute:
        if a.name == "axes":
            return list(a.ints)
    if len(node.input) > 1 and node.input[1]:
        from onnx import numpy_helper

        init = next((t for t in model.graph.initializer if t.name == node.input[1]), None)
        return None if init is None else [int(v) for v in numpy_helper.to_array(init).ravel()]
    return None  # every axis: not a spatial mean


def pools_for_spatial_means(model, types: dict | None = None) -> list[str]:
    """Replace (in place) every float ReduceMean over exactly the dims after
    N and C of a 4- or 5-D input (an image or a volume; a 3-D [B, S, H] is a
    sequence, whose mean over H is a layernorm's) by GlobalAveragePool (and
    a Flatten when it drops them); the names of the nodes rewritten."""
    if not any(n.op_type == "ReduceMean" for n in model.graph.node):
        return []
    from npu.frontend.onnx_expansion import rewrite_nodes

    def expand(node, types: dict, expansion) -> bool:
        if node.op_type != "ReduceMean":
            return False
        shape, elem = types.get(node.input[0], (None, 0))
        if shape is None or elem not in _FLOATS or len(shape) not in (4, 5):  # images, volumes
            return False
        axes = _axes(node, model)
        rank = len(shape)
        if axes is None or sorted(a % rank for a in axes) != list(range(2, rank)):
            return False
        keep = next((a.i for a in node.attribute if a.name == "keepdims"), 1)
        ex = expansion()
        if keep:
            ex.final("GlobalAveragePool", [node.input[0]], "pool")
        else:
            ex.final("Flatten", [ex.make("GlobalAveragePool", [node.input[0]], "pool")], "flatten",
                     axis=1)
        return True

    return rewrite_nodes(model, types, expand)


"""A 1-D `Conv` (Whisper's and wav2vec2's audio front ends, wav2vec2's
grouped positional conv) written as a 2-D one over a map of height 1.

`Conv` on [N, C, L] with a kernel of K is `Conv` on [N, C, 1, L] with a
kernel of 1 x K, its pads, strides and dilations put on the width and the
identity on the height; the Reshapes around it are views of the same
bytes. The 2-D conv then runs where every other conv runs (img2col on the
cube, grouped or depthwise as `onnx_conv` and the cost model decide). The
weight, a constant, is reshaped on the host; a weight computed at run time
gets a Reshape of its own.
"""

from __future__ import annotations

import numpy as np


def convs_as_2d(model, types: dict | None = None) -> list[str]:
    """Rewrite (in place) every 1-D Conv whose input and output shapes are
    static; the names of the Convs rewritten. Others are left for
    `onnx_conv.check_convs` to judge."""
    if not any(n.op_type == "Conv" for n in model.graph.node):
        return []
    from onnx import helper, numpy_helper

    from npu.frontend.onnx_expansion import rewrite_nodes

    inits = {t.name: t for t in model.graph.initializer}

    def static(name: str):
        dims = types.get(name, (None, 0))[0]
        ok = dims is not None and all(isinstance(d, int) and d > 0 for d in dims)
        return list(dims) if ok else None

    def expand(node, types: dict, expansion) -> bool:
        if node.op_type != "Conv" or len(node.input) < 2:
            return False
        x, y = static(node.input[0]), static(node.output[0])
        if x is None or y is None or len(x) != 3 or len(y) != 3:
            return False
        attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        sizes = {"pads": 2, "strides": 1, "dilations": 1, "kernel_shape": 1}
        if any(name in attrs and (not isinstance(attrs[name], list) or len(attrs[name]) != n)
               for name, n in sizes.items()) or not isinstance(attrs.get("group", 1), int):
            return False  # malformed: onnx's checker and check_convs name it
        auto = attrs.get("auto_pad", b"NOTSET")
        auto = auto.decode() if isinstance(auto, bytes) else auto
        weight = node.input[1]
        w = numpy_helper.to_array(inits[weight]) if weight in inits else None
        dims = list(w.shape) if w is not None else static(weight)
        if dims is None or len(dims) != 3:
            return False  # the checks that follow name it
        ex = expansion()
        image = ex.make("Reshape", [node.input[0], ex.const("x_shape", [x[0], x[1], 1, x[2]], np.int64)],
                        "x2d")
        if w is not None:
            weight = ex.const("w2d", w.reshape(dims[0], dims[1], 1, dims[2]), w.dtype)
        else:
            weight = ex.make("Reshape", [weight, ex.const("w_shape", [dims[0], dims[1], 1, dims[2]],
                                                          np.int64)], "w2d")
        conv = {"group": attrs.get("group", 1)}
        if auto != "NOTSET":
            conv["auto_pad"] = auto
        elif "pads" in attrs:
            begin, end = attrs["pads"]
            conv["pads"] = [0, begin, 0, end]
        for name in ("strides", "dilations", "kernel_shape"):
            if name in attrs:
                conv[name] = [1] + list(attrs[name])
        out = ex.make("Conv", [image, weight] + list(node.input[2:]), "conv2d", **conv)
        ex.final("Reshape", [out, ex.const("y_shape", y, np.int64)], "y1d")
        return True

    return rewrite_nodes(model, types, expand)

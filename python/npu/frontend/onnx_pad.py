"""A `Pad` with known pads written as Slice, Expand and Concat.

torchvision's Swin pads each stage's NHWC map to a multiple of its 7x7
window (`F.pad`, exported as `Pad` with pads computed from the shape, which
folding makes constants): at 224 every pad is 0 and the Pad an Identity
(`onnx_indexing`), at 256 the 64x64 map is padded to 70x70. Each padded
axis is a Concat of a block before, the tensor and a block after (the later
axes' blocks as wide as the earlier axes made the tensor); a negative pad
crops, a Slice before them. The blocks, by mode: `constant` a constant of
the value, `edge` the first or last slice expanded, `reflect` the slices
next to the edge in reverse order (a Slice of step -1), `wrap` the slices
at the other end. Pads known only at run time, or a reflection wider than
the axis, stay a Pad, which the operator check refuses by the node's name.
"""

from __future__ import annotations

import numpy as np

from npu.frontend.onnx_expansion import rewrite_nodes


def _attr(node, name: str, default):
    from onnx import helper

    a = next((a for a in node.attribute if a.name == name), None)
    return default if a is None else helper.get_attribute_value(a)


def _constant(model, name: str) -> np.ndarray | None:
    from onnx import numpy_helper

    init = next((t for t in model.graph.initializer if t.name == name), None)
    return None if init is None else numpy_helper.to_array(init)


def _pads(node, model, rank: int) -> np.ndarray | None:
    """[rank, 2] (before, after) per axis, or None when not known here."""
    if len(node.input) < 2 or not node.input[1]:
        pads = _attr(node, "pads", None)  # opset < 11
        pads = None if pads is None else np.asarray(pads, np.int64)
    else:
        pads = _constant(model, node.input[1])
    if pads is None or pads.ndim != 1:
        return None
    axes = list(range(rank))
    if len(node.input) > 3 and node.input[3]:  # opset 18: the axes padded
        given = _constant(model, node.input[3])
        if given is None:
            return None
        axes = [int(a) % rank for a in given.ravel()]
    if len(pads) != 2 * len(axes) or len(set(axes)) != len(axes):
        return None
    out = np.zeros((rank, 2), np.int64)
    for i, axis in enumerate(axes):
        out[axis] = pads[i], pads[i + len(axes)]
    return out


def _value(node, model, dtype: np.dtype):
    """The fill value in the data's type, or None when not a known scalar."""
    if len(node.input) > 2 and node.input[2]:
        v = _constant(model, node.input[2])
        return None if v is None or v.size != 1 else v.astype(dtype).reshape(())
    return np.asarray(_attr(node, "value", 0.0)).astype(dtype)  # opset < 11


MODES = ("constant", "edge", "reflect", "wrap")


def _block(ex, x: str, mode: str, side: str, axis: int, width: int, block: list[int]) -> str:
    """The `width` slices of `x` along `axis` that an edge, reflect or wrap
    pad puts on `side`."""
    tag = f"{side}{axis}"
    before = side == "before"
    if mode == "edge":
        start, end, step = (0, 1, 1) if before else (-1, np.iinfo(np.int64).max, 1)
    elif mode == "reflect":  # x[width], ..., x[1] before; x[-2], ..., x[-1 - width] after
        start, end, step = (width, 0, -1) if before else (-2, -2 - width, -1)
    else:  # wrap: the last `width` slices before, the first ones after
        start, end, step = (-width, np.iinfo(np.int64).max, 1) if before else (0, width, 1)
    piece = ex.make("Slice", [x, ex.const(f"{tag}/starts", [start], np.int64),
                              ex.const(f"{tag}/ends", [end], np.int64),
                              ex.const(f"{tag}/axes", [axis], np.int64),
                              ex.const(f"{tag}/steps", [step], np.int64)], f"{tag}/slice")
    if mode != "edge":
        return piece
    return ex.make("Expand", [piece, ex.const(f"{tag}/shape", block, np.int64)], f"{tag}/expand")


def expand_constant_pads(model, types: dict | None = None) -> list[str]:
    """Write out (in place) every Pad of a static shape, known pads and
    value and a mode of `MODES`; the names of the nodes rewritten."""
    if not any(n.op_type == "Pad" for n in model.graph.node):
        return []
    from onnx import helper

    def expand(node, types: dict, expansion) -> bool:
        if node.op_type != "Pad":
            return False
        mode = _attr(node, "mode", b"constant")
        mode = mode.decode() if isinstance(mode, bytes) else mode
        if mode not in MODES:
            return False
        shape, elem = types.get(node.input[0], (None, 0))
        if shape is None or not elem:
            return False
        dtype = helper.tensor_dtype_to_np_dtype(elem)
        pads, value = _pads(node, model, len(shape)), _value(node, model, dtype)
        if pads is None or value is None or np.any(np.asarray(shape) + pads.sum(1) < 0):
            return False
        cropped = np.asarray(shape) + np.minimum(pads, 0).sum(1)
        grown = np.maximum(pads, 0).max(1)
        if mode != "constant" and np.any((grown > 0) & (grown > cropped - (mode == "reflect"))):
            return False  # a block wider than the axis it repeats (or no edge slice to take)
        ex = expansion()
        x, dims = node.input[0], list(shape)
        steps = [("slice", None)] if (pads < 0).any() else []
        steps += [("concat", a) for a in range(len(dims)) if (pads[a] > 0).any()]
        if not steps:
            ex.final("Identity", [x], "identity")
            return True
        for i, (kind, axis) in enumerate(steps):
            make = ex.final if i == len(steps) - 1 else ex.make
            if kind == "slice":
                crop = np.maximum(-pads, 0)
                starts, ends = crop[:, 0], np.asarray(dims) - crop[:, 1]
                x = make("Slice", [x, ex.const("starts", starts, np.int64),
                                   ex.const("ends", ends, np.int64),
                                   ex.const("axes", np.arange(len(dims)), np.int64)], "crop")
                dims = [int(e - s) for s, e in zip(starts, ends)]
                continue
            parts = []
            for side, width in (("before", int(pads[axis, 0])), ("after", int(pads[axis, 1]))):
                if width > 0:
                    block = dims[:axis] + [width] + dims[axis + 1:]
                    parts.append(ex.const(f"{side}{axis}", np.full(block, value, dtype), dtype)
                                 if mode == "constant" else
                                 _block(ex, x, mode, side, axis, width, block))
                if side == "before":
                    parts.append(x)
            x = make("Concat", parts, f"pad{axis}", axis=axis)
            dims[axis] += int(max(pads[axis, 0], 0) + max(pads[axis, 1], 0))
        return True

    return rewrite_nodes(model, types, expand)

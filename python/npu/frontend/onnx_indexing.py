"""Gathers with constant indices that move data only as a Reshape or a Slice
would, written as those.

Exporters index the attention mask with constant indices: dynamo's
`mask[:, None, None, :]` is a `GatherND` with a [1, 1, 1, 16, 2] index
tensor, TorchScript's a `Gather` of a flattened mask by `arange`. The data
depends on the input, so nothing folds, but the indices are known: the
gather is evaluated once on the element numbers of its data (0, 1, 2, ...),
and when that picks every element in order it is a `Reshape`, when it picks
a box of the data in order it is a `Slice` (and a `Reshape`). Any other
gather is left as it is. A gather from constant data of one value
everywhere is that value, whatever the indices.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

GATHERS = frozenset({"Gather", "GatherElements", "GatherND"})

# The element-number tensor is built on the host: not for huge data (a tool limit).
MAX_ELEMENTS = 1 << 22


def as_data_movement(node, types, known: Callable[[str], bool], value: Callable[[str], np.ndarray],
                     evaluate: Callable) -> tuple[list, list] | None:
    """(nodes, initializers) that replace `node`, or None to keep it.

    `types`: name -> (static dims or None, element type); `known`/`value`:
    the constant values; `evaluate(node, feeds)`: the node's outputs."""
    from onnx import helper, numpy_helper

    if node.op_type not in GATHERS or node.domain not in ("", "ai.onnx") or len(node.input) != 2:
        return None
    data, indices = node.input
    out = node.output[0]
    shape, out_shape = types.get(data, (None, 0))[0], types.get(out, (None, 0))[0]
    if shape is not None and out_shape is not None and known(data) and not known(indices):
        return _uniform_gather(node, value(data), out_shape)
    if known(data) or not known(indices) or shape is None or out_shape is None:
        return None
    size = int(np.prod(shape, dtype=np.int64))
    if size == 0 or size > MAX_ELEMENTS:
        return None
    numbers = np.arange(size, dtype=np.int64).reshape(shape)
    try:
        picked = np.asarray(evaluate(node, {data: numbers, indices: value(indices)})[0]).ravel()
    except Exception:  # noqa: BLE001 - out-of-range indices and such: the checks name them
        return None
    if picked.size != int(np.prod(out_shape, dtype=np.int64)) or picked.size == 0:
        return None
    coords = np.unravel_index(picked, shape)
    starts = [int(c.min()) for c in coords]
    ends = [int(c.max()) + 1 for c in coords]
    box = numbers[tuple(slice(s, e) for s, e in zip(starts, ends))]
    if box.size != picked.size or not np.array_equal(box.ravel(), picked):
        return None
    nodes, inits, source = [], [], data
    axes = [i for i, (s, e, d) in enumerate(zip(starts, ends, shape)) if (s, e) != (0, d)]
    if axes:
        names = [f"{out}/slice_{k}" for k in ("starts", "ends", "axes")]
        for name, values in zip(names, ([starts[a] for a in axes], [ends[a] for a in axes], axes)):
            inits.append(numpy_helper.from_array(np.array(values, np.int64), name))
        source = out if list(box.shape) == list(out_shape) else f"{out}/sliced"
        nodes.append(helper.make_node("Slice", [data, *names], [source], name=node.name))
    if source == data and list(shape) == list(out_shape):
        nodes.append(helper.make_node("Identity", [data], [out], name=node.name))
    elif source != out:
        name = f"{out}/shape"
        inits.append(numpy_helper.from_array(np.array(out_shape, np.int64), name))
        nodes.append(helper.make_node("Reshape", [source, name], [out],
                                      name=node.name if not axes else f"{node.name}/reshape"))
    return nodes, inits


def as_identity(node, types, known: Callable[[str], bool],
                value: Callable[[str], np.ndarray]) -> object | None:
    """An `Identity` node (same name) for a data-movement node that moves
    nothing: an Expand, Reshape or Tile to the shape its input already has, a
    Slice taking everything with unit steps, an identity Transpose, a
    one-input Concat, a Cast to the type it has, a Pad of zeros everywhere
    (Swin's pad of its map to whole windows, when it has them). None
    otherwise."""
    from onnx import helper

    op = node.op_type
    if node.domain not in ("", "ai.onnx") or len(node.output) != 1 or not node.input or not node.input[0]:
        return None
    if op not in ("Expand", "Reshape", "Tile", "Slice", "Transpose", "Concat", "Cast", "Pad"):
        return None
    x, out = node.input[0], node.output[0]
    (x_dims, x_type), (out_dims, out_type) = types.get(x, (None, 0)), types.get(out, (None, 0))
    if x_dims is None or x_dims != out_dims or x_type != out_type or known(x):
        return None  # a constant input folds instead
    attrs = {a.name: a for a in node.attribute}
    if op == "Slice":
        steps = node.input[4] if len(node.input) > 4 and node.input[4] else None
        if steps is not None and (not known(steps) or np.any(value(steps) != 1)):
            return None
    if op == "Transpose" and "perm" in attrs and list(attrs["perm"].ints) != list(range(len(x_dims))):
        return None
    if op == "Concat" and len([i for i in node.input if i]) != 1:
        return None
    if op == "Pad" and not _pads_zero(node, attrs, known, value):
        return None
    return helper.make_node("Identity", [x], [out], name=node.name)


def _pads_zero(node, attrs: dict, known: Callable[[str], bool], value: Callable[[str], np.ndarray]) -> bool:
    """A Pad's pads (input since opset 11, attribute before) are known and all
    zero: same dims in and out alone would admit a shift (-1 before, +1 after)."""
    if "pads" in attrs:
        return not any(attrs["pads"].ints)
    pads = node.input[1] if len(node.input) > 1 and node.input[1] else None
    return pads is not None and known(pads) and not np.any(value(pads))


def _uniform_gather(node, data: np.ndarray, out_shape: list[int]) -> tuple[list, list] | None:
    """A gather from constant data whose elements are all one value, by
    indices known only at run time, is that value everywhere (RoBERTa's
    buffer of zero token types read at its position ids): an Expand of
    the value, which the next fold round makes a constant. Indices out of
    range, an error in onnxruntime, are not checked."""
    from onnx import helper, numpy_helper

    flat = np.asarray(data).ravel()
    if flat.size == 0 or not np.all(flat == flat[0]) or not all(isinstance(d, int) for d in out_shape):
        return None
    out = node.output[0]
    inits = [numpy_helper.from_array(flat[:1].reshape([]), f"{out}/value"),
             numpy_helper.from_array(np.array(out_shape, np.int64), f"{out}/shape")]
    return [helper.make_node("Expand", [f"{out}/value", f"{out}/shape"], [out], name=node.name)], inits

"""A Concat of every strided phase of one tensor, as one transpose.

Swin's patch merging (torchvision and HuggingFace) concatenates
`x[:, 0::2, 0::2]`, `x[:, 1::2, 0::2]`, `x[:, 0::2, 1::2]` and
`x[:, 1::2, 1::2]` along the channels, and YOLOv5's Focus does the same
over NCHW. As exported these are six strided Slices and a Concat: a
stride-2 slice moves one element (or one row of C) a burst, and splits
over the cores only into equal 32-byte runs, so each ran on one core
(Swin-T's first merge: 15k cycles a slice on 32 cores). The same values
are a space-to-depth: each strided axis of n split into (n/s, s), the
phase axes moved in front of the concatenated axis in the Concat's order,
and the result reshaped to the Concat's shape. One transpose moves the
tensor once, in runs of the dims after the last phase axis; the reshapes
are views.
"""

from __future__ import annotations

import itertools
import math

import numpy as np


def _strides(value: str, producer: dict, constant, types: dict) -> tuple | None:
    """(source, {axis: (offset, step)}) of a chain of constant Slices, each
    along axes of its own, with steps > 1 from an offset below the step to
    the axis's end; None otherwise."""
    found: dict[int, tuple[int, int]] = {}
    while (node := producer.get(value)) is not None and node.op_type == "Slice":
        source = node.input[0]
        dims = types.get(source, (None, 0))[0]
        parts = [constant(i) if i else None for i in list(node.input[1:5]) + [""] * (5 - len(node.input))]
        starts, ends, axes, steps = parts
        if dims is None or starts is None or ends is None or (len(node.input) > 3 and node.input[3] and axes is None) \
                or (len(node.input) > 4 and node.input[4] and steps is None):
            return None
        axes = list(axes.flat) if axes is not None else list(range(starts.size))
        steps = list(steps.flat) if steps is not None else [1] * len(axes)
        for a, start, end, step in zip(axes, starts.flat, ends.flat, steps):
            a = int(a) % len(dims)
            if a in found or step < 2 or not 0 <= start < step or min(int(end), dims[a]) < dims[a] \
                    or dims[a] % step:
                return None
            found[a] = (int(start), int(step))
        value = source
    return (value, found) if found else None


def concats_as_space_to_depth(model, types: dict | None) -> list[str]:
    """Rewrite (in place) each Concat of all the strided phases of one
    tensor as Reshape, Transpose, Reshape; the names of the Concats
    rewritten (the Slices nothing else reads are removed)."""
    if types is None or not any(n.op_type == "Concat" for n in model.graph.node):
        return []
    from onnx import helper

    from npu.frontend.onnx_expansion import constants, rewrite_nodes
    from npu.frontend.onnx_fold import remove_dead_nodes

    producer = {o: n for n in model.graph.node for o in n.output}
    constant = constants(model)

    def expand(node, types: dict, expansion) -> bool:
        if node.op_type != "Concat" or len(node.input) < 2:
            return False
        pieces = [_strides(v, producer, constant, types) for v in node.input]
        if any(p is None for p in pieces) or len({p[0] for p in pieces}) != 1:
            return False
        source = pieces[0][0]
        dims, elem = types.get(source, (None, 0))
        out = types.get(node.output[0], (None, 0))[0]
        steps = {a: s for a, (_, s) in pieces[0][1].items()}
        concat = helper.get_attribute_value(next(a for a in node.attribute if a.name == "axis"))
        if dims is None or out is None or concat % len(dims) in steps:
            return False
        concat %= len(dims)
        if any({a: s for a, (_, s) in p[1].items()} != steps for p in pieces) \
                or len(pieces) != math.prod(steps.values()):
            return False
        order = _phase_order([{a: o for a, (o, _) in p[1].items()} for p in pieces], steps)
        if order is None:
            return False
        split: list[int] = []  # the source with each strided axis as (n / s, s)
        at: dict = {}  # (axis, "outer" / "phase") -> its dim in `split`
        for a, n in enumerate(dims):
            at[a, "outer"] = len(split)
            split.append(n // steps[a] if a in steps else n)
            if a in steps:
                at[a, "phase"] = len(split)
                split.append(steps[a])
        perm = []
        for a in range(len(dims)):
            if a == concat:
                perm += [at[p, "phase"] for p in order]
            perm.append(at[a, "outer"])
        ex = expansion()
        view = ex.make("Reshape", [source, ex.const("phases_shape", split, np.int64)], "phases")
        moved = ex.make("Transpose", [view], "phases_first", perm=perm)
        types.update({view: (split, elem), moved: ([split[p] for p in perm], elem)})
        ex.final("Reshape", [moved, ex.const("merged_shape", out, np.int64)], "merged")
        return True

    done = rewrite_nodes(model, types, expand)
    if done:
        remove_dead_nodes(model)
    return done


def _phase_order(offsets: list[dict], steps: dict) -> list[int] | None:
    """The strided axes, most significant first, whose mixed-radix number
    of a piece's offsets is its place in the Concat; None if no order is."""
    for order in itertools.permutations(sorted(steps)):
        places = [0] * len(offsets)
        for k, piece in enumerate(offsets):
            for a in order:
                places[k] = places[k] * steps[a] + piece[a]
        if places == list(range(len(offsets))):
            return list(order)
    return None

"""The problem's compulsory GM bytes, from the model rather than the program.

The simulator's chip ideal (`report["chip"]`) counts the compiled kernel's
arguments once: their bytes depend on the layouts the compiler chose, and so
on the core count. MobileNetV2's depthwise weights are host-made compact
[C1, Kh*Kw, 16] on one core but were diagonal fractals (16x the bytes) on
two or more, so its ideal read 6,267 cycles on one core against 7,725 on
32; BERT's biases are 128-row fractals in the program (3.5 MB of its 18.5,
against the model's 27 KB). A figure to compare core counts and schedules
with must not move with them: `model_gm_bytes` counts what the model gives,
once:

* every input and output as the device holds it (the interface's ports);
* every initializer (and `Constant` node) the graph reads as data, in the
  type the device holds it in: a float read by the cube (a MatMul's or
  Gemm's operand, a Conv's weights, directly or through a layout op the
  import folds on the host) as f16, the cube's input type; any other float,
  and 8/16/32-bit integers, in their own type; i64 as i32.

Not counted: an initializer only read as a shape, axes, pads or sizes (the
import folds it into the program), and a single value (a scale, a Clip
bound: an immediate of the instruction that uses it). A table only
`Gather`s read counts the rows they can read, at most one per index: BERT's
30,522-token embeddings are 94 MB, of which 128 token ids read 393 KB (the
whole table made the ideal of a one-layer export 91,596 cycles on 32
cores, above the 43,777 it ran).
"""

from __future__ import annotations

import math
from typing import Iterable

import numpy as np

# (op type, input index): inputs the import reads on the host only
HOST_INPUTS: dict[str, tuple[int, ...]] = {
    "Reshape": (1,), "Expand": (1,), "Tile": (1,), "Slice": (1, 2, 3, 4), "Squeeze": (1,),
    "Unsqueeze": (1,), "Pad": (1, 3), "Resize": (1, 2, 3), "Split": (1,), "TopK": (1,),
    "ConstantOfShape": (0,), "Range": (0, 1, 2), "OneHot": (1,),
    **{op: (1,) for op in ("ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd",
                           "ReduceL2", "ReduceSumSquare", "ReduceLogSumExp")},
}
# (op type, input index): operands the cube reads (f16 on device for a float)
CUBE_INPUTS: dict[str, tuple[int, ...]] = {
    "MatMul": (0, 1), "Gemm": (0, 1), "Conv": (1,), "ConvTranspose": (1,),
}
# Ops the import folds on the host when their data input is a constant: a
# constant read through them is read as their consumers read it.
HOST_FOLDED = ("Transpose", "Reshape", "Identity", "Squeeze", "Unsqueeze", "Flatten", "Cast")
FLOAT_KINDS = "f"


def model_gm_bytes(model, ports: Iterable) -> int:
    """The bytes a run of `model` must move between GM and the cores at
    least: its inputs and outputs (`ports`, the compiled interface's: each
    with `shape` and its device `dtype`) and its constant data, each once."""
    return ports_bytes(ports) + constant_bytes(model)


def ports_bytes(ports: Iterable) -> int:
    """The bytes of the interface's inputs and outputs, as the device holds them."""
    from npu.ir import element_bytes

    return sum(math.prod(p.shape) * element_bytes(p.dtype) for p in ports)


def constant_bytes(model) -> int:
    """The bytes of the constant data `model` reads, each once, as the device
    holds it. From each tensor's dims and type only: reading the data of
    BERT-12's 340 MB of weights would cost the compile that asks."""
    readers: dict[str, list[tuple[str, int, object]]] = {}
    for node in model.graph.node:
        for i, name in enumerate(node.input):
            readers.setdefault(name, []).append((node.op_type, i, node))
    total = 0
    shapes: dict[str, list[int]] | None = None  # static dims by value, inferred once if needed
    for name, (size, dtype) in _constants(model).items():
        reads = _data_reads(name, readers) if size > 1 else []
        if not reads:
            continue
        gathers = [g for g in reads if g[0] == "Gather"]
        if gathers and len(gathers) == len(reads) and all(i == 0 for _, i, _ in gathers):
            shapes = _static_shapes(model) if shapes is None else shapes
            size = min(size, sum(_rows_read(size, g, shapes) for g in gathers))
        total += size * _device_bytes(dtype, any(i in CUBE_INPUTS.get(op, ())
                                                 for op, i, _ in reads))
    return total


def _rows_read(size: int, gather: tuple, shapes: dict[str, list[int]]) -> int:
    """The elements of a table (`size` of them) one Gather can read: a row
    (the table's slice at one index of its axis) per index; all of it when
    the count of indices is not known."""
    _, _, node = gather
    ids, table = shapes.get(node.input[1]), shapes.get(node.input[0])
    if ids is None or not table:
        return size
    axis = next((a.i for a in node.attribute if a.name == "axis"), 0) % len(table)
    return size // table[axis] * min(table[axis], math.prod(ids))


def _static_shapes(model) -> dict[str, list[int]]:
    """The static dims of the model's values (shape inference on its
    skeleton) and of its constants, by name."""
    from npu.frontend.onnx_skeleton import infer_shapes

    shapes: dict[str, list[int]] = {}
    try:
        inferred = infer_shapes(model, data_prop=True).graph
    except Exception:  # a model inference rejects: every table counts whole
        return shapes
    for info in list(inferred.input) + list(inferred.value_info):
        dims = [d.dim_value if d.HasField("dim_value") else None
                for d in info.type.tensor_type.shape.dim]
        if dims and all(dims):
            shapes[info.name] = dims
    shapes.update((t.name, list(t.dims)) for t in model.graph.initializer)
    shapes.update((node.output[0], list(a.t.dims)) for node in model.graph.node
                  if node.op_type == "Constant" for a in node.attribute if a.name == "value")
    return shapes


def _constants(model) -> dict[str, tuple[int, np.dtype]]:
    """(elements, numpy type) of the graph's initializers and `Constant`
    nodes' values, by name."""
    from onnx.helper import tensor_dtype_to_np_dtype

    tensors = {t.name: t for t in model.graph.initializer}
    for node in model.graph.node:
        if node.op_type == "Constant":
            for a in node.attribute:
                if a.name == "value":
                    tensors[node.output[0]] = a.t
    return {name: (math.prod(t.dims), np.dtype(tensor_dtype_to_np_dtype(t.data_type)))
            for name, t in tensors.items()}


def _data_reads(name: str, readers) -> list[tuple[str, int, object]]:
    """(op type, input index, node) of every read of `name` as data,
    following the host-folded layout ops."""
    out, todo, seen = [], [name], set()
    while todo:
        value = todo.pop()
        if value in seen:
            continue
        seen.add(value)
        for op, i, node in readers.get(value, []):
            if i in HOST_INPUTS.get(op, ()):
                continue
            if op in HOST_FOLDED and i == 0:
                todo.extend(node.output[:1])
            else:
                out.append((op, i, node))
    return out


def _device_bytes(dtype: np.dtype, cube: bool) -> int:
    """Bytes of one element on the device."""
    if dtype.kind == FLOAT_KINDS:
        return 2 if cube else min(dtype.itemsize, 4)
    if dtype == np.bool_:
        return 1
    return min(dtype.itemsize, 4)


def model_chip(report: dict, ports: Iterable, constants: int, target) -> dict:
    """`report["chip"]` with the model's GM bytes (`ports` and `constants`
    bytes of data), not the compiled arguments': the README example's ideal
    is 277 cycles, not 411."""
    from npu.simulator.report import chip_ideal

    return chip_ideal(report, report["chip"]["cube_cycles"], target,
                      ports_bytes(ports) + constants, "model")

"""A constant per-channel scale after a Linear, folded into the Linear's weights.

ConvNeXt, CaiT and DINOv2 end each block with a learned LayerScale,
`gamma * Linear(h)`; torchvision's ConvNeXt applies it after the Transpose
that takes the Linear's NHWC output back to NCHW (`gamma` shaped [C, 1, 1]).
On the device that Mul is a vector pass of its own over the whole map, with
a GM round trip and, on many cores, a phase. With the Linear's weight `W`
([K, N]) and bias `b` constant it folds away: `W' = W * g`, `b' = b * g`
along N, computed in f64 and rounded once to the weight's type.

A scale is folded only where the scaled weights keep the cube's precision:
in every column the largest |W' [k, n]| is at least f16's smallest normal
number, so no column's rounding goes below f16's relative precision (a
freshly initialised ConvNeXt's 1e-6 layer scale would push whole columns
into f16 subnormals; its Mul stays), and none exceeds f16's largest.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

F16_SMALLEST_NORMAL = float(np.finfo(np.float16).tiny)
F16_LARGEST = float(np.finfo(np.float16).max)


@dataclass
class _Chain:
    """The nodes between a MatMul with a constant weight and the scaling Mul."""
    mul: object
    scale: np.ndarray        # the scale as one value per output column (N,) or a scalar
    matmul: object
    bias_add: object | None  # Add(matmul, constant bias)
    bias_slot: int           # which input of bias_add is the bias
    last: object             # the node whose output the Mul reads


def fold_layer_scales(model, types: dict | None = None) -> list[str]:
    """Fold (in place) every foldable scale; the names of the Muls folded away.
    `types` (`onnx_fold.inferred_types`, computed when None) learns the new
    weights' names, so later rewrites see their shapes."""
    from npu.frontend.onnx_fold import graph_uses, inferred_types, remove_dead_nodes, replace_nodes

    graph = model.graph
    if not any(n.op_type == "Mul" for n in graph.node):
        return []
    uses = graph_uses(graph)
    chains = []
    for node in graph.node:
        if node.op_type != "Mul" or node.domain not in ("", "ai.onnx"):
            continue
        if types is None:
            types = inferred_types(model)
            if types is None:
                return []
        chain = _chain(node, uses, types)
        if chain is not None and _keeps_precision(chain, uses.inits):
            chains.append(chain)
    if not chains:
        return []
    renamed = {chain.last.output[0] for chain in chains}  # the values the Muls read: gone
    new_inits = [made for chain in chains for made in _fold(chain, uses.inits)]
    types.update({t.name: (list(t.dims), t.data_type) for t in new_inits})
    folded = {id(chain.mul) for chain in chains}
    kept_info = [v for v in graph.value_info if v.name not in renamed]
    del graph.value_info[:]
    graph.value_info.extend(kept_info)
    graph.initializer.extend(new_inits)
    replace_nodes(graph, [n for n in graph.node if id(n) not in folded])
    remove_dead_nodes(model)
    return [chain.mul.name for chain in chains]


def _chain(mul, uses, types) -> _Chain | None:
    from onnx import numpy_helper

    consts = [i for i, name in enumerate(mul.input) if name in uses.inits]
    if len(mul.input) != 2 or len(consts) != 1:
        return None
    scale = numpy_helper.to_array(uses.inits[mul.input[consts[0]]])
    value = mul.input[1 - consts[0]]
    last = uses.producers.get(value)
    if last is None or not _read_once(value, uses):
        return None
    dims = (types.get(value) or (None, 0))[0]
    if not dims:
        return None
    axis = len(dims) - 1  # where the Linear's output columns are in the Mul's operand
    inner = last
    if last.op_type == "Transpose":
        perm = next((list(a.ints) for a in last.attribute if a.name == "perm"), None)
        if perm is None or not _read_once(last.input[0], uses):
            return None
        axis = perm.index(len(dims) - 1)
        inner = uses.producers.get(last.input[0])
    bias_add, bias_slot, matmul = None, 0, inner
    if inner is not None and inner.op_type == "Add":
        slots = [i for i, name in enumerate(inner.input) if name in uses.inits]
        if len(slots) != 1 or not _read_once(inner.input[1 - slots[0]], uses):
            return None
        bias_add, bias_slot = inner, slots[0]
        matmul = uses.producers.get(inner.input[1 - slots[0]])
    if matmul is None or matmul.op_type != "MatMul" or matmul.input[1] not in uses.inits:
        return None
    weight = uses.inits[matmul.input[1]]
    if len(weight.dims) != 2 or weight.data_type != uses.inits[mul.input[consts[0]]].data_type:
        return None
    columns = _columns(scale, len(dims), axis, int(weight.dims[1]))
    if columns is None:
        return None
    if bias_add is not None and uses.inits[bias_add.input[bias_slot]].data_type != weight.data_type:
        return None
    return _Chain(mul, columns, matmul, bias_add, bias_slot, last)


def _read_once(name: str, uses) -> bool:
    return uses.readers.get(name, 0) == 1 and name not in uses.outputs


def _columns(scale: np.ndarray, rank: int, axis: int, n: int) -> np.ndarray | None:
    """The scale as one value per column (or one for all), when it varies
    along `axis` only and does not broadcast the Mul's other operand."""
    if scale.ndim > rank:
        return None
    full = (1,) * (rank - scale.ndim) + scale.shape
    if any(d != 1 for i, d in enumerate(full) if i != axis) or full[axis] not in (1, n):
        return None
    return scale.reshape(-1) if full[axis] == n else scale.reshape(())


def _keeps_precision(chain: _Chain, inits) -> bool:
    from onnx import numpy_helper

    if not np.issubdtype(chain.scale.dtype, np.floating):
        return False
    weight = numpy_helper.to_array(inits[chain.matmul.input[1]]).astype(np.float64)
    scaled = np.abs(weight * chain.scale.astype(np.float64))
    largest = scaled.max(axis=0)
    live = largest > 0
    return bool(np.all(largest[live] >= F16_SMALLEST_NORMAL) and np.all(largest <= F16_LARGEST))


def _fold(chain: _Chain, inits) -> list:
    """The scaled weight (and bias) as new initializers; the chain's last node
    writes the Mul's output."""
    from onnx import numpy_helper

    scale = chain.scale.astype(np.float64)
    weight = numpy_helper.to_array(inits[chain.matmul.input[1]])
    made = [numpy_helper.from_array((weight.astype(np.float64) * scale).astype(weight.dtype),
                                    f"{chain.matmul.name}/layer_scaled_weight")]
    chain.matmul.input[1] = made[0].name
    if chain.bias_add is not None:
        bias = numpy_helper.to_array(inits[chain.bias_add.input[chain.bias_slot]])
        made.append(numpy_helper.from_array((bias.astype(np.float64) * scale).astype(bias.dtype),
                                            f"{chain.bias_add.name}/layer_scaled_bias"))
        chain.bias_add.input[chain.bias_slot] = made[-1].name
    chain.last.output[0] = chain.mul.output[0]
    return made

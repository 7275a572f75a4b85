"""Constant folding of an ONNX graph with static shapes, before the op check.

Exporters leave shape plumbing in the graph even when every shape is static:
`Shape -> Gather -> Unsqueeze -> Concat -> Reshape`, `ConstantOfShape`,
`Range`, masks built by `Expand`/`Where`/`Equal` on constants, `Cast`s of
constants. None of it depends on the inputs' values, so none of it needs to
run on the device, nor to be an operator we "support": here it is computed
once, on the host, and the dead nodes are removed. Gathers with constant
indices that only move data become a Reshape or Slice, and data movement
that moves nothing an Identity (`onnx_indexing`). Only what is left is
checked against the operators we compile.

Each node is evaluated by onnx's reference evaluator at the model's own
opset; `Shape` and `Size` read the (static) inferred shape of their input.
A node that the evaluator cannot run, or whose result would be larger than
`FOLD_MAX_BYTES`, is left in the graph as it was. The nodes that remain keep
their names (the locations of everything downstream).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from npu.frontend.onnx_indexing import as_data_movement, as_identity

# A folded result up to this size becomes an initializer; a larger one (an
# attention mask expanded to heads x seq x seq at a long sequence, say) stays
# a node, so the model never grows by more than this per node. A tool limit.
FOLD_MAX_BYTES = 16 << 20

# Ops never folded: their results are not a function of their inputs
# (random), or they hold subgraphs whose outer-scope reads we do not track.
NOT_FOLDED = frozenset({"RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike",
                        "Multinomial", "Bernoulli", "If", "Loop", "Scan", "Constant"})

# Rounds of (shape inference, folding): a folded Reshape shape gives a static
# shape to a value whose `Shape` the next round folds. Folding stops when a
# round folds nothing; a chain of blocks each reading the shape the block
# before it gave takes a round or two per block (MobileViT's 9 transformer
# layers 10 rounds, Swin-T's 12 blocks 18). A tool limit, far above that.
MAX_ROUNDS = 256

@dataclass
class FoldResult:
    """What `fold_constants` did: the nodes folded (or gathers rewritten as
    data movement), and the dead nodes removed, by name."""
    folded: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)


def fold_constants(model) -> FoldResult:
    """Fold, in place, every node of `model`'s main graph whose result is known
    at compile time, then remove the nodes and initializers nothing uses."""
    result = FoldResult()
    values = _Values(model)
    for _ in range(MAX_ROUNDS):
        types = inferred_types(model)
        if types is None:  # the checks that follow name the problem
            break
        folded = _fold_round(model, types, values)
        if not folded:
            break
        result.folded.extend(folded)
    bypass_identities(model)
    result.removed = remove_dead_nodes(model)
    return result


def bypass_identities(model) -> None:
    """Readers of an `Identity`'s output read its input instead (the node is
    then dead), unless the output is a graph output or a subgraph could read
    it by name."""
    graph = model.graph
    if any(a.HasField("g") or len(a.graphs) for n in graph.node for a in n.attribute):
        return
    outputs = {o.name for o in graph.output}
    alias = {n.output[0]: n.input[0] for n in graph.node
             if n.op_type == "Identity" and n.domain in ("", "ai.onnx") and len(n.input) == 1
             and len(n.output) == 1 and n.output[0] not in outputs}
    if not alias:
        return

    def source(name: str) -> str:
        seen = set()
        while name in alias and name not in seen:
            seen.add(name)
            name = alias[name]
        return name

    for node in graph.node:
        for i, name in enumerate(node.input):
            if name in alias:
                node.input[i] = source(name)


class _Values:
    """Constant values by name: initializers and Constant nodes, read lazily."""

    def __init__(self, model) -> None:
        self.inits = {t.name: t for t in model.graph.initializer}
        self.constant_nodes = {n.output[0]: n for n in model.graph.node
                               if n.op_type == "Constant" and n.domain in ("", "ai.onnx") and n.output}
        self.cache: dict[str, np.ndarray] = {}

    def known(self, name: str) -> bool:
        return name in self.cache or name in self.inits or name in self.constant_nodes

    def get(self, name: str, opset: int) -> np.ndarray:
        if name not in self.cache:
            from onnx import numpy_helper

            if name in self.inits:
                self.cache[name] = numpy_helper.to_array(self.inits[name])
            else:
                self.cache[name] = _evaluate(self.constant_nodes[name], {}, opset)[0]
        return self.cache[name]

    def add(self, name: str, value: np.ndarray) -> None:
        self.cache[name] = value


def inferred_types(model) -> dict[str, tuple[list[int] | None, int]] | None:
    """Every value's (static dims or None, element type), or None when shape
    inference fails (run on the model's skeleton, `onnx_skeleton`)."""
    from npu.frontend.onnx_checks import value_types
    from npu.frontend.onnx_skeleton import infer_shapes

    try:
        inferred = infer_shapes(model, data_prop=True)
    except Exception:  # noqa: BLE001 - any refusal: the checks report it
        return None
    return value_types(inferred)


def _opset(model) -> int:
    import onnx

    return next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")),
                onnx.defs.onnx_opset_version())


def _fold_round(model, types, values: _Values) -> list[str]:
    """One pass in graph order; the names of the nodes folded or rewritten.
    A node is changed only when onnx's checker accepts it as it stands: a
    fold or rewrite must not hide an invalid node from the checks."""
    from onnx import helper, numpy_helper

    opset = _opset(model)
    graph_outputs = {o.name for o in model.graph.output}
    value = lambda name: values.get(name, opset)  # noqa: E731
    folded, kept = [], []
    for node in model.graph.node:
        outputs = _fold_node(node, types, values, opset)
        if outputs is not None and len(outputs) > 1 and graph_outputs & set(outputs):
            outputs = None
        moved = None
        if outputs is None:
            same = as_identity(node, types, values.known, value)
            moved = ([same], []) if same is not None else as_data_movement(
                node, types, values.known, value, lambda n, feeds: _evaluate(n, feeds, opset))
        if (outputs is None and moved is None) or not _valid(node, types, values, model, opset):
            kept.append(node)
            continue
        folded.append(node.name)
        if moved is not None:
            kept.extend(moved[0])
            for t in moved[1]:
                model.graph.initializer.append(t)
                values.inits[t.name] = model.graph.initializer[-1]
            continue
        for name, result in outputs.items():
            values.add(name, result)
            if name in graph_outputs:
                # An output of the graph stays a node, by name: a Constant.
                constant = helper.make_node("Constant", [], [name], name=node.name,
                                            value=numpy_helper.from_array(result, name))
                kept.append(constant)
                values.constant_nodes[name] = constant
            else:
                model.graph.initializer.append(numpy_helper.from_array(result, name))
                values.inits[name] = model.graph.initializer[-1]
    if folded:
        replace_nodes(model.graph, kept)
    return folded


# Constant inputs up to this many elements are given to the checker with
# their values (a Reshape's shape); larger ones by their type only.
_CHECK_VALUES = 4096


def _valid(node, types, values: _Values, model, opset: int) -> bool:
    """onnx's full checker (strict shape inference) accepts `node` alone,
    with its inputs' and outputs' inferred types."""
    import onnx
    from onnx import helper, numpy_helper

    inputs, inits = [], []
    for name in dict.fromkeys(i for i in node.input if i):
        dims, elem = types.get(name, (None, 0))
        if values.known(name) and (dims is None or np.prod(dims, dtype=np.int64) <= _CHECK_VALUES):
            inits.append(numpy_helper.from_array(np.asarray(values.get(name, opset)), name))
        elif elem:
            inputs.append(helper.make_tensor_value_info(name, elem, dims))
        else:
            return False
    outputs = []
    for name in node.output:
        dims, elem = types.get(name, (None, 0))
        if name and elem:
            outputs.append(helper.make_tensor_value_info(name, elem, dims))
    graph = helper.make_graph([node], "check", inputs, outputs, inits)
    tiny = helper.make_model(graph, opset_imports=list(model.opset_import), ir_version=model.ir_version)
    try:
        onnx.checker.check_model(tiny, full_check=True)
    except Exception:  # noqa: BLE001 - invalid: the checks that follow name it
        return False
    return True


def _fold_node(node, types, values: _Values, opset: int) -> dict[str, np.ndarray] | None:
    """The node's outputs, when all are known now and small enough; else None."""
    if node.domain not in ("", "ai.onnx") or node.op_type in NOT_FOLDED or not node.output:
        return None
    if any(values.known(out) for out in node.output if out):
        return None  # already folded (a Constant kept as a graph output)
    outputs = [out for out in node.output if out]
    if len(outputs) != len(node.output):
        return None  # optional outputs left out: keep the node whole
    for out in outputs:
        dims, elem = types.get(out, (None, 0))
        if dims is None or not _fits(dims, elem):
            return None
    if node.op_type in ("Shape", "Size"):
        dims = types.get(node.input[0], (None, 0))[0] if node.input else None
        if dims is None:
            return None
        return {outputs[0]: _shape_value(node, dims)}
    inputs = [name for name in node.input if name]
    if not all(values.known(name) for name in inputs):
        return None
    try:
        feeds = {name: values.get(name, opset) for name in inputs}
        with np.errstate(all="ignore"):  # inf and NaN are values (a mask's -inf)
            results = _evaluate(node, feeds, opset)
    except Exception:  # noqa: BLE001 - the evaluator cannot run it: keep the node
        return None
    got = {}
    for out, value in zip(outputs, results):
        value = np.asarray(value)
        dims, elem = types[out]
        if list(value.shape) != dims or not _same_type(value, elem):
            return None  # not what the model declares: leave it to the checks
        got[out] = value
    return got


def _fits(dims: list[int], elem: int) -> bool:
    from npu.frontend.onnx_checks import element_bytes

    return int(np.prod(dims, dtype=object)) * element_bytes(elem) <= FOLD_MAX_BYTES


def _same_type(value: np.ndarray, elem: int) -> bool:
    from onnx import helper

    try:
        return value.dtype == np.dtype(helper.tensor_dtype_to_np_dtype(elem))
    except (KeyError, TypeError, ValueError):
        return False


def _shape_value(node, dims: list[int]) -> np.ndarray:
    """`Shape` (with its opset-15 start/end) or `Size` of a static shape."""
    if node.op_type == "Size":
        return np.array(int(np.prod(dims, dtype=np.int64)), dtype=np.int64)
    attrs = {a.name: a.i for a in node.attribute}
    rank = len(dims)
    start, end = attrs.get("start", 0), attrs.get("end", rank)
    start = min(max(start + rank if start < 0 else start, 0), rank)
    end = min(max(end + rank if end < 0 else end, 0), rank)
    return np.array(dims[start:end], dtype=np.int64)


def _gather_elements(node, data: np.ndarray, indices: np.ndarray) -> list[np.ndarray]:
    axis = next((a.i for a in node.attribute if a.name == "axis"), 0)
    indices = np.where(indices < 0, indices + data.shape[axis], indices)
    return [np.take_along_axis(data, indices, axis=axis)]


def _dequantize_linear(node, x: np.ndarray, scale: np.ndarray,
                       zero_point: np.ndarray | None = None) -> list[np.ndarray]:
    """(x - zp) * scale, one scale (and zero point) or one per `axis` entry."""
    attrs = {a.name: a.i for a in node.attribute}
    if attrs.get("block_size", 0) or x.dtype.kind not in "iu":
        raise NotImplementedError("blocked or non-integer DequantizeLinear")
    zp = np.zeros((), np.int64) if zero_point is None else zero_point.astype(np.int64)
    if scale.ndim:
        axis = attrs.get("axis", 1) % x.ndim
        shape = [1] * x.ndim
        shape[axis] = -1
        scale, zp = scale.reshape(shape), zp.reshape(shape) if zp.ndim else zp
    return [(x.astype(np.int64) - zp).astype(scale.dtype) * scale]


# Ops evaluated in numpy here: onnx's reference GatherElements (1.23) fails on
# an index of another shape than its data ("cannot reshape array of size 1");
# its DequantizeLinear exists from opset 19 only.
_NUMPY_OPS = {"GatherElements": _gather_elements, "DequantizeLinear": _dequantize_linear}


def _evaluate(node, feeds: dict[str, np.ndarray], opset: int) -> list[np.ndarray]:
    """Run one node with onnx's reference evaluator at `opset`."""
    from onnx import helper
    from onnx.reference import ReferenceEvaluator

    if node.op_type in _NUMPY_OPS:
        return _NUMPY_OPS[node.op_type](node, *(feeds[n] for n in node.input))

    graph = helper.make_graph(
        [node], "fold", [helper.make_empty_tensor_value_info(n) for n in feeds],
        [helper.make_empty_tensor_value_info(n) for n in node.output if n])
    return list(ReferenceEvaluator(graph, opsets={"": opset}).run(None, feeds))


@dataclass(frozen=True)
class GraphUses:
    """Who makes and how many read each value of a graph: what a rewrite
    that folds a node away must know (its output read once, by the node
    it folds into, and not a graph output)."""
    inits: dict
    producers: dict
    readers: dict[str, int]
    outputs: frozenset[str]


def graph_uses(graph) -> GraphUses:
    readers: dict[str, int] = {}
    for n in graph.node:
        for name in n.input:
            readers[name] = readers.get(name, 0) + 1
    return GraphUses({t.name: t for t in graph.initializer},
                     {out: n for n in graph.node for out in n.output}, readers,
                     frozenset(v.name for v in graph.output))


def remove_dead_nodes(model) -> list[str]:
    """Remove the nodes whose outputs nothing reads, then the unread
    initializers (and their graph-input entries); the removed node names."""
    graph = model.graph
    needed = {o.name for o in graph.output}
    keep = []
    for node in reversed(graph.node):
        if any(out in needed for out in node.output):
            keep.append(node)
            needed.update(i for i in node.input if i)
            needed.update(_subgraph_reads(node))
    removed = [n.name for n in graph.node if not any(out in needed for out in n.output)]
    dead = {out for n in graph.node for out in n.output if out not in needed}
    if removed:
        replace_nodes(graph, keep[::-1])
    unread = {t.name for t in graph.initializer} - needed
    if unread:
        kept_inits = [t for t in graph.initializer if t.name not in unread]
        del graph.initializer[:]
        graph.initializer.extend(kept_inits)
        kept_inputs = [v for v in graph.input if v.name not in unread]
        del graph.input[:]
        graph.input.extend(kept_inputs)
    gone = unread | dead
    kept_info = [v for v in graph.value_info if v.name not in gone]
    if len(kept_info) != len(graph.value_info):
        del graph.value_info[:]
        graph.value_info.extend(kept_info)
    return removed


def replace_nodes(graph, nodes: list) -> None:
    """`graph.node` := copies of `nodes` (a repeated field's elements are not
    safe to hold across its clearing)."""
    import onnx

    copies = []
    for node in nodes:
        copy = onnx.NodeProto()
        copy.CopyFrom(node)
        copies.append(copy)
    del graph.node[:]
    graph.node.extend(copies)


def _subgraph_reads(node) -> set[str]:
    """Every name read inside the node's subgraphs (outer-scope reads included)."""
    names: set[str] = set()
    for attr in node.attribute:
        for g in ([attr.g] if attr.HasField("g") else []) + list(attr.graphs):
            for inner in g.node:
                names.update(i for i in inner.input if i)
                names.update(_subgraph_reads(inner))
    return names

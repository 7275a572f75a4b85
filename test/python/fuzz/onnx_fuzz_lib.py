"""The ONNX side of the fuzz suite: a seed corpus of small valid models built
with onnx.helper, and seeded mutations of every layer of a model (its bytes,
graph, attributes, dtypes, shapes, initializers, opsets) and of its
`--inputs` file.

A mutant is a `Mutant`: the model (a ModelProto, or raw bytes once the
serialization itself was mutated), what was done to it (`kind`, and a
`detail` dict the KNOWN predicates read), and optionally an `--inputs` file's
bytes. Everything derives from a `random.Random`, so a test id reproduces it.
"""

from __future__ import annotations

import io
import random
from dataclasses import dataclass, field

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET, IR_VERSION = 17, 9  # onnxruntime 1.31 reads IR <= 13
EXTREME_INTS = (0, 1, -1, 2, 3, 2**31 - 1, 2**31, 2**32, -(2**31), -(2**62), 2**62, 2**63 - 1)
EXTREME_FLOATS = (0.0, -0.0, 1e-45, 1e30, 3.4e38, 1e300, float("inf"), float("-inf"), float("nan"))
DIMS = (0, 1, 2, 2**31, -1, -5, "N", "")
DTYPES = sorted(v for v in TensorProto.DataType.values() if v != TensorProto.UNDEFINED) + [0, 99]


@dataclass
class Mutant:
    seed_name: str
    model: onnx.ModelProto | bytes
    kind: str = "none"
    detail: dict = field(default_factory=dict)
    inputs: bytes | None = None  # an --inputs file's content
    inputs_suffix: str = ".npz"

    def model_bytes(self) -> bytes:
        return self.model if isinstance(self.model, bytes) else self.model.SerializeToString()


# ----------------------------------------------------------------------------
# Seed corpus: each model valid, small, and passing `npu-run --check`.
# ----------------------------------------------------------------------------


def _info(name, shape, t=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, t, shape)


def _model(nodes, inputs, outputs, inits=()) -> onnx.ModelProto:
    g = helper.make_graph(nodes, "g", [_info(*i) for i in inputs], [_info(*o) for o in outputs],
                          [numpy_helper.from_array(a, n) for n, a in inits])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET)], ir_version=IR_VERSION)
    onnx.checker.check_model(m, full_check=True)
    return m


def _w(rng, *shape):
    return (rng.standard_normal(shape) * 0.3).astype(np.float32)


def seeds() -> dict[str, onnx.ModelProto]:
    rng = np.random.default_rng(0)
    n = helper.make_node
    return {
        "mlp": _model([n("Gemm", ["x", "w1", "b1"], ["h"], name="fc1", transB=1),
                       n("Relu", ["h"], ["r"], name="relu"),
                       n("MatMul", ["r", "w2"], ["m"], name="fc2"),
                       n("Add", ["m", "b2"], ["y"], name="bias")],
                      [("x", [4, 16])], [("y", [4, 16])],
                      [("w1", _w(rng, 24, 16)), ("b1", _w(rng, 24)), ("w2", _w(rng, 24, 16)),
                       ("b2", _w(rng, 16))]),
        "softmax": _model([n("Softmax", ["x"], ["y"], name="sm", axis=-1)],
                          [("x", [4, 16])], [("y", [4, 16])]),
        "layernorm": _model([n("LayerNormalization", ["x", "s", "b"], ["y"], name="ln", axis=-1,
                               epsilon=1e-5)],
                            [("x", [4, 32])], [("y", [4, 32])],
                            [("s", _w(rng, 32) + 1), ("b", _w(rng, 32))]),
        "gelu": _model([n("Div", ["x", "sqrt2"], ["d"], name="div"),
                        n("Erf", ["d"], ["e"], name="erf"),
                        n("Add", ["e", "one"], ["a"], name="add1"),
                        n("Mul", ["x", "a"], ["xm"], name="mul"),
                        n("Mul", ["xm", "half"], ["y"], name="half_mul")],
                       [("x", [4, 32])], [("y", [4, 32])],
                       [("sqrt2", np.array(2 ** 0.5, np.float32)), ("one", np.array(1, np.float32)),
                        ("half", np.array(0.5, np.float32))]),
        "reduce": _model([n("ReduceMean", ["x"], ["m"], name="mean", axes=[1], keepdims=1),
                          n("Sub", ["x", "m"], ["y"], name="center")],
                         [("x", [4, 16])], [("y", [4, 16])]),
        "reshape": _model([n("Transpose", ["x"], ["t"], name="tr", perm=[1, 0]),
                           n("Reshape", ["t", "shape"], ["y"], name="rs")],
                          [("x", [4, 8])], [("y", [2, 16])],
                          [("shape", np.array([2, 16], np.int64))]),
    }


# ----------------------------------------------------------------------------
# Mutations: (model, rng) -> Mutant fields (kind, detail, new model)
# ----------------------------------------------------------------------------


def _copy(m: onnx.ModelProto) -> onnx.ModelProto:
    c = onnx.ModelProto()
    c.CopyFrom(m)
    return c


def bytes_truncate(m, rng, seeds_):
    data = m.SerializeToString()
    cut = rng.randrange(len(data))
    return data[:cut], {"cut": cut}


def bytes_flip(m, rng, seeds_):
    data = bytearray(m.SerializeToString())
    spots = [rng.randrange(len(data)) for _ in range(rng.randint(1, 4))]
    for i in spots:
        data[i] ^= 1 << rng.randrange(8)
    return bytes(data), {"spots": spots}


def bytes_splice(m, rng, seeds_):
    data, other = m.SerializeToString(), rng.choice(seeds_).SerializeToString()
    i, j = rng.randrange(len(data)), rng.randrange(len(other))
    return data[:i] + other[j:j + rng.randint(1, 64)] + data[i + rng.randint(0, 16):], {}


def drop_node(m, rng, seeds_):
    i = rng.randrange(len(m.graph.node))
    op = m.graph.node[i].op_type
    del m.graph.node[i]
    return m, {"op": op}


def duplicate_node(m, rng, seeds_):
    node = m.graph.node[rng.randrange(len(m.graph.node))]
    m.graph.node.insert(rng.randrange(len(m.graph.node) + 1), node)
    return m, {"op": node.op_type}


def reorder_nodes(m, rng, seeds_):
    nodes = list(m.graph.node)
    rng.shuffle(nodes)
    del m.graph.node[:]
    m.graph.node.extend(nodes)
    return m, {"order": [n.name for n in nodes]}


def _values(m) -> list[str]:
    names = [i.name for i in m.graph.input] + [i.name for i in m.graph.initializer]
    return names + [o for n in m.graph.node for o in n.output] + ["nowhere", ""]


def rewire_input(m, rng, seeds_):
    node = m.graph.node[rng.randrange(len(m.graph.node))]
    k = rng.randrange(len(node.input))
    node.input[k] = rng.choice(_values(m))
    return m, {"op": node.op_type, "input": k, "to": node.input[k]}


def rewire_output(m, rng, seeds_):
    choice = rng.randrange(3)
    if choice == 0:  # a node writes an existing value (two writers / a cycle)
        node = m.graph.node[rng.randrange(len(m.graph.node))]
        node.output[0] = rng.choice(_values(m)[:-1])
        return m, {"op": node.op_type, "how": "node output", "to": node.output[0]}
    if choice == 1:  # the graph output names another value
        m.graph.output[0].name = rng.choice(_values(m))
        return m, {"how": "graph output", "to": m.graph.output[0].name}
    m.graph.output.append(m.graph.output[0])  # duplicate output name
    return m, {"how": "duplicate output"}


def remove_outputs(m, rng, seeds_):
    del m.graph.output[:]
    return m, {}


def _attr_node(m, rng):
    nodes = [n for n in m.graph.node if n.attribute]
    return rng.choice(nodes) if nodes else None


def attr_remove(m, rng, seeds_):
    node = _attr_node(m, rng)
    if node is None:
        return m, {"noop": True}
    k = rng.randrange(len(node.attribute))
    name = node.attribute[k].name
    del node.attribute[k]
    return m, {"op": node.op_type, "attr": name}


def attr_unknown(m, rng, seeds_):
    node = m.graph.node[rng.randrange(len(m.graph.node))]
    node.attribute.append(helper.make_attribute("bogus", rng.choice((1, 1.5, "s", [1, 2]))))
    return m, {"op": node.op_type}


def attr_value(m, rng, seeds_):
    """Wrong type, extreme int or extreme float for an existing attribute."""
    node = _attr_node(m, rng)
    if node is None:
        return m, {"noop": True}
    a = node.attribute[rng.randrange(len(node.attribute))]
    how = rng.choice(("type", "extreme"))
    if how == "type":
        value = rng.choice((1.5, "text", [1, 2, 3], [0.5], 7))
    elif a.type == onnx.AttributeProto.FLOAT:
        value = rng.choice(EXTREME_FLOATS)
    elif a.type == onnx.AttributeProto.INTS:
        value = [rng.choice(EXTREME_INTS) for _ in range(rng.randint(0, 3))]
    else:
        value = rng.choice(EXTREME_INTS)
    if isinstance(value, list) and not value:  # make_attribute cannot type an empty list
        new = helper.make_attribute(a.name, [], attr_type=a.type)
    else:
        new = helper.make_attribute(a.name, value)
    a.CopyFrom(new)
    return m, {"op": node.op_type, "attr": a.name, "how": how, "value": repr(value)}


def _tensor_types(m) -> list:
    return list(m.graph.input) + list(m.graph.output)


def change_dtype(m, rng, seeds_):
    dtype = rng.choice(DTYPES)
    if m.graph.initializer and rng.random() < 0.3:
        init = rng.choice(m.graph.initializer)
        init.data_type = dtype
        return m, {"where": "initializer", "name": init.name, "dtype": dtype}
    v = rng.choice(_tensor_types(m))
    v.type.tensor_type.elem_type = dtype
    where = "input" if v in m.graph.input else "output"
    return m, {"where": where, "name": v.name, "dtype": dtype}


def change_shape(m, rng, seeds_):
    v = rng.choice(_tensor_types(m))
    shape = v.type.tensor_type.shape
    how = rng.choice(("dim", "dim", "rank+", "rank-", "rank0", "unknown"))
    if how == "dim" and shape.dim:
        d = shape.dim[rng.randrange(len(shape.dim))]
        value = rng.choice(DIMS)
        if isinstance(value, str):
            d.dim_param = value
        else:
            d.dim_value = value
    elif how == "rank+":
        shape.dim.add().dim_value = rng.choice((1, 2, 4))
    elif how == "rank-" and shape.dim:
        del shape.dim[rng.randrange(len(shape.dim))]
    elif how == "rank0":
        del shape.dim[:]
    elif how == "unknown":
        v.type.tensor_type.ClearField("shape")
    return m, {"where": "input" if v in m.graph.input else "output", "name": v.name, "how": how,
               "dims": [d.dim_value if d.HasField("dim_value") else d.dim_param for d in shape.dim]}


BATCH_DIMS = (1, 0, 3, 2**31, 2**40, "N")


def change_batch(m, rng, seeds_):
    """The same leading dim on every graph input and output (a consistent
    model, unlike change_shape), or rank 0 throughout."""
    how = rng.choice(("dim0",) * 4 + ("rank0",))
    value = rng.choice(BATCH_DIMS)
    for v in _tensor_types(m):
        dims = v.type.tensor_type.shape.dim
        if how == "rank0":
            del dims[:]
        elif isinstance(value, str):
            dims[0].dim_param = value
        else:
            dims[0].dim_value = value
    return m, {"how": how, "value": value}


def change_initializer(m, rng, seeds_):
    if not m.graph.initializer:
        return m, {"noop": True}
    k = rng.randrange(len(m.graph.initializer))
    init = m.graph.initializer[k]
    if not init.raw_data:
        init.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(init), init.name))
    how = rng.choice(("short", "long", "dims", "missing", "empty"))
    if how == "short":
        init.raw_data = init.raw_data[:rng.randrange(len(init.raw_data))]
    elif how == "long":
        init.raw_data = init.raw_data + bytes(rng.randint(1, 64))
    elif how == "dims":
        del init.dims[:]
        init.dims.extend(rng.choice(([], [1], [3, 5], [2**31], [0], [-1])))
    elif how == "missing":
        del m.graph.initializer[k]
    else:
        init.ClearField("raw_data")
    return m, {"name": init.name if how != "missing" else None, "how": how}


def change_opset(m, rng, seeds_):
    how = rng.choice(("opset", "ir", "domain"))
    if how == "opset":
        m.opset_import[0].version = rng.choice((0, 1, 7, 99, -1))
        value = m.opset_import[0].version
    elif how == "ir":
        m.ir_version = rng.choice((0, 1, 3, 99))
        value = m.ir_version
    else:
        value = rng.choice(("com.foo", "ai.onnx.ml", "x"))
        m.graph.node[rng.randrange(len(m.graph.node))].domain = value
    return m, {"how": how, "value": value}


MODEL_MUTATIONS = (bytes_truncate, bytes_flip, bytes_splice, drop_node, duplicate_node,
                   reorder_nodes, rewire_input, rewire_output, remove_outputs, attr_remove,
                   attr_unknown, attr_value, change_dtype, change_shape, change_batch,
                   change_initializer, change_opset)


def mutate_model(name: str, seed_model, rng: random.Random, corpus: list) -> Mutant:
    fn = rng.choice(MODEL_MUTATIONS)
    model, detail = fn(_copy(seed_model), rng, corpus)
    return Mutant(name, model, fn.__name__, detail)


# ----------------------------------------------------------------------------
# --inputs files for an unmutated seed
# ----------------------------------------------------------------------------


def valid_inputs(m: onnx.ModelProto) -> dict[str, np.ndarray]:
    inits = {i.name for i in m.graph.initializer}
    return {v.name: np.ones([d.dim_value for d in v.type.tensor_type.shape.dim], np.float32)
            for v in m.graph.input if v.name not in inits}


def _npz(arrays: dict) -> bytes:
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    return buffer.getvalue()


INPUTS_KINDS = ("valid", "truncated", "wrong_name", "wrong_shape", "wrong_dtype", "extra", "object",
                "npy", "text", "empty")


def mutate_inputs(name: str, seed_model, rng: random.Random) -> Mutant:
    arrays = valid_inputs(seed_model)
    first = next(iter(arrays))
    how = rng.choice(INPUTS_KINDS)
    suffix = ".npz"
    if how == "truncated":
        data = _npz(arrays)
        data = data[:rng.randrange(len(data))]
    elif how == "wrong_name":
        data = _npz({first + "_": arrays[first]})
    elif how == "wrong_shape":
        data = _npz({first: np.ones(rng.choice(((), (1,), (2, 3), (4, 16, 1), (0, 16))),
                                    np.float32)})
    elif how == "wrong_dtype":
        dtype = rng.choice((np.float16, np.float64, np.int32, np.int64, np.bool_, np.uint8, "U3"))
        data = _npz({first: arrays[first].astype(dtype)})
    elif how == "extra":
        data = _npz({**arrays, rng.choice(("arg0", "extra", "y", first.upper())): arrays[first]})
    elif how == "object":
        data = _npz({first: np.array([None, 1], dtype=object)})
    elif how == "npy":
        buffer = io.BytesIO()
        np.save(buffer, arrays[first])
        data, suffix = buffer.getvalue(), ".npy"
    elif how == "text":
        data, suffix = b"1 2 3\n4 5 6\n", ".txt"
    elif how == "empty":
        data = b""
    else:
        rng_np = np.random.default_rng(rng.randrange(2**32))
        data = _npz({k: rng_np.uniform(-2, 2, a.shape).astype(np.float32) for k, a in arrays.items()})
    return Mutant(name, seed_model, "inputs", {"how": how}, data, suffix)

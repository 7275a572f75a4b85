"""The weights of an imported model kept out of the MLIR text: torch-mlir's
module gives its large constants' data to a dict (`detach_weights`), the
text goes through the parser with zero splats in their place, and the
parsed module takes the arrays back (`attach_weights`), without printing or
parsing 340 MB of BERT-12's weights."""

from __future__ import annotations

import re

import numpy as np

from npu.ir import WEIGHT_ATTR


def _constants(func, bindings) -> list:
    """The `arith.constant`s of `func`'s body, found by MLIR's walk
    (`bindings`: the `ir` module of its context). Iterating the body made an
    OpView of every op, which imports the Python module of each dialect met:
    torch-mlir's linalg builds its named ops, ~0.25 CPU s of every compile."""
    found = []
    skip, advance = bindings.WalkResult.SKIP, bindings.WalkResult.ADVANCE

    def visit(op):
        if op.name == "arith.constant":
            found.append(op)
        return advance if op.name == "func.func" else skip  # the body's ops, not theirs

    func.walk(visit, bindings.WalkOrder.PRE_ORDER)
    return found


def dense_context_cache(importer, context):
    """torch-mlir's per-context cache (`importer`: its `onnx_importer`
    module) making the attribute of a float initializer with raw data a
    dense one, as its ONNX-to-torch conversion makes of the resource the
    importer would give: the same IR, without the resource's copy of the
    data, which lived as long as the context (BERT-12's 340 MB, through the
    conversion, which reads these attributes' data as `detach_weights` left it)."""
    from torch_mlir import ir as tir

    class DenseCache(importer.ContextCache):
        def tensor_proto_to_attr(self, tp):
            dtype = _RAW_FLOATS.get(tp.data_type)
            if dtype is None or not tp.HasField("raw_data"):
                return super().tensor_proto_to_attr(tp)
            data = np.frombuffer(tp.raw_data, dtype).reshape(tuple(tp.dims))
            return tir.DenseElementsAttr.get(data, type=self.tensor_proto_to_builtin_type(tp))

    return DenseCache(context)


_RAW_FLOATS = {1: np.float32, 10: np.float16}  # onnx.TensorProto FLOAT, FLOAT16


# Constants with fewer elements stay in the text (detaching them saves nothing).
DETACH_MIN_ELEMENTS = 256


def detach_weights(func, tir, weights: dict) -> None:
    """Move the data of large, non-uniform `arith.constant`s of `func` into
    `weights`, leaving a zero splat and the key. Uniform ones stay: the
    parser would make them splats, which `attach_weights` must reproduce."""
    for op in _constants(func, tir):
        if not isinstance(op.results[0].type, tir.RankedTensorType):
            continue
        ttype = tir.RankedTensorType(op.results[0].type)
        if isinstance(ttype.element_type, tir.IntegerType) and tir.IntegerType(ttype.element_type).width == 1:
            continue
        try:
            dense = tir.DenseElementsAttr(op.attributes["value"])
        except (ValueError, TypeError):  # e.g. dense_resource
            continue
        if dense.is_splat or ttype.rank == 0 or np.prod(ttype.shape) < DETACH_MIN_ELEMENTS:
            continue
        # A read-only view of the attribute's storage (kept alive by the
        # view, and its context by the attribute): copying 85M weights of
        # a BERT-12 here cost a quarter of its import.
        data = np.asarray(dense).reshape(ttype.shape)
        key = f"w{len(weights)}"
        weights[key] = data
        zero = tir.FloatAttr.get(ttype.element_type, 0.0, loc=tir.Location.unknown()) if not isinstance(
            ttype.element_type, tir.IntegerType) else tir.IntegerAttr.get(ttype.element_type, 0)
        op.attributes["value"] = tir.DenseElementsAttr.get_splat(ttype, zero)
        op.attributes[WEIGHT_ATTR] = tir.StringAttr.get(key)


def attach_weights(module, weights: dict) -> None:
    """Put the detached data back into the parsed module (the inverse of
    `detach_weights`, without a text round trip)."""
    from mlir import ir

    if not weights:
        return
    with module.context:
        for func in module.body.operations:
            for op in func.regions[0].blocks[0].operations if func.operation.name == "func.func" else ():
                op = op.operation
                if WEIGHT_ATTR not in op.attributes:
                    continue
                key = ir.StringAttr(op.attributes[WEIGHT_ATTR]).value
                op.attributes["value"] = ir.DenseElementsAttr.get(weights[key], type=op.results[0].type)
                del op.attributes[WEIGHT_ATTR]


_DETACHED = re.compile(r'arith\.constant \{' + re.escape(WEIGHT_ATTR) + r' = "[^"]*"\} dense<[^>]*>')


def as_attached(text: str) -> str:
    """A module printed with its large elements elided (`large_elements_limit`),
    its detached constants shown as attached ones print: `npu.compile` gives
    the conversion the arrays and never attaches them (0.2 CPU s and a
    copy of BERT-12's 340 MB), but its linalg stage reads the same."""
    return _DETACHED.sub("arith.constant dense_resource<__elided__>", text)

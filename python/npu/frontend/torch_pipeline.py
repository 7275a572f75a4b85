"""torch-mlir's pipeline from the torch-onnx dialect to `linalg`, with its
shape reification run only where a type needs it.

`torch-onnx-to-torch-backend-pipeline` reifies shape and dtype functions
twice, and each time the pass parses torch-mlir's whole abstract
interpretation library: 0.9 of a small model's 1.0 CPU s in torch-mlir,
whatever the model's size. The frontend gives torch-mlir a model whose every
shape is static (ONNX shape inference, pinned inputs), so after the
conversion every tensor type is usually known already; then the reification
has nothing to compute, and the pipeline without it prints the same IR
(checked on the whole model corpus: `test_torch_pipeline.py`). A module with
any tensor type left unknown, or with shape computations, runs the full
pipeline.
"""

from __future__ import annotations

import re

# `torch-onnx-to-torch-backend-pipeline` as torch-mlir expands it, in three
# parts (a test checks that they still join to the expansion).
CONVERT = ("func.func(convert-torch-onnx-to-torch{allow-non-finites=true}),"
           "func.func(torch-decompose-complex-ops),func.func(canonicalize)")
SHAPES = ("torch-reify-shape-calculations,inline,func.func(torch-simplify-shape-calculations),"
          "func.func(cse),func.func(torch-simplify-shape-calculations),"
          "func.func(torch-drop-abstract-interp-calculations),func.func(torch-scalarize-shapes),"
          "torch-reify-shape-calculations,inline,func.func(torch-simplify-shape-calculations),"
          "func.func(cse),func.func(torch-simplify-shape-calculations),"
          "func.func(torch-drop-abstract-interp-calculations)")
FINISH = ("torch-refine-public-return,func.func(canonicalize),"
          "func.func(torch-decompose-complex-ops),func.func(canonicalize)")
TO_LINALG = "torch-backend-to-linalg-on-tensors-backend-pipeline"

FULL = f"builtin.module(torch-onnx-to-torch-backend-pipeline,{TO_LINALG})"

# A tensor type with static sizes and a known dtype, as torch-mlir prints it.
_KNOWN_TENSOR = re.compile(r"v?tensor<\[[0-9,]*\],(?!unk>)[^<>\[\],]+>")
# Ops whose results the shape passes compute (scalarize-shapes' inputs).
_SHAPE_OPS = frozenset({"torch.aten.size", "torch.aten.size.int", "torch.aten._shape_as_tensor",
                        "torch.aten.item", "torch.aten.numel", "torch.prim.NumToTensor.Scalar"})


# A list of tensors (torch.cat's operand) says nothing of its elements, whose
# own types are checked where they are defined.
_BARE_LIST_ELEMENT = re.compile(r"(?<=list<)(optional<)?v?tensor(?=>)")


def known_type(type_text: str) -> bool:
    """Whether every tensor in a printed type has static sizes and a dtype."""
    text = _BARE_LIST_ELEMENT.sub("", type_text)
    return text.count("tensor") == len(_KNOWN_TENSOR.findall(text))


def needs_shape_reification(module_op, tir) -> bool:
    """Whether any value of the converted module has a type the shape passes
    would refine, or is a shape computation they would fold."""
    needed = False

    def visit(op):
        nonlocal needed
        types = [r.type for r in op.results]
        types += [a.type for region in op.regions for block in region.blocks for a in block.arguments]
        if op.name in _SHAPE_OPS or not all(known_type(str(t)) for t in types):
            needed = True
            return tir.WalkResult.INTERRUPT
        return tir.WalkResult.ADVANCE

    module_op.walk(visit)
    return needed


def lower_to_linalg(module_op, tir, pass_manager) -> None:
    """Runs the whole pipeline on `module_op` (torch-onnx ops in, linalg out),
    its shape reification only where `needs_shape_reification`. Verified once
    at the end, not after each of the ~40 passes (0.2 of BERT-12's 0.85 CPU s
    in torch-mlir, for the same IR)."""
    def run(parts: str) -> None:
        manager = pass_manager.parse(f"builtin.module({parts})")
        manager.enable_verifier(False)
        manager.run(module_op)

    run(CONVERT)
    tail = [FINISH, TO_LINALG]
    if needs_shape_reification(module_op, tir):
        tail.insert(0, SHAPES)
    run(",".join(tail))
    module_op.verify()

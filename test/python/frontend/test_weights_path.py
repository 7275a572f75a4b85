"""How an ONNX model's weights reach the ascend module in `npu.compile`:
torch-mlir's importer makes them dense attributes (not resources, whose
copy of the data lived as long as the importer's context), the importer's
records die without a collection, and the conversion reads the detached
arrays instead of a linalg module they were attached to. Each path must
give the IR the other gives."""

from __future__ import annotations

import gc

import numpy as np

from onnx_models import mlp


def _asm(module) -> str:
    return module.operation.get_asm(enable_debug_info=True)


def test_dense_initializers_import_as_resources_did(monkeypatch):
    """The importer's output with dense initializer attributes is the text
    and the weights the resources gave."""
    from torch_mlir.extras import onnx_importer

    from npu.frontend import onnx_import

    dense = onnx_import.import_onnx(mlp(), "<model>", detach_weights=True)
    monkeypatch.setattr(onnx_import, "dense_context_cache",
                        lambda importer, ctx: importer.ContextCache(ctx))
    resource = onnx_import.import_onnx(mlp(), "<model>", detach_weights=True)
    assert dense.mlir == resource.mlir and "npu.weight" in dense.mlir
    assert list(dense.weights) == list(resource.weights) and len(dense.weights) >= 2
    for key, data in dense.weights.items():
        np.testing.assert_array_equal(data, resource.weights[key])


def test_import_leaves_no_garbage_holding_the_model():
    """With the collector off, the importer's model and graph records are
    gone once the import returns (their cycle is broken, not collected)."""
    from npu.frontend.onnx_import import import_onnx

    gc.collect()
    gc.disable()
    try:
        import_onnx(mlp(), "<model>", detach_weights=True)
        left = [o for o in gc.get_objects() if type(o).__name__ in ("ModelInfo", "GraphInfo")]
    finally:
        gc.enable()
    assert left == []


def test_detached_weights_convert_as_attached_ones():
    """`linalg_to_ascend` given the detached arrays makes the ascend module
    (data included) the attached linalg module makes; the linalg stage
    text reads the same."""
    from npu.frontend.compile import _short, import_linalg, linalg_to_ascend
    from npu.frontend.onnx_weights import as_attached
    from npu.ir import make_context

    model = mlp()
    linalg, ins, outs, locate = import_linalg(model, make_context(), "m.onnx")
    attached = linalg_to_ascend(linalg, ins, outs, locate, "m.onnx", make_context())
    weights: dict = {}
    kept, ins2, outs2, locate2 = import_linalg(model, make_context(), "m.onnx", None, weights)
    assert weights and "npu.weight" in str(kept)
    assert as_attached(_short(kept)) == _short(linalg) != _short(kept)
    detached = linalg_to_ascend(kept, ins2, outs2, locate2, "m.onnx", make_context(), weights)
    assert _asm(detached) == _asm(attached)


def test_compile_matches_the_attached_path():
    """`npu.compile` (detached weights) lowers to the module the attached
    path lowers to."""
    import npu
    from npu.frontend.compile import import_linalg, linalg_to_ascend
    from npu.ir import make_context
    from npu.pipeline import run_pipeline
    from npu.target import get_target

    model = mlp()
    kernel = npu.compile(model, cores=1)
    linalg, ins, outs, locate = import_linalg(model, make_context(), "<model>")
    module = linalg_to_ascend(linalg, ins, outs, locate, "<model>", make_context())
    run_pipeline(module, "npu-lower{cores=1}", get_target("ascend910"))
    assert _asm(module) == _asm(kernel.module)

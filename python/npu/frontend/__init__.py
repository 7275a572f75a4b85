"""The front door: models in, `ascend` out, compiled and run.

`onnx_import` (ONNX -> linalg through torch-mlir), `compile` (the
`npu.compile` API: import, `npu-linalg-to-ascend`, `npu-lower`, simulate),
`report` (the per-op breakdown), `bert` (the BERT builders of the benches).
The linalg -> ascend conversion itself is the pass
`npu.passes.linalg_to_ascend`.

May import anything below the drivers: `npu.pipeline`, `npu.passes`,
`npu.simulator` and the core; never `npu.tools` or `npu.tune`.
"""

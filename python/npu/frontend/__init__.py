"""The front door: models and upstream `linalg` on tensors in, `ascend` out.

`onnx_import` (ONNX -> linalg through torch-mlir), `linalg_eval` (numpy
oracle and host folding), `to_ascend` (the conversion and layout choice),
`compile` (the `npu.compile` API).
"""

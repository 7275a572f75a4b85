"""npu: an MLIR-based tensor compiler and cycle-approximate simulator for a
DaVinci-style matrix NPU. Sub-packages map onto the repository's top-level
folders: `npu.dialects` (dialects/), `npu.passes` (passes/), `npu.simulator`
(simulator/), `npu.tools` (tools/); the rest live in python/npu/.

Dependencies run one way (test/python/architecture/test_imports.py):
tools -> tune -> frontend -> pipeline -> passes -> kernels -> costmodel ->
analysis -> ir, dialects, target, diagnostics; the simulator beside the
passes, above analysis, hivm and reference."""


def compile(source, target: str | None = "ascend910", **options):
    """Compile an ONNX model or a linalg-on-tensors module into a `Kernel`
    (see `npu.frontend.compile`); `outputs, report = kernel(*arrays)`."""
    from npu.frontend.compile import compile as _compile

    return _compile(source, target=target, **options)

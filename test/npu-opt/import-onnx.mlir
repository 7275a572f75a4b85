// RUN: %PYTHON %S/Inputs/small_model.py %t.onnx
// RUN: npu-opt %t.onnx --npu-import-onnx | FileCheck %s --check-prefix=LINALG
// RUN: npu-opt %t.onnx --npu-import-onnx --npu-linalg-to-ascend | FileCheck %s --check-prefix=ASCEND
// RUN: echo "not a model" > %t.bad.onnx
// RUN: not npu-opt %t.bad.onnx --npu-import-onnx 2>&1 | FileCheck %s --check-prefix=BAD

// Every stage is text: the import gives upstream linalg on tensors, the
// conversion ascend ops on GM buffers with the model's names on the
// arguments.
// LINALG: func.func @small(%arg0: tensor<4x16xf32>) -> tensor<4x16xf32>
// LINALG: linalg.generic
// LINALG: arith.addf
// ASCEND: func.func @small(%arg0: memref<4x16xf32, "gm"> {npu.input = "x"}, %arg1: memref<4x16xf32, "gm"> {npu.output = "y"}
// ASCEND: "ascend.add"
// ASCEND: "ascend.maxs"
// ASCEND: "ascend.reduce_max"
// ASCEND: "ascend.exp"
// ASCEND: "ascend.reduce_sum"
// ASCEND: "ascend.reciprocal"
// ASCEND: "ascend.mul"({{.*}}, %arg1)
// BAD: bad.onnx: error: not an ONNX model

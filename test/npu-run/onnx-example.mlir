// The README's main job: the ONNX example compiles to hivm, simulates, and
// matches onnxruntime. (This file holds no IR; the model is the input.)
// RUN: npu-run %S/../../examples/ffn_block.onnx --check | FileCheck %s

// CHECK: target ascend910, entry @ffn_block
// CHECK: hazards: none
// CHECK: check: passed
// CHECK: per source op
// CHECK-DAG: gelu_erf (Erf)
// CHECK-DAG: layernorm (LayerNormalization)

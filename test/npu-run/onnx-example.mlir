// The README's main job: the ONNX example compiles to hivm, simulates, and
// matches onnxruntime. (This file holds no IR; the model is the input.)
// RUN: npu-run %S/../../examples/ffn_block.onnx --check | FileCheck %s

// CHECK: target ascend910, entry @ffn_block
// CHECK: hazards: none
// CHECK: check: passed
// CHECK: per source op
// The bias add and the GELU's steps (Div, Erf, Add, Mul, Mul) are one fused
// kernel, reported under its first member.
// CHECK-DAG: ffn_in_bias (Add)
// CHECK-DAG: layernorm (LayerNormalization)

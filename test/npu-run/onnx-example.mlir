// The README's main job: the ONNX example compiles to hivm, simulates, and
// matches onnxruntime. (This file holds no IR; the model is the input.)
// RUN: npu-run %S/../../examples/ffn_block.onnx --check | FileCheck %s

// CHECK: target ascend910, entry @ffn_block
// CHECK: hazards: none
// CHECK: check: passed
// CHECK: per source op
// The bias add and the GELU's steps (Div, Erf, Add, Mul, Mul) run in the
// drains of the first matmul (its epilogue: the bias is a host constant
// whose rows repeat), reported under the matmul.
// CHECK-DAG: ffn_in (MatMul)
// CHECK-DAG: layernorm (LayerNormalization)
// CHECK-NOT: ffn_in_bias
// CHECK-NOT: gelu_

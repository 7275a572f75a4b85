// RUN: %PYTHON %S/Inputs/plumbing_model.py %t.onnx
// RUN: npu-opt %t.onnx --npu-import-onnx | FileCheck %s
// RUN: npu-run %t.onnx --check | FileCheck %s --check-prefix=SIM

// The static-shape plumbing folds on the host before the op check (Shape,
// Gather, Unsqueeze, Concat, Range, Greater, ConstantOfShape, Where, Slice are
// not operators we compile): the Reshape's shape becomes a constant, the
// causal mask one 2x12 constant, and the dead Neg disappears. What is left is
// the reshape, the add of the mask and the relu.
// CHECK-LABEL: func.func @plumbing(%arg0: tensor<2x3x4xf32>) -> tensor<2x12xf32>
// CHECK: arith.constant dense<{{\[\[}}0.000000e+00, -1.000000e+04{{.*}}: tensor<2x12xf32>
// CHECK-NEXT: tensor.collapse_shape %arg0 {{\[\[}}0], [1, 2]]
// CHECK-NOT: arith.negf
// CHECK: arith.addf
// CHECK: arith.select
// CHECK-NOT: linalg.generic
// CHECK: return
// SIM: check: passed

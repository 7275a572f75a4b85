// An option acting on ops the program has none of (a lowering's options, the
// fusions' of convs or attention, npu-prefetch's of convs) is refused in one
// line once npu-lower sees the ops, before any work (no output file); one
// that acts on an op of any function is taken, and so is every default.

// RUN: rm -f %t
// RUN: not npu-opt %s --npu-lower="conv-cube-residual=always" -o %t 2>&1 | FileCheck %s --check-prefix=NO-CONV
// RUN: not ls %t
// RUN: not npu-opt %s --npu-lower="conv-cube-bias=always" 2>&1 | FileCheck %s --check-prefix=NO-CONV-BIAS
// RUN: not npu-opt %s --npu-lower="fuse-conv-pool=false" 2>&1 | FileCheck %s --check-prefix=NO-CONV-POOL
// RUN: not npu-opt %s --npu-lower="prefetch-convs=false" 2>&1 | FileCheck %s --check-prefix=NO-CONV-PREFETCH
// RUN: not npu-opt %s --npu-lower="attention-softmax=f32" 2>&1 | FileCheck %s --check-prefix=NO-ATTENTION
// RUN: not npu-opt %s --npu-lower="fuse-attention=false" 2>&1 | FileCheck %s --check-prefix=NO-ATTENTION-FUSION
// RUN: not npu-opt %s --split-input-file --npu-lower="cores=1 ub-fraction=0.5" 2>&1 | FileCheck %s --check-prefix=NO-UB
// RUN: rm -f %t
// RUN: not npu-opt %s --split-input-file --npu-lower="cores=1 m=64" -o %t 2>&1 | FileCheck %s --check-prefix=NO-MATMUL
// RUN: not ls %t
// RUN: not npu-opt %s --split-input-file --npu-lower="matmul-schedule=pipelined matmul-last-chunk-parts=false" 2>&1 | FileCheck %s --check-prefix=NO-MATMUL-PARTS

// Taken: each lowering's options where the module has its op (in the
// one module without --split-input-file), and the defaults given.
// RUN: npu-opt %s --npu-lower="cores=1 matmul-schedule=pipelined l1-chunk=32 elementwise-in-place-unary=true" 2>/dev/null | FileCheck %s --check-prefix=SOME
// RUN: npu-opt %s --split-input-file --npu-lower="cores=1 conv-cube-residual=auto m=0 attention-softmax=f16" 2>/dev/null | FileCheck %s --check-prefix=SOME

// NO-CONV: {{^}}{{.*}}lower-options-ops.mlir: error: npu-lower: conv-cube-residual: does not apply: the program has no conv{{$}}
// NO-CONV-NOT: error
// NO-CONV-BIAS: error: npu-lower: conv-cube-bias: does not apply: the program has no conv{{$}}
// NO-CONV-POOL: error: npu-lower: fuse-conv-pool: does not apply: the program has no conv{{$}}
// NO-CONV-PREFETCH: error: npu-lower: prefetch-convs: does not apply: the program has no conv{{$}}
// NO-ATTENTION: error: npu-lower: attention-softmax: does not apply: the program has no batch_matmul (attention's Q.K^T){{$}}
// NO-ATTENTION-FUSION: error: npu-lower: fuse-attention: does not apply: the program has no batch_matmul (attention's Q.K^T){{$}}
// NO-UB: error: npu-lower: ub-fraction: does not apply: the program has no conv, fractalize or defractalize, elementwise op, transpose, slice or insert_slice, reduction, gather or pool{{$}}
// NO-UB-NOT: error
// NO-MATMUL: {{^}}{{.*}}lower-options-ops.mlir: error: npu-lower: m: does not apply: the program has no matmul{{$}}
// NO-MATMUL-NOT: error
// NO-MATMUL-PARTS: error: npu-lower: matmul-last-chunk-parts: does not apply: the program has no matmul{{$}}
// SOME: func.func @mm_relu(
// SOME: func.func @relu(
// SOME: func.func @mm(

// A matmul and an elementwise op: each lowering's options act on its own.
func.func @mm_relu(%a: memref<4x4x16x16xf16, "gm">, %b: memref<4x4x16x16xf16, "gm">, %c: memref<4x4x16x16xf32, "gm">, %d: memref<4x4x16x16xf32, "gm">) {
  "ascend.matmul"(%a, %b, %c) : (memref<4x4x16x16xf16, "gm">, memref<4x4x16x16xf16, "gm">, memref<4x4x16x16xf32, "gm">) -> ()
  "ascend.relu"(%c, %d) : (memref<4x4x16x16xf32, "gm">, memref<4x4x16x16xf32, "gm">) -> ()
  return
}

// -----

// No matmul: the matmul lowering's options have nothing to act on.
func.func @relu(%x: memref<64x64xf32, "gm">, %y: memref<64x64xf32, "gm">) {
  "ascend.relu"(%x, %y) : (memref<64x64xf32, "gm">, memref<64x64xf32, "gm">) -> ()
  return
}

// -----

// A matmul alone: no op of the other lowerings (on one core, no split-K adds).
func.func @mm(%a: memref<4x4x16x16xf16, "gm">, %b: memref<4x4x16x16xf16, "gm">, %c: memref<4x4x16x16xf32, "gm">) {
  "ascend.matmul"(%a, %b, %c) : (memref<4x4x16x16xf16, "gm">, memref<4x4x16x16xf16, "gm">, memref<4x4x16x16xf32, "gm">) -> ()
  return
}

// RUN: npu-opt %s --split-input-file --verify-diagnostics --npu-fuse | FileCheck %s
// RUN: npu-opt %s --split-input-file --npu-fuse=epilogue-f16=false 2>/dev/null | FileCheck %s --check-prefix=OFF
// RUN: npu-opt %s --split-input-file --npu-fuse --npu-lower-matmul 2>/dev/null | FileCheck %s --check-prefix=KERNEL
// RUN: npu-opt %s --split-input-file --npu-fuse=epilogue-bias-f32=true --npu-lower-matmul 2>/dev/null | FileCheck %s --check-prefix=HEAD

// Precision policy: bias, GELU and the cast to f16 after a matmul; only the
// f16 cast leaves the group, so the chain is computed in f16 (compute =
// "f16"): the f32 bias row is converted once before the matmul's loops, the
// add and the GELU recipe run on f16 (128 lanes a repeat) and the cast is
// gone (the GELU writes the f16 result).
// CHECK-LABEL: func.func @bias_gelu_cast
// CHECK:       scf.execute_region {
// CHECK:         "ascend.cast"
// CHECK-NEXT:    scf.yield
// CHECK-NEXT:  } {npu.epilogue = {compute = "f16", gm_bytes
// OFF-LABEL:   func.func @bias_gelu_cast
// OFF:         } {npu.epilogue = {gm_bytes
// KERNEL-LABEL: func.func @bias_gelu_cast
// KERNEL:       memref.alloc() : memref<5x1x1x16xf32, "ub">
// KERNEL:       cce.copy_gm_to_ub
// KERNEL:       memref.alloc() : memref<5x1x1x16xf16, "ub">
// KERNEL:       "cce.vconv"{{.*}}round_mode = "rint"{{.*}}xf16, strided<[1]>, "ub">, memref<64xf32
// KERNEL:       scf.for
// KERNEL:       cce.copy_l0c_to_ub
// KERNEL:       "cce.vadd"{{.*}}src1_blk_stride = 0 : i64, src1_rep_stride = 0 : i64} : (memref<768xf16
// KERNEL:       "cce.vexp"{{.*}}mask = 128 : i64{{.*}}(memref<3840xf16
// KERNEL-NOT:   cce.vconv
// KERNEL:       "cce.vsub"{{.*}}(memref<3840xf16
// KERNEL-NEXT:  memref.subview
// KERNEL-NEXT:  "cce.copy_ub_to_gm"{{.*}}(memref<5x3x16x16xf16, "ub">
// epilogue-bias-f32: the bias row stays f32 (no conversion before the
// loops), the add runs in f32 on the drained accumulator, its sum is
// rounded to f16 once (a vconv per column block, right after that block's
// adds), and the GELU recipe runs on f16.
// HEAD-LABEL: func.func @bias_gelu_cast
// HEAD:       memref.alloc() : memref<5x1x1x16xf32, "ub">
// HEAD:       cce.copy_gm_to_ub
// HEAD-NOT:   cce.vconv
// HEAD:       scf.for
// HEAD:       cce.copy_l0c_to_ub
// HEAD:       "cce.vadd"{{.*}}src1_blk_stride = 0 : i64, src1_rep_stride = 0 : i64} : (memref<760xf32
// HEAD-NOT:   cce.vconv
// HEAD:       "cce.vadd"{{.*}}(memref<760xf32
// HEAD:       "cce.vconv"{{.*}}round_mode = "rint"{{.*}}(memref<768xf16, strided<[1]>, "ub">, memref<768xf32, strided<[1]>, "ub">)
// HEAD:       "cce.vadd"{{.*}}(memref<760xf32
// HEAD:       "cce.vexp"{{.*}}mask = 128 : i64{{.*}}(memref<3840xf16
// HEAD:       "cce.copy_ub_to_gm"{{.*}}(memref<5x3x16x16xf16, "ub">
func.func @bias_gelu_cast(%a: memref<4x3x16x16xf16, "gm">, %b: memref<5x4x16x16xf16, "gm">, %bias: memref<5x3x16x16xf32, "gm"> {npu.constant = dense<0.25> : tensor<5x3x16x16xf32>}, %y: memref<5x3x16x16xf16, "gm">) {
  %c = memref.alloc() : memref<5x3x16x16xf32, "gm">
  // expected-remark @+1 {{matmul epilogue: 7 op(s) (add, muls, erf, adds, muls, mul, cast) applied to each C tile as it drains; computed in f16: its results leave as f16 casts: GM traffic}}
  "ascend.matmul"(%a, %b, %c) : (memref<4x3x16x16xf16, "gm">, memref<5x4x16x16xf16, "gm">, memref<5x3x16x16xf32, "gm">) -> ()
  %h = memref.alloc() : memref<5x3x16x16xf32, "gm">
  "ascend.add"(%c, %bias, %h) : (memref<5x3x16x16xf32, "gm">, memref<5x3x16x16xf32, "gm">, memref<5x3x16x16xf32, "gm">) -> ()
  %s = memref.alloc() : memref<5x3x16x16xf32, "gm">
  "ascend.muls"(%h, %s) {scalar = 0.70710678118654757 : f64} : (memref<5x3x16x16xf32, "gm">, memref<5x3x16x16xf32, "gm">) -> ()
  %e = memref.alloc() : memref<5x3x16x16xf32, "gm">
  "ascend.erf"(%s, %e) : (memref<5x3x16x16xf32, "gm">, memref<5x3x16x16xf32, "gm">) -> ()
  %p = memref.alloc() : memref<5x3x16x16xf32, "gm">
  "ascend.adds"(%e, %p) {scalar = 1.0 : f64} : (memref<5x3x16x16xf32, "gm">, memref<5x3x16x16xf32, "gm">) -> ()
  %q = memref.alloc() : memref<5x3x16x16xf32, "gm">
  "ascend.muls"(%p, %q) {scalar = 0.5 : f64} : (memref<5x3x16x16xf32, "gm">, memref<5x3x16x16xf32, "gm">) -> ()
  %g = memref.alloc() : memref<5x3x16x16xf32, "gm">
  "ascend.mul"(%h, %q, %g) : (memref<5x3x16x16xf32, "gm">, memref<5x3x16x16xf32, "gm">, memref<5x3x16x16xf32, "gm">) -> ()
  "ascend.cast"(%g, %y) {round_mode = "rint"} : (memref<5x3x16x16xf32, "gm">, memref<5x3x16x16xf16, "gm">) -> ()
  return
}

// -----

// The f32 value the cast reads also leaves the group: computed in f32.
// CHECK-LABEL: func.func @f32_also_leaves
// CHECK:       } {npu.epilogue = {gm_bytes
func.func @f32_also_leaves(%a: memref<4x3x16x16xf16, "gm">, %b: memref<5x4x16x16xf16, "gm">, %y: memref<5x3x16x16xf16, "gm">, %z: memref<5x3x16x16xf32, "gm">) {
  %c = memref.alloc() : memref<5x3x16x16xf32, "gm">
  // expected-remark @+1 {{applied to each C tile as it drains; computed in f32 (a result that is not an f32 -> f16 cast leaves the group)}}
  "ascend.matmul"(%a, %b, %c) : (memref<4x3x16x16xf16, "gm">, memref<5x4x16x16xf16, "gm">, memref<5x3x16x16xf32, "gm">) -> ()
  "ascend.relu"(%c, %z) : (memref<5x3x16x16xf32, "gm">, memref<5x3x16x16xf32, "gm">) -> ()
  "ascend.cast"(%z, %y) {round_mode = "rint"} : (memref<5x3x16x16xf32, "gm">, memref<5x3x16x16xf16, "gm">) -> ()
  return
}

// -----

// A cast that does not round to nearest keeps the chain in f32.
// CHECK-LABEL: func.func @cast_toward_zero
// CHECK:       } {npu.epilogue = {gm_bytes
func.func @cast_toward_zero(%a: memref<4x3x16x16xf16, "gm">, %b: memref<5x4x16x16xf16, "gm">, %y: memref<5x3x16x16xf16, "gm">) {
  %c = memref.alloc() : memref<5x3x16x16xf32, "gm">
  // expected-remark @+1 {{computed in f32 (a cast that leaves the group is not f32 -> f16 to nearest)}}
  "ascend.matmul"(%a, %b, %c) : (memref<4x3x16x16xf16, "gm">, memref<5x4x16x16xf16, "gm">, memref<5x3x16x16xf32, "gm">) -> ()
  %r = memref.alloc() : memref<5x3x16x16xf32, "gm">
  "ascend.relu"(%c, %r) : (memref<5x3x16x16xf32, "gm">, memref<5x3x16x16xf32, "gm">) -> ()
  "ascend.cast"(%r, %y) {round_mode = "trunc"} : (memref<5x3x16x16xf32, "gm">, memref<5x3x16x16xf16, "gm">) -> ()
  return
}

// RUN: npu-opt %s --npu-fuse-attention=softmax=f32 2>&1 | FileCheck %s
// RUN: npu-opt %s --npu-fuse-attention=softmax=f32 --npu-lower-attention 2>&1 | FileCheck %s --check-prefix=KERNEL

// sdpa's NaN guard on P (Where(IsNaN(P), 0, P): cmp ne of P with itself and
// a select of the constant 0) joins the attention: the kernel zeroes the
// rows whose max is not finite (max - max compares unequal to itself) in
// P before P.V, and raises their row sum of 0 to 1/2 before the division.
// CHECK: remark: fused attention (20 ops;
// CHECK-LABEL: func.func @attention
// CHECK:       scf.execute_region {
// CHECK:         "ascend.cmp"
// CHECK-NEXT:    "ascend.select"
// CHECK:       } {npu.attention =
// KERNEL-LABEL: func.func @attention
// KERNEL:       "cce.vsub"(%[[D:.*]], %[[SHIFT:.*]], %[[SHIFT]])
// KERNEL:       "cce.vcmp"(%[[MASK:.*]], %[[D]], %[[D]]) {{.*}}predicate = "ne"
// KERNEL:       "cce.vexp"
// KERNEL:       "cce.vsel"({{.*}}, %[[MASK]],
// KERNEL:       "cce.mad"
// KERNEL:       "cce.vmaxs"{{.*}}scalar = 5.000000e-01
// KERNEL-NEXT:  memref.subview
// KERNEL-NEXT:  memref.subview
// KERNEL-NEXT:  "cce.vrec"
func.func @attention(%arg0: memref<2x48x64xf32, "gm"> {npu.input = "q"}, %arg1: memref<2x48x64xf32, "gm"> {npu.input = "k"}, %arg2: memref<2x48x64xf32, "gm"> {npu.input = "v"}, %arg3: memref<2x48x64xf32, "gm"> {npu.output = "y"}, %arg4: memref<1x1x1xf32, "gm"> {npu.constant = dense<0.000000e+00> : tensor<1x1x1xf32>}) {
  %alloc = memref.alloc() : memref<2x64x48xf32, "gm">
  "ascend.transpose"(%arg1, %alloc) {permutation = array<i64: 0, 2, 1>} : (memref<2x48x64xf32, "gm">, memref<2x64x48xf32, "gm">) -> ()
  %alloc_0 = memref.alloc() : memref<2x48x64xf16, "gm">
  "ascend.cast"(%arg0, %alloc_0) {round_mode = "rint"} : (memref<2x48x64xf32, "gm">, memref<2x48x64xf16, "gm">) -> ()
  %alloc_1 = memref.alloc() : memref<2x4x3x16x16xf16, "gm">
  "ascend.fractalize"(%alloc_0, %alloc_1) : (memref<2x48x64xf16, "gm">, memref<2x4x3x16x16xf16, "gm">) -> ()
  %alloc_2 = memref.alloc() : memref<2x64x48xf16, "gm">
  "ascend.cast"(%alloc, %alloc_2) {round_mode = "rint"} : (memref<2x64x48xf32, "gm">, memref<2x64x48xf16, "gm">) -> ()
  %alloc_3 = memref.alloc() : memref<2x3x4x16x16xf16, "gm">
  "ascend.fractalize"(%alloc_2, %alloc_3) : (memref<2x64x48xf16, "gm">, memref<2x3x4x16x16xf16, "gm">) -> ()
  %alloc_4 = memref.alloc() : memref<2x3x3x16x16xf32, "gm">
  "ascend.batch_matmul"(%alloc_1, %alloc_3, %alloc_4) : (memref<2x4x3x16x16xf16, "gm">, memref<2x3x4x16x16xf16, "gm">, memref<2x3x3x16x16xf32, "gm">) -> ()
  %alloc_5 = memref.alloc() : memref<2x48x48xf32, "gm">
  "ascend.defractalize"(%alloc_4, %alloc_5) : (memref<2x3x3x16x16xf32, "gm">, memref<2x48x48xf32, "gm">) -> ()
  %alloc_6 = memref.alloc() : memref<2x48x1xf32, "gm">
  "ascend.reduce_max"(%alloc_5, %alloc_6) : (memref<2x48x48xf32, "gm">, memref<2x48x1xf32, "gm">) -> ()
  %collapse_shape = memref.collapse_shape %alloc_6 [[0, 1, 2]] : memref<2x48x1xf32, "gm"> into memref<96xf32, "gm">
  %expand_shape = memref.expand_shape %collapse_shape [[0, 1]] output_shape [2, 48] : memref<96xf32, "gm"> into memref<2x48xf32, "gm">
  %alloc_7 = memref.alloc() : memref<2x48x48xf32, "gm">
  "ascend.sub"(%alloc_5, %alloc_6, %alloc_7) : (memref<2x48x48xf32, "gm">, memref<2x48x1xf32, "gm">, memref<2x48x48xf32, "gm">) -> ()
  %alloc_8 = memref.alloc() : memref<2x48x48xf32, "gm">
  "ascend.exp"(%alloc_7, %alloc_8) : (memref<2x48x48xf32, "gm">, memref<2x48x48xf32, "gm">) -> ()
  %alloc_9 = memref.alloc() : memref<2x48x1xf32, "gm">
  "ascend.reduce_sum"(%alloc_8, %alloc_9) : (memref<2x48x48xf32, "gm">, memref<2x48x1xf32, "gm">) -> ()
  %collapse_shape_10 = memref.collapse_shape %alloc_9 [[0, 1, 2]] : memref<2x48x1xf32, "gm"> into memref<96xf32, "gm">
  %expand_shape_11 = memref.expand_shape %collapse_shape_10 [[0, 1]] output_shape [2, 48] : memref<96xf32, "gm"> into memref<2x48xf32, "gm">
  %alloc_12 = memref.alloc() : memref<2x48x1xf32, "gm">
  "ascend.reciprocal"(%alloc_9, %alloc_12) : (memref<2x48x1xf32, "gm">, memref<2x48x1xf32, "gm">) -> ()
  %alloc_13 = memref.alloc() : memref<2x48x48xf32, "gm">
  "ascend.mul"(%alloc_8, %alloc_12, %alloc_13) : (memref<2x48x48xf32, "gm">, memref<2x48x1xf32, "gm">, memref<2x48x48xf32, "gm">) -> ()
  %alloc_14 = memref.alloc() : memref<2x48x48xi8, "gm">
  "ascend.cmp"(%alloc_13, %alloc_13, %alloc_14) {predicate = "ne"} : (memref<2x48x48xf32, "gm">, memref<2x48x48xf32, "gm">, memref<2x48x48xi8, "gm">) -> ()
  %alloc_15 = memref.alloc() : memref<2x48x48xf32, "gm">
  "ascend.select"(%alloc_14, %arg4, %alloc_13, %alloc_15) : (memref<2x48x48xi8, "gm">, memref<1x1x1xf32, "gm">, memref<2x48x48xf32, "gm">, memref<2x48x48xf32, "gm">) -> ()
  %alloc_16 = memref.alloc() : memref<2x48x48xf16, "gm">
  "ascend.cast"(%alloc_15, %alloc_16) {round_mode = "rint"} : (memref<2x48x48xf32, "gm">, memref<2x48x48xf16, "gm">) -> ()
  %alloc_17 = memref.alloc() : memref<2x3x3x16x16xf16, "gm">
  "ascend.fractalize"(%alloc_16, %alloc_17) : (memref<2x48x48xf16, "gm">, memref<2x3x3x16x16xf16, "gm">) -> ()
  %alloc_18 = memref.alloc() : memref<2x48x64xf16, "gm">
  "ascend.cast"(%arg2, %alloc_18) {round_mode = "rint"} : (memref<2x48x64xf32, "gm">, memref<2x48x64xf16, "gm">) -> ()
  %alloc_19 = memref.alloc() : memref<2x4x3x16x16xf16, "gm">
  "ascend.fractalize"(%alloc_18, %alloc_19) : (memref<2x48x64xf16, "gm">, memref<2x4x3x16x16xf16, "gm">) -> ()
  %alloc_20 = memref.alloc() : memref<2x4x3x16x16xf32, "gm">
  "ascend.batch_matmul"(%alloc_17, %alloc_19, %alloc_20) : (memref<2x3x3x16x16xf16, "gm">, memref<2x4x3x16x16xf16, "gm">, memref<2x4x3x16x16xf32, "gm">) -> ()
  "ascend.defractalize"(%alloc_20, %arg3) : (memref<2x4x3x16x16xf32, "gm">, memref<2x48x64xf32, "gm">) -> ()
  return
}

// RUN: npu-opt %s --split-input-file --npu-fuse-attention=softmax=f32 2>&1 | FileCheck %s
// RUN: npu-opt %s --split-input-file --npu-fuse-attention=softmax=f32 --npu-lower-attention 2>&1 | FileCheck %s --check-prefix=KERNEL

// sdpa's NaN guard on P (Where(IsNaN(P), 0, P): cmp ne of P with itself and
// a select of the constant 0) joins the attention: the kernel zeroes the
// rows whose max is not finite (max - max compares unequal to itself) in
// P before P.V, and raises their row sum of 0 to 1/2 before the division.
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

// -----

// A key mask [1, 1, 1, S] added after the scale (HF's BERT): the scores are
// scaled first (vmuls), then each key slab gets the mask's 16 values of its
// keys, four rows a repeat (repeat stride 0), from a layout made once.
// CHECK-LABEL: func.func @key_mask
// CHECK:       scf.execute_region {
// CHECK:         "ascend.muls"
// CHECK-NEXT:    "ascend.add"
// CHECK:       } {npu.attention =
// KERNEL-LABEL: func.func @key_mask
// KERNEL:       "cce.copy_gm_to_ub"{{.*}}burst_len = 6 {{.*}}(memref<48xf32, "gm">, memref<48xf32, "ub">)
// KERNEL-COUNT-4: "cce.copy_ub_to_ub"{{.*}}burst_len = 2 : i64, dst_gap = 6 : i64, n_burst = 3
// KERNEL:       "cce.vmuls"
// KERNEL-NEXT:  memref.subview
// KERNEL-NEXT:  memref.subview
// KERNEL-NEXT:  "cce.vadd"{{.*}}src1_blk_stride = 1 : i64, src1_rep_stride = 0
func.func @key_mask(%arg0: memref<1x2x48x64xf32, "gm"> {npu.input = "q"}, %arg1: memref<1x2x48x64xf32, "gm"> {npu.input = "k"}, %arg2: memref<1x2x48x64xf32, "gm"> {npu.input = "v"}, %arg3: memref<1x1x1x48xf32, "gm"> {npu.input = "mask"}, %arg4: memref<1x2x48x64xf32, "gm"> {npu.output = "y"}) {
  %alloc = memref.alloc() : memref<1x2x64x48xf32, "gm">
  "ascend.transpose"(%arg1, %alloc) {permutation = array<i64: 0, 1, 3, 2>} : (memref<1x2x48x64xf32, "gm">, memref<1x2x64x48xf32, "gm">) -> ()
  %collapse_shape = memref.collapse_shape %arg0 [[0, 1, 2, 3]] : memref<1x2x48x64xf32, "gm"> into memref<6144xf32, "gm">
  %expand_shape = memref.expand_shape %collapse_shape [[0, 1, 2]] output_shape [2, 48, 64] : memref<6144xf32, "gm"> into memref<2x48x64xf32, "gm">
  %collapse_shape_0 = memref.collapse_shape %alloc [[0, 1, 2, 3]] : memref<1x2x64x48xf32, "gm"> into memref<6144xf32, "gm">
  %expand_shape_1 = memref.expand_shape %collapse_shape_0 [[0, 1, 2]] output_shape [2, 64, 48] : memref<6144xf32, "gm"> into memref<2x64x48xf32, "gm">
  %alloc_2 = memref.alloc() : memref<2x48x64xf16, "gm">
  "ascend.cast"(%expand_shape, %alloc_2) {round_mode = "rint"} : (memref<2x48x64xf32, "gm">, memref<2x48x64xf16, "gm">) -> ()
  %alloc_3 = memref.alloc() : memref<2x4x3x16x16xf16, "gm">
  "ascend.fractalize"(%alloc_2, %alloc_3) : (memref<2x48x64xf16, "gm">, memref<2x4x3x16x16xf16, "gm">) -> ()
  %alloc_4 = memref.alloc() : memref<2x64x48xf16, "gm">
  "ascend.cast"(%expand_shape_1, %alloc_4) {round_mode = "rint"} : (memref<2x64x48xf32, "gm">, memref<2x64x48xf16, "gm">) -> ()
  %alloc_5 = memref.alloc() : memref<2x3x4x16x16xf16, "gm">
  "ascend.fractalize"(%alloc_4, %alloc_5) : (memref<2x64x48xf16, "gm">, memref<2x3x4x16x16xf16, "gm">) -> ()
  %alloc_6 = memref.alloc() : memref<2x3x3x16x16xf32, "gm">
  "ascend.batch_matmul"(%alloc_3, %alloc_5, %alloc_6) : (memref<2x4x3x16x16xf16, "gm">, memref<2x3x4x16x16xf16, "gm">, memref<2x3x3x16x16xf32, "gm">) -> ()
  %alloc_7 = memref.alloc() : memref<2x48x48xf32, "gm">
  "ascend.defractalize"(%alloc_6, %alloc_7) : (memref<2x3x3x16x16xf32, "gm">, memref<2x48x48xf32, "gm">) -> ()
  %collapse_shape_8 = memref.collapse_shape %alloc_7 [[0, 1, 2]] : memref<2x48x48xf32, "gm"> into memref<4608xf32, "gm">
  %expand_shape_9 = memref.expand_shape %collapse_shape_8 [[0, 1, 2, 3]] output_shape [1, 2, 48, 48] : memref<4608xf32, "gm"> into memref<1x2x48x48xf32, "gm">
  %alloc_10 = memref.alloc() : memref<1x2x48x48xf32, "gm">
  "ascend.muls"(%expand_shape_9, %alloc_10) {scalar = 1.250000e-01 : f64} : (memref<1x2x48x48xf32, "gm">, memref<1x2x48x48xf32, "gm">) -> ()
  %collapse_shape_11 = memref.collapse_shape %arg3 [[0, 1, 2, 3]] : memref<1x1x1x48xf32, "gm"> into memref<48xf32, "gm">
  %expand_shape_12 = memref.expand_shape %collapse_shape_11 [[0, 1]] output_shape [1, 48] : memref<48xf32, "gm"> into memref<1x48xf32, "gm">
  %alloc_13 = memref.alloc() : memref<1x2x48x48xf32, "gm">
  "ascend.add"(%alloc_10, %arg3, %alloc_13) : (memref<1x2x48x48xf32, "gm">, memref<1x1x1x48xf32, "gm">, memref<1x2x48x48xf32, "gm">) -> ()
  %collapse_shape_14 = memref.collapse_shape %alloc_13 [[0, 1, 2, 3]] : memref<1x2x48x48xf32, "gm"> into memref<4608xf32, "gm">
  %expand_shape_15 = memref.expand_shape %collapse_shape_14 [[0, 1, 2]] output_shape [2, 48, 48] : memref<4608xf32, "gm"> into memref<2x48x48xf32, "gm">
  %alloc_16 = memref.alloc() : memref<2x48x1xf32, "gm">
  "ascend.reduce_max"(%expand_shape_15, %alloc_16) : (memref<2x48x48xf32, "gm">, memref<2x48x1xf32, "gm">) -> ()
  %collapse_shape_17 = memref.collapse_shape %alloc_16 [[0, 1, 2]] : memref<2x48x1xf32, "gm"> into memref<96xf32, "gm">
  %expand_shape_18 = memref.expand_shape %collapse_shape_17 [[0, 1, 2, 3]] output_shape [1, 2, 48, 1] : memref<96xf32, "gm"> into memref<1x2x48x1xf32, "gm">
  %expand_shape_19 = memref.expand_shape %collapse_shape_17 [[0, 1, 2]] output_shape [1, 2, 48] : memref<96xf32, "gm"> into memref<1x2x48xf32, "gm">
  %alloc_20 = memref.alloc() : memref<1x2x48x48xf32, "gm">
  "ascend.sub"(%alloc_13, %expand_shape_18, %alloc_20) : (memref<1x2x48x48xf32, "gm">, memref<1x2x48x1xf32, "gm">, memref<1x2x48x48xf32, "gm">) -> ()
  %alloc_21 = memref.alloc() : memref<1x2x48x48xf32, "gm">
  "ascend.exp"(%alloc_20, %alloc_21) : (memref<1x2x48x48xf32, "gm">, memref<1x2x48x48xf32, "gm">) -> ()
  %collapse_shape_22 = memref.collapse_shape %alloc_21 [[0, 1, 2, 3]] : memref<1x2x48x48xf32, "gm"> into memref<4608xf32, "gm">
  %expand_shape_23 = memref.expand_shape %collapse_shape_22 [[0, 1, 2]] output_shape [2, 48, 48] : memref<4608xf32, "gm"> into memref<2x48x48xf32, "gm">
  %alloc_24 = memref.alloc() : memref<2x48x1xf32, "gm">
  "ascend.reduce_sum"(%expand_shape_23, %alloc_24) : (memref<2x48x48xf32, "gm">, memref<2x48x1xf32, "gm">) -> ()
  %collapse_shape_25 = memref.collapse_shape %alloc_24 [[0, 1, 2]] : memref<2x48x1xf32, "gm"> into memref<96xf32, "gm">
  %expand_shape_26 = memref.expand_shape %collapse_shape_25 [[0, 1, 2, 3]] output_shape [1, 2, 48, 1] : memref<96xf32, "gm"> into memref<1x2x48x1xf32, "gm">
  %expand_shape_27 = memref.expand_shape %collapse_shape_25 [[0, 1, 2]] output_shape [1, 2, 48] : memref<96xf32, "gm"> into memref<1x2x48xf32, "gm">
  %alloc_28 = memref.alloc() : memref<1x2x48x1xf32, "gm">
  "ascend.reciprocal"(%expand_shape_26, %alloc_28) : (memref<1x2x48x1xf32, "gm">, memref<1x2x48x1xf32, "gm">) -> ()
  %alloc_29 = memref.alloc() : memref<1x2x48x48xf32, "gm">
  "ascend.mul"(%alloc_21, %alloc_28, %alloc_29) : (memref<1x2x48x48xf32, "gm">, memref<1x2x48x1xf32, "gm">, memref<1x2x48x48xf32, "gm">) -> ()
  %collapse_shape_30 = memref.collapse_shape %alloc_29 [[0, 1, 2, 3]] : memref<1x2x48x48xf32, "gm"> into memref<4608xf32, "gm">
  %expand_shape_31 = memref.expand_shape %collapse_shape_30 [[0, 1, 2]] output_shape [2, 48, 48] : memref<4608xf32, "gm"> into memref<2x48x48xf32, "gm">
  %collapse_shape_32 = memref.collapse_shape %arg2 [[0, 1, 2, 3]] : memref<1x2x48x64xf32, "gm"> into memref<6144xf32, "gm">
  %expand_shape_33 = memref.expand_shape %collapse_shape_32 [[0, 1, 2]] output_shape [2, 48, 64] : memref<6144xf32, "gm"> into memref<2x48x64xf32, "gm">
  %alloc_34 = memref.alloc() : memref<2x48x48xf16, "gm">
  "ascend.cast"(%expand_shape_31, %alloc_34) {round_mode = "rint"} : (memref<2x48x48xf32, "gm">, memref<2x48x48xf16, "gm">) -> ()
  %alloc_35 = memref.alloc() : memref<2x3x3x16x16xf16, "gm">
  "ascend.fractalize"(%alloc_34, %alloc_35) : (memref<2x48x48xf16, "gm">, memref<2x3x3x16x16xf16, "gm">) -> ()
  %alloc_36 = memref.alloc() : memref<2x48x64xf16, "gm">
  "ascend.cast"(%expand_shape_33, %alloc_36) {round_mode = "rint"} : (memref<2x48x64xf32, "gm">, memref<2x48x64xf16, "gm">) -> ()
  %alloc_37 = memref.alloc() : memref<2x4x3x16x16xf16, "gm">
  "ascend.fractalize"(%alloc_36, %alloc_37) : (memref<2x48x64xf16, "gm">, memref<2x4x3x16x16xf16, "gm">) -> ()
  %alloc_38 = memref.alloc() : memref<2x4x3x16x16xf32, "gm">
  "ascend.batch_matmul"(%alloc_35, %alloc_37, %alloc_38) : (memref<2x3x3x16x16xf16, "gm">, memref<2x4x3x16x16xf16, "gm">, memref<2x4x3x16x16xf32, "gm">) -> ()
  %collapse_shape_39 = memref.collapse_shape %arg4 [[0, 1, 2, 3]] : memref<1x2x48x64xf32, "gm"> into memref<6144xf32, "gm">
  %expand_shape_40 = memref.expand_shape %collapse_shape_39 [[0, 1, 2]] output_shape [2, 48, 64] : memref<6144xf32, "gm"> into memref<2x48x64xf32, "gm">
  "ascend.defractalize"(%alloc_38, %expand_shape_40) : (memref<2x4x3x16x16xf32, "gm">, memref<2x48x64xf32, "gm">) -> ()
  %collapse_shape_41 = memref.collapse_shape %expand_shape_40 [[0, 1, 2]] : memref<2x48x64xf32, "gm"> into memref<6144xf32, "gm">
  %expand_shape_42 = memref.expand_shape %collapse_shape_41 [[0, 1, 2, 3]] output_shape [1, 2, 48, 64] : memref<6144xf32, "gm"> into memref<1x2x48x64xf32, "gm">
  return
}

// -----

// The same key mask at seq 36: its row of 36 f32 values is not whole
// 32-byte blocks. The first four blocks are one burst; the last four values
// come from a burst of one block that ends at the mask's end (values 28..35)
// and are realigned in UB: each value expanded to a block (vnchwconv), the
// wanted four blocks moved to the front of a zeroed run, compacted back
// (vnchwconv) and copied into the fifth block (keys 36..47 stay 0).
// CHECK-LABEL: func.func @key_mask_partial
// CHECK:       scf.execute_region {
// CHECK:         "ascend.muls"
// CHECK-NEXT:    "ascend.add"
// CHECK:       } {npu.attention =
// KERNEL-LABEL: func.func @key_mask_partial
// KERNEL:       "cce.copy_gm_to_ub"{{.*}}burst_len = 4 {{.*}}(memref<32xf32, strided<[1]>, "gm">, memref<32xf32, strided<[1]>, "ub">)
// KERNEL:       "cce.copy_gm_to_ub"{{.*}}burst_len = 1 {{.*}}(memref<8xf32, strided<[1], offset: 28>, "gm">, memref<8xf32, "ub">)
// KERNEL:       "cce.vnchwconv"
// KERNEL:       "cce.vdup"
// KERNEL:       "cce.copy_ub_to_ub"{{.*}}burst_len = 4 {{.*}}(memref<32xf32, strided<[1], offset: 32>, "ub">, memref<32xf32, strided<[1]>, "ub">)
// KERNEL:       "cce.vnchwconv"
// KERNEL:       "cce.copy_ub_to_ub"{{.*}}burst_len = 1 {{.*}}(memref<8xf32, strided<[1]>, "ub">, memref<8xf32, strided<[1], offset: 32>, "ub">)
// KERNEL-COUNT-4: "cce.copy_ub_to_ub"{{.*}}burst_len = 2 : i64, dst_gap = 6 : i64, n_burst = 3
// KERNEL:       "cce.vmuls"
// KERNEL-NEXT:  memref.subview
// KERNEL-NEXT:  memref.subview
// KERNEL-NEXT:  "cce.vadd"{{.*}}src1_blk_stride = 1 : i64, src1_rep_stride = 0
func.func @key_mask_partial(%arg0: memref<1x2x36x64xf32, "gm"> {npu.input = "q"}, %arg1: memref<1x2x36x64xf32, "gm"> {npu.input = "k"}, %arg2: memref<1x2x36x64xf32, "gm"> {npu.input = "v"}, %arg3: memref<1x1x1x36xf32, "gm"> {npu.input = "mask"}, %arg4: memref<1x2x36x64xf32, "gm"> {npu.output = "y"}) {
  %alloc = memref.alloc() : memref<1x2x64x36xf32, "gm">
  "ascend.transpose"(%arg1, %alloc) {permutation = array<i64: 0, 1, 3, 2>} : (memref<1x2x36x64xf32, "gm">, memref<1x2x64x36xf32, "gm">) -> ()
  %collapse_shape = memref.collapse_shape %arg0 [[0, 1, 2, 3]] : memref<1x2x36x64xf32, "gm"> into memref<4608xf32, "gm">
  %expand_shape = memref.expand_shape %collapse_shape [[0, 1, 2]] output_shape [2, 36, 64] : memref<4608xf32, "gm"> into memref<2x36x64xf32, "gm">
  %collapse_shape_0 = memref.collapse_shape %alloc [[0, 1, 2, 3]] : memref<1x2x64x36xf32, "gm"> into memref<4608xf32, "gm">
  %expand_shape_1 = memref.expand_shape %collapse_shape_0 [[0, 1, 2]] output_shape [2, 64, 36] : memref<4608xf32, "gm"> into memref<2x64x36xf32, "gm">
  %alloc_2 = memref.alloc() : memref<2x36x64xf16, "gm">
  "ascend.cast"(%expand_shape, %alloc_2) {round_mode = "rint"} : (memref<2x36x64xf32, "gm">, memref<2x36x64xf16, "gm">) -> ()
  %alloc_3 = memref.alloc() : memref<2x4x3x16x16xf16, "gm">
  "ascend.fractalize"(%alloc_2, %alloc_3) : (memref<2x36x64xf16, "gm">, memref<2x4x3x16x16xf16, "gm">) -> ()
  %alloc_4 = memref.alloc() : memref<2x64x36xf16, "gm">
  "ascend.cast"(%expand_shape_1, %alloc_4) {round_mode = "rint"} : (memref<2x64x36xf32, "gm">, memref<2x64x36xf16, "gm">) -> ()
  %alloc_5 = memref.alloc() : memref<2x3x4x16x16xf16, "gm">
  "ascend.fractalize"(%alloc_4, %alloc_5) : (memref<2x64x36xf16, "gm">, memref<2x3x4x16x16xf16, "gm">) -> ()
  %alloc_6 = memref.alloc() : memref<2x3x3x16x16xf32, "gm">
  "ascend.batch_matmul"(%alloc_3, %alloc_5, %alloc_6) : (memref<2x4x3x16x16xf16, "gm">, memref<2x3x4x16x16xf16, "gm">, memref<2x3x3x16x16xf32, "gm">) -> ()
  %alloc_7 = memref.alloc() : memref<2x36x36xf32, "gm">
  "ascend.defractalize"(%alloc_6, %alloc_7) : (memref<2x3x3x16x16xf32, "gm">, memref<2x36x36xf32, "gm">) -> ()
  %collapse_shape_8 = memref.collapse_shape %alloc_7 [[0, 1, 2]] : memref<2x36x36xf32, "gm"> into memref<2592xf32, "gm">
  %expand_shape_9 = memref.expand_shape %collapse_shape_8 [[0, 1, 2, 3]] output_shape [1, 2, 36, 36] : memref<2592xf32, "gm"> into memref<1x2x36x36xf32, "gm">
  %alloc_10 = memref.alloc() : memref<1x2x36x36xf32, "gm">
  "ascend.muls"(%expand_shape_9, %alloc_10) {scalar = 1.250000e-01 : f64} : (memref<1x2x36x36xf32, "gm">, memref<1x2x36x36xf32, "gm">) -> ()
  %collapse_shape_11 = memref.collapse_shape %arg3 [[0, 1, 2, 3]] : memref<1x1x1x36xf32, "gm"> into memref<36xf32, "gm">
  %expand_shape_12 = memref.expand_shape %collapse_shape_11 [[0, 1]] output_shape [1, 36] : memref<36xf32, "gm"> into memref<1x36xf32, "gm">
  %alloc_13 = memref.alloc() : memref<1x2x36x36xf32, "gm">
  "ascend.add"(%alloc_10, %arg3, %alloc_13) : (memref<1x2x36x36xf32, "gm">, memref<1x1x1x36xf32, "gm">, memref<1x2x36x36xf32, "gm">) -> ()
  %collapse_shape_14 = memref.collapse_shape %alloc_13 [[0, 1, 2, 3]] : memref<1x2x36x36xf32, "gm"> into memref<2592xf32, "gm">
  %expand_shape_15 = memref.expand_shape %collapse_shape_14 [[0, 1, 2]] output_shape [2, 36, 36] : memref<2592xf32, "gm"> into memref<2x36x36xf32, "gm">
  %alloc_16 = memref.alloc() : memref<2x36x1xf32, "gm">
  "ascend.reduce_max"(%expand_shape_15, %alloc_16) : (memref<2x36x36xf32, "gm">, memref<2x36x1xf32, "gm">) -> ()
  %collapse_shape_17 = memref.collapse_shape %alloc_16 [[0, 1, 2]] : memref<2x36x1xf32, "gm"> into memref<72xf32, "gm">
  %expand_shape_18 = memref.expand_shape %collapse_shape_17 [[0, 1, 2, 3]] output_shape [1, 2, 36, 1] : memref<72xf32, "gm"> into memref<1x2x36x1xf32, "gm">
  %expand_shape_19 = memref.expand_shape %collapse_shape_17 [[0, 1, 2]] output_shape [1, 2, 36] : memref<72xf32, "gm"> into memref<1x2x36xf32, "gm">
  %alloc_20 = memref.alloc() : memref<1x2x36x36xf32, "gm">
  "ascend.sub"(%alloc_13, %expand_shape_18, %alloc_20) : (memref<1x2x36x36xf32, "gm">, memref<1x2x36x1xf32, "gm">, memref<1x2x36x36xf32, "gm">) -> ()
  %alloc_21 = memref.alloc() : memref<1x2x36x36xf32, "gm">
  "ascend.exp"(%alloc_20, %alloc_21) : (memref<1x2x36x36xf32, "gm">, memref<1x2x36x36xf32, "gm">) -> ()
  %collapse_shape_22 = memref.collapse_shape %alloc_21 [[0, 1, 2, 3]] : memref<1x2x36x36xf32, "gm"> into memref<2592xf32, "gm">
  %expand_shape_23 = memref.expand_shape %collapse_shape_22 [[0, 1, 2]] output_shape [2, 36, 36] : memref<2592xf32, "gm"> into memref<2x36x36xf32, "gm">
  %alloc_24 = memref.alloc() : memref<2x36x1xf32, "gm">
  "ascend.reduce_sum"(%expand_shape_23, %alloc_24) : (memref<2x36x36xf32, "gm">, memref<2x36x1xf32, "gm">) -> ()
  %collapse_shape_25 = memref.collapse_shape %alloc_24 [[0, 1, 2]] : memref<2x36x1xf32, "gm"> into memref<72xf32, "gm">
  %expand_shape_26 = memref.expand_shape %collapse_shape_25 [[0, 1, 2, 3]] output_shape [1, 2, 36, 1] : memref<72xf32, "gm"> into memref<1x2x36x1xf32, "gm">
  %expand_shape_27 = memref.expand_shape %collapse_shape_25 [[0, 1, 2]] output_shape [1, 2, 36] : memref<72xf32, "gm"> into memref<1x2x36xf32, "gm">
  %alloc_28 = memref.alloc() : memref<1x2x36x1xf32, "gm">
  "ascend.reciprocal"(%expand_shape_26, %alloc_28) : (memref<1x2x36x1xf32, "gm">, memref<1x2x36x1xf32, "gm">) -> ()
  %alloc_29 = memref.alloc() : memref<1x2x36x36xf32, "gm">
  "ascend.mul"(%alloc_21, %alloc_28, %alloc_29) : (memref<1x2x36x36xf32, "gm">, memref<1x2x36x1xf32, "gm">, memref<1x2x36x36xf32, "gm">) -> ()
  %collapse_shape_30 = memref.collapse_shape %alloc_29 [[0, 1, 2, 3]] : memref<1x2x36x36xf32, "gm"> into memref<2592xf32, "gm">
  %expand_shape_31 = memref.expand_shape %collapse_shape_30 [[0, 1, 2]] output_shape [2, 36, 36] : memref<2592xf32, "gm"> into memref<2x36x36xf32, "gm">
  %collapse_shape_32 = memref.collapse_shape %arg2 [[0, 1, 2, 3]] : memref<1x2x36x64xf32, "gm"> into memref<4608xf32, "gm">
  %expand_shape_33 = memref.expand_shape %collapse_shape_32 [[0, 1, 2]] output_shape [2, 36, 64] : memref<4608xf32, "gm"> into memref<2x36x64xf32, "gm">
  %alloc_34 = memref.alloc() : memref<2x36x36xf16, "gm">
  "ascend.cast"(%expand_shape_31, %alloc_34) {round_mode = "rint"} : (memref<2x36x36xf32, "gm">, memref<2x36x36xf16, "gm">) -> ()
  %alloc_35 = memref.alloc() : memref<2x3x3x16x16xf16, "gm">
  "ascend.fractalize"(%alloc_34, %alloc_35) : (memref<2x36x36xf16, "gm">, memref<2x3x3x16x16xf16, "gm">) -> ()
  %alloc_36 = memref.alloc() : memref<2x36x64xf16, "gm">
  "ascend.cast"(%expand_shape_33, %alloc_36) {round_mode = "rint"} : (memref<2x36x64xf32, "gm">, memref<2x36x64xf16, "gm">) -> ()
  %alloc_37 = memref.alloc() : memref<2x4x3x16x16xf16, "gm">
  "ascend.fractalize"(%alloc_36, %alloc_37) : (memref<2x36x64xf16, "gm">, memref<2x4x3x16x16xf16, "gm">) -> ()
  %alloc_38 = memref.alloc() : memref<2x4x3x16x16xf32, "gm">
  "ascend.batch_matmul"(%alloc_35, %alloc_37, %alloc_38) : (memref<2x3x3x16x16xf16, "gm">, memref<2x4x3x16x16xf16, "gm">, memref<2x4x3x16x16xf32, "gm">) -> ()
  %collapse_shape_39 = memref.collapse_shape %arg4 [[0, 1, 2, 3]] : memref<1x2x36x64xf32, "gm"> into memref<4608xf32, "gm">
  %expand_shape_40 = memref.expand_shape %collapse_shape_39 [[0, 1, 2]] output_shape [2, 36, 64] : memref<4608xf32, "gm"> into memref<2x36x64xf32, "gm">
  "ascend.defractalize"(%alloc_38, %expand_shape_40) : (memref<2x4x3x16x16xf32, "gm">, memref<2x36x64xf32, "gm">) -> ()
  %collapse_shape_41 = memref.collapse_shape %expand_shape_40 [[0, 1, 2]] : memref<2x36x64xf32, "gm"> into memref<4608xf32, "gm">
  %expand_shape_42 = memref.expand_shape %collapse_shape_41 [[0, 1, 2, 3]] output_shape [1, 2, 36, 64] : memref<4608xf32, "gm"> into memref<1x2x36x64xf32, "gm">
  return
}

// -----

// A mask of the scores [1, 1, S, S] shared by the heads (a decoder's causal
// mask; GPT-2's is combined with its attention_mask at run time): one tile a
// head, so the whole mask stays in UB, loaded (one copy) and clamped to the
// finite f32 range once, before the heads. Each head's scores, after the
// scale, get it one key block at a time: a row (16 lanes) a repeat, the
// scores' Nz slab two blocks a row, the row-major mask six (48 keys).
// CHECK-LABEL: func.func @scores_mask
// CHECK:       scf.execute_region {
// CHECK:         "ascend.muls"
// CHECK-NEXT:    "ascend.add"
// CHECK:       } {npu.attention =
// KERNEL-LABEL: func.func @scores_mask
// KERNEL:       "cce.copy_gm_to_ub"(%[[MASK:.*]], %[[TILE:.*]]) {burst_len = 288 : i64, dst_gap = 0 : i64, n_burst = 1
// KERNEL-NEXT:  "cce.vmaxs"(%[[TILE]], %[[TILE]]) {{.*}}scalar = -3.4028234663852886E+38
// KERNEL:       scf.for
// KERNEL:       "cce.vmuls"
// KERNEL-COUNT-3: "cce.vadd"{{.*}}mask = 16 : i64, repeat = 48 : i64, src0_blk_stride = 1 : i64, src0_rep_stride = 2 : i64, src1_blk_stride = 1 : i64, src1_rep_stride = 6
func.func @scores_mask(%arg0: memref<1x2x48x64xf32, "gm"> {npu.input = "q"}, %arg1: memref<1x2x48x64xf32, "gm"> {npu.input = "k"}, %arg2: memref<1x2x48x64xf32, "gm"> {npu.input = "v"}, %arg3: memref<1x1x48x48xf32, "gm"> {npu.input = "mask"}, %arg4: memref<1x2x48x64xf32, "gm"> {npu.output = "y"}) {
  %alloc = memref.alloc() : memref<1x2x64x48xf32, "gm">
  "ascend.transpose"(%arg1, %alloc) {permutation = array<i64: 0, 1, 3, 2>} : (memref<1x2x48x64xf32, "gm">, memref<1x2x64x48xf32, "gm">) -> ()
  %collapse_shape = memref.collapse_shape %arg0 [[0, 1, 2, 3]] : memref<1x2x48x64xf32, "gm"> into memref<6144xf32, "gm">
  %expand_shape = memref.expand_shape %collapse_shape [[0, 1, 2]] output_shape [2, 48, 64] : memref<6144xf32, "gm"> into memref<2x48x64xf32, "gm">
  %collapse_shape_0 = memref.collapse_shape %alloc [[0, 1, 2, 3]] : memref<1x2x64x48xf32, "gm"> into memref<6144xf32, "gm">
  %expand_shape_1 = memref.expand_shape %collapse_shape_0 [[0, 1, 2]] output_shape [2, 64, 48] : memref<6144xf32, "gm"> into memref<2x64x48xf32, "gm">
  %alloc_2 = memref.alloc() : memref<2x48x64xf16, "gm">
  "ascend.cast"(%expand_shape, %alloc_2) {round_mode = "rint"} : (memref<2x48x64xf32, "gm">, memref<2x48x64xf16, "gm">) -> ()
  %alloc_3 = memref.alloc() : memref<2x4x3x16x16xf16, "gm">
  "ascend.fractalize"(%alloc_2, %alloc_3) : (memref<2x48x64xf16, "gm">, memref<2x4x3x16x16xf16, "gm">) -> ()
  %alloc_4 = memref.alloc() : memref<2x64x48xf16, "gm">
  "ascend.cast"(%expand_shape_1, %alloc_4) {round_mode = "rint"} : (memref<2x64x48xf32, "gm">, memref<2x64x48xf16, "gm">) -> ()
  %alloc_5 = memref.alloc() : memref<2x3x4x16x16xf16, "gm">
  "ascend.fractalize"(%alloc_4, %alloc_5) : (memref<2x64x48xf16, "gm">, memref<2x3x4x16x16xf16, "gm">) -> ()
  %alloc_6 = memref.alloc() : memref<2x3x3x16x16xf32, "gm">
  "ascend.batch_matmul"(%alloc_3, %alloc_5, %alloc_6) : (memref<2x4x3x16x16xf16, "gm">, memref<2x3x4x16x16xf16, "gm">, memref<2x3x3x16x16xf32, "gm">) -> ()
  %alloc_7 = memref.alloc() : memref<2x48x48xf32, "gm">
  "ascend.defractalize"(%alloc_6, %alloc_7) : (memref<2x3x3x16x16xf32, "gm">, memref<2x48x48xf32, "gm">) -> ()
  %collapse_shape_8 = memref.collapse_shape %alloc_7 [[0, 1, 2]] : memref<2x48x48xf32, "gm"> into memref<4608xf32, "gm">
  %expand_shape_9 = memref.expand_shape %collapse_shape_8 [[0, 1, 2, 3]] output_shape [1, 2, 48, 48] : memref<4608xf32, "gm"> into memref<1x2x48x48xf32, "gm">
  %alloc_10 = memref.alloc() : memref<1x2x48x48xf32, "gm">
  "ascend.muls"(%expand_shape_9, %alloc_10) {scalar = 1.250000e-01 : f64} : (memref<1x2x48x48xf32, "gm">, memref<1x2x48x48xf32, "gm">) -> ()
  %alloc_13 = memref.alloc() : memref<1x2x48x48xf32, "gm">
  "ascend.add"(%alloc_10, %arg3, %alloc_13) : (memref<1x2x48x48xf32, "gm">, memref<1x1x48x48xf32, "gm">, memref<1x2x48x48xf32, "gm">) -> ()
  %collapse_shape_14 = memref.collapse_shape %alloc_13 [[0, 1, 2, 3]] : memref<1x2x48x48xf32, "gm"> into memref<4608xf32, "gm">
  %expand_shape_15 = memref.expand_shape %collapse_shape_14 [[0, 1, 2]] output_shape [2, 48, 48] : memref<4608xf32, "gm"> into memref<2x48x48xf32, "gm">
  %alloc_16 = memref.alloc() : memref<2x48x1xf32, "gm">
  "ascend.reduce_max"(%expand_shape_15, %alloc_16) : (memref<2x48x48xf32, "gm">, memref<2x48x1xf32, "gm">) -> ()
  %collapse_shape_17 = memref.collapse_shape %alloc_16 [[0, 1, 2]] : memref<2x48x1xf32, "gm"> into memref<96xf32, "gm">
  %expand_shape_18 = memref.expand_shape %collapse_shape_17 [[0, 1, 2, 3]] output_shape [1, 2, 48, 1] : memref<96xf32, "gm"> into memref<1x2x48x1xf32, "gm">
  %expand_shape_19 = memref.expand_shape %collapse_shape_17 [[0, 1, 2]] output_shape [1, 2, 48] : memref<96xf32, "gm"> into memref<1x2x48xf32, "gm">
  %alloc_20 = memref.alloc() : memref<1x2x48x48xf32, "gm">
  "ascend.sub"(%alloc_13, %expand_shape_18, %alloc_20) : (memref<1x2x48x48xf32, "gm">, memref<1x2x48x1xf32, "gm">, memref<1x2x48x48xf32, "gm">) -> ()
  %alloc_21 = memref.alloc() : memref<1x2x48x48xf32, "gm">
  "ascend.exp"(%alloc_20, %alloc_21) : (memref<1x2x48x48xf32, "gm">, memref<1x2x48x48xf32, "gm">) -> ()
  %collapse_shape_22 = memref.collapse_shape %alloc_21 [[0, 1, 2, 3]] : memref<1x2x48x48xf32, "gm"> into memref<4608xf32, "gm">
  %expand_shape_23 = memref.expand_shape %collapse_shape_22 [[0, 1, 2]] output_shape [2, 48, 48] : memref<4608xf32, "gm"> into memref<2x48x48xf32, "gm">
  %alloc_24 = memref.alloc() : memref<2x48x1xf32, "gm">
  "ascend.reduce_sum"(%expand_shape_23, %alloc_24) : (memref<2x48x48xf32, "gm">, memref<2x48x1xf32, "gm">) -> ()
  %collapse_shape_25 = memref.collapse_shape %alloc_24 [[0, 1, 2]] : memref<2x48x1xf32, "gm"> into memref<96xf32, "gm">
  %expand_shape_26 = memref.expand_shape %collapse_shape_25 [[0, 1, 2, 3]] output_shape [1, 2, 48, 1] : memref<96xf32, "gm"> into memref<1x2x48x1xf32, "gm">
  %expand_shape_27 = memref.expand_shape %collapse_shape_25 [[0, 1, 2]] output_shape [1, 2, 48] : memref<96xf32, "gm"> into memref<1x2x48xf32, "gm">
  %alloc_28 = memref.alloc() : memref<1x2x48x1xf32, "gm">
  "ascend.reciprocal"(%expand_shape_26, %alloc_28) : (memref<1x2x48x1xf32, "gm">, memref<1x2x48x1xf32, "gm">) -> ()
  %alloc_29 = memref.alloc() : memref<1x2x48x48xf32, "gm">
  "ascend.mul"(%alloc_21, %alloc_28, %alloc_29) : (memref<1x2x48x48xf32, "gm">, memref<1x2x48x1xf32, "gm">, memref<1x2x48x48xf32, "gm">) -> ()
  %collapse_shape_30 = memref.collapse_shape %alloc_29 [[0, 1, 2, 3]] : memref<1x2x48x48xf32, "gm"> into memref<4608xf32, "gm">
  %expand_shape_31 = memref.expand_shape %collapse_shape_30 [[0, 1, 2]] output_shape [2, 48, 48] : memref<4608xf32, "gm"> into memref<2x48x48xf32, "gm">
  %collapse_shape_32 = memref.collapse_shape %arg2 [[0, 1, 2, 3]] : memref<1x2x48x64xf32, "gm"> into memref<6144xf32, "gm">
  %expand_shape_33 = memref.expand_shape %collapse_shape_32 [[0, 1, 2]] output_shape [2, 48, 64] : memref<6144xf32, "gm"> into memref<2x48x64xf32, "gm">
  %alloc_34 = memref.alloc() : memref<2x48x48xf16, "gm">
  "ascend.cast"(%expand_shape_31, %alloc_34) {round_mode = "rint"} : (memref<2x48x48xf32, "gm">, memref<2x48x48xf16, "gm">) -> ()
  %alloc_35 = memref.alloc() : memref<2x3x3x16x16xf16, "gm">
  "ascend.fractalize"(%alloc_34, %alloc_35) : (memref<2x48x48xf16, "gm">, memref<2x3x3x16x16xf16, "gm">) -> ()
  %alloc_36 = memref.alloc() : memref<2x48x64xf16, "gm">
  "ascend.cast"(%expand_shape_33, %alloc_36) {round_mode = "rint"} : (memref<2x48x64xf32, "gm">, memref<2x48x64xf16, "gm">) -> ()
  %alloc_37 = memref.alloc() : memref<2x4x3x16x16xf16, "gm">
  "ascend.fractalize"(%alloc_36, %alloc_37) : (memref<2x48x64xf16, "gm">, memref<2x4x3x16x16xf16, "gm">) -> ()
  %alloc_38 = memref.alloc() : memref<2x4x3x16x16xf32, "gm">
  "ascend.batch_matmul"(%alloc_35, %alloc_37, %alloc_38) : (memref<2x3x3x16x16xf16, "gm">, memref<2x4x3x16x16xf16, "gm">, memref<2x4x3x16x16xf32, "gm">) -> ()
  %collapse_shape_39 = memref.collapse_shape %arg4 [[0, 1, 2, 3]] : memref<1x2x48x64xf32, "gm"> into memref<6144xf32, "gm">
  %expand_shape_40 = memref.expand_shape %collapse_shape_39 [[0, 1, 2]] output_shape [2, 48, 64] : memref<6144xf32, "gm"> into memref<2x48x64xf32, "gm">
  "ascend.defractalize"(%alloc_38, %expand_shape_40) : (memref<2x4x3x16x16xf32, "gm">, memref<2x48x64xf32, "gm">) -> ()
  %collapse_shape_41 = memref.collapse_shape %expand_shape_40 [[0, 1, 2]] : memref<2x48x64xf32, "gm"> into memref<6144xf32, "gm">
  %expand_shape_42 = memref.expand_shape %collapse_shape_41 [[0, 1, 2, 3]] output_shape [1, 2, 48, 64] : memref<6144xf32, "gm"> into memref<1x2x48x64xf32, "gm">
  return
}

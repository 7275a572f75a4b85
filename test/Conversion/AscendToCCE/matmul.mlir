// RUN: npu-opt %s --split-input-file --npu-lower-matmul 2>/dev/null | FileCheck %s
// RUN: npu-opt %s --split-input-file --npu-lower-matmul 2>&1 >/dev/null | FileCheck %s --check-prefix=REMARK
// RUN: npu-opt %s --split-input-file --npu-lower-matmul="first-step=peel" 2>/dev/null | FileCheck %s --check-prefix=PEEL

// The BERT shape (M, N, K) = (512, 768, 768), output-stationary by default.
// The cost model's optimum is m = k = 256 (n = 128, the largest that fits
// L0A/L0B), S_OS = MNK(m+k)/(mk) = 2,359,296 elements read, plus the
// write-back of C (512 x 768 f32).

// REMARK: matmul.mlir:{{[0-9]+}}:3: remark: matmul tiling: strategy=os tiles (m=256, n=128, k=256); modelled GM traffic: read 2359296 elements (A 1179648, B 1179648) = 4718592 bytes, write-back 393216 elements = 1572864 bytes, total 6291456 bytes

// CHECK-LABEL: func.func @bert
// Loop nest: x over M (2 tiles of 16 row blocks), y over K (3 tiles), the
// reduction s over N (6 steps of 8 blocks).
// CHECK:       scf.for %[[X:.*]] = %c0{{.*}} to %c32{{.*}} step %c16{{.*}} {
// CHECK:         scf.for %[[Y:.*]] = %c0{{.*}} to %c48{{.*}} step %c16{{.*}} {
// The C tile lives in L0C across the reduction loop: allocated outside it.
// CHECK-NEXT:      %[[C:.*]] = memref.alloc() : memref<16x16x16x16xf32, "l0c">
// CHECK:           scf.for %[[S:.*]] = %c0{{.*}} to %c48{{.*}} step %c8{{.*}} {
// CHECK:             %[[FIRST:.*]] = arith.cmpi eq, %[[S]], %c0{{.*}} : index
// Streamed tiles are allocated in the loop body. A: GM -> L1 (one burst per
// column block, 16 row blocks of 512 B, 32 - 16 blocks apart) -> L0A (Zz).
// CHECK:             memref.subview %arg0[%[[S]], %[[X]], 0, 0] [8, 16, 16, 16]
// CHECK:             %[[A1:.*]] = memref.alloc() : memref<8x16x16x16xf16, "l1">
// CHECK:             "cce.copy_gm_to_l1"(%{{.*}}, %[[A1]]) {burst_len = 256 : i64, dst_gap = 0 : i64, n_burst = 8 : i64, src_gap = 256 : i64}
// CHECK:             %[[A0:.*]] = memref.alloc() : memref<16x8x16x16xf16, "l0a">
// CHECK-COUNT-8:     "cce.load_l1_to_l0a"({{.*}}) {dst_stride = 8 : i64, repeat = 16 : i64, src_stride = 1 : i64, transpose = false}
// B: GM -> L1 -> L0B (Zn: blocks reordered and transposed).
// CHECK:             memref.subview %arg1[%[[Y]], %[[S]], 0, 0] [16, 8, 16, 16]
// CHECK:             %[[B1:.*]] = memref.alloc() : memref<16x8x16x16xf16, "l1">
// CHECK:             "cce.copy_gm_to_l1"(%{{.*}}, %[[B1]]) {burst_len = 128 : i64, dst_gap = 0 : i64, n_burst = 16 : i64, src_gap = 640 : i64}
// CHECK:             %[[B0:.*]] = memref.alloc() : memref<8x16x16x16xf16, "l0b">
// CHECK-COUNT-8:     "cce.load_l1_to_l0b"({{.*}}) {dst_stride = 1 : i64, repeat = 16 : i64, src_stride = 8 : i64, transpose = true}
// mad overwrites C on the first reduction step and accumulates afterwards.
// CHECK-NEXT:        scf.if %[[FIRST]] {
// CHECK-NEXT:          "cce.mad"(%[[A0]], %[[B0]], %[[C]]) {accumulate = false, k = 256 : i64, m = 256 : i64, n = 128 : i64}
// CHECK-NEXT:        } else {
// CHECK-NEXT:          "cce.mad"(%[[A0]], %[[B0]], %[[C]]) {accumulate = true, k = 256 : i64, m = 256 : i64, n = 128 : i64}
// CHECK-NEXT:        }
// CHECK-NEXT:      }
// C: L0C -> UB -> GM (Nz tile: 16 column blocks of 16 row blocks, 32 row blocks apart).
// CHECK-NOT:       "cce.mad"
// CHECK:           %[[CU:.*]] = memref.alloc() : memref<16x16x16x16xf32, "ub">
// CHECK:           "cce.copy_l0c_to_ub"(%{{.*}}, %[[CU]]) {burst_len = 8192 : i64, dst_gap = 0 : i64, n_burst = 1 : i64, src_gap = 0 : i64}
// CHECK:           memref.subview %arg2[%[[Y]], %[[X]], 0, 0] [16, 16, 16, 16]
// CHECK:           "cce.copy_ub_to_gm"(%[[CU]], %{{.*}}) {burst_len = 512 : i64, dst_gap = 512 : i64, n_burst = 16 : i64, src_gap = 0 : i64}
// CHECK-NOT:       cce.set_flag
// CHECK-NOT:       cce.wait_flag
// CHECK-NOT:       cce.pipe_barrier
// CHECK:         return

// first-step=peel: the first step is a one-trip loop of its own with
// accumulate = false; the other five accumulate.
// PEEL-LABEL: func.func @bert
// PEEL:       %[[C:.*]] = memref.alloc() : memref<16x16x16x16xf32, "l0c">
// PEEL:       scf.for %{{.*}} = %c0{{.*}} to %c8{{.*}} step %c8{{.*}} {
// PEEL:         "cce.mad"(%{{.*}}, %{{.*}}, %[[C]]) {accumulate = false, k = 256 : i64, m = 256 : i64, n = 128 : i64}
// PEEL-NEXT:  }
// PEEL:       scf.for %{{.*}} = %c8{{.*}} to %c48{{.*}} step %c8{{.*}} {
// PEEL:         "cce.mad"(%{{.*}}, %{{.*}}, %[[C]]) {accumulate = true, k = 256 : i64, m = 256 : i64, n = 128 : i64}
// PEEL-NEXT:  }
func.func @bert(%a: memref<48x32x16x16xf16, "gm">, %b: memref<48x48x16x16xf16, "gm">,
                %c: memref<48x32x16x16xf32, "gm">) {
  "ascend.matmul"(%a, %b, %c) : (memref<48x32x16x16xf16, "gm">, memref<48x48x16x16xf16, "gm">, memref<48x32x16x16xf32, "gm">) -> ()
  return
}

// -----

// One fractal each way: one-trip loops, a single mad that overwrites C.
// REMARK: remark: matmul tiling: strategy=os tiles (m=16, n=16, k=16); modelled GM traffic: read 512 elements

// CHECK-LABEL: func.func @tiny
// CHECK-NOT:   scf.if
// CHECK:       memref.alloc() : memref<1x1x16x16xf32, "l0c">
// CHECK:       "cce.copy_gm_to_l1"({{.*}}) {burst_len = 16 : i64, dst_gap = 0 : i64, n_burst = 1 : i64, src_gap = 0 : i64}
// CHECK:       "cce.load_l1_to_l0a"({{.*}}) {dst_stride = 1 : i64, repeat = 1 : i64, src_stride = 1 : i64, transpose = false}
// CHECK:       "cce.load_l1_to_l0b"({{.*}}) {dst_stride = 1 : i64, repeat = 1 : i64, src_stride = 1 : i64, transpose = true}
// CHECK:       "cce.mad"({{.*}}) {accumulate = false, k = 16 : i64, m = 16 : i64, n = 16 : i64}
// CHECK-NOT:   "cce.mad"
// CHECK:       "cce.copy_l0c_to_ub"
// CHECK:       "cce.copy_ub_to_gm"
// CHECK:       return
func.func @tiny(%a: memref<1x1x16x16xf16, "gm">, %b: memref<1x1x16x16xf16, "gm">,
                %c: memref<1x1x16x16xf32, "gm">) {
  "ascend.matmul"(%a, %b, %c) : (memref<1x1x16x16xf16, "gm">, memref<1x1x16x16xf16, "gm">, memref<1x1x16x16xf32, "gm">) -> ()
  return
}

// -----

// f16 output: the f32 tile is converted in UB before it leaves, in chunks
// of column blocks that fit UB with both copies (10 of 16 here, then 6).
// REMARK: remark: matmul tiling: strategy=os tiles (m=256, n=128, k=256)

// CHECK-LABEL: func.func @f16_out
// CHECK:       "cce.mad"
// CHECK:       %[[U32:.*]] = memref.alloc() : memref<10x16x16x16xf32, "ub">
// CHECK:       "cce.copy_l0c_to_ub"(%{{.*}}, %[[U32]]) {burst_len = 5120 : i64
// CHECK:       %[[U16:.*]] = memref.alloc() : memref<10x16x16x16xf16, "ub">
// CHECK:       "cce.vconv"(%{{.*}}, %{{.*}}) {dst_blk_stride = 1 : i64, dst_rep_stride = 4 : i64, mask = 64 : i64, repeat = 255 : i64, round_mode = "rint", src_blk_stride = 1 : i64, src_rep_stride = 8 : i64}
// CHECK:       "cce.copy_ub_to_gm"(%[[U16]], %{{.*}}) {burst_len = 256 : i64, dst_gap = 256 : i64, n_burst = 10 : i64, src_gap = 0 : i64}
// CHECK:       memref.alloc() : memref<6x16x16x16xf32, "ub">
// CHECK:       "cce.copy_ub_to_gm"({{.*}}) {burst_len = 256 : i64, dst_gap = 256 : i64, n_burst = 6 : i64, src_gap = 0 : i64}
func.func @f16_out(%a: memref<48x32x16x16xf16, "gm">, %b: memref<48x48x16x16xf16, "gm">,
                   %c: memref<48x32x16x16xf16, "gm">) {
  "ascend.matmul"(%a, %b, %c) : (memref<48x32x16x16xf16, "gm">, memref<48x48x16x16xf16, "gm">, memref<48x32x16x16xf16, "gm">) -> ()
  return
}

// -----

// Batch > 1: an outer loop over the batch index feeds every GM view.
// REMARK: remark: matmul tiling: strategy=os tiles (m=32, n=48, k=64); modelled GM traffic: read 18432 elements (A 6144, B 12288) = 36864 bytes, write-back 8192 elements = 32768 bytes

// CHECK-LABEL: func.func @batched
// CHECK:       scf.for %[[BI:.*]] = %c0{{.*}} to %c4{{.*}} step %c1{{.*}} {
// CHECK:         memref.alloc() : memref<4x2x16x16xf32, "l0c">
// CHECK:         memref.subview %arg0[%[[BI]], %{{.*}}, %{{.*}}, 0, 0] [1, 3, 2, 16, 16]
// CHECK:         "cce.mad"({{.*}}) {accumulate = false, k = 64 : i64, m = 32 : i64, n = 48 : i64}
// CHECK:         memref.subview %arg2[%[[BI]], %{{.*}}, %{{.*}}, 0, 0] [1, 4, 2, 16, 16]
// CHECK:         "cce.copy_ub_to_gm"{{.*}}
// CHECK-NEXT:  {{^ *}}}
func.func @batched(%a: memref<4x3x2x16x16xf16, "gm">, %b: memref<4x4x3x16x16xf16, "gm">,
                   %c: memref<4x4x2x16x16xf32, "gm">) {
  "ascend.batch_matmul"(%a, %b, %c) : (memref<4x3x2x16x16xf16, "gm">, memref<4x4x3x16x16xf16, "gm">, memref<4x4x2x16x16xf32, "gm">) -> ()
  return
}

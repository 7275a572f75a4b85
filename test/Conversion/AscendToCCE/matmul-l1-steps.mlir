// RUN: npu-opt %s --npu-lower-matmul="m=32 n=16 k=32 l1-steps=2" 2>&1 | FileCheck %s
// RUN: not npu-opt %s --npu-lower-matmul="strategy=is l1-steps=2" 2>&1 | FileCheck %s --check-prefix=NOTOS
// RUN: not npu-opt %s --npu-lower-matmul="m=32 n=16 k=32 l1-steps=0" 2>&1 | FileCheck %s --check-prefix=ZERO

// l1-steps=2: one GM -> L1 copy per two reduction steps (A: 2 column blocks,
// B: 2 row blocks), then per step L1 -> L0A/L0B from its half and a mad.
// CHECK: remark: matmul tiling: strategy=os tiles (m=32, n=16, k=32); {{.*}}; 2 reduction steps per L1 copy
// CHECK-LABEL: func.func @staged
// CHECK:       scf.for %[[S:.*]] = %c0{{.*}} to %c4{{.*}} step %c2{{.*}} {
// CHECK:         %[[A1:.*]] = memref.alloc() : memref<2x2x16x16xf16, "l1">
// CHECK:         "cce.copy_gm_to_l1"(%{{.*}}, %[[A1]]) {burst_len = 32 : i64, dst_gap = 0 : i64, n_burst = 2 : i64
// CHECK:         %[[B1:.*]] = memref.alloc() : memref<2x2x16x16xf16, "l1">
// CHECK:         "cce.copy_gm_to_l1"(%{{.*}}, %[[B1]]) {burst_len = 32 : i64, dst_gap = 0 : i64, n_burst = 2 : i64
// First step of the chunk: overwrite C on the first chunk only.
// CHECK:         scf.for
// CHECK:           memref.alloc() : memref<2x1x16x16xf16, "l0a">
// CHECK:           scf.if
// CHECK:             "cce.mad"({{.*}}) {accumulate = false, k = 32 : i64, m = 32 : i64, n = 16 : i64}
// CHECK:             "cce.mad"({{.*}}) {accumulate = true, k = 32 : i64, m = 32 : i64, n = 16 : i64}
// Second step: its half of the staged tiles (A column block 1, B row block 1).
// CHECK:         scf.for
// CHECK:           "cce.load_l1_to_l0a"({{.*}}) {dst_stride = 1 : i64, repeat = 2 : i64, src_stride = 1 : i64, transpose = false} : (memref<2x16x16xf16, strided<[256, 16, 1], offset: 512>, "l1">
// CHECK:           "cce.load_l1_to_l0b"({{.*}}) {dst_stride = 1 : i64, repeat = 2 : i64, src_stride = 2 : i64, transpose = true} : (memref<3x16x16xf16, strided<[256, 16, 1], offset: 256>, "l1">
// CHECK:           "cce.mad"({{.*}}) {accumulate = true, k = 32 : i64, m = 32 : i64, n = 16 : i64}
// NOTOS: error: l1-steps applies to the output-stationary loop order only (strategy is 'is')
// ZERO: npu-opt: error: invalid pass pipeline: bad value for option 'l1-steps' of pass 'npu-lower-matmul': expected a value in [1, inf), got '0'
func.func @staged(%a: memref<4x2x16x16xf16, "gm">, %b: memref<2x4x16x16xf16, "gm">, %c: memref<2x2x16x16xf32, "gm">) {
  "ascend.matmul"(%a, %b, %c) : (memref<4x2x16x16xf16, "gm">, memref<2x4x16x16xf16, "gm">, memref<2x2x16x16xf32, "gm">) -> ()
  return
}

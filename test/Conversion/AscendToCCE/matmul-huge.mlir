// RUN: npu-opt %s --split-input-file --npu-lower-matmul 2>/dev/null | FileCheck %s

// M = 2^24 (1,048,576 row blocks): the GM gap between the column blocks of
// a tile is most of a column, far past the 16-bit gap fields. Single-burst
// copies carry no gap; a copy of several bursts would become one copy per
// burst (test_matmul_sim.py simulates that on a smaller matrix).
// CHECK-LABEL: func.func @m_2_24
// CHECK: "cce.copy_gm_to_l1"({{.*}}) {burst_len = 2048 : i64, dst_gap = 0 : i64, n_burst = 1 : i64, src_gap = 0 : i64}
// CHECK: "cce.mad"
// CHECK: "cce.copy_ub_to_gm"({{.*}}) {burst_len = 4096 : i64, dst_gap = 0 : i64, n_burst = 1 : i64, src_gap = 0 : i64}
func.func @m_2_24(%a: memref<1x1048576x16x16xf16, "gm">, %b: memref<1x1x16x16xf16, "gm">, %c: memref<1x1048576x16x16xf32, "gm">) {
  "ascend.matmul"(%a, %b, %c) : (memref<1x1048576x16x16xf16, "gm">, memref<1x1x16x16xf16, "gm">, memref<1x1048576x16x16xf32, "gm">) -> ()
  return
}

// -----

// 65536^3: the tiling search walks only the tiles that fit the buffers
// (not all 2^24 (m, k) pairs), and the emitted loops do not grow with the
// tile count. The C tile (16 column blocks) is written one column block per
// copy: its gap, 4080 row blocks of f32, passes the field.
// CHECK-LABEL: func.func @cube_65536
// CHECK: scf.for
// CHECK-COUNT-16: "cce.copy_ub_to_gm"({{.*}}) {burst_len = 512 : i64, dst_gap = 0 : i64, n_burst = 1 : i64, src_gap = 0 : i64}
func.func @cube_65536(%a: memref<4096x4096x16x16xf16, "gm">, %b: memref<4096x4096x16x16xf16, "gm">, %c: memref<4096x4096x16x16xf32, "gm">) {
  "ascend.matmul"(%a, %b, %c) : (memref<4096x4096x16x16xf16, "gm">, memref<4096x4096x16x16xf16, "gm">, memref<4096x4096x16x16xf32, "gm">) -> ()
  return
}

// RUN: npu-opt %s --split-input-file --npu-lower-gather | FileCheck %s
// RUN: npu-opt %s --split-input-file --npu-lower-gather=max-rows=4 | FileCheck %s --check-prefix=CHUNK

// An embedding lookup: 10 ids into a 101 x 48 f32 table (192-byte rows, 6
// blocks). The scalar unit loads each id from GM, wraps a negative one,
// checks it (cf.assert) and copies its row to UB at a data-dependent offset;
// the chunk of rows leaves with one store.
// CHECK-LABEL: func.func @embedding
// CHECK: memref.alloc() : memref<480xf32, "ub">
// CHECK: scf.for %[[K:.*]] = %{{.*}} to %c10
// CHECK: %[[ID:.*]] = memref.load %{{.*}}[%[[K]]] : memref<10xi32, "gm">
// CHECK: %[[IX:.*]] = arith.index_cast %[[ID]] : i32 to index
// CHECK: %[[NEG:.*]] = arith.cmpi slt, %[[IX]]
// CHECK: %[[WRAP:.*]] = arith.addi %[[IX]], %c101
// CHECK: %[[ROW:.*]] = arith.select %[[NEG]], %[[WRAP]], %[[IX]]
// CHECK: %[[OK:.*]] = arith.cmpi ult, %[[ROW]], %c101
// CHECK: cf.assert %[[OK]], "ascend.gather: an index is outside [-101, 100] (the gathered axis has 101 entries)"
// CHECK: %[[OFF:.*]] = arith.muli %[[ROW]], %c48
// CHECK: %[[SRC:.*]] = memref.subview %{{.*}}[%[[OFF]]] [48] [1] : memref<4848xf32, "gm">
// CHECK: "cce.copy_gm_to_ub"(%[[SRC]], %{{.*}}) {burst_len = 6 : i64, dst_gap = 0 : i64, n_burst = 1 : i64, src_gap = 0 : i64}
// CHECK: }
// CHECK: "cce.copy_ub_to_gm"({{.*}}) {burst_len = 60 : i64, dst_gap = 0 : i64, n_burst = 1 : i64, src_gap = 0 : i64}

// With at most 4 rows a chunk, the 10 ids are two full chunks of 4, one in
// each of the two UB buffers the chunks alternate between, and a tail chunk
// of 2 in the first buffer again.
// CHUNK-LABEL: func.func @embedding
// CHUNK: %[[A:.*]] = memref.alloc() : memref<192xf32, "ub">
// CHUNK: %[[B:.*]] = memref.alloc() : memref<192xf32, "ub">
// CHUNK: scf.for %{{.*}} = %{{.*}} to %c4
// CHUNK: "cce.copy_ub_to_gm"(%[[A]], %{{.*}}) {burst_len = 24 : i64
// CHUNK: scf.for %{{.*}} = %{{.*}} to %c4
// CHUNK: "cce.copy_ub_to_gm"(%[[B]], %{{.*}}) {burst_len = 24 : i64
// CHUNK: %[[T:.*]] = memref.subview %[[A]][0] [96] [1]
// CHUNK: scf.for %{{.*}} = %{{.*}} to %c2
// CHUNK: "cce.copy_ub_to_gm"(%[[T]], %{{.*}}) {burst_len = 12 : i64
func.func @embedding(%table: memref<101x48xf32, "gm">, %ids: memref<2x5xi32, "gm">, %out: memref<2x5x48xf32, "gm">) {
  "ascend.gather"(%table, %ids, %out) {axis = 0 : i64} : (memref<101x48xf32, "gm">, memref<2x5xi32, "gm">, memref<2x5x48xf32, "gm">) -> ()
  return
}

// -----

// Axis 1 of [8, 40, 16] f16: output row r = o * 3 + k is table row
// o * 40 + ids[k], one 32-byte block; the 24 rows are one chunk.
// CHECK-LABEL: func.func @axis_one
// CHECK: scf.for %[[R:.*]] = %{{.*}} to %c24
// CHECK: %[[O:.*]] = arith.divui %[[R]], %c3
// CHECK: %[[K:.*]] = arith.remui %[[R]], %c3
// CHECK: memref.load %{{.*}}[%[[K]]] : memref<3xi32, "gm">
// CHECK: cf.assert
// CHECK: arith.muli %[[O]], %c640
// CHECK: "cce.copy_gm_to_ub"({{.*}}) {burst_len = 1 : i64
// CHECK: "cce.copy_ub_to_gm"({{.*}}) {burst_len = 24 : i64
func.func @axis_one(%table: memref<8x40x16xf16, "gm">, %ids: memref<3xi32, "gm">, %out: memref<8x3x16xf16, "gm">) {
  "ascend.gather"(%table, %ids, %out) {axis = 1 : i64} : (memref<8x40x16xf16, "gm">, memref<3xi32, "gm">, memref<8x3x16xf16, "gm">) -> ()
  return
}

// -----

// 80-byte rows (30 x 20 f32) are not whole blocks: each row is read as 3
// blocks (its burst moved back to end inside the table's last granule when
// it would run past it: min(start, 600 - 24)) into a staging slot, every
// element is expanded to a block (vnchwconv), one copy_ub_to_ub per row
// packs its 20 blocks from its shift, and vnchwconv compacts them again.
// CHECK-LABEL: func.func @unaligned
// CHECK: scf.for
// CHECK: cf.assert
// CHECK: arith.minsi %{{.*}}, %c576
// CHECK: "cce.copy_gm_to_ub"({{.*}}) {burst_len = 3 : i64
// CHECK: "cce.vnchwconv"
// CHECK: scf.for
// CHECK: "cce.copy_ub_to_ub"({{.*}}) {burst_len = 20 : i64, dst_gap = 0 : i64, n_burst = 1 : i64
// CHECK: "cce.vnchwconv"
// CHECK: "cce.copy_ub_to_gm"({{.*}}) {burst_len = 15 : i64
func.func @unaligned(%table: memref<30x20xf32, "gm">, %ids: memref<2x3xi32, "gm">, %out: memref<2x3x20xf32, "gm">) {
  "ascend.gather"(%table, %ids, %out) {axis = 0 : i64} : (memref<30x20xf32, "gm">, memref<2x3xi32, "gm">, memref<2x3x20xf32, "gm">) -> ()
  return
}

// RUN: npu-opt %s --split-input-file --npu-insert-sync | FileCheck %s
// RUN: npu-opt %s --split-input-file --npu-insert-sync="mode=barrier" | FileCheck %s --check-prefix=BARRIER

// A chip barrier (cce.sync_all) drains every pipe of the core but MTE2
// before the cores meet: everything before it but MTE2's loads is ordered
// before everything after it.
// The load after it reads what the store before it wrote (MTE3 -> MTE2
// through GM) into the UB buffer the vexp read (V -> MTE2), and the vexp
// after it overwrites what the store read (MTE3 -> V): no flag (nor, in
// barrier mode, pipe_barrier) is needed across the chip barrier for any of
// them. Before, each became a set before the barrier and a wait after it.
// CHECK-LABEL: func.func @across_chip_barrier
// CHECK:      "cce.copy_ub_to_gm"
// CHECK-NEXT: "cce.sync_all"
// CHECK-NEXT: "cce.copy_gm_to_ub"
// CHECK-NEXT: "cce.set_flag"() {dst = "V", event = 0 : i64, src = "MTE2"}
// CHECK-NEXT: "cce.wait_flag"() {dst = "V", event = 0 : i64, src = "MTE2"}
// CHECK-NEXT: "cce.vexp"
// CHECK-NEXT: return
// BARRIER-LABEL: func.func @across_chip_barrier
// BARRIER:      "cce.copy_ub_to_gm"
// BARRIER-NEXT: "cce.sync_all"
// BARRIER-NEXT: "cce.copy_gm_to_ub"
// BARRIER-NEXT: "cce.pipe_barrier"() {pipe = "ALL"}
// BARRIER-NEXT: "cce.vexp"
// BARRIER-NEXT: return
func.func @across_chip_barrier(%blk: index {npu.block_idx}, %in: memref<2048xf16, "gm">, %out: memref<2048xf16, "gm">) attributes {npu.block_dim = 2 : i64} {
  %a = memref.alloc() {npu.offset = 0 : i64} : memref<2048xf16, "ub">
  %b = memref.alloc() {npu.offset = 4096 : i64} : memref<2048xf16, "ub">
  "cce.copy_gm_to_ub"(%in, %a) {n_burst = 1 : i64, burst_len = 128 : i64, src_gap = 0 : i64, dst_gap = 0 : i64} : (memref<2048xf16, "gm">, memref<2048xf16, "ub">) -> ()
  "cce.vexp"(%b, %a) {repeat = 16 : i64, mask = 128 : i64, dst_blk_stride = 1 : i64, dst_rep_stride = 8 : i64, src_blk_stride = 1 : i64, src_rep_stride = 8 : i64} : (memref<2048xf16, "ub">, memref<2048xf16, "ub">) -> ()
  "cce.copy_ub_to_gm"(%b, %out) {n_burst = 1 : i64, burst_len = 128 : i64, src_gap = 0 : i64, dst_gap = 0 : i64} : (memref<2048xf16, "ub">, memref<2048xf16, "gm">) -> ()
  "cce.sync_all"() : () -> ()
  "cce.copy_gm_to_ub"(%out, %a) {n_burst = 1 : i64, burst_len = 128 : i64, src_gap = 0 : i64, dst_gap = 0 : i64} : (memref<2048xf16, "gm">, memref<2048xf16, "ub">) -> ()
  "cce.vexp"(%b, %a) {repeat = 16 : i64, mask = 128 : i64, dst_blk_stride = 1 : i64, dst_rep_stride = 8 : i64, src_blk_stride = 1 : i64, src_rep_stride = 8 : i64} : (memref<2048xf16, "ub">, memref<2048xf16, "ub">) -> ()
  return
}

// -----

// A chip barrier does not drain MTE2: a load before it (npu-prefetch's
// constant weights for the op after the barrier) streams on through it, so
// its consumer after the barrier waits for it with a flag pair across the
// barrier (in barrier mode a pipe_barrier after it). What the load's
// consumer before the barrier learnt still holds: the vexp after the
// barrier overwrites what the first vexp read (V -> V, ordered by V's
// draining) and needs no wait for the first load.
// CHECK-LABEL: func.func @load_through_chip_barrier
// CHECK:      "cce.copy_gm_to_ub"(%{{.*}}, %[[A:.*]])
// CHECK-NEXT: "cce.set_flag"() {dst = "V", event = [[E0:.*]] : i64, src = "MTE2"}
// CHECK-NEXT: "cce.wait_flag"() {dst = "V", event = [[E0]] : i64, src = "MTE2"}
// CHECK-NEXT: "cce.vexp"
// CHECK-NEXT: "cce.copy_gm_to_ub"(%{{.*}}, %[[W:.*]])
// CHECK-NEXT: "cce.set_flag"() {dst = "V", event = [[E1:.*]] : i64, src = "MTE2"}
// CHECK-NEXT: "cce.sync_all"
// CHECK-NEXT: "cce.wait_flag"() {dst = "V", event = [[E1]] : i64, src = "MTE2"}
// CHECK-NEXT: "cce.vexp"
// CHECK-NEXT: "cce.set_flag"() {dst = "MTE3", event = {{.*}} : i64, src = "V"}
// CHECK-NEXT: "cce.wait_flag"() {dst = "MTE3", event = {{.*}} : i64, src = "V"}
// CHECK-NEXT: "cce.copy_ub_to_gm"
// CHECK-NEXT: return
// BARRIER-LABEL: func.func @load_through_chip_barrier
// BARRIER:      "cce.copy_gm_to_ub"
// BARRIER-NEXT: "cce.pipe_barrier"() {pipe = "ALL"}
// BARRIER-NEXT: "cce.vexp"
// BARRIER-NEXT: "cce.copy_gm_to_ub"
// BARRIER-NEXT: "cce.sync_all"
// BARRIER-NEXT: "cce.pipe_barrier"() {pipe = "ALL"}
// BARRIER-NEXT: "cce.vexp"
// BARRIER-NEXT: "cce.pipe_barrier"() {pipe = "ALL"}
// BARRIER-NEXT: "cce.copy_ub_to_gm"
// BARRIER-NEXT: return
func.func @load_through_chip_barrier(%blk: index {npu.block_idx}, %in: memref<2048xf16, "gm">, %w: memref<2048xf16, "gm">, %out: memref<2048xf16, "gm">) attributes {npu.block_dim = 2 : i64} {
  %a = memref.alloc() {npu.offset = 0 : i64} : memref<2048xf16, "ub">
  %b = memref.alloc() {npu.offset = 4096 : i64} : memref<2048xf16, "ub">
  %c = memref.alloc() {npu.offset = 8192 : i64} : memref<2048xf16, "ub">
  "cce.copy_gm_to_ub"(%in, %a) {n_burst = 1 : i64, burst_len = 128 : i64, src_gap = 0 : i64, dst_gap = 0 : i64} : (memref<2048xf16, "gm">, memref<2048xf16, "ub">) -> ()
  "cce.vexp"(%b, %a) {repeat = 16 : i64, mask = 128 : i64, dst_blk_stride = 1 : i64, dst_rep_stride = 8 : i64, src_blk_stride = 1 : i64, src_rep_stride = 8 : i64} : (memref<2048xf16, "ub">, memref<2048xf16, "ub">) -> ()
  "cce.copy_gm_to_ub"(%w, %c) {n_burst = 1 : i64, burst_len = 128 : i64, src_gap = 0 : i64, dst_gap = 0 : i64} : (memref<2048xf16, "gm">, memref<2048xf16, "ub">) -> ()
  "cce.sync_all"() : () -> ()
  "cce.vexp"(%b, %c) {repeat = 16 : i64, mask = 128 : i64, dst_blk_stride = 1 : i64, dst_rep_stride = 8 : i64, src_blk_stride = 1 : i64, src_rep_stride = 8 : i64} : (memref<2048xf16, "ub">, memref<2048xf16, "ub">) -> ()
  "cce.copy_ub_to_gm"(%b, %out) {n_burst = 1 : i64, burst_len = 128 : i64, src_gap = 0 : i64, dst_gap = 0 : i64} : (memref<2048xf16, "ub">, memref<2048xf16, "gm">) -> ()
  return
}

// RUN: npu-opt %s --split-input-file --npu-insert-sync 2>/dev/null | FileCheck %s
// RUN: npu-opt %s --split-input-file --npu-insert-sync="sink-sets=true" 2>/dev/null | FileCheck %s --check-prefix=SINK

// Two loads, each feeding its own vmuls. By default each load gets its own
// flag, set right after it, which holds MTE2 until that load has landed
// before the next one starts. With sink-sets the set moves after the run of
// MTE2 transfers: one flag covers both loads (the vector clocks drop the
// second pair as implied) and MTE2 streams both.
// CHECK-LABEL: func.func @two_loads
// CHECK:      "cce.copy_gm_to_ub"
// CHECK-NEXT: "cce.set_flag"() {dst = "V", event = 0 : i64, src = "MTE2"}
// CHECK-NEXT: "cce.copy_gm_to_ub"
// CHECK-NEXT: "cce.set_flag"() {dst = "V", event = 1 : i64, src = "MTE2"}
// CHECK-NEXT: "cce.wait_flag"() {dst = "V", event = 0 : i64, src = "MTE2"}
// CHECK-NEXT: "cce.vmuls"
// CHECK-NEXT: "cce.wait_flag"() {dst = "V", event = 1 : i64, src = "MTE2"}
// CHECK-NEXT: "cce.vmuls"
// SINK-LABEL: func.func @two_loads
// SINK:      "cce.copy_gm_to_ub"
// SINK-NEXT: "cce.copy_gm_to_ub"
// SINK-NEXT: "cce.set_flag"() {dst = "V", event = 0 : i64, src = "MTE2"}
// SINK-NEXT: "cce.wait_flag"() {dst = "V", event = 0 : i64, src = "MTE2"}
// SINK-NEXT: "cce.vmuls"
// SINK-NEXT: "cce.vmuls"
// SINK-NEXT: return
func.func @two_loads(%x: memref<128xf16, "gm">, %y: memref<128xf16, "gm">) {
  %a = memref.alloc() {npu.offset = 0 : i64} : memref<128xf16, "ub">
  %b = memref.alloc() {npu.offset = 256 : i64} : memref<128xf16, "ub">
  %c = memref.alloc() {npu.offset = 512 : i64} : memref<128xf16, "ub">
  %d = memref.alloc() {npu.offset = 768 : i64} : memref<128xf16, "ub">
  "cce.copy_gm_to_ub"(%x, %a) {n_burst = 1 : i64, burst_len = 8 : i64, src_gap = 0 : i64, dst_gap = 0 : i64} : (memref<128xf16, "gm">, memref<128xf16, "ub">) -> ()
  "cce.copy_gm_to_ub"(%y, %b) {n_burst = 1 : i64, burst_len = 8 : i64, src_gap = 0 : i64, dst_gap = 0 : i64} : (memref<128xf16, "gm">, memref<128xf16, "ub">) -> ()
  "cce.vmuls"(%c, %a) {repeat = 1 : i64, mask = 128 : i64, dst_blk_stride = 1 : i64, dst_rep_stride = 8 : i64, src_blk_stride = 1 : i64, src_rep_stride = 8 : i64, scalar = 2.0 : f64} : (memref<128xf16, "ub">, memref<128xf16, "ub">) -> ()
  "cce.vmuls"(%d, %b) {repeat = 1 : i64, mask = 128 : i64, dst_blk_stride = 1 : i64, dst_rep_stride = 8 : i64, src_blk_stride = 1 : i64, src_rep_stride = 8 : i64, scalar = 2.0 : f64} : (memref<128xf16, "ub">, memref<128xf16, "ub">) -> ()
  return
}

// -----

// The run ends at the consumer's pipe: the set never moves past an
// instruction of another pipe (here the vmuls that waits for it).
// SINK-LABEL: func.func @stops_at_other_pipe
// SINK:      "cce.copy_gm_to_ub"
// SINK-NEXT: "cce.set_flag"() {dst = "V", event = 0 : i64, src = "MTE2"}
// SINK-NEXT: "cce.wait_flag"() {dst = "V", event = 0 : i64, src = "MTE2"}
// SINK-NEXT: "cce.vmuls"
// SINK-NEXT: "cce.copy_gm_to_ub"
// SINK-NEXT: return
func.func @stops_at_other_pipe(%x: memref<128xf16, "gm">, %y: memref<128xf16, "gm">) {
  %a = memref.alloc() {npu.offset = 0 : i64} : memref<128xf16, "ub">
  %b = memref.alloc() {npu.offset = 256 : i64} : memref<128xf16, "ub">
  %c = memref.alloc() {npu.offset = 512 : i64} : memref<128xf16, "ub">
  "cce.copy_gm_to_ub"(%x, %a) {n_burst = 1 : i64, burst_len = 8 : i64, src_gap = 0 : i64, dst_gap = 0 : i64} : (memref<128xf16, "gm">, memref<128xf16, "ub">) -> ()
  "cce.vmuls"(%c, %a) {repeat = 1 : i64, mask = 128 : i64, dst_blk_stride = 1 : i64, dst_rep_stride = 8 : i64, src_blk_stride = 1 : i64, src_rep_stride = 8 : i64, scalar = 2.0 : f64} : (memref<128xf16, "ub">, memref<128xf16, "ub">) -> ()
  "cce.copy_gm_to_ub"(%y, %b) {n_burst = 1 : i64, burst_len = 8 : i64, src_gap = 0 : i64, dst_gap = 0 : i64} : (memref<128xf16, "gm">, memref<128xf16, "ub">) -> ()
  return
}

// -----

// Loop-carried pairs sink too: each iteration stores two buffers that the
// next iteration's vector ops overwrite. The sets that release them go after
// the run of stores, so MTE3 streams both stores and waits for their GM
// latency once per iteration instead of once per store (one flag: the vector
// clocks drop the second pair as implied).
// SINK-LABEL: func.func @carried_stores
// SINK:      scf.for
// SINK:      "cce.copy_ub_to_gm"
// SINK-NEXT: "cce.copy_ub_to_gm"
// SINK-NEXT: "cce.set_flag"() {dst = "V", event = 0 : i64, src = "MTE3"}
// SINK-NEXT: }
func.func @carried_stores(%x: memref<128xf16, "gm">, %y: memref<128xf16, "gm">) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %a = memref.alloc() {npu.offset = 0 : i64} : memref<128xf16, "ub">
  %b = memref.alloc() {npu.offset = 256 : i64} : memref<128xf16, "ub">
  scf.for %i = %c0 to %c4 step %c1 {
    "cce.vdup"(%a) {repeat = 1 : i64, mask = 128 : i64, dst_blk_stride = 1 : i64, dst_rep_stride = 8 : i64, scalar = 1.0 : f64} : (memref<128xf16, "ub">) -> ()
    "cce.vdup"(%b) {repeat = 1 : i64, mask = 128 : i64, dst_blk_stride = 1 : i64, dst_rep_stride = 8 : i64, scalar = 2.0 : f64} : (memref<128xf16, "ub">) -> ()
    "cce.copy_ub_to_gm"(%a, %x) {n_burst = 1 : i64, burst_len = 8 : i64, src_gap = 0 : i64, dst_gap = 0 : i64} : (memref<128xf16, "ub">, memref<128xf16, "gm">) -> ()
    "cce.copy_ub_to_gm"(%b, %y) {n_burst = 1 : i64, burst_len = 8 : i64, src_gap = 0 : i64, dst_gap = 0 : i64} : (memref<128xf16, "ub">, memref<128xf16, "gm">) -> ()
  }
  return
}

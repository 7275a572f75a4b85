// RUN: npu-opt %s --split-input-file --npu-double-buffer | FileCheck %s
// RUN: npu-opt %s --split-input-file --npu-double-buffer --npu-plan-memory --npu-insert-sync | FileCheck %s --check-prefix=SYNC

// Five chunks: the loop runs two chunks per iteration (slot 0 with the
// original buffers, slot 1 with copies) and the fifth chunk after it.
// CHECK-LABEL: func.func @stream
// CHECK:      scf.for %[[I:[a-z0-9_]+]] = %c0{{.*}} to %c4 step %c2 {
// CHECK:        %[[NEXT:.*]] = arith.addi %[[I]], %{{.*}} : index
// CHECK:        %[[IN0:.*]] = memref.alloc() {npu.slot = 0 : i64} : memref<2048xf16, "ub">
// CHECK:        %[[OUT0:.*]] = memref.alloc() {npu.slot = 0 : i64} : memref<2048xf16, "ub">
// CHECK:        arith.muli %[[I]]
// CHECK:        "cce.copy_gm_to_ub"(%{{.*}}, %[[IN0]])
// CHECK:        "cce.vexp"(%[[OUT0]], %[[IN0]])
// CHECK:        "cce.copy_ub_to_gm"(%[[OUT0]], %{{.*}})
// CHECK:        %[[IN1:.*]] = memref.alloc() {npu.slot = 1 : i64} : memref<2048xf16, "ub">
// CHECK:        %[[OUT1:.*]] = memref.alloc() {npu.slot = 1 : i64} : memref<2048xf16, "ub">
// CHECK:        arith.muli %[[NEXT]]
// CHECK:        "cce.copy_gm_to_ub"(%{{.*}}, %[[IN1]])
// CHECK:        "cce.vexp"(%[[OUT1]], %[[IN1]])
// CHECK:        "cce.copy_ub_to_gm"(%[[OUT1]], %{{.*}})
// CHECK:      }
// CHECK:      scf.for %[[LAST:.*]] = %c4{{.*}} to %c5{{.*}} step %c1
// CHECK:      arith.muli %[[LAST]]
// CHECK:      "cce.vexp"
// CHECK:      return

// The two slots get their own bytes and their own "buffer free" events.
// SYNC-LABEL: func.func @stream
// SYNC-DAG:   "cce.set_flag"() {dst = "MTE2", event = 0 : i64, src = "V"}
// SYNC-DAG:   "cce.set_flag"() {dst = "MTE2", event = 1 : i64, src = "V"}
// SYNC:       scf.for
// SYNC:       memref.alloc() {npu.offset = [[IN0:[0-9]+]] : i64, npu.slot = 0 : i64}
// SYNC:       memref.alloc() {npu.offset = [[OUT0:[0-9]+]] : i64, npu.slot = 0 : i64}
// SYNC:       "cce.wait_flag"() {dst = "MTE2", event = [[E0:[01]]] : i64, src = "V"}
// SYNC-NEXT:  "cce.copy_gm_to_ub"
// SYNC:       "cce.vexp"
// SYNC-NEXT:  "cce.set_flag"() {dst = "MTE2", event = [[E0]] : i64, src = "V"}
// SYNC:       memref.alloc() {npu.offset = [[IN1:[0-9]+]] : i64, npu.slot = 1 : i64}
// SYNC:       memref.alloc() {npu.offset = [[OUT1:[0-9]+]] : i64, npu.slot = 1 : i64}
// SYNC:       "cce.wait_flag"() {dst = "MTE2", event = [[E1:[01]]] : i64, src = "V"}
// SYNC-NEXT:  "cce.copy_gm_to_ub"
// SYNC:       "cce.vexp"
// SYNC-NEXT:  "cce.set_flag"() {dst = "MTE2", event = [[E1]] : i64, src = "V"}
func.func @stream(%a: memref<10240xf16, "gm">, %o: memref<10240xf16, "gm">) {
  %c0 = arith.constant 0 : index
  %c5 = arith.constant 5 : index
  %c1 = arith.constant 1 : index
  %c2048 = arith.constant 2048 : index
  scf.for %i = %c0 to %c5 step %c1 {
    %in = memref.alloc() : memref<2048xf16, "ub">
    %out = memref.alloc() : memref<2048xf16, "ub">
    %off = arith.muli %i, %c2048 : index
    %sa = memref.subview %a[%off] [2048] [1] : memref<10240xf16, "gm"> to memref<2048xf16, strided<[1], offset: ?>, "gm">
    %so = memref.subview %o[%off] [2048] [1] : memref<10240xf16, "gm"> to memref<2048xf16, strided<[1], offset: ?>, "gm">
    "cce.copy_gm_to_ub"(%sa, %in) {n_burst = 1 : i64, burst_len = 128 : i64, src_gap = 0 : i64, dst_gap = 0 : i64} : (memref<2048xf16, strided<[1], offset: ?>, "gm">, memref<2048xf16, "ub">) -> ()
    "cce.vexp"(%out, %in) {repeat = 16 : i64, mask = 128 : i64, dst_blk_stride = 1 : i64, dst_rep_stride = 8 : i64, src_blk_stride = 1 : i64, src_rep_stride = 8 : i64} : (memref<2048xf16, "ub">, memref<2048xf16, "ub">) -> ()
    "cce.copy_ub_to_gm"(%out, %so) {n_burst = 1 : i64, burst_len = 128 : i64, src_gap = 0 : i64, dst_gap = 0 : i64} : (memref<2048xf16, "ub">, memref<2048xf16, strided<[1], offset: ?>, "gm">) -> ()
  }
  return
}

// -----

// A buffer whose second copy would not fit (2 x 160 KiB of UB) stays shared
// between the slots (correct, only less overlapped); the small one is copied.
// CHECK-LABEL: func.func @too_big
// CHECK:      scf.for %{{.*}} step %c2{{.*}} {
// CHECK:        %[[BIG:.*]] = memref.alloc() : memref<81920xf16, "ub">
// CHECK:        %[[S0:.*]] = memref.alloc() {npu.slot = 0 : i64} : memref<1024xf16, "ub">
// CHECK:        "cce.copy_gm_to_ub"(%{{.*}}, %[[BIG]])
// CHECK:        "cce.copy_gm_to_ub"(%{{.*}}, %[[S0]])
// CHECK-NOT:    memref.alloc() : memref<81920xf16
// CHECK:        %[[S1:.*]] = memref.alloc() {npu.slot = 1 : i64} : memref<1024xf16, "ub">
// CHECK:        "cce.copy_gm_to_ub"(%{{.*}}, %[[BIG]])
// CHECK:        "cce.copy_gm_to_ub"(%{{.*}}, %[[S1]])
// CHECK:      }
func.func @too_big(%a: memref<163840xf16, "gm">) {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %c1 = arith.constant 1 : index
  %c81920 = arith.constant 81920 : index
  scf.for %i = %c0 to %c2 step %c1 {
    %big = memref.alloc() : memref<81920xf16, "ub">
    %small = memref.alloc() : memref<1024xf16, "ub">
    %off = arith.muli %i, %c81920 : index
    %sa = memref.subview %a[%off] [81920] [1] : memref<163840xf16, "gm"> to memref<81920xf16, strided<[1], offset: ?>, "gm">
    %ss = memref.subview %a[%off] [1024] [1] : memref<163840xf16, "gm"> to memref<1024xf16, strided<[1], offset: ?>, "gm">
    "cce.copy_gm_to_ub"(%sa, %big) {n_burst = 1 : i64, burst_len = 5120 : i64, src_gap = 0 : i64, dst_gap = 0 : i64} : (memref<81920xf16, strided<[1], offset: ?>, "gm">, memref<81920xf16, "ub">) -> ()
    "cce.copy_gm_to_ub"(%ss, %small) {n_burst = 1 : i64, burst_len = 64 : i64, src_gap = 0 : i64, dst_gap = 0 : i64} : (memref<1024xf16, strided<[1], offset: ?>, "gm">, memref<1024xf16, "ub">) -> ()
    "cce.vadd"(%small, %small, %big) {repeat = 8 : i64, mask = 128 : i64, dst_blk_stride = 1 : i64, dst_rep_stride = 8 : i64, src0_blk_stride = 1 : i64, src0_rep_stride = 8 : i64, src1_blk_stride = 1 : i64, src1_rep_stride = 8 : i64} : (memref<1024xf16, "ub">, memref<1024xf16, "ub">, memref<81920xf16, "ub">) -> ()
    "cce.copy_ub_to_gm"(%small, %ss) {n_burst = 1 : i64, burst_len = 64 : i64, src_gap = 0 : i64, dst_gap = 0 : i64} : (memref<1024xf16, "ub">, memref<1024xf16, strided<[1], offset: ?>, "gm">) -> ()
  }
  return
}

// -----

// The first loop's buffer takes most of UB (256,000 of 262,144 bytes) and
// cannot be doubled; the stream after it is doubled in full: the copies are
// checked against what is live where that loop runs, not the function's peak.
// CHECK-LABEL: func.func @big_then_stream
// CHECK:      scf.for
// CHECK-NEXT:   memref.alloc() : memref<128000xf16, "ub">
// CHECK:      scf.for
// CHECK-COUNT-2: memref.alloc() {npu.slot = 0 : i64} : memref<2048xf16, "ub">
// CHECK-COUNT-2: memref.alloc() {npu.slot = 1 : i64} : memref<2048xf16, "ub">
// SYNC-LABEL: func.func @big_then_stream
// SYNC-COUNT-2: memref.alloc() {npu.offset = {{[0-9]+}} : i64, npu.slot = 1 : i64}
func.func @big_then_stream(%big: memref<256000xf16, "gm">, %a: memref<10240xf16, "gm">, %o: memref<10240xf16, "gm">) {
  %c0 = arith.constant 0 : index
  %c5 = arith.constant 5 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c2048 = arith.constant 2048 : index
  scf.for %j = %c0 to %c2 step %c1 {
    %wide = memref.alloc() : memref<128000xf16, "ub">
    %sb = memref.subview %big[0] [128000] [1] : memref<256000xf16, "gm"> to memref<128000xf16, strided<[1]>, "gm">
    "cce.copy_gm_to_ub"(%sb, %wide) {n_burst = 1 : i64, burst_len = 8000 : i64, src_gap = 0 : i64, dst_gap = 0 : i64} : (memref<128000xf16, strided<[1]>, "gm">, memref<128000xf16, "ub">) -> ()
    "cce.copy_ub_to_gm"(%wide, %sb) {n_burst = 1 : i64, burst_len = 8000 : i64, src_gap = 0 : i64, dst_gap = 0 : i64} : (memref<128000xf16, "ub">, memref<128000xf16, strided<[1]>, "gm">) -> ()
  }
  scf.for %i = %c0 to %c5 step %c1 {
    %in = memref.alloc() : memref<2048xf16, "ub">
    %out = memref.alloc() : memref<2048xf16, "ub">
    %off = arith.muli %i, %c2048 : index
    %sa = memref.subview %a[%off] [2048] [1] : memref<10240xf16, "gm"> to memref<2048xf16, strided<[1], offset: ?>, "gm">
    %so = memref.subview %o[%off] [2048] [1] : memref<10240xf16, "gm"> to memref<2048xf16, strided<[1], offset: ?>, "gm">
    "cce.copy_gm_to_ub"(%sa, %in) {n_burst = 1 : i64, burst_len = 128 : i64, src_gap = 0 : i64, dst_gap = 0 : i64} : (memref<2048xf16, strided<[1], offset: ?>, "gm">, memref<2048xf16, "ub">) -> ()
    "cce.vexp"(%out, %in) {repeat = 16 : i64, mask = 128 : i64, dst_blk_stride = 1 : i64, dst_rep_stride = 8 : i64, src_blk_stride = 1 : i64, src_rep_stride = 8 : i64} : (memref<2048xf16, "ub">, memref<2048xf16, "ub">) -> ()
    "cce.copy_ub_to_gm"(%out, %so) {n_burst = 1 : i64, burst_len = 128 : i64, src_gap = 0 : i64, dst_gap = 0 : i64} : (memref<2048xf16, "ub">, memref<2048xf16, strided<[1], offset: ?>, "gm">) -> ()
  }
  return
}

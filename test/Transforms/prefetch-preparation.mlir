// RUN: npu-opt %s --npu-lower-elementwise --npu-lower-matmul=schedule=pipelined --npu-double-buffer --npu-prefetch=remarks=true 2>&1 | FileCheck %s

// The matmul's preparation (the ops sharing its location 'mm') first loads
// what nothing writes (the exp of %y, as BERT's out-projection loads its
// bias row), then casts what 'prev' wrote and copies A's resident strip:
// MTE2 runs the free loads at once and idles until 'prev' has stored (its
// 2048-cycle tail less the 512 cycles of those loads). The loop reads only
// the weight, so without counting the waiting preparation that gap would
// be void and nothing prefetched.
// CHECK:       remark: npu-prefetch: 1 of 2 weight slot(s) (147456 bytes, 1 copies) loaded after 'prev' step #1 (of 1) (of the last, 4 bursts in the loop's first iteration), ahead of this op's first wait (estimated MTE2 idle gaps from 'prev' on: 1536, 0, 0, 0, 0 cycles; a chunk of 147456 bytes takes 2304)
// CHECK-LABEL: func.func @strip_behind_free_loads
// CHECK:       cce.vexp
// CHECK:       "cce.copy_gm_to_l1"(%{{.*}}, %{{.*}}) {{{.*}}n_burst = 8
// CHECK:       cce.vexp
// CHECK:       cce.vconv
// CHECK:       "cce.copy_gm_to_l1"(%{{.*}}, %{{.*}}) {{{.*}}n_burst = 48
// CHECK:       scf.for
func.func @strip_behind_free_loads(%x: memref<48x8x16x16xf32, "gm">, %e: memref<48x8x16x16xf32, "gm">, %y: memref<4x8x16x16xf32, "gm">, %t: memref<4x8x16x16xf32, "gm">, %a: memref<48x8x16x16xf16, "gm">, %w: memref<48x48x16x16xf16, "gm"> {npu.constant = dense<0.5> : tensor<48x48x16x16xf16>}, %c: memref<48x8x16x16xf32, "gm">) {
  "ascend.exp"(%x, %e) : (memref<48x8x16x16xf32, "gm">, memref<48x8x16x16xf32, "gm">) -> () loc("prev")
  "ascend.exp"(%y, %t) : (memref<4x8x16x16xf32, "gm">, memref<4x8x16x16xf32, "gm">) -> () loc("mm")
  "ascend.cast"(%e, %a) {round_mode = "rint"} : (memref<48x8x16x16xf32, "gm">, memref<48x8x16x16xf16, "gm">) -> () loc("mm")
  "ascend.matmul"(%a, %w, %c) : (memref<48x8x16x16xf16, "gm">, memref<48x48x16x16xf16, "gm">, memref<48x8x16x16xf32, "gm">) -> () loc("mm")
  return
}

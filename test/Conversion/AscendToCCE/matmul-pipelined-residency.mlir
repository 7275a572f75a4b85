// RUN: npu-opt %s --npu-lower-matmul="schedule=pipelined" 2>/dev/null | FileCheck %s
// RUN: npu-opt %s --npu-lower-matmul="schedule=pipelined" 2>&1 >/dev/null | FileCheck %s --check-prefix=REMARK
// RUN: npu-opt %s --npu-lower-matmul="schedule=pipelined timed-residency=false" 2>&1 >/dev/null | FileCheck %s --check-prefix=BEFORE
// RUN: npu-opt %s --npu-lower-matmul="schedule=pipelined k=384" 2>&1 >/dev/null | FileCheck %s --check-prefix=BEFORE

// BERT's feed-forward output at seq 128 (128x3072x768): A is 768 KiB, so A
// and the B tile of any C tile over the whole reduction ((m + k) x N) exceed
// L1 and the streaming search's 384-wide tiles read A once per column tile.
// The strip still fits with two 128 KiB B chunks beside it: the pipelined
// time estimate (A once, 36 chunks' GM latency, the narrow tiles' short
// drain after the last mad) beats streaming by more than its margin, and the
// remark says so. With timed-residency=false, or with k fixed at 384 (where
// the chunks beside the strip would be 128 rows: no better by the margin),
// A streams as before.

// REMARK: remark: matmul tiling: strategy=os tiles (m=128, n=256, k=64) with the A row strip resident in L1; modelled GM traffic: read 2752512 elements (A 393216, B 2359296) = {{.*}} (the pipelined schedule's estimate: {{[0-9]+}} cycles against {{[0-9]+}} for tiles (m=128, n=80, k=384)); pipelined schedule: L1 chunk n=1024 (B only: the A row strip stays in L1)
// BEFORE: remark: matmul tiling: strategy=os tiles (m=128, n=80, k=384); modelled GM traffic: read 3145728 elements (A 786432, B 2359296) = 6291456 bytes, write-back {{[0-9]+}} elements = {{[0-9]+}} bytes, total {{[0-9]+}} bytes; pipelined schedule: L1 chunk n=384, L0 sub-step n=64

// CHECK-LABEL: func.func @ffn_out
// CHECK:       %[[STRIP:.*]] = memref.alloc() : memref<192x8x16x16xf16, "l1">
// CHECK-NEXT:  "cce.copy_gm_to_l1"(%{{.*}}, %[[STRIP]]) {burst_len = 128 : i64, dst_gap = 0 : i64, n_burst = 192 : i64
// CHECK:       scf.for %{{.*}} = %{{.*}} to %c36 step
// CHECK:         %[[B1:.*]] = memref.alloc() : memref<4x64x16x16xf16, "l1">
// CHECK-NEXT:    "cce.copy_gm_to_l1"(%{{.*}}, %[[B1]]) {burst_len = 1024 : i64, dst_gap = 0 : i64, n_burst = 4 : i64
// CHECK-NOT:     "cce.copy_gm_to_l1"
// CHECK:       }
func.func @ffn_out(%a: memref<192x8x16x16xf16, "gm">, %b: memref<48x192x16x16xf16, "gm">, %c: memref<48x8x16x16xf32, "gm">) {
  "ascend.matmul"(%a, %b, %c) : (memref<192x8x16x16xf16, "gm">, memref<48x192x16x16xf16, "gm">, memref<48x8x16x16xf32, "gm">) -> ()
  return
}

// RUN: npu-opt %s --verify-diagnostics --npu-fuse="ub-fraction=0.05 resident=false" | FileCheck %s
// RUN: npu-opt %s --npu-fuse="ub-fraction=0.05 resident=false" --npu-lower-fused="ub-fraction=0.05 resident=false" 2>/dev/null | FileCheck %s --check-prefix=KERNEL


// Softmax plus its input over rows of 2040 f32 (255 blocks, the repeat-stride
// limit; x stays live to the end) with a UB share of 0.05 (13 KiB): even one
// whole row in place (17 KiB with its result and work rows) would need more
// UB than the budget, so the group becomes a two-pass kernel over column
// pieces (pass 1: running max and rescaled sum; pass 2: outputs).
// CHECK-LABEL: func.func @too_long
// CHECK:       scf.execute_region
// CHECK:         "ascend.div"
// CHECK-NEXT:    "ascend.add"
// CHECK-NEXT:    scf.yield
// KERNEL-LABEL: func.func @too_long
// Pass 1, first piece: its max and sum initialise the accumulators.
// KERNEL:       cce.copy_gm_to_ub
// KERNEL-NOT:   cce.copy_
// KERNEL:       cce.vcmax
// KERNEL:       cce.vexp
// KERNEL:       cce.vcadd
// Further pieces: m_new = max(m, piece max), s = s * exp(m - m_new) + piece sum.
// KERNEL:       cce.copy_gm_to_ub
// KERNEL-NOT:   cce.copy_
// KERNEL:       cce.vcmax
// KERNEL:       cce.vmax
// KERNEL:       cce.vsub
// KERNEL:       cce.vexp
// KERNEL:       cce.vmax
// KERNEL:       cce.vcadd
// KERNEL:       cce.vmul
// KERNEL:       cce.vadd
// Pass 2 (a first piece, then the shorter rest): x read again, the
// outputs written once.
// KERNEL:       cce.copy_gm_to_ub
// KERNEL-NOT:   cce.copy_gm_to_ub
// KERNEL:       cce.vrec
// KERNEL:       cce.copy_ub_to_gm
// KERNEL:       return
func.func @too_long(%x: memref<8x2040xf32, "gm">, %y: memref<8x2040xf32, "gm">) {
  %m = memref.alloc() : memref<8x1xf32, "gm">
  // expected-remark @+1 {{fused 6 ops (reduce_max, sub, exp, reduce_sum, div, add) over 8 rows of 2040: GM traffic 718208 -> 195840 bytes, 5 tensor(s) stay on chip; rows longer than UB: two-pass online over pieces of 1024 columns; online softmax (running max, rescaled sum)}}
  "ascend.reduce_max"(%x, %m) : (memref<8x2040xf32, "gm">, memref<8x1xf32, "gm">) -> ()
  %d = memref.alloc() : memref<8x2040xf32, "gm">
  "ascend.sub"(%x, %m, %d) : (memref<8x2040xf32, "gm">, memref<8x1xf32, "gm">, memref<8x2040xf32, "gm">) -> ()
  %e = memref.alloc() : memref<8x2040xf32, "gm">
  "ascend.exp"(%d, %e) : (memref<8x2040xf32, "gm">, memref<8x2040xf32, "gm">) -> ()
  %s = memref.alloc() : memref<8x1xf32, "gm">
  "ascend.reduce_sum"(%e, %s) : (memref<8x2040xf32, "gm">, memref<8x1xf32, "gm">) -> ()
  %q = memref.alloc() : memref<8x2040xf32, "gm">
  "ascend.div"(%e, %s, %q) : (memref<8x2040xf32, "gm">, memref<8x1xf32, "gm">, memref<8x2040xf32, "gm">) -> ()
  "ascend.add"(%q, %x, %y) : (memref<8x2040xf32, "gm">, memref<8x2040xf32, "gm">, memref<8x2040xf32, "gm">) -> ()
  return
}


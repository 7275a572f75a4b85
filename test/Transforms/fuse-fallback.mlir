// RUN: npu-opt %s --npu-lower="cores=1 ub-fraction=0.9 fuse-remarks=true" -o %t 2>&1 | FileCheck %s
// RUN: npu-run %s --pipeline "npu-lower{cores=1 ub-fraction=0.9}" --no-numerics 2>&1 >/dev/null | FileCheck %s --check-prefix=SAID
// RUN: npu-opt %s --npu-lower="cores=1 fuse-remarks=true" -o %t 2>&1 | FileCheck %s --check-prefix=DEFAULT
// cores=1: the retry is a one-core story; split over the chip each core's
// row chunk is smaller and the 0.9 share fits.

// f16 softmax. A UB share the chunks cannot keep (0.9: npu-lower-fused sizes
// a chunk with both sets of its buffers at 0.9 / 0.35 times the share, more
// than UB, which overflows once planned) is retried with half the share
// (then, if that overflows too, unfused): attempting fusion never fails the
// program.
// CHECK: remark: fused 5 ops
// CHECK: fuse-fallback.mlir:[[# @LINE + 11]]:3: remark: npu-lower: with fused kernels at UB share 0.9 the program overflowed (ub overflows: 344064 bytes placed, at least 344064 live at once, 262144 available); lowered again at UB share 0.45{{$}}
// CHECK: remark: fused 5 ops
// CHECK-NOT: overflowed
// With the default share the fused kernel is planned at once.
// DEFAULT: remark: fused 5 ops (reduce_max, sub, exp, reduce_sum, div) over 1536 rows of 128
// DEFAULT-NOT: overflowed
// Said unasked, as npu.compile passes it on (npu-run; before: only with fuse-remarks=true).
// SAID: remark: npu-lower: with fused kernels at UB share 0.9 the program overflowed
// SAID-NOT: remark
func.func @softmax(%x: memref<12x128x128xf16, "gm">, %y: memref<12x128x128xf16, "gm">) {
  %t1 = memref.alloc() : memref<12x128x1xf16, "gm">
  "ascend.reduce_max"(%x, %t1) : (memref<12x128x128xf16, "gm">, memref<12x128x1xf16, "gm">) -> ()
  %t2 = memref.alloc() : memref<12x128x128xf16, "gm">
  "ascend.sub"(%x, %t1, %t2) : (memref<12x128x128xf16, "gm">, memref<12x128x1xf16, "gm">, memref<12x128x128xf16, "gm">) -> ()
  %t3 = memref.alloc() : memref<12x128x128xf16, "gm">
  "ascend.exp"(%t2, %t3) : (memref<12x128x128xf16, "gm">, memref<12x128x128xf16, "gm">) -> ()
  %t4 = memref.alloc() : memref<12x128x1xf16, "gm">
  "ascend.reduce_sum"(%t3, %t4) : (memref<12x128x128xf16, "gm">, memref<12x128x1xf16, "gm">) -> ()
  "ascend.div"(%t3, %t4, %y) : (memref<12x128x128xf16, "gm">, memref<12x128x1xf16, "gm">, memref<12x128x128xf16, "gm">) -> ()
  return
}

// RUN: npu-opt %s --npu-lower="cores=1 emit=cce max-chunk=4096 fuse=false" | FileCheck %s
// RUN: npu-opt %s --npu-lower="cores=1 emit=cce max-chunk=4096 fuse=false carried-span=block" | FileCheck %s --check-prefix=BLOCK
// cores=1: the ten loops' event ids on one core's pipes (split over the
// chip, each core has fewer of them and chip barriers between).

// Ten independent ops, each a ping-ponged loop with loop-carried flags: more
// loops than event ids per pipe pair (8). carried-span=fit (the default)
// fits each carried pair's pre-set and balancing wait around its loop, so
// the ids go round and no op is fenced off by a full barrier. The old
// placement (block: pre-set at the function's start, balancing wait at its
// end) holds one id per loop over the whole function and runs out.
// CHECK-LABEL: func.func @ten_loops
// CHECK-NOT:   pipe = "ALL"
// CHECK:       return
// BLOCK-LABEL: func.func @ten_loops
// BLOCK:       "cce.pipe_barrier"() {pipe = "ALL"}
func.func @ten_loops(%a0: memref<16384xf16, "gm">, %a1: memref<16384xf16, "gm">, %a2: memref<16384xf16, "gm">, %a3: memref<16384xf16, "gm">, %a4: memref<16384xf16, "gm">, %a5: memref<16384xf16, "gm">, %a6: memref<16384xf16, "gm">, %a7: memref<16384xf16, "gm">, %a8: memref<16384xf16, "gm">, %a9: memref<16384xf16, "gm">, %a10: memref<16384xf16, "gm">, %a11: memref<16384xf16, "gm">, %a12: memref<16384xf16, "gm">, %a13: memref<16384xf16, "gm">, %a14: memref<16384xf16, "gm">, %a15: memref<16384xf16, "gm">, %a16: memref<16384xf16, "gm">, %a17: memref<16384xf16, "gm">, %a18: memref<16384xf16, "gm">, %a19: memref<16384xf16, "gm">) {
  "ascend.exp"(%a0, %a10) : (memref<16384xf16, "gm">, memref<16384xf16, "gm">) -> ()
  "ascend.exp"(%a1, %a11) : (memref<16384xf16, "gm">, memref<16384xf16, "gm">) -> ()
  "ascend.exp"(%a2, %a12) : (memref<16384xf16, "gm">, memref<16384xf16, "gm">) -> ()
  "ascend.exp"(%a3, %a13) : (memref<16384xf16, "gm">, memref<16384xf16, "gm">) -> ()
  "ascend.exp"(%a4, %a14) : (memref<16384xf16, "gm">, memref<16384xf16, "gm">) -> ()
  "ascend.exp"(%a5, %a15) : (memref<16384xf16, "gm">, memref<16384xf16, "gm">) -> ()
  "ascend.exp"(%a6, %a16) : (memref<16384xf16, "gm">, memref<16384xf16, "gm">) -> ()
  "ascend.exp"(%a7, %a17) : (memref<16384xf16, "gm">, memref<16384xf16, "gm">) -> ()
  "ascend.exp"(%a8, %a18) : (memref<16384xf16, "gm">, memref<16384xf16, "gm">) -> ()
  "ascend.exp"(%a9, %a19) : (memref<16384xf16, "gm">, memref<16384xf16, "gm">) -> ()
  return
}

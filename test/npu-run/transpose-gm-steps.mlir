// A transpose the general lowering stages through GM temporaries (a chain of
// last-two swaps) runs down to hivm: npu-lower plans the temporaries the
// lowerings make, not only the ones written in the input.
// RUN: npu-run %s --check | FileCheck %s
// RUN: npu-opt %s --npu-lower | FileCheck %s --check-prefix=IR

// CHECK: check: passed
// IR-LABEL: func.func @reverse
// IR-SAME: npu.workspace
// IR-NOT: memref.alloc
func.func @reverse(%a: memref<64x48x32xf32, "gm">, %b: memref<32x48x64xf32, "gm">) {
  "ascend.transpose"(%a, %b) {permutation = array<i64: 2, 1, 0>} : (memref<64x48x32xf32, "gm">, memref<32x48x64xf32, "gm">) -> ()
  return
}

// A program whose tensors are all zero-sized compiles to an empty program
// (down to hivm), runs, and its (empty) results check against numpy.
// RUN: npu-run %s --check | FileCheck %s

// CHECK: cycles
// CHECK: check: passed
// EMPTY: check: passed
func.func @empty(%a: memref<4x0xf16, "gm">, %b: memref<4x0xf32, "gm">, %c: memref<0x16xf16, "gm">,
                 %d: memref<0xf16, "gm">) {
  "ascend.cast"(%a, %b) {round_mode = "none"} : (memref<4x0xf16, "gm">, memref<4x0xf32, "gm">) -> ()
  "ascend.reduce_sum"(%c, %d) : (memref<0x16xf16, "gm">, memref<0xf16, "gm">) -> ()
  return
}

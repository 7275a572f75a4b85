// The entry function must have a body and memref arguments only; bad
// entries are located errors (exit 1), as are zero-sized programs' results
// checked against numpy.
// RUN: not npu-run %s --entry declared 2>&1 | FileCheck %s --check-prefix=DECL
// RUN: not npu-run %s --entry index_arg 2>&1 | FileCheck %s --check-prefix=INDEX
// RUN: npu-run %s --entry empty --check | FileCheck %s --check-prefix=EMPTY

// DECL: entry.mlir:[[@LINE+1]]:1: error: invalid: 'declared' is only a declaration: an entry function needs a body to run
func.func private @declared(%a: memref<16xf16, "gm">)

// INDEX: entry.mlir:[[@LINE+1]]:1: error: invalid: argument #2 of 'index_arg' has type index: an entry function takes memref arguments only
func.func @index_arg(%a: memref<16xf16, "gm">, %b: memref<16xf16, "gm">, %n: index) {
  "ascend.exp"(%a, %b) : (memref<16xf16, "gm">, memref<16xf16, "gm">) -> ()
  return
}

// EMPTY: cycles
// EMPTY: check: passed
func.func @empty(%a: memref<4x0xf16, "gm">, %b: memref<4x0xf32, "gm">, %c: memref<0x16xf16, "gm">,
                 %d: memref<0xf16, "gm">) {
  "ascend.cast"(%a, %b) {round_mode = "none"} : (memref<4x0xf16, "gm">, memref<4x0xf32, "gm">) -> ()
  "ascend.reduce_sum"(%c, %d) : (memref<0x16xf16, "gm">, memref<0xf16, "gm">) -> ()
  return
}

// The entry function must have a body and memref arguments only; bad
// entries are located errors (exit 1). Zero-sized programs: entry-empty.mlir.
// RUN: not npu-run %s --entry declared 2>&1 | FileCheck %s --check-prefix=DECL
// RUN: not npu-run %s --entry index_arg 2>&1 | FileCheck %s --check-prefix=INDEX

// DECL: entry.mlir:[[@LINE+1]]:1: error: invalid: 'declared' is only a declaration: an entry function needs a body to run
func.func private @declared(%a: memref<16xf16, "gm">)

// INDEX: entry.mlir:[[@LINE+1]]:1: error: invalid: argument #2 of 'index_arg' has type index: an entry function takes memref arguments only
func.func @index_arg(%a: memref<16xf16, "gm">, %b: memref<16xf16, "gm">, %n: index) {
  "ascend.exp"(%a, %b) : (memref<16xf16, "gm">, memref<16xf16, "gm">) -> ()
  return
}

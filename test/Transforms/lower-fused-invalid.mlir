// RUN: npu-opt %s --split-input-file --verify-diagnostics --npu-lower-fused -o %t

// A hand-written group with an op that is not a row op is an error at that op.
func.func @bad_group(%x: memref<16x32xf32, "gm">, %y: memref<32x16xf32, "gm">) {
  scf.execute_region {
    // expected-error @+1 {{cannot be part of a fused group: 'ascend.transpose' is not a row op}}
    "ascend.transpose"(%x, %y) {permutation = array<i64: 1, 0>} : (memref<16x32xf32, "gm">, memref<32x16xf32, "gm">) -> ()
    scf.yield
  } {npu.fused = {rows = 16 : i64}}
  return
}

// -----

// Only ascend row ops, allocs, views and the terminator belong in a group.
func.func @foreign(%x: memref<16x32xf32, "gm">, %y: memref<16x32xf32, "gm">) {
  scf.execute_region {
    "ascend.exp"(%x, %y) : (memref<16x32xf32, "gm">, memref<16x32xf32, "gm">) -> ()
    // expected-error @+1 {{'func.call' cannot be part of a fused group}}
    func.call @f() : () -> ()
    scf.yield
  } {npu.fused = {rows = 16 : i64}}
  return
}
func.func private @f()

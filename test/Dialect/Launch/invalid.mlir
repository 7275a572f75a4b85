// RUN: npu-opt %s --split-input-file --verify-diagnostics
// One chunk per rule of a multi-core kernel's launch attributes (dialects/launch.py).

// expected-error@+1 {{argument #1 is marked 'npu.block_idx' but is i32, not index}}
func.func @idx_not_index(%x: memref<16xf16, "gm">, %b: i32 {npu.block_idx}) attributes {npu.block_dim = 2 : i64} {
  return
}

// -----

// expected-error@+1 {{has 2 'npu.block_idx' arguments (#0, #1); a kernel has one block index}}
func.func @two_indices(%a: index {npu.block_idx}, %b: index {npu.block_idx}) attributes {npu.block_dim = 2 : i64} {
  return
}

// -----

// expected-error@+1 {{'npu.block_dim' must be an integer of at least 1, got 0 : i64}}
func.func @zero_cores(%b: index {npu.block_idx}) attributes {npu.block_dim = 0 : i64} {
  return
}

// -----

// expected-error@+1 {{has a 'npu.block_idx' argument but no 'npu.block_dim'}}
func.func @index_without_dim(%b: index {npu.block_idx}) {
  return
}

// -----

// expected-error@+1 {{'npu.block_dim' = 4 needs an 'npu.block_idx' argument: every core would do the same work}}
func.func @dim_without_index(%x: memref<16xf16, "gm">) attributes {npu.block_dim = 4 : i64} {
  return
}

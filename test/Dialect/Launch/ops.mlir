// RUN: npu-opt %s | FileCheck %s
// A multi-core kernel: npu.block_dim on the func, its block index argument.

// CHECK-LABEL: func.func @split
// CHECK-SAME: %{{.*}}: index {npu.block_idx}
// CHECK-SAME: attributes {npu.block_dim = 4 : i64}
func.func @split(%x: memref<4096xf16, "gm">, %b: index {npu.block_idx}) attributes {npu.block_dim = 4 : i64} {
  return
}

// CHECK-LABEL: func.func @one_core
func.func @one_core(%x: memref<16xf16, "gm">) attributes {npu.block_dim = 1 : i64} {
  return
}

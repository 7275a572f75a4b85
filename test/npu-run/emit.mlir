// npu-run simulates either level; both give the same results and cycles.
// RUN: npu-run %s --check --json --emit cce > %t.cce
// RUN: npu-run %s --check --json > %t.hivm
// RUN: npu-opt %s --npu-lower="emit=cce" -o %t.cce.mlir
// RUN: npu-run %t.cce.mlir --json --emit hivm > %t.lowered
// RUN: npu-as %s -o %t.npub
// RUN: npu-run %t.npub --json > %t.binary
// RUN: cat %t.cce %t.hivm %t.lowered %t.binary | FileCheck %s

// CHECK: {{^}}  "cycles": [[CYCLES:[0-9]+]],
// CHECK: "level": "cce"
// CHECK: "passed": true
// CHECK: {{^}}  "cycles": [[CYCLES]],
// CHECK: "level": "hivm"
// CHECK: "passed": true
// CHECK: {{^}}  "cycles": [[CYCLES]],
// CHECK: "level": "hivm"
// CHECK: {{^}}  "cycles": [[CYCLES]],
// CHECK: "level": "hivm"

func.func @add(%a: memref<4100xf16, "gm">, %b: memref<4100xf16, "gm">, %c: memref<4100xf16, "gm">) {
  "ascend.add"(%a, %b, %c) : (memref<4100xf16, "gm">, memref<4100xf16, "gm">, memref<4100xf16, "gm">) -> ()
  return
}

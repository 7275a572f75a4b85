// ascend.cmp, ascend.select and reduce_min (vcmp, vsel, vcmin) run at both
// levels and from the binary with the same results and cycles.
// RUN: npu-run %s --check --json --emit cce > %t.cce
// RUN: npu-run %s --check --json > %t.hivm
// RUN: npu-as %s -o %t.npub
// RUN: npu-run %t.npub --json > %t.binary
// RUN: npu-as --listing %t.npub | FileCheck %s --check-prefix=LIST
// RUN: npu-as -d %t.npub -o %t.dis.mlir
// RUN: npu-opt %s --npu-lower -o %t.lowered.mlir
// RUN: diff %t.lowered.mlir %t.dis.mlir
// RUN: cat %t.cce %t.hivm %t.binary | FileCheck %s

// CHECK: {{^}}  "cycles": [[CYCLES:[0-9]+]],
// CHECK: "level": "cce"
// CHECK: "passed": true
// CHECK: {{^}}  "cycles": [[CYCLES]],
// CHECK: "level": "hivm"
// CHECK: "passed": true
// CHECK: {{^}}  "cycles": [[CYCLES]],
// CHECK: "level": "hivm"

// LIST: hivm.vcmp  [compare 0x{{[0-9a-f]+}}: {{.*}} predicate=2]
// LIST: hivm.vsel  [select 0x{{[0-9a-f]+}}: dst_blk_stride=1 cond_blk_stride=1
// LIST: hivm.vcmin  [vector 0x{{[0-9a-f]+}}:

func.func @k(%a: memref<4x128xf16, "gm">, %b: memref<4x128xf16, "gm">, %m: memref<4x128xi8, "gm">,
             %o: memref<4x128xf16, "gm">, %r: memref<4xf16, "gm">) {
  "ascend.cmp"(%a, %b, %m) {predicate = "lt"} : (memref<4x128xf16, "gm">, memref<4x128xf16, "gm">, memref<4x128xi8, "gm">) -> ()
  "ascend.select"(%m, %a, %b, %o) : (memref<4x128xi8, "gm">, memref<4x128xf16, "gm">, memref<4x128xf16, "gm">, memref<4x128xf16, "gm">) -> ()
  "ascend.reduce_min"(%o, %r) : (memref<4x128xf16, "gm">, memref<4xf16, "gm">) -> ()
  return
}

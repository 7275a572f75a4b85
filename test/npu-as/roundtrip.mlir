// RUN: npu-opt %s --npu-lower-cce-to-hivm -o %t.mlir
// RUN: npu-as %t.mlir -o %t.npub
// RUN: npu-as -d %t.npub -o %t.dis.mlir
// RUN: diff %t.mlir %t.dis.mlir
// RUN: npu-as --listing %t.npub | FileCheck %s --check-prefix=LIST
// RUN: npu-run %t.npub --json | FileCheck %s --check-prefix=SIM
// RUN: npu-as %t.mlir --stats | FileCheck %s --check-prefix=STATS
// A corrupt opcode, a register used before it is defined, a truncated file:
// RUN: %PYTHON %S/Inputs/corrupt.py %t.npub %t.bad
// RUN: not npu-run %t.bad.opcode 2>&1 | FileCheck %s --check-prefix=OPCODE
// RUN: not npu-as -d %t.bad.register -o %t.never 2>&1 | FileCheck %s --check-prefix=REG
// RUN: not ls %t.never
// RUN: not npu-run %t.bad.truncated 2>&1 | FileCheck %s --check-prefix=TRUNC
// RUN: not npu-run %t.bad.word 2>&1 | FileCheck %s --check-prefix=WORD

// LIST: instructions,
// LIST: FOR
// LIST: hivm.addr
// LIST: hivm.copy_gm_to_ub  [copy 0x0000000000100001: n_burst=1 burst_len=16 src_gap=0 dst_gap=0]
// LIST: hivm.vadds  [vector 0x0200000808000101: {{.*}} repeat=2]
// LIST: END
// LIST: RETURN

// SIM: "level": "hivm"

// STATS: {"instructions": [[N:[0-9]+]], "bytes": [[B:[0-9]+]]}

// OPCODE: error: corrupt binary at byte offset {{[0-9]+}} (0x{{[0-9a-f]+}}): unknown opcode 0x00ee
// REG: error: corrupt binary at byte offset {{[0-9]+}} (0x{{[0-9a-f]+}}): register r{{[0-9]+}} is used before it is defined
// WORD: .bad.word:1:{{[0-9]+}}: error: 'hivm.copy_gm_to_ub' op malformed copy configuration word 0x0000000000101001: bits 0x0000000000001000 belong to no field
// TRUNC: error: corrupt binary at byte offset {{[0-9]+}} (0x{{[0-9a-f]+}}): code size

func.func @scale(%a: memref<1024xf16, "gm">, %b: memref<1024xf16, "gm">) {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %c1 = arith.constant 1 : index
  %c256 = arith.constant 256 : index
  %ub = memref.alloc() {npu.offset = 0 : i64} : memref<256xf16, "ub">
  "cce.set_flag"() {src = "MTE3", dst = "MTE2", event = 0 : i64} : () -> ()
  scf.for %i = %c0 to %c4 step %c1 {
    %off = arith.muli %i, %c256 : index
    %src = memref.subview %a[%off] [256] [1] : memref<1024xf16, "gm"> to memref<256xf16, strided<[1], offset: ?>, "gm">
    "cce.wait_flag"() {src = "MTE3", dst = "MTE2", event = 0 : i64} : () -> ()
    "cce.copy_gm_to_ub"(%src, %ub) {n_burst = 1 : i64, burst_len = 16 : i64, src_gap = 0 : i64, dst_gap = 0 : i64} : (memref<256xf16, strided<[1], offset: ?>, "gm">, memref<256xf16, "ub">) -> ()
    "cce.set_flag"() {src = "MTE2", dst = "V", event = 0 : i64} : () -> ()
    "cce.wait_flag"() {src = "MTE2", dst = "V", event = 0 : i64} : () -> ()
    "cce.vadds"(%ub, %ub) {repeat = 2 : i64, mask = 128 : i64, scalar = 2.0 : f64, dst_blk_stride = 1 : i64, src_blk_stride = 1 : i64, dst_rep_stride = 8 : i64, src_rep_stride = 8 : i64} : (memref<256xf16, "ub">, memref<256xf16, "ub">) -> ()
    "cce.set_flag"() {src = "V", dst = "MTE3", event = 0 : i64} : () -> ()
    "cce.wait_flag"() {src = "V", dst = "MTE3", event = 0 : i64} : () -> ()
    %dst = memref.subview %b[%off] [256] [1] : memref<1024xf16, "gm"> to memref<256xf16, strided<[1], offset: ?>, "gm">
    "cce.copy_ub_to_gm"(%ub, %dst) {n_burst = 1 : i64, burst_len = 16 : i64, src_gap = 0 : i64, dst_gap = 0 : i64} : (memref<256xf16, "ub">, memref<256xf16, strided<[1], offset: ?>, "gm">) -> ()
    "cce.set_flag"() {src = "MTE3", dst = "MTE2", event = 0 : i64} : () -> ()
  }
  "cce.wait_flag"() {src = "MTE3", dst = "MTE2", event = 0 : i64} : () -> ()
  return
}

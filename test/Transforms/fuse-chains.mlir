// RUN: npu-opt %s --split-input-file --npu-fuse=remarks=false | FileCheck %s
// RUN: npu-opt %s --split-input-file --npu-fuse 2>&1 | FileCheck %s --check-prefix=REMARK
// RUN: not npu-opt %s --split-input-file --npu-fuse=chains=false 2>/dev/null | FileCheck %s --check-prefix=OFF
// RUN: npu-opt %s --split-input-file --npu-fuse --npu-lower-matmul=schedule=pipelined 2>/dev/null | FileCheck %s --check-prefix=KERNEL
// RUN: npu-opt %s --split-input-file --npu-fuse=remarks=false --npu-lower-matmul=schedule=pipelined 2>&1 | FileCheck %s --check-prefix=LOWERED

// The f16 result of a matmul epilogue read only as the next matmul's A
// stays in L1: its GM alloc is marked npu.chain; the producer's drains
// store it UB -> L1 and the consumer's loop copies only B from GM.
// CHECK-LABEL: func.func @ffn_pair
// CHECK:       memref.alloc() {npu.chain = {bytes = 49152 : i64, consumer_k = 64 : i64}} : memref<12x8x16x16xf16, "gm">
// OFF-LABEL:   func.func @ffn_pair
// OFF-NOT:     npu.chain
// REMARK: fuse-chains.mlir:29:3: remark: matmul chain: its 49152-byte result (128x192 f16 Nz) stays in L1 as the A operand of the next matmul (GM traffic -98304 bytes: no store, no load)
// LOWERED: fuse-chains.mlir:29:3: remark: matmul tiling: {{.*}}; C leaves to L1 (a chained tensor: its write-back above is not to GM)
// LOWERED: fuse-chains.mlir:34:3: remark: matmul tiling: {{.*}}; A is a chained tensor already in L1 (its GM read above is not made); pipelined schedule: {{.*}}(B only: the A row strip stays in L1)
// KERNEL-LABEL: func.func @ffn_pair
// KERNEL:       %[[T:.*]] = memref.alloc() : memref<12x8x16x16xf16, "l1">
// KERNEL-NOT:   memref<12x8x16x16xf16, "gm">
// KERNEL:       memref.subview %[[T]]
// KERNEL-NEXT:  "cce.copy_ub_to_l1"
// KERNEL:       scf.for
// KERNEL-NOT:   "cce.copy_gm_to_l1"{{.*}}memref<12x8x16x16xf16
// KERNEL:       memref.collapse_shape %[[T]]
// KERNEL:       "cce.load_l1_to_l0a"
// KERNEL:       return
func.func @ffn_pair(%x: memref<4x8x16x16xf16, "gm">, %w1: memref<12x4x16x16xf16, "gm">, %bias: memref<12x8x16x16xf32, "gm"> {npu.constant = dense<0.25> : tensor<12x8x16x16xf32>}, %w2: memref<4x12x16x16xf16, "gm">, %y: memref<4x8x16x16xf32, "gm">) {
  %c = memref.alloc() : memref<12x8x16x16xf32, "gm">
  "ascend.matmul"(%x, %w1, %c) : (memref<4x8x16x16xf16, "gm">, memref<12x4x16x16xf16, "gm">, memref<12x8x16x16xf32, "gm">) -> ()
  %h = memref.alloc() : memref<12x8x16x16xf32, "gm">
  "ascend.add"(%c, %bias, %h) : (memref<12x8x16x16xf32, "gm">, memref<12x8x16x16xf32, "gm">, memref<12x8x16x16xf32, "gm">) -> ()
  %t = memref.alloc() : memref<12x8x16x16xf16, "gm">
  "ascend.cast"(%h, %t) {round_mode = "rint"} : (memref<12x8x16x16xf32, "gm">, memref<12x8x16x16xf16, "gm">) -> ()
  "ascend.matmul"(%t, %w2, %y) : (memref<12x8x16x16xf16, "gm">, memref<4x12x16x16xf16, "gm">, memref<4x8x16x16xf32, "gm">) -> ()
  return
}

// -----

// BERT seq 512's FFN: the 3 MiB result does not fit L1: left in GM.
// (At seq 128, 768 KiB, it does not fit beside ffn_in's 960 KiB either.)
// CHECK-LABEL: func.func @too_large
// CHECK-NOT:   npu.chain
func.func @too_large(%x: memref<48x32x16x16xf16, "gm">, %w1: memref<192x48x16x16xf16, "gm">, %w2: memref<48x192x16x16xf16, "gm">, %y: memref<48x32x16x16xf32, "gm">) {
  %t = memref.alloc() : memref<192x32x16x16xf16, "gm">
  // REMARK: fuse-chains.mlir:[[@LINE+1]]:3: remark: matmul chain not formed: its 3145728-byte result does not fit L1 (1048576 bytes) next to the producer's working set (786432 bytes)
  "ascend.matmul"(%x, %w1, %t) : (memref<48x32x16x16xf16, "gm">, memref<192x48x16x16xf16, "gm">, memref<192x32x16x16xf16, "gm">) -> ()
  "ascend.matmul"(%t, %w2, %y) : (memref<192x32x16x16xf16, "gm">, memref<48x192x16x16xf16, "gm">, memref<48x32x16x16xf32, "gm">) -> ()
  return
}

// -----

// A chain is only formed into a matmul's A operand: here the tensor is B.
// CHECK-LABEL: func.func @as_b
// CHECK-NOT:   npu.chain
func.func @as_b(%x: memref<4x8x16x16xf16, "gm">, %w1: memref<8x4x16x16xf16, "gm">, %a: memref<8x8x16x16xf16, "gm">, %y: memref<8x8x16x16xf32, "gm">) {
  %t = memref.alloc() : memref<8x8x16x16xf16, "gm">
  "ascend.matmul"(%x, %w1, %t) : (memref<4x8x16x16xf16, "gm">, memref<8x4x16x16xf16, "gm">, memref<8x8x16x16xf16, "gm">) -> ()
  "ascend.matmul"(%a, %t, %y) : (memref<8x8x16x16xf16, "gm">, memref<8x8x16x16xf16, "gm">, memref<8x8x16x16xf32, "gm">) -> ()
  return
}

// -----

// A plain matmul with an f16 C chains as well: its drain stores UB -> L1.
// CHECK-LABEL: func.func @plain_f16
// CHECK:       memref.alloc() {npu.chain
// KERNEL-LABEL: func.func @plain_f16
// KERNEL:       memref.alloc() : memref<8x8x16x16xf16, "l1">
// KERNEL:       "cce.copy_ub_to_l1"
// KERNEL:       "cce.load_l1_to_l0a"
func.func @plain_f16(%x: memref<4x8x16x16xf16, "gm">, %w1: memref<8x4x16x16xf16, "gm">, %w2: memref<4x8x16x16xf16, "gm">, %y: memref<4x8x16x16xf32, "gm">) {
  %t = memref.alloc() : memref<8x8x16x16xf16, "gm">
  "ascend.matmul"(%x, %w1, %t) : (memref<4x8x16x16xf16, "gm">, memref<8x4x16x16xf16, "gm">, memref<8x8x16x16xf16, "gm">) -> ()
  "ascend.matmul"(%t, %w2, %y) : (memref<8x8x16x16xf16, "gm">, memref<4x8x16x16xf16, "gm">, memref<4x8x16x16xf32, "gm">) -> ()
  return
}

// -----

// The consumer's best tiles (k=48 of K=64) do not divide its C: no
// pipelined plan reads a resident strip, so the result stays in GM.
// CHECK-LABEL: func.func @narrow
// CHECK-NOT:   npu.chain
func.func @narrow(%x: memref<4x1x16x16xf16, "gm">, %w1: memref<8x4x16x16xf16, "gm">, %w2: memref<4x8x16x16xf16, "gm">, %y: memref<4x1x16x16xf32, "gm">) {
  %t = memref.alloc() : memref<8x1x16x16xf16, "gm">
  // REMARK: fuse-chains.mlir:[[@LINE+1]]:3: remark: matmul chain not formed: the consumer cannot read it as a resident A strip with tiles (m=16, n=128, k=48) (its C tiles must divide M x K and two B chunks fit beside it)
  "ascend.matmul"(%x, %w1, %t) : (memref<4x1x16x16xf16, "gm">, memref<8x4x16x16xf16, "gm">, memref<8x1x16x16xf16, "gm">) -> ()
  "ascend.matmul"(%t, %w2, %y) : (memref<8x1x16x16xf16, "gm">, memref<4x8x16x16xf16, "gm">, memref<4x1x16x16xf32, "gm">) -> ()
  return
}

// chains=false in @as_b's split, which has no matmul whose result another
// reads as A, is refused there (the RUN line below, past the other splits).
// RUN: not npu-opt %s --split-input-file --npu-fuse=chains=false 2>&1 >/dev/null | FileCheck %s --check-prefix=OFF-AS-B
// OFF-AS-B: {{^}}{{.*}}fuse-chains.mlir: error: npu-fuse: chains: does not apply: the program has no matmul whose result another matmul reads as its A operand{{$}}
// OFF-AS-B-NOT: error

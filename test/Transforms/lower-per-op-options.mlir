// Per-op lowering options: `npu.options` on an ascend op overrides the
// lowering's options for that op only (`Pass.lower_each`); `double-buffer`
// marks the op's loops for npu-double-buffer. `npu-lower tuning-record=FILE`
// sets `npu.options` from an npu-tune record, by op signature.
// RUN: npu-opt %s --split-input-file --npu-lower-matmul --npu-lower-elementwise 2>&1 | FileCheck %s
// RUN: npu-opt %s --split-input-file --npu-lower-elementwise --npu-double-buffer | FileCheck %s --check-prefix=DB
// RUN: npu-opt %s --split-input-file --npu-lower="tuning-record=%S/Inputs/tuning-record.json" 2>&1 | FileCheck %s --check-prefix=REC
// RUN: npu-opt %s --split-input-file --target=ascend310 --npu-lower="tuning-record=%S/Inputs/tuning-record.json" 2>&1 | FileCheck %s --check-prefix=OTHER
// RUN: not npu-opt %s --split-input-file --npu-lower="cores=4 tuning-record=%S/Inputs/tuning-record.json" 2>&1 | FileCheck %s --check-prefix=MANY
// A record's options (and `npu.options`) are one core's tiles, the kind
// npu-tune tunes: by default npu-lower lowers such a program for one core,
// and an explicit count of several is refused.
// MANY: error: npu-lower: cores=4: a tuning record sets one core's options (npu-tune tunes one-core programs); lower with cores=1

// OTHER: warning: npu-lower: tuning record {{.*}}tuning-record.json' was made for target 'ascend910', compiling for 'ascend310'

// Two matmuls of one shape: the first with its own tiles, the second with
// the cost model's.
// CHECK: lower-per-op-options.mlir:[[# @LINE + 6]]:3: remark: matmul tiling: strategy=os tiles (m=128, n=256, k=128)
// CHECK: lower-per-op-options.mlir:[[# @LINE + 6]]:3: remark: matmul tiling: strategy=os tiles (m=256, n=128, k=256)
// CHECK-LABEL: func.func @two_matmuls
// REC: lower-per-op-options.mlir:[[# @LINE + 3]]:3: remark: matmul tiling: strategy=ws tiles (m=128, n=256, k=128)
// REC: lower-per-op-options.mlir:[[# @LINE + 3]]:3: remark: matmul tiling: strategy=ws tiles (m=128, n=256, k=64)
func.func @two_matmuls(%a: memref<48x32x16x16xf16, "gm">, %b: memref<48x48x16x16xf16, "gm">, %c: memref<48x32x16x16xf32, "gm">, %d: memref<48x32x16x16xf32, "gm">) {
  "ascend.matmul"(%a, %b, %c) {npu.options = {m = 128 : i64, n = 256 : i64, k = 128 : i64}} : (memref<48x32x16x16xf16, "gm">, memref<48x48x16x16xf16, "gm">, memref<48x32x16x16xf32, "gm">) -> ()
  "ascend.matmul"(%a, %b, %d) : (memref<48x32x16x16xf16, "gm">, memref<48x48x16x16xf16, "gm">, memref<48x32x16x16xf32, "gm">) -> ()
  return
}
// The record names this shape (strategy=ws m=128 k=64): the second op takes
// its options; on the first, the options written on the op win key by key
// (m, n, k) and the record fills in the rest (strategy).

// -----

// Two exps in chunks of 16384 elements: the first is exempt from double
// buffering, the second is unmarked and ping-pongs.
// CHECK-LABEL: func.func @stream
// CHECK:       scf.for
// CHECK:       } {npu.double_buffer = false}
// CHECK:       scf.for
// CHECK-NOT:   npu.double_buffer
// CHECK:       return
// DB-LABEL: func.func @stream
// DB:       scf.for %{{.*}} step %c1
// DB-NOT:   npu.slot
// DB:       } {npu.double_buffer = false}
// DB:       scf.for %{{.*}} step %c2
// DB:         memref.alloc() {npu.slot = 0 : i64}
// DB:         memref.alloc() {npu.slot = 1 : i64}
func.func @stream(%x: memref<65536xf16, "gm">, %y: memref<65536xf16, "gm">, %z: memref<65536xf16, "gm">) {
  "ascend.exp"(%x, %y) {npu.options = {"double-buffer" = false, "max-chunk" = 16384 : i64}} : (memref<65536xf16, "gm">, memref<65536xf16, "gm">) -> ()
  "ascend.exp"(%x, %z) {npu.options = {"max-chunk" = 16384 : i64}} : (memref<65536xf16, "gm">, memref<65536xf16, "gm">) -> ()
  return
}

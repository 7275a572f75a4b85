// RUN: npu-opt %s --split-input-file --npu-lower-matmul="m=256 n=128 k=256 schedule=pipelined" 2>&1 >/dev/null | FileCheck %s --check-prefix=EXPLICIT
// RUN: npu-opt %s --split-input-file --npu-lower-matmul="m=32 k=16 schedule=pipelined" 2>&1 >/dev/null | FileCheck %s --check-prefix=UNEVEN
// RUN: npu-opt %s --split-input-file --npu-lower-matmul="strategy=is schedule=pipelined" 2>&1 >/dev/null | FileCheck %s --check-prefix=IS

// Explicit tiles keep the pipelined schedule: the tile n = 128 fills L0A
// once (256 x 128 f16 = 64 KiB), so the L0 sub-step is its largest divisor
// with two slots in L0A (64); the L1 chunk (here the parts of A's row
// strips: two rows of C tiles) is a multiple of n.
// EXPLICIT: matmul-pipelined-tiles.mlir:[[@LINE+2]]:3: remark: matmul tiling: strategy=os tiles (m=256, n=128, k=256) with each row strip of A resident in L1 across its column tiles; {{.*}}; pipelined schedule: L1 chunk n=256 (A row strips in parts, each kept in L1 for its row), L0 sub-step n=64, 2 C piece(s) in L0C
func.func @bert(%a: memref<48x32x16x16xf16, "gm">, %b: memref<48x48x16x16xf16, "gm">, %c: memref<48x32x16x16xf32, "gm">) {
  "ascend.matmul"(%a, %b, %c) : (memref<48x32x16x16xf16, "gm">, memref<48x48x16x16xf16, "gm">, memref<48x32x16x16xf32, "gm">) -> ()
  return
}

// -----

// When the pipelined schedule cannot run, the remark says why. (An explicit
// n larger than N is clamped to N.)
// UNEVEN: matmul-pipelined-tiles.mlir:[[@LINE+4]]:3: remark: {{.*}}; simple schedule: no pipelined plan because the C tile (32x16) does not divide M x K (48x16)
// IS: matmul-pipelined-tiles.mlir:[[@LINE+3]]:3: remark: matmul tiling: strategy=is {{.*}}; simple schedule: no pipelined plan because strategy=is (the pipelined schedule is output-stationary)
// EXPLICIT: matmul-pipelined-tiles.mlir:[[@LINE+2]]:3: remark: matmul tiling: strategy=os tiles (m=48, n=16, k=16); {{.*}}; pipelined schedule: L1 chunk n=16, L0 sub-step n=16, 1 C piece(s) in L0C
func.func @uneven(%a: memref<1x3x16x16xf16, "gm">, %b: memref<1x1x16x16xf16, "gm">, %c: memref<1x3x16x16xf32, "gm">) {
  "ascend.matmul"(%a, %b, %c) : (memref<1x3x16x16xf16, "gm">, memref<1x1x16x16xf16, "gm">, memref<1x3x16x16xf32, "gm">) -> ()
  return
}

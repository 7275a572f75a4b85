// RUN: npu-opt %s --npu-split-cores="cores=2 min-bytes=0 remarks=true" 2>&1 | FileCheck %s --check-prefix=MODEL
// RUN: npu-opt %s --npu-split-cores="cores=2 min-bytes=0 remarks=true grids=32x32x32:2x1" 2>&1 | FileCheck %s --check-prefix=FORCED

// Two small matmuls: the model keeps them on one core (the split's estimate
// is no better). A grid forced with `grids` is what the user came to
// measure, so the estimate does not put the function back on one core.
// MODEL: remark: npu-split-cores: one core of 2: the split's estimate
// MODEL-NOT: npu.block_idx
// FORCED: remark: npu-split-cores: split although the estimate ({{[0-9]+}} cycles) is no better than one core's ({{[0-9]+}}): grids forced
// FORCED: remark: npu-split-cores: 2 of 2 cores, 1 chip barrier; ascend.matmul 2x1; ascend.matmul 2x1
// FORCED-LABEL: func.func @chain
// FORCED-SAME: npu.block_idx
// FORCED-SAME: npu.block_dim = 2
func.func @chain(%a: memref<2x2x16x16xf16, "gm">, %b: memref<2x2x16x16xf16, "gm">, %c: memref<2x2x16x16xf16, "gm">, %d: memref<2x2x16x16xf16, "gm">) {
  "ascend.matmul"(%a, %b, %c) : (memref<2x2x16x16xf16, "gm">, memref<2x2x16x16xf16, "gm">, memref<2x2x16x16xf16, "gm">) -> ()
  "ascend.matmul"(%c, %b, %d) : (memref<2x2x16x16xf16, "gm">, memref<2x2x16x16xf16, "gm">, memref<2x2x16x16xf16, "gm">) -> ()
  return
}

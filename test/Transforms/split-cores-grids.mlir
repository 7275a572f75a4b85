// RUN: npu-opt %s --npu-split-cores="cores=4 min-bytes=0 estimate=false remarks=true" 2>&1 | FileCheck %s --check-prefix=MODEL
// RUN: npu-opt %s --npu-split-cores="cores=4 min-bytes=0 estimate=false remarks=true grids=128x64x64:2x2" 2>&1 | FileCheck %s --check-prefix=FORCED
// RUN: not npu-opt %s --npu-split-cores="cores=4 min-bytes=0 estimate=false grids=128x64x64:2x1" 2>&1 | FileCheck %s --check-prefix=OTHER-COUNT
// RUN: not npu-opt %s --npu-split-cores="cores=4 min-bytes=0 estimate=false grids=128x64x64:2x2;attention:2x2" 2>&1 | FileCheck %s --check-prefix=NO-ATTENTION
// RUN: not npu-opt %s --npu-split-cores="cores=1 grids=128x64x64:2x2" 2>&1 | FileCheck %s --check-prefix=ONE-CORE
// RUN: not npu-opt %s --pass-pipeline="builtin.module(npu-lower{cores=1 split-cores-grids=128x64x64:2x2})" 2>&1 | FileCheck %s --check-prefix=LOWER-ONE-CORE
// RUN: not npu-opt %s --npu-split-cores="cores=4 grids=128x64:2x2" 2>&1 | FileCheck %s --check-prefix=BAD

// `grids` replaces the model's grid for a matmul of that shape (M x N
// times N x K), to measure the others in the simulator: the model cuts A
// 128x64 and C by rows alone (1x4: column parts x row parts); forced, 2x2.
// An entry that no split takes (another core count, a shape or an
// attention the program does not have, or no split at all) is refused: an
// option that does not apply is never ignored.
// MODEL: remark: npu-split-cores: 4 of 4 cores, 0 chip barriers; ascend.matmul 1x4
// FORCED: remark: npu-split-cores: 4 of 4 cores, 0 chip barriers; ascend.matmul 2x2
// FORCED: "ascend.matmul"({{.*}}) : (memref<4x4x16x16xf16, strided<[2048, 256, 16, 1], offset: ?>, "gm">, memref<2x4x16x16xf16, strided<[1024, 256, 16, 1], offset: ?>, "gm">, memref<2x4x16x16xf32, strided<[2048, 256, 16, 1], offset: ?>, "gm">)
// OTHER-COUNT: error: npu-split-cores: grids: '128x64x64:2x1' applied to no split (the matmul splits tried, M x N x K on cores: 128x64x64 on 4)
// NO-ATTENTION: error: npu-split-cores: grids: 'attention:2x2' applied to no split
// ONE-CORE: npu-opt: error: invalid pass pipeline: npu-split-cores: grids: does not apply: no split over cores (cores=1){{$}}
// LOWER-ONE-CORE: npu-opt: error: invalid pass pipeline: npu-lower: split-cores-grids: does not apply: no split over cores (cores=1){{$}}
// BAD: error: npu-split-cores: grids: grid '128x64:2x2': expected 'MxNxK:PKxPM'
func.func @matmul(%a: memref<4x8x16x16xf16, "gm">, %b: memref<4x4x16x16xf16, "gm">, %c: memref<4x8x16x16xf32, "gm">) {
  "ascend.matmul"(%a, %b, %c) : (memref<4x8x16x16xf16, "gm">, memref<4x4x16x16xf16, "gm">, memref<4x8x16x16xf32, "gm">) -> ()
  return
}

// RUN: npu-opt %s --split-input-file --npu-split-cores="cores=4 min-bytes=0 estimate=false remarks=true split-k=128x160x64:3x1" 2>&1 | FileCheck %s
// RUN: not npu-opt %s --split-input-file --npu-split-cores="cores=4 min-bytes=0 estimate=false split-k=128x160x64:4x1" 2>&1 | FileCheck %s --check-prefix=UNEVEN
// RUN: not npu-opt %s --split-input-file --npu-split-cores="cores=4 min-bytes=0 estimate=false split-k=128x256x64:3x1" 2>&1 | FileCheck %s --check-prefix=NONE
// RUN: not npu-opt %s --split-input-file --npu-split-cores="cores=1 split-k=128x160x64:3x1" 2>&1 | FileCheck %s --check-prefix=ONE-CORE
// RUN: not npu-opt %s --split-input-file --pass-pipeline="builtin.module(npu-lower{cores=1 split-cores-split-k=128x160x64:3x1})" 2>&1 | FileCheck %s --check-prefix=LOWER-ONE-CORE
// RUN: not npu-opt %s --split-input-file --npu-split-cores="cores=1 split-k-model=false" 2>&1 | FileCheck %s --check-prefix=ONE-CORE-MODEL
// RUN: not npu-opt %s --split-input-file --pass-pipeline="builtin.module(npu-lower{cores=1 split-cores-split-k-model=false})" 2>&1 | FileCheck %s --check-prefix=LOWER-ONE-CORE-MODEL

// `split-k` splits a matmul epilogue group's reduction (N = 160: 10 blocks
// of 16): 3 partial matmuls over 48 each write f32 sums to GM workspace
// tensors; the group reduces the last 16 itself, adds the sums in order
// (npu.partial_sums = 3: its first three members) and only then its bias.
// Here all four take the same 1x4 grid (rows of C), so each core adds only
// the sums it wrote: no chip barrier (other grids get one, `barriers.place`;
// test/python/multicore/test_split_k.py deletes it).
// CHECK: remark: npu-split-cores: matmul 128x160x64: its reduction split, 3 partial matmul(s) of 48 and 16 in its epilogue group
// CHECK: remark: npu-split-cores: 4 of 4 cores, 0 chip barriers; ascend.matmul 1x4; ascend.matmul 1x4; ascend.matmul 1x4; matmul epilogue 1x4
// CHECK-LABEL: func.func @ffn_out
// CHECK-COUNT-3: "ascend.matmul"({{.*}}) : (memref<3x2x16x16xf16, {{.*}}>, memref<4x3x16x16xf16, {{.*}}>, memref<4x2x16x16xf32, {{.*}}>) -> ()
// CHECK-NOT: "cce.sync_all"
// CHECK: scf.execute_region
// CHECK: "ascend.matmul"({{.*}}) : (memref<1x2x16x16xf16, {{.*}}>, memref<4x1x16x16xf16, {{.*}}>, memref<4x2x16x16xf32, "gm">) -> ()
// CHECK-NEXT: memref.alloc
// CHECK-NEXT: "ascend.add"
// CHECK-NEXT: memref.alloc
// CHECK-NEXT: "ascend.add"
// CHECK-NEXT: memref.alloc
// CHECK-NEXT: "ascend.add"
// CHECK-NEXT: "ascend.add"
// CHECK-NEXT: scf.yield
// CHECK: npu.partial_sums = 3
// UNEVEN: error: npu-split-cores: split-k: split '128x160x64:4x1': 10 blocks of the reduction less 1 do not make 4 equal runs
// NONE: error: npu-split-cores: split-k: no matmul epilogue group of 128x256x64
// ONE-CORE: npu-opt: error: invalid pass pipeline: npu-split-cores: split-k: does not apply: no split over cores (cores=1){{$}}
// LOWER-ONE-CORE: npu-opt: error: invalid pass pipeline: npu-lower: split-cores-split-k: does not apply: no split over cores (cores=1){{$}}
// ONE-CORE-MODEL: npu-opt: error: invalid pass pipeline: npu-split-cores: split-k-model: does not apply: no split over cores (cores=1){{$}}
// LOWER-ONE-CORE-MODEL: npu-opt: error: invalid pass pipeline: npu-lower: split-cores-split-k-model: does not apply: no split over cores (cores=1){{$}}
func.func @ffn_out(%a: memref<10x8x16x16xf16, "gm">, %b: memref<4x10x16x16xf16, "gm">, %out: memref<4x8x16x16xf32, "gm">, %bias: memref<4x8x16x16xf32, "gm">) {
  scf.execute_region {
    %c = memref.alloc() : memref<4x8x16x16xf32, "gm">
    "ascend.matmul"(%a, %b, %c) : (memref<10x8x16x16xf16, "gm">, memref<4x10x16x16xf16, "gm">, memref<4x8x16x16xf32, "gm">) -> ()
    "ascend.add"(%c, %bias, %out) : (memref<4x8x16x16xf32, "gm">, memref<4x8x16x16xf32, "gm">, memref<4x8x16x16xf32, "gm">) -> ()
    scf.yield
  } {npu.epilogue = {gm_bytes = 0 : i64, ub_budget = 91750 : i64, ub_bytes_per_fractal = 1024 : i64, unfused_gm_bytes = 0 : i64}}
  return
}

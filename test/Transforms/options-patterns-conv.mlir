// An option acting on ops in a position the program has none of is refused
// in one line, though the program has ops of that kind (convs): npu-lower-conv's
// cube-residual without a 1x1 stride-1 conv whose result a residual Add
// reads (ResNet-18: residual Adds of 3x3 convs only), npu-fuse's conv-chains
// without a conv whose result a 1x1 stride-1 conv reads as its map. Where the
// position exists, the option is taken, even where the cost model then
// declines (@chain's remark: a candidate, estimated no faster).

// RUN: not npu-opt %s --split-input-file --npu-lower="cores=1 conv-cube-residual=always" 2>&1 >/dev/null | FileCheck %s --check-prefix=RESIDUAL
// RUN: not npu-opt %s --split-input-file -p 'builtin.module(npu-fuse{remarks=false},npu-lower-conv{cube-residual=always})' 2>&1 >/dev/null | FileCheck %s --check-prefix=RESIDUAL-ALONE
// RUN: not npu-opt %s --split-input-file --npu-lower="cores=1 fuse-conv-chains=true" 2>/dev/null | FileCheck %s --check-prefix=TAKEN
// RUN: not npu-opt %s --split-input-file --npu-fuse="conv-chains=true" 2>&1 >/dev/null | FileCheck %s --check-prefix=CHAINS

// RESIDUAL: {{^}}{{.*}}options-patterns-conv.mlir: error: npu-lower: conv-cube-residual: does not apply: the program has no 1x1 stride-1 conv whose result an f16 Add reads (a residual){{$}}
// RESIDUAL-NEXT: {{^}}{{.*}}options-patterns-conv.mlir: error: npu-lower: conv-cube-residual: does not apply: the program has no 1x1 stride-1 conv whose result an f16 Add reads (a residual){{$}}
// RESIDUAL-NOT: error
// RESIDUAL-ALONE: {{^}}{{.*}}options-patterns-conv.mlir: error: npu-lower-conv: cube-residual: does not apply: the program has no 1x1 stride-1 conv whose result an f16 Add reads (a residual){{$}}
// RESIDUAL-ALONE-NEXT: {{^}}{{.*}}options-patterns-conv.mlir: error: npu-lower-conv: cube-residual: does not apply: the program has no 1x1 stride-1 conv whose result an f16 Add reads (a residual){{$}}
// RESIDUAL-ALONE-NOT: error
// CHAINS: {{^}}{{.*}}options-patterns-conv.mlir: error: npu-fuse: conv-chains: does not apply: the program has no conv whose result a 1x1 stride-1 conv reads as its input map{{$}}
// CHAINS-NEXT: {{^}}{{.*}}options-patterns-conv.mlir: error: npu-fuse: conv-chains: does not apply: the program has no conv whose result a 1x1 stride-1 conv reads as its input map{{$}}
// CHAINS: options-patterns-conv.mlir:{{[0-9]+}}:3: remark: conv chain not formed: the cost model estimates the pair {{.*}} slower chained
// CHAINS-NOT: error
// TAKEN-NOT: func.func @residual_
// TAKEN: func.func @chain(
// TAKEN-NOT: func.func

// A residual Add of a 3x3 conv's result: no conv whose result a residual Add reads is 1x1 stride-1.
func.func @residual_3x3(%x: memref<1x1x8x8x16xf16, "gm">, %w: memref<9x1x16x16xf16, "gm">, %b: memref<16xf32, "gm">,
                        %r: memref<1x1x8x8x16xf16, "gm">, %y: memref<1x1x8x8x16xf16, "gm">) {
  %c = memref.alloc() : memref<1x1x8x8x16xf32, "gm">
  "ascend.conv2d"(%x, %w, %b, %c) {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64, layout = "nc1hwc0", kernel = array<i64: 3, 3>} : (memref<1x1x8x8x16xf16, "gm">, memref<9x1x16x16xf16, "gm">, memref<16xf32, "gm">, memref<1x1x8x8x16xf32, "gm">) -> ()
  %h = memref.alloc() : memref<1x1x8x8x16xf16, "gm">
  "ascend.cast"(%c, %h) {round_mode = "rint"} : (memref<1x1x8x8x16xf32, "gm">, memref<1x1x8x8x16xf16, "gm">) -> ()
  "ascend.add"(%h, %r, %y) : (memref<1x1x8x8x16xf16, "gm">, memref<1x1x8x8x16xf16, "gm">, memref<1x1x8x8x16xf16, "gm">) -> ()
  return
}

// -----

// ResNet-50's conv3: a 1x1 stride-1 conv whose result, cast to f16, a residual Add reads.
func.func @residual_1x1(%x: memref<1x1x8x8x16xf16, "gm">, %w: memref<1x1x16x16xf16, "gm">, %b: memref<16xf32, "gm">,
                        %r: memref<1x1x8x8x16xf16, "gm">, %y: memref<1x1x8x8x16xf16, "gm">) {
  %c = memref.alloc() : memref<1x1x8x8x16xf32, "gm">
  "ascend.conv2d"(%x, %w, %b, %c) {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64, layout = "nc1hwc0", kernel = array<i64: 1, 1>} : (memref<1x1x8x8x16xf16, "gm">, memref<1x1x16x16xf16, "gm">, memref<16xf32, "gm">, memref<1x1x8x8x16xf32, "gm">) -> ()
  %h = memref.alloc() : memref<1x1x8x8x16xf16, "gm">
  "ascend.cast"(%c, %h) {round_mode = "rint"} : (memref<1x1x8x8x16xf32, "gm">, memref<1x1x8x8x16xf16, "gm">) -> ()
  "ascend.add"(%h, %r, %y) : (memref<1x1x8x8x16xf16, "gm">, memref<1x1x8x8x16xf16, "gm">, memref<1x1x8x8x16xf16, "gm">) -> ()
  return
}

// -----

// A conv whose result, cast to f16, a 1x1 stride-1 conv reads as its input map.
func.func @chain(%x: memref<1x1x8x8x16xf16, "gm">, %w: memref<9x1x16x16xf16, "gm">, %b: memref<16xf32, "gm">,
                 %w2: memref<1x1x16x16xf16, "gm">, %y: memref<1x1x8x8x16xf32, "gm">) {
  %c = memref.alloc() : memref<1x1x8x8x16xf32, "gm">
  "ascend.conv2d"(%x, %w, %b, %c) {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64, layout = "nc1hwc0", kernel = array<i64: 3, 3>} : (memref<1x1x8x8x16xf16, "gm">, memref<9x1x16x16xf16, "gm">, memref<16xf32, "gm">, memref<1x1x8x8x16xf32, "gm">) -> ()
  %h = memref.alloc() : memref<1x1x8x8x16xf16, "gm">
  "ascend.cast"(%c, %h) {round_mode = "rint"} : (memref<1x1x8x8x16xf32, "gm">, memref<1x1x8x8x16xf16, "gm">) -> ()
  "ascend.conv2d"(%h, %w2, %b, %y) {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64, layout = "nc1hwc0", kernel = array<i64: 1, 1>} : (memref<1x1x8x8x16xf16, "gm">, memref<1x1x16x16xf16, "gm">, memref<16xf32, "gm">, memref<1x1x8x8x16xf32, "gm">) -> ()
  return
}

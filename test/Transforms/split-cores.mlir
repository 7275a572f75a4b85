// RUN: npu-opt %s --split-input-file --npu-split-cores="cores=4 min-bytes=0 estimate=false" | FileCheck %s
// RUN: npu-opt %s --split-input-file --verify-diagnostics --npu-split-cores="cores=4 min-bytes=0 remarks=true estimate=false" -o %t
// RUN: not npu-opt %s --split-input-file --target=ascend310 --npu-split-cores="cores=4" 2>&1 | FileCheck %s --check-prefix=TOO-MANY

// TOO-MANY: error: npu-split-cores: cores=4 but ascend310 has 2 cores

// A vector op: each core takes a quarter of the elements.
// CHECK-LABEL: func.func @add
// CHECK-SAME: %[[BLK:[a-z0-9]+]]: index {npu.block_idx}) attributes {npu.block_dim = 4 : i64}
// CHECK: %[[OFF:.*]] = arith.muli %[[BLK]], %{{.*}} : index
// CHECK: memref.subview %{{.*}}[%[[OFF]]] [1024] [1]
// CHECK: "ascend.add"({{.*}}) : (memref<1024xf16, strided<[1], offset: ?>, "gm">
// expected-remark@+1 {{npu-split-cores: 4 of 4 cores, 0 chip barriers; ascend.add 4}}
func.func @add(%a: memref<4096xf16, "gm">, %b: memref<4096xf16, "gm">, %c: memref<4096xf16, "gm">) {
  "ascend.add"(%a, %b, %c) : (memref<4096xf16, "gm">, memref<4096xf16, "gm">, memref<4096xf16, "gm">) -> ()
  return
}

// -----

// Three heads: the largest equal split is 3 cores, not 4.
// CHECK-LABEL: func.func @heads
// CHECK-SAME: attributes {npu.block_dim = 3 : i64}
// CHECK: "ascend.transpose"({{.*}}) {permutation = array<i64: 0, 2, 1>} : (memref<1x64x32xf16, strided<[2048, 32, 1], offset: ?>, "gm">, memref<1x32x64xf16, strided<[2048, 64, 1], offset: ?>, "gm">)
// expected-remark@+1 {{npu-split-cores: 3 of 4 cores, 0 chip barriers; ascend.transpose 3}}
func.func @heads(%x: memref<3x64x32xf16, "gm">, %y: memref<3x32x64xf16, "gm">) {
  "ascend.transpose"(%x, %y) {permutation = array<i64: 0, 2, 1>} : (memref<3x64x32xf16, "gm">, memref<3x32x64xf16, "gm">) -> ()
  return
}

// -----

// The second op reads what the first wrote, slice for slice on the same
// core: no barrier. The transpose takes runs of its source rows (its 40
// source columns are no whole blocks per core; each core stores its 16 of
// the result's 64 columns as strided runs of one block), the rows each core
// wrote: none either. The reduction reads a result row every core wrote:
// a chip barrier before it.
// CHECK-LABEL: func.func @chain
// CHECK-SAME: %[[BLK:[a-z0-9]+]]: index {npu.block_idx}) attributes {npu.block_dim = 4 : i64}
// CHECK: "ascend.exp"
// CHECK-NOT: cce.sync_all
// CHECK: "ascend.add"
// CHECK-NEXT: "ascend.transpose"(%{{.*}}) {npu.core_axis = "sr", npu.core_part = array<i64: 4, 1>
// CHECK: "cce.sync_all"() : () -> ()
// CHECK: %[[ONE:.*]] = arith.cmpi ult, %[[BLK]], %{{.*}} : index
// CHECK-NEXT: scf.if %[[ONE]] {
// CHECK-NEXT: "ascend.reduce_sum"
// expected-remark@+1 {{npu-split-cores: 4 of 4 cores, 1 chip barrier; ascend.exp 4; ascend.add 4; ascend.transpose 4; ascend.reduce_sum: 1 core (no equal, 32-byte aligned, large enough slices)}}
func.func @chain(%a: memref<64x40xf16, "gm">, %b: memref<64x40xf16, "gm">, %c: memref<40x64xf16, "gm">, %r: memref<1x64xf16, "gm">, %s: memref<1xf16, "gm">) {
  "ascend.exp"(%a, %b) : (memref<64x40xf16, "gm">, memref<64x40xf16, "gm">) -> ()
  "ascend.add"(%b, %b, %a) : (memref<64x40xf16, "gm">, memref<64x40xf16, "gm">, memref<64x40xf16, "gm">) -> ()
  "ascend.transpose"(%a, %c) {permutation = array<i64: 1, 0>} : (memref<64x40xf16, "gm">, memref<40x64xf16, "gm">) -> ()
  %row = memref.subview %c[0, 0] [1, 64] [1, 1] : memref<40x64xf16, "gm"> to memref<1x64xf16, strided<[64, 1]>, "gm">
  "ascend.reduce_sum"(%row, %s) : (memref<1x64xf16, strided<[64, 1]>, "gm">, memref<1xf16, "gm">) -> ()
  return
}

// -----

// Matmul, A 128x64 and B 64x64: splitting M (A and C into row-block slices,
// strided) moves less than splitting N (every core would read all of A).
// CHECK-LABEL: func.func @matmul
// CHECK-SAME: attributes {npu.block_dim = 4 : i64}
// CHECK: "ascend.matmul"({{.*}}) : (memref<4x2x16x16xf16, strided<[2048, 256, 16, 1], offset: ?>, "gm">, memref<4x4x16x16xf16, strided<[1024, 256, 16, 1], offset: ?>, "gm">, memref<4x2x16x16xf32, strided<[2048, 256, 16, 1], offset: ?>, "gm">)
// expected-remark@+1 {{npu-split-cores: 4 of 4 cores, 0 chip barriers; ascend.matmul 1x4}}
func.func @matmul(%a: memref<4x8x16x16xf16, "gm">, %b: memref<4x4x16x16xf16, "gm">, %c: memref<4x8x16x16xf32, "gm">) {
  "ascend.matmul"(%a, %b, %c) : (memref<4x8x16x16xf16, "gm">, memref<4x4x16x16xf16, "gm">, memref<4x8x16x16xf32, "gm">) -> ()
  return
}

// -----

// A conv over its output channel blocks: the input whole on every core, the
// fractal-Z weights [K1, Cout1, 16, 16] in strided column slices, the bias
// and output in contiguous ones; the NC1HWC0 pool after it reads the
// channel blocks its core wrote: no barrier.
// CHECK-LABEL: func.func @conv_pool
// CHECK-SAME: attributes {npu.block_dim = 4 : i64}
// CHECK: "ascend.conv2d"(%arg0, %{{.*}}, %{{.*}}, %{{.*}}) {{.*}} : (memref<1x4x8x8x16xf16, "gm">, memref<36x1x16x16xf16, strided<[1024, 256, 16, 1], offset: ?>, "gm">, memref<16xf16, strided<[1], offset: ?>, "gm">, memref<1x1x8x8x16xf16, strided<[4096, 1024, 128, 16, 1], offset: ?>, "gm">)
// CHECK-NOT: cce.sync_all
// CHECK: "ascend.pool2d"({{.*}}) {{.*}} : (memref<1x1x8x8x16xf16, strided<[4096, 1024, 128, 16, 1], offset: ?>, "gm">, memref<1x1x4x4x16xf16, strided<[1024, 256, 64, 16, 1], offset: ?>, "gm">)
// expected-remark@+1 {{npu-split-cores: 4 of 4 cores, 0 chip barriers; ascend.conv2d 4; ascend.pool2d 4}}
func.func @conv_pool(%x: memref<1x4x8x8x16xf16, "gm">, %w: memref<36x4x16x16xf16, "gm">, %b: memref<64xf16, "gm">, %c: memref<1x4x8x8x16xf16, "gm">, %p: memref<1x4x4x4x16xf16, "gm">) {
  "ascend.conv2d"(%x, %w, %b, %c) {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64, layout = "nc1hwc0", kernel = array<i64: 3, 3>} : (memref<1x4x8x8x16xf16, "gm">, memref<36x4x16x16xf16, "gm">, memref<64xf16, "gm">, memref<1x4x8x8x16xf16, "gm">) -> ()
  "ascend.pool2d"(%c, %p) {kind = "max", kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, count_include_pad = 1 : i64, layout = "nc1hwc0"} : (memref<1x4x8x8x16xf16, "gm">, memref<1x4x4x4x16xf16, "gm">) -> ()
  return
}

// -----

// Two Cout blocks of a 16 x 16 map on four cores: the conv cost model
// prefers four runs of output rows (each core img2cols only its rows) to
// two channel parts. The conv keeps its input and its output whole along H
// (its lowering computes the core's rows, `npu.core_part = [parts,
// inner]`); the pool (a 2 x 2 grid, reading its windows' rows whole) waits
// at a barrier.
// CHECK-LABEL: func.func @conv_rows
// CHECK-SAME: attributes {npu.block_dim = 4 : i64}
// CHECK: "ascend.conv2d"(%arg0, %{{.*}}, %{{.*}}, %{{.*}}) {{.*}}npu.core_part = array<i64: 4, 1>{{.*}} : (memref<1x4x16x16x16xf16, "gm">, memref<36x2x16x16xf16, strided<[512, 256, 16, 1], offset: ?>, "gm">, memref<32xf16, strided<[1], offset: ?>, "gm">, memref<1x2x16x16x16xf16, strided<[8192, 4096, 256, 16, 1], offset: ?>, "gm">)
// CHECK-NEXT: "cce.sync_all"
// CHECK-NOT: scf.if
// CHECK: "ascend.pool2d"({{.*}}npu.core_part = array<i64: 2, 1>{{.*}} : (memref<1x1x16x16x16xf16, strided<[8192, 4096, 256, 16, 1], offset: ?>, "gm">, memref<1x1x8x8x16xf16, strided<[2048, 1024, 128, 16, 1], offset: ?>, "gm">)
// expected-remark@+1 {{npu-split-cores: 4 of 4 cores, 1 chip barrier; ascend.conv2d 1x4; ascend.pool2d 2x2}}
func.func @conv_rows(%x: memref<1x4x16x16x16xf16, "gm">, %w: memref<36x2x16x16xf16, "gm">, %b: memref<32xf16, "gm">, %c: memref<1x2x16x16x16xf16, "gm">, %p: memref<1x2x8x8x16xf16, "gm">) {
  "ascend.conv2d"(%x, %w, %b, %c) {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64, layout = "nc1hwc0", kernel = array<i64: 3, 3>} : (memref<1x4x16x16x16xf16, "gm">, memref<36x2x16x16xf16, "gm">, memref<32xf16, "gm">, memref<1x2x16x16x16xf16, "gm">) -> ()
  "ascend.pool2d"(%c, %p) {kind = "max", kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, count_include_pad = 1 : i64, layout = "nc1hwc0"} : (memref<1x2x16x16x16xf16, "gm">, memref<1x2x8x8x16xf16, "gm">) -> ()
  return
}

// -----

// An image's NCHW -> NHWC transpose: no cut of its rows is contiguous, so the
// cores take runs of the source's columns (whole 32-byte blocks), which the
// lowering reads as strided rows anyway: both operands stay whole.
// CHECK-LABEL: func.func @to_nhwc
// CHECK: "ascend.transpose"(%arg0, %arg1) {npu.core_part = array<i64: 4, 1>, permutation = array<i64: 0, 2, 1>} : (memref<1x16x4096xf16, "gm">, memref<1x4096x16xf16, "gm">)
// expected-remark@+1 {{npu-split-cores: 4 of 4 cores, 0 chip barriers; ascend.transpose 4}}
func.func @to_nhwc(%x: memref<1x16x4096xf16, "gm">, %y: memref<1x4096x16xf16, "gm">) {
  "ascend.transpose"(%x, %y) {permutation = array<i64: 0, 2, 1>} : (memref<1x16x4096xf16, "gm">, memref<1x4096x16xf16, "gm">) -> ()
  return
}

// -----

// An image's 3 channels into the 16 of its padded copy: one run of 3 x 4096
// elements, cut into equal pieces of whole blocks (npu-lower-slices takes
// this core's piece); after the broadcast that zeroed the copy on 16 cores
// (channels 4c..4c+3 on core c), a barrier.
// CHECK-LABEL: func.func @pad_channels
// CHECK: "ascend.broadcast"
// CHECK-NEXT: "cce.sync_all"
// CHECK-NEXT: "ascend.insert_slice"(%arg0, %arg2) {npu.core_part = array<i64: 4, 1>, offsets = array<i64: 0, 0, 0>}
// expected-remark@+1 {{npu-split-cores: 4 of 4 cores, 1 chip barrier; ascend.broadcast 4; ascend.insert_slice 4}}
func.func @pad_channels(%x: memref<1x3x4096xf16, "gm">, %zero: memref<1x1x1xf16, "gm">, %p: memref<1x16x4096xf16, "gm">) {
  "ascend.broadcast"(%zero, %p) : (memref<1x1x1xf16, "gm">, memref<1x16x4096xf16, "gm">) -> ()
  "ascend.insert_slice"(%x, %p) {offsets = array<i64: 0, 0, 0>} : (memref<1x3x4096xf16, "gm">, memref<1x16x4096xf16, "gm">) -> ()
  return
}

// -----

// A fractalize wider than one column block: a cut of its rows would be a
// strided slice of the Nz side, so the cores take runs of its row blocks
// through the whole tensors (npu-lower-fractalize reads npu.core_part).
// CHECK-LABEL: func.func @wide_fractalize
// CHECK: "ascend.fractalize"(%arg0, %arg1) {npu.core_part = array<i64: 4, 1>} : (memref<128x64xf16, "gm">, memref<4x8x16x16xf16, "gm">)
// expected-remark@+1 {{npu-split-cores: 4 of 4 cores, 0 chip barriers; ascend.fractalize 4}}
func.func @wide_fractalize(%x: memref<128x64xf16, "gm">, %y: memref<4x8x16x16xf16, "gm">) {
  "ascend.fractalize"(%x, %y) : (memref<128x64xf16, "gm">, memref<4x8x16x16xf16, "gm">) -> ()
  return
}

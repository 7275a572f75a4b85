// RUN: npu-opt %s --split-input-file --npu-linalg-to-ascend | FileCheck %s

// torch-mlir's ConvInteger(x, W, x_zp = -3), pads 1: a tensor.pad with the
// zero point and conv_2d_nchw_fchw_q. One int8 ascend.conv2d in NC1HWC0:
// pad_value = x_zp, the weights in int8 fractal-Z [C1_32*Kh*Kw, Cout1, 16, 32]
// and the i32 bias -x_zp * sum W = 3 * 2 * 20 * 9 = 1080 on the host. The
// run-time int8 input is cast to f16 (exact) and converted to NC1HWC0; the
// i32 result is converted back to NCHW for the output.
// CHECK-LABEL: func.func @conv_integer
// CHECK-SAME:  %arg3: memref<9x2x16x32xi8, "gm"> {npu.constant = dense<
// CHECK-SAME:  %arg4: memref<32xi32, "gm"> {npu.constant = dense<[1080, 1080, {{.*}}, 1080, 0, 0, 0, 0, 0, 0, 0, 0]>
// CHECK:       "ascend.cast"(%{{.*}}, %{{.*}}) {round_mode = "rint"} : (memref<1x20x81xi8, "gm">, memref<1x20x81xf16, "gm">)
// CHECK:       "ascend.transpose"
// CHECK:       "ascend.conv2d"(%{{.*}}, %arg3, %arg4, %[[Y:.*]]) {dilations = array<i64: 1, 1>, groups = 1 : i64, kernel = array<i64: 3, 3>, layout = "nc1hwc0", pad_value = -3 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (memref<1x2x9x9x16xf16, "gm">, memref<9x2x16x32xi8, "gm">, memref<32xi32, "gm">, memref<1x2x5x5x16xi32, "gm">)
// CHECK:       "ascend.transpose"(%{{.*}}, %{{.*}}) {permutation = array<i64: 0, 2, 1>} : (memref<2x25x16xi32, "gm">, memref<2x16x25xi32, "gm">)
// CHECK:       "ascend.slice"
func.func @conv_integer(%x: tensor<1x20x9x9xi8>) -> tensor<1x24x5x5xi32> {
  %w = arith.constant dense<2> : tensor<24x20x3x3xi8>
  %zp8 = arith.constant -3 : i8
  %zp = arith.constant -3 : i32
  %c0 = arith.constant 0 : i32
  %p = tensor.pad %x low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%a: index, %b: index, %c: index, %d: index):
    tensor.yield %zp8 : i8
  } : tensor<1x20x9x9xi8> to tensor<1x20x11x11xi8>
  %e = tensor.empty() : tensor<1x24x5x5xi32>
  %f = linalg.fill ins(%c0 : i32) outs(%e : tensor<1x24x5x5xi32>) -> tensor<1x24x5x5xi32>
  %r = linalg.conv_2d_nchw_fchw_q {dilations = dense<1> : vector<2xi64>, strides = dense<2> : vector<2xi64>} ins(%p, %w, %zp, %c0 : tensor<1x20x11x11xi8>, tensor<24x20x3x3xi8>, i32, i32) outs(%f : tensor<1x24x5x5xi32>) -> tensor<1x24x5x5xi32>
  return %r : tensor<1x24x5x5xi32>
}

// -----

// Between two int8 convs: the i32 result's dequantisation runs in NC1HWC0
// and the quantisation's fptosi to int8 becomes an f32 -> f16 cast rounding
// toward zero there, read by the second conv as it is: no i8 tensor and no
// layout conversion between the convs. A zero x_zp: no pad_value, no bias.
#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#ch = affine_map<(d0, d1, d2, d3) -> (d1, 0, 0)>
// CHECK-LABEL: func.func @int8_chain
// CHECK:       "ascend.conv2d"(%{{.*}}, %{{.*}}, %[[A:.*]]) {{{.*}}layout = "nc1hwc0", pads = array<i64: 0, 0, 0, 0>{{.*}} : (memref<1x1x6x6x16xf16, "gm">, memref<1x1x16x32xi8, "gm">, memref<1x1x6x6x16xi32, "gm">)
// CHECK-NOT:   "ascend.transpose"
// CHECK:       "ascend.cast"(%[[A]], %[[F:.*]]) {round_mode = "rint"} : (memref<1x1x6x6x16xi32, "gm">, memref<1x1x6x6x16xf32, "gm">)
// CHECK:       "ascend.muls"(%[[F]], %[[S:.*]]) {scalar = 5.000000e-01 : f64}
// CHECK:       "ascend.muls"(%[[S]], %[[Q:.*]]) {scalar = 4.000000e+00 : f64}
// CHECK-NOT:   "ascend.transpose"
// CHECK:       "ascend.cast"(%[[Q]], %[[H:.*]]) {round_mode = "trunc"} : (memref<1x1x6x6x16xf32, "gm">, memref<1x1x6x6x16xf16, "gm">)
// CHECK:       "ascend.conv2d"(%[[H]], %{{.*}}, %{{.*}}) {{{.*}}layout = "nc1hwc0", pad_value = 5 : i64, pads = array<i64: 1, 1, 1, 1>{{.*}} : (memref<1x1x6x6x16xf16, "gm">, memref<9x1x16x32xi8, "gm">, memref<16xi32, "gm">, memref<1x1x6x6x16xi32, "gm">)
// CHECK-NOT:   "ascend.cast"{{.*}}xi8, "gm">) -> ()
func.func @int8_chain(%x: tensor<1x16x6x6xi8>) -> tensor<1x8x6x6xi32> {
  %w1 = arith.constant dense<1> : tensor<16x16x1x1xi8>
  %w2 = arith.constant dense<-1> : tensor<8x16x3x3xi8>
  %s = arith.constant dense<0.5> : tensor<16x1x1xf32>
  %inv = arith.constant 0.25 : f32
  %c0 = arith.constant 0 : i32
  %zp8 = arith.constant 5 : i8
  %zp = arith.constant 5 : i32
  %e1 = tensor.empty() : tensor<1x16x6x6xi32>
  %f1 = linalg.fill ins(%c0 : i32) outs(%e1 : tensor<1x16x6x6xi32>) -> tensor<1x16x6x6xi32>
  %a = linalg.conv_2d_nchw_fchw_q {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%x, %w1, %c0, %c0 : tensor<1x16x6x6xi8>, tensor<16x16x1x1xi8>, i32, i32) outs(%f1 : tensor<1x16x6x6xi32>) -> tensor<1x16x6x6xi32>
  %ef = tensor.empty() : tensor<1x16x6x6xf32>
  %af = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%a : tensor<1x16x6x6xi32>) outs(%ef : tensor<1x16x6x6xf32>) {
  ^bb0(%in: i32, %out: f32):
    %v = arith.sitofp %in : i32 to f32
    linalg.yield %v : f32
  } -> tensor<1x16x6x6xf32>
  %sc = linalg.generic {indexing_maps = [#id, #ch, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%af, %s : tensor<1x16x6x6xf32>, tensor<16x1x1xf32>) outs(%ef : tensor<1x16x6x6xf32>) {
  ^bb0(%in: f32, %in2: f32, %out: f32):
    %v = arith.mulf %in, %in2 : f32
    linalg.yield %v : f32
  } -> tensor<1x16x6x6xf32>
  %q = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%sc : tensor<1x16x6x6xf32>) outs(%ef : tensor<1x16x6x6xf32>) {
  ^bb0(%in: f32, %out: f32):
    %v = arith.divf %in, %inv : f32
    linalg.yield %v : f32
  } -> tensor<1x16x6x6xf32>
  %e8 = tensor.empty() : tensor<1x16x6x6xi8>
  %i8 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%q : tensor<1x16x6x6xf32>) outs(%e8 : tensor<1x16x6x6xi8>) {
  ^bb0(%in: f32, %out: i8):
    %v = arith.fptosi %in : f32 to i8
    linalg.yield %v : i8
  } -> tensor<1x16x6x6xi8>
  %p = tensor.pad %i8 low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %zp8 : i8
  } : tensor<1x16x6x6xi8> to tensor<1x16x8x8xi8>
  %e2 = tensor.empty() : tensor<1x8x6x6xi32>
  %f2 = linalg.fill ins(%c0 : i32) outs(%e2 : tensor<1x8x6x6xi32>) -> tensor<1x8x6x6xi32>
  %r = linalg.conv_2d_nchw_fchw_q {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%p, %w2, %zp, %c0 : tensor<1x16x8x8xi8>, tensor<8x16x3x3xi8>, i32, i32) outs(%f2 : tensor<1x8x6x6xi32>) -> tensor<1x8x6x6xi32>
  return %r : tensor<1x8x6x6xi32>
}

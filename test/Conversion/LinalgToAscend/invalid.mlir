// RUN: npu-opt %s --split-input-file --verify-diagnostics --npu-linalg-to-ascend

func.func @strided_insert(%x: tensor<4x4xf32>, %y: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error@+1 {{cannot convert 'tensor.insert_slice' to ascend: insert_slice with strides [1, 2] (only unit strides)}}
  %s = tensor.insert_slice %x into %y[0, 0] [4, 4] [1, 2] : tensor<4x4xf32> into tensor<4x8xf32>
  return %s : tensor<4x8xf32>
}

// -----

// An element read at an index that is not affine in one loop index (here
// i * i) is a gather, not a slice.
func.func @index_body(%x: tensor<8xf32>) -> tensor<8xf32> {
  %e = tensor.empty() : tensor<8xf32>
  // expected-error@+1 {{cannot convert 'linalg.generic' to ascend: a tensor captured inside a linalg body}}
  %r = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%x : tensor<8xf32>) outs(%e : tensor<8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %i = linalg.index 0 : index
    %j = arith.muli %i, %i : index
    %k = arith.remui %j, %i : index
    %v = tensor.extract %x[%k] : tensor<8xf32>
    linalg.yield %v : f32
  } -> tensor<8xf32>
  return %r : tensor<8xf32>
}

// -----

func.func @fractional_power(%x: tensor<8xf32>) -> tensor<8xf32> {
  %e = tensor.empty() : tensor<8xf32>
  %c = arith.constant 1.5 : f32
  %r = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%x : tensor<8xf32>) outs(%e : tensor<8xf32>) {
  ^bb0(%a: f32, %o: f32):
    // expected-error@+1 {{power with a non-integer or non-constant exponent}}
    %p = math.powf %a, %c : f32
    linalg.yield %p : f32
  } -> tensor<8xf32>
  return %r : tensor<8xf32>
}

// -----

// expected-error@+1 {{argument #0 has element type f64}}
func.func @f64_input(%x: tensor<8xf64>) -> tensor<8xf64> {
  return %x : tensor<8xf64>
}

// -----

// A run-time pad feeding anything but a pool is not taken by the pooling
// conversion (nor by anything else here).
func.func @pad_elsewhere(%x: tensor<1x3x9x9xf32>) -> tensor<1x3x11x11xf32> {
  %cst = arith.constant 0.000000e+00 : f32
  // expected-error@+1 {{cannot convert 'tensor.pad' to ascend: tensor.pad whose result is used by something other than a convolution or a pooling}}
  %padded = tensor.pad %x low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %cst : f32
  } : tensor<1x3x9x9xf32> to tensor<1x3x11x11xf32>
  return %padded : tensor<1x3x11x11xf32>
}

// -----

// An integer matmul's constant operand must fit int8 (the int8 cube's).
func.func @int8_out_of_range(%x: tensor<20x64xi8>) -> tensor<20x24xi32> {
  %w = arith.constant dense<300> : tensor<64x24xi32>
  %z = arith.constant 0 : i32
  %e = tensor.empty() : tensor<20x24xi32>
  %f = linalg.fill ins(%z : i32) outs(%e : tensor<20x24xi32>) -> tensor<20x24xi32>
  // expected-error@+1 {{cannot convert 'linalg.matmul' to ascend: an integer matmul's constant B operand has values outside int8}}
  %r = linalg.matmul ins(%x, %w : tensor<20x64xi8>, tensor<64x24xi32>) outs(%f : tensor<20x24xi32>) -> tensor<20x24xi32>
  return %r : tensor<20x24xi32>
}

// -----

// The int8 conv takes symmetric weights: a weight zero point is refused
// (onnx_conv_integer sends such a ConvInteger to the f16 cube instead).
func.func @int8_conv_weight_zero_point(%x: tensor<1x16x6x6xi8>) -> tensor<1x8x6x6xi32> {
  %w = arith.constant dense<1> : tensor<8x16x1x1xi8>
  %c0 = arith.constant 0 : i32
  %c2 = arith.constant 2 : i32
  %e = tensor.empty() : tensor<1x8x6x6xi32>
  %f = linalg.fill ins(%c0 : i32) outs(%e : tensor<1x8x6x6xi32>) -> tensor<1x8x6x6xi32>
  // expected-error@+1 {{cannot convert 'linalg.conv_2d_nchw_fchw_q' to ascend: an integer convolution with a weight zero point (2): the int8 conv takes symmetric weights}}
  %r = linalg.conv_2d_nchw_fchw_q {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%x, %w, %c0, %c2 : tensor<1x16x6x6xi8>, tensor<8x16x1x1xi8>, i32, i32) outs(%f : tensor<1x8x6x6xi32>) -> tensor<1x8x6x6xi32>
  return %r : tensor<1x8x6x6xi32>
}

// -----

// A run-time weight: the int8 conv lays its weights out on the host.
func.func @int8_conv_run_time_weight(%x: tensor<1x16x6x6xi8>, %w: tensor<8x16x1x1xi8>) -> tensor<1x8x6x6xi32> {
  %c0 = arith.constant 0 : i32
  %e = tensor.empty() : tensor<1x8x6x6xi32>
  %f = linalg.fill ins(%c0 : i32) outs(%e : tensor<1x8x6x6xi32>) -> tensor<1x8x6x6xi32>
  // expected-error@+1 {{cannot convert 'linalg.conv_2d_nchw_fchw_q' to ascend: an integer convolution with run-time weights}}
  %r = linalg.conv_2d_nchw_fchw_q {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%x, %w, %c0, %c0 : tensor<1x16x6x6xi8>, tensor<8x16x1x1xi8>, i32, i32) outs(%f : tensor<1x8x6x6xi32>) -> tensor<1x8x6x6xi32>
  return %r : tensor<1x8x6x6xi32>
}

// -----

// A pad whose value is not the conv's input zero point.
func.func @int8_conv_pad_not_zero_point(%x: tensor<1x16x6x6xi8>) -> tensor<1x8x6x6xi32> {
  %w = arith.constant dense<1> : tensor<8x16x3x3xi8>
  %c0 = arith.constant 0 : i32
  %p7 = arith.constant 7 : i8
  %c5 = arith.constant 5 : i32
  %p = tensor.pad %x low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %p7 : i8
  } : tensor<1x16x6x6xi8> to tensor<1x16x8x8xi8>
  %e = tensor.empty() : tensor<1x8x6x6xi32>
  %f = linalg.fill ins(%c0 : i32) outs(%e : tensor<1x8x6x6xi32>) -> tensor<1x8x6x6xi32>
  // expected-error@+1 {{cannot convert 'linalg.conv_2d_nchw_fchw_q' to ascend: an integer convolution padded with 7 while its input zero point is 5}}
  %r = linalg.conv_2d_nchw_fchw_q {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%p, %w, %c5, %c0 : tensor<1x16x8x8xi8>, tensor<8x16x3x3xi8>, i32, i32) outs(%f : tensor<1x8x6x6xi32>) -> tensor<1x8x6x6xi32>
  return %r : tensor<1x8x6x6xi32>
}

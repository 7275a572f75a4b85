// RUN: npu-opt %s --split-input-file --verify-diagnostics --npu-linalg-to-ascend

func.func @slice(%x: tensor<8x8xf32>) -> tensor<4x8xf32> {
  // expected-error@+1 {{cannot convert 'tensor.extract_slice' to ascend: 'tensor.extract_slice' is not supported by the conversion to ascend}}
  %s = tensor.extract_slice %x[0, 0] [4, 8] [1, 1] : tensor<8x8xf32> to tensor<4x8xf32>
  return %s : tensor<4x8xf32>
}

// -----

func.func @index_body(%x: tensor<8xf32>) -> tensor<8xf32> {
  %e = tensor.empty() : tensor<8xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%x : tensor<8xf32>) outs(%e : tensor<8xf32>) {
  ^bb0(%a: f32, %o: f32):
    // expected-error@+1 {{cannot convert 'linalg.index' to ascend: reads the loop index}}
    %i = linalg.index 0 : index
    %c = arith.index_cast %i : index to i32
    %f = arith.sitofp %c : i32 to f32
    %s = arith.addf %a, %f : f32
    linalg.yield %s : f32
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

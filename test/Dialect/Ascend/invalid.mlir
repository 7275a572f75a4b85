// RUN: npu-opt %s --split-input-file --verify-diagnostics
// One chunk per verifier rule of the ascend dialect (IRDL and ascend.py).

// === IRDL: operand kinds, attribute presence and values ===

func.func @operand_not_memref(%x: memref<16xf16, "gm">, %t: tensor<16xf16>) {
  // expected-error@+1 {{'ascend.relu' op operand #1 ('out') must be a memref, got tensor<16xf16>}}
  "ascend.relu"(%x, %t) : (memref<16xf16, "gm">, tensor<16xf16>) -> ()
  return
}

// -----

func.func @no_results(%x: memref<16xf16, "gm">) {
  // expected-error@+1 {{expects exactly 0 results, but got 1}}
  %r = "ascend.exp"(%x, %x) : (memref<16xf16, "gm">, memref<16xf16, "gm">) -> (i32)
  return
}

// -----

func.func @missing_scalar(%x: memref<16xf16, "gm">) {
  // expected-error@+1 {{attribute "scalar" is expected but not provided}}
  "ascend.adds"(%x, %x) : (memref<16xf16, "gm">, memref<16xf16, "gm">) -> ()
  return
}

// -----

func.func @missing_permutation(%x: memref<4x8xf16, "gm">, %y: memref<8x4xf16, "gm">) {
  // expected-error@+1 {{attribute "permutation" is expected but not provided}}
  "ascend.transpose"(%x, %y) : (memref<4x8xf16, "gm">, memref<8x4xf16, "gm">) -> ()
  return
}

// -----

func.func @bad_round_mode(%x: memref<16xf32, "gm">, %y: memref<16xf16, "gm">) {
  // expected-error@+1 {{'ascend.cast' op attribute 'round_mode' must be one of "rint", "floor", "ceil", "trunc", "round", "none"; got "down"}}
  "ascend.cast"(%x, %y) {round_mode = "down"} : (memref<16xf32, "gm">, memref<16xf16, "gm">) -> ()
  return
}

// -----

func.func @clamp_bound_not_float(%x: memref<16xf16, "gm">) {
  // expected-error@+1 {{'ascend.clamp' op attribute 'min' must be a float attribute; got 0 : i64}}
  "ascend.clamp"(%x, %x) {min = 0 : i64, max = 1.0 : f64} : (memref<16xf16, "gm">, memref<16xf16, "gm">) -> ()
  return
}

// === ascend.py: operands ===

// -----

func.func @not_in_gm(%x: memref<16xf16, "ub">, %y: memref<16xf16, "gm">) {
  // expected-error@+1 {{'ascend.sqrt' op operand #0 ('in') must be in memory space 'gm', got 'ub'}}
  "ascend.sqrt"(%x, %y) : (memref<16xf16, "ub">, memref<16xf16, "gm">) -> ()
  return
}

// -----

func.func @dynamic_shape(%x: memref<?xf16, "gm">, %y: memref<16xf16, "gm">) {
  // expected-error@+1 {{operand #0 ('in') must have a static shape, got memref<?xf16, "gm">}}
  "ascend.abs"(%x, %y) : (memref<?xf16, "gm">, memref<16xf16, "gm">) -> ()
  return
}

// -----

func.func @affine_layout(%x: memref<16x16xf16, affine_map<(d0, d1) -> (d1, d0)>, "gm">, %y: memref<16x16xf16, "gm">) {
  // expected-error@+1 {{operand #0 ('in') has the layout affine_map<(d0, d1) -> (d1, d0)>, which is not strided}}
  "ascend.exp"(%x, %y) : (memref<16x16xf16, affine_map<(d0, d1) -> (d1, d0)>, "gm">, memref<16x16xf16, "gm">) -> ()
  return
}

// -----

func.func @scalar_not_f64(%x: memref<16xf16, "gm">) {
  // expected-error@+1 {{attribute 'scalar' must be an f64 float (e.g. `1.0 : f64`), got 2.000000e+00 : f32}}
  "ascend.muls"(%x, %x) {scalar = 2.0 : f32} : (memref<16xf16, "gm">, memref<16xf16, "gm">) -> ()
  return
}

// === ascend.py: element types ===

// -----

func.func @matmul_f32_inputs(%a: memref<1x1x16x16xf32, "gm">, %c: memref<1x1x16x16xf32, "gm">) {
  // expected-error@+1 {{unsupported element types (a: f32, b: f32, c: f32); supported: (f16, f16, f32), (f16, f16, f16), (i8, i8, i32)}}
  "ascend.matmul"(%a, %a, %c) : (memref<1x1x16x16xf32, "gm">, memref<1x1x16x16xf32, "gm">, memref<1x1x16x16xf32, "gm">) -> ()
  return
}

// -----

func.func @matmul_int8_to_f32(%a: memref<1x1x16x32xi8, "gm">, %b: memref<1x1x32x16xi8, "gm">, %c: memref<1x1x16x16xf32, "gm">) {
  // expected-error@+1 {{unsupported element types (a: i8, b: i8, c: f32); supported: (f16, f16, f32), (f16, f16, f16), (i8, i8, i32)}}
  "ascend.matmul"(%a, %b, %c) : (memref<1x1x16x32xi8, "gm">, memref<1x1x32x16xi8, "gm">, memref<1x1x16x16xf32, "gm">) -> ()
  return
}

// -----

func.func @matmul_int8_square_blocks(%a: memref<1x1x16x16xi8, "gm">, %b: memref<1x1x32x16xi8, "gm">, %c: memref<1x1x16x16xi32, "gm">) {
  // expected-error@+1 {{operand #0 ('a') must be an Nz fractal matrix [X1, Y1, 16, 32], got shape [1, 1, 16, 16]}}
  "ascend.matmul"(%a, %b, %c) : (memref<1x1x16x16xi8, "gm">, memref<1x1x32x16xi8, "gm">, memref<1x1x16x16xi32, "gm">) -> ()
  return
}

// -----

func.func @matmul_int8_b_blocks(%a: memref<1x1x16x32xi8, "gm">, %b: memref<1x1x16x32xi8, "gm">, %c: memref<1x1x16x16xi32, "gm">) {
  // expected-error@+1 {{operand #1 ('b') must be an Nz fractal matrix [X1, Y1, 32, 16], got shape [1, 1, 16, 32]}}
  "ascend.matmul"(%a, %b, %c) : (memref<1x1x16x32xi8, "gm">, memref<1x1x16x32xi8, "gm">, memref<1x1x16x16xi32, "gm">) -> ()
  return
}

// -----

func.func @matmul_int8_reduction_mismatch(%a: memref<2x1x16x32xi8, "gm">, %b: memref<1x3x32x16xi8, "gm">, %c: memref<1x1x16x16xi32, "gm">) {
  // expected-error@+1 {{reduction blocks differ: a [N1, M1, ...] has N1 = 2, b [K1, N1, ...] has N1 = 3}}
  "ascend.matmul"(%a, %b, %c) : (memref<2x1x16x32xi8, "gm">, memref<1x3x32x16xi8, "gm">, memref<1x1x16x16xi32, "gm">) -> ()
  return
}

// -----

func.func @binary_mixed(%x: memref<16xf16, "gm">, %y: memref<16xf32, "gm">) {
  // expected-error@+1 {{unsupported element types (lhs: f16, rhs: f32, out: f16); all operands must have the same element type, one of f16, f32, i32}}
  "ascend.add"(%x, %y, %x) : (memref<16xf16, "gm">, memref<16xf32, "gm">, memref<16xf16, "gm">) -> ()
  return
}

// -----

func.func @div_integer(%x: memref<16xi32, "gm">) {
  // expected-error@+1 {{all operands must have the same element type, one of f16, f32}}
  "ascend.div"(%x, %x, %x) : (memref<16xi32, "gm">, memref<16xi32, "gm">, memref<16xi32, "gm">) -> ()
  return
}

// -----

func.func @unary_integer(%x: memref<16xi32, "gm">) {
  // expected-error@+1 {{unsupported element types (in: i32, out: i32); all operands must have the same element type, one of f16, f32}}
  "ascend.tanh"(%x, %x) : (memref<16xi32, "gm">, memref<16xi32, "gm">) -> ()
  return
}

// -----

func.func @cast_pair(%x: memref<16xf32, "gm">, %y: memref<16xf32, "gm">) {
  // expected-error@+1 {{unsupported element types (in: f32, out: f32); supported: (f16, f32), (f16, i8), (f16, i32), (f32, f16), (f32, i8), (f32, i32), (i8, f16), (i8, f32), (i8, i32), (i32, f16), (i32, f32), (i32, i8)}}
  "ascend.cast"(%x, %y) {round_mode = "rint"} : (memref<16xf32, "gm">, memref<16xf32, "gm">) -> ()
  return
}

// -----

func.func @fractalize_types(%x: memref<16x16xf16, "gm">, %y: memref<1x1x16x16xf32, "gm">) {
  // expected-error@+1 {{unsupported element types (src: f16, dst: f32)}}
  "ascend.fractalize"(%x, %y) : (memref<16x16xf16, "gm">, memref<1x1x16x16xf32, "gm">) -> ()
  return
}

// === ascend.py: shapes ===

// -----

func.func @matmul_not_fractal(%a: memref<32x32xf16, "gm">, %b: memref<2x2x16x16xf16, "gm">, %c: memref<2x2x16x16xf32, "gm">) {
  // expected-error@+1 {{operand #0 ('a') must be an Nz fractal matrix [X1, Y1, 16, 16], got shape [32, 32]}}
  "ascend.matmul"(%a, %b, %c) : (memref<32x32xf16, "gm">, memref<2x2x16x16xf16, "gm">, memref<2x2x16x16xf32, "gm">) -> ()
  return
}

// -----

func.func @matmul_block_not_16(%a: memref<2x2x16x16xf16, "gm">, %b: memref<2x2x16x8xf16, "gm">, %c: memref<2x2x16x16xf32, "gm">) {
  // expected-error@+1 {{operand #1 ('b') must be an Nz fractal matrix [X1, Y1, 16, 16], got shape [2, 2, 16, 8]}}
  "ascend.matmul"(%a, %b, %c) : (memref<2x2x16x16xf16, "gm">, memref<2x2x16x8xf16, "gm">, memref<2x2x16x16xf32, "gm">) -> ()
  return
}

// -----

func.func @matmul_reduction_mismatch(%a: memref<3x2x16x16xf16, "gm">, %b: memref<4x2x16x16xf16, "gm">, %c: memref<4x2x16x16xf32, "gm">) {
  // expected-error@+1 {{reduction blocks differ: a [N1, M1, ...] has N1 = 3, b [K1, N1, ...] has N1 = 2}}
  "ascend.matmul"(%a, %b, %c) : (memref<3x2x16x16xf16, "gm">, memref<4x2x16x16xf16, "gm">, memref<4x2x16x16xf32, "gm">) -> ()
  return
}

// -----

func.func @matmul_result_shape(%a: memref<3x2x16x16xf16, "gm">, %b: memref<4x3x16x16xf16, "gm">, %c: memref<2x4x16x16xf32, "gm">) {
  // expected-error@+1 {{result c must be [K1, M1, ...] = [4, 2, ...], got [2, 4, ...]}}
  "ascend.matmul"(%a, %b, %c) : (memref<3x2x16x16xf16, "gm">, memref<4x3x16x16xf16, "gm">, memref<2x4x16x16xf32, "gm">) -> ()
  return
}

// -----

func.func @batch_matmul_rank(%a: memref<1x1x16x16xf16, "gm">, %c: memref<1x1x16x16xf32, "gm">) {
  // expected-error@+1 {{operand #0 ('a') must be an Nz fractal matrix [B, X1, Y1, 16, 16], got shape [1, 1, 16, 16]}}
  "ascend.batch_matmul"(%a, %a, %c) : (memref<1x1x16x16xf16, "gm">, memref<1x1x16x16xf16, "gm">, memref<1x1x16x16xf32, "gm">) -> ()
  return
}

// -----

func.func @batch_mismatch(%a: memref<2x1x1x16x16xf16, "gm">, %b: memref<3x1x1x16x16xf16, "gm">, %c: memref<2x1x1x16x16xf32, "gm">) {
  // expected-error@+1 {{batch sizes differ: a 2, b 3, c 2}}
  "ascend.batch_matmul"(%a, %b, %c) : (memref<2x1x1x16x16xf16, "gm">, memref<3x1x1x16x16xf16, "gm">, memref<2x1x1x16x16xf32, "gm">) -> ()
  return
}

// -----

func.func @fractalize_padding(%x: memref<30x50xf16, "gm">, %y: memref<3x2x16x16xf16, "gm">) {
  // expected-error@+1 {{dst must have the Nz shape [4, 2, 16, 16] of src [30, 50] ([..., ceil(C/16), ceil(R/16), 16, 16]), got [3, 2, 16, 16]}}
  "ascend.fractalize"(%x, %y) : (memref<30x50xf16, "gm">, memref<3x2x16x16xf16, "gm">) -> ()
  return
}

// -----

func.func @fractalize_int8_blocks(%x: memref<30x50xi8, "gm">, %y: memref<4x2x16x16xi8, "gm">) {
  // expected-error@+1 {{dst must have the Nz shape [2, 2, 16, 32] of src [30, 50] ([..., ceil(C/32), ceil(R/16), 16, 32]), got [4, 2, 16, 16]}}
  "ascend.fractalize"(%x, %y) : (memref<30x50xi8, "gm">, memref<4x2x16x16xi8, "gm">) -> ()
  return
}

// -----

func.func @defractalize_int8(%x: memref<2x2x16x32xi8, "gm">, %y: memref<30x50xi8, "gm">) {
  // expected-error@+1 {{unsupported element types (src: i8, dst: i8)}}
  "ascend.defractalize"(%x, %y) : (memref<2x2x16x32xi8, "gm">, memref<30x50xi8, "gm">) -> ()
  return
}

// -----

func.func @fractalize_vector(%x: memref<64xf16, "gm">, %y: memref<4x1x16x16xf16, "gm">) {
  // expected-error@+1 {{src must be a matrix [..., R, C], got shape [64]}}
  "ascend.fractalize"(%x, %y) : (memref<64xf16, "gm">, memref<4x1x16x16xf16, "gm">) -> ()
  return
}

// -----

func.func @fractalize_batch(%x: memref<2x16x16xf32, "gm">, %y: memref<3x1x1x16x16xf32, "gm">) {
  // expected-error@+1 {{dst must have the Nz shape [2, 1, 1, 16, 16] of src [2, 16, 16]}}
  "ascend.fractalize"(%x, %y) : (memref<2x16x16xf32, "gm">, memref<3x1x1x16x16xf32, "gm">) -> ()
  return
}

// -----

func.func @defractalize_shape(%x: memref<2x2x16x16xf16, "gm">, %y: memref<40x20xf16, "gm">) {
  // expected-error@+1 {{src must have the Nz shape [2, 3, 16, 16] of dst [40, 20]}}
  "ascend.defractalize"(%x, %y) : (memref<2x2x16x16xf16, "gm">, memref<40x20xf16, "gm">) -> ()
  return
}

// -----

func.func @defractalize_vector(%x: memref<1x1x16x16xf16, "gm">, %y: memref<16xf16, "gm">) {
  // expected-error@+1 {{dst must be a matrix [..., R, C], got shape [16]}}
  "ascend.defractalize"(%x, %y) : (memref<1x1x16x16xf16, "gm">, memref<16xf16, "gm">) -> ()
  return
}

// -----

func.func @broadcast_lhs(%x: memref<3x8xf16, "gm">, %y: memref<4x8xf16, "gm">) {
  // expected-error@+1 {{operand #0 ('lhs') of shape [3, 8] cannot be broadcast to the output shape [4, 8]}}
  "ascend.sub"(%x, %y, %y) : (memref<3x8xf16, "gm">, memref<4x8xf16, "gm">, memref<4x8xf16, "gm">) -> ()
  return
}

// -----

func.func @broadcast_rhs_rank(%x: memref<8xf16, "gm">, %y: memref<2x8xf16, "gm">) {
  // expected-error@+1 {{operand #1 ('rhs') of shape [2, 8] cannot be broadcast to the output shape [8]}}
  "ascend.mul"(%x, %y, %x) : (memref<8xf16, "gm">, memref<2x8xf16, "gm">, memref<8xf16, "gm">) -> ()
  return
}

// -----

func.func @unary_shape(%x: memref<16xf16, "gm">, %y: memref<32xf16, "gm">) {
  // expected-error@+1 {{output shape [32] must equal the input shape [16]}}
  "ascend.neg"(%x, %y) : (memref<16xf16, "gm">, memref<32xf16, "gm">) -> ()
  return
}

// -----

func.func @clamp_bounds(%x: memref<16xf16, "gm">) {
  // expected-error@+1 {{'min' (2.0) must not exceed 'max' (1.0)}}
  "ascend.clamp"(%x, %x) {min = 2.0 : f64, max = 1.0 : f64} : (memref<16xf16, "gm">, memref<16xf16, "gm">) -> ()
  return
}

// -----

func.func @transpose_not_permutation(%x: memref<4x8xf16, "gm">, %y: memref<8x4xf16, "gm">) {
  // expected-error@+1 {{'permutation' [1, 1] is not a permutation of the 2 dimensions of the input}}
  "ascend.transpose"(%x, %y) {permutation = array<i64: 1, 1>} : (memref<4x8xf16, "gm">, memref<8x4xf16, "gm">) -> ()
  return
}

// -----

func.func @transpose_shape(%x: memref<2x4x8xf16, "gm">, %y: memref<8x2x4xf16, "gm">) {
  // expected-error@+1 {{output shape must be [4, 8, 2] (input [2, 4, 8] permuted by [1, 2, 0]), got [8, 2, 4]}}
  "ascend.transpose"(%x, %y) {permutation = array<i64: 1, 2, 0>} : (memref<2x4x8xf16, "gm">, memref<8x2x4xf16, "gm">) -> ()
  return
}

// -----

func.func @reduce_shape(%x: memref<4x8xf32, "gm">, %y: memref<8xf32, "gm">) {
  // expected-error@+1 {{output shape must be [4] (input [4, 8] without axis 1) or [4, 1] (axis kept as size 1), got [8]}}
  "ascend.reduce_sum"(%x, %y) : (memref<4x8xf32, "gm">, memref<8xf32, "gm">) -> ()
  return
}

// -----

func.func @reduce_1d(%x: memref<8xf16, "gm">, %y: memref<8xf16, "gm">) {
  // expected-error@+1 {{output shape must be [1] (input [8] without axis 0), got [8]}}
  "ascend.reduce_max"(%x, %y) : (memref<8xf16, "gm">, memref<8xf16, "gm">) -> ()
  return
}

// -----

// The memory space is part of the contract: none is not read as "gm".
func.func @no_memory_space(%x: memref<256xf16>, %y: memref<256xf16, "gm">) {
  // expected-error@+1 {{'ascend.relu' op operand #0 ('in') has no memory space; write it in the type, e.g. memref<256xf16, "gm">}}
  "ascend.relu"(%x, %y) : (memref<256xf16>, memref<256xf16, "gm">) -> ()
  return
}

// -----

func.func @reduce_axis_range(%x: memref<4x8xf32, "gm">, %y: memref<4xf32, "gm">) {
  // expected-error@+1 {{'axis' 2 is out of range for the input of rank 2}}
  "ascend.reduce_sum"(%x, %y) {axis = 2 : i64} : (memref<4x8xf32, "gm">, memref<4xf32, "gm">) -> ()
  return
}

// -----

func.func @reduce_axis_type(%x: memref<4x8xf32, "gm">, %y: memref<4xf32, "gm">) {
  // expected-error@+1 {{attribute 'axis' must be a 64-bit integer (e.g. `1 : i64`), got 1 : i32}}
  "ascend.reduce_min"(%x, %y) {axis = 1 : i32} : (memref<4x8xf32, "gm">, memref<4xf32, "gm">) -> ()
  return
}

// -----

// A global average pool's 1/(H*W) rides on its sum only.
func.func @reduce_scale_on_max(%x: memref<4x8xf32, "gm">, %y: memref<4xf32, "gm">) {
  // expected-error@+1 {{only reduce_sum takes a 'scale'}}
  "ascend.reduce_max"(%x, %y) {axis = 1 : i64, scale = 0.5 : f64} : (memref<4x8xf32, "gm">, memref<4xf32, "gm">) -> ()
  return
}

// -----

func.func @reduce_scale_type(%x: memref<4x8xf32, "gm">, %y: memref<4xf32, "gm">) {
  // expected-error@+1 {{attribute 'scale' must be a 64-bit float (e.g. `0.5 : f64`), got 5.000000e-01 : f32}}
  "ascend.reduce_sum"(%x, %y) {axis = 1 : i64, scale = 0.5 : f32} : (memref<4x8xf32, "gm">, memref<4xf32, "gm">) -> ()
  return
}

// -----

func.func @reduce_axis_shape(%x: memref<4x8x3xf32, "gm">, %y: memref<4x3xf32, "gm">) {
  // expected-error@+1 {{output shape must be [8, 3] (input [4, 8, 3] without axis 0) or [1, 8, 3] (axis kept as size 1), got [4, 3]}}
  "ascend.reduce_max"(%x, %y) {axis = -3 : i64} : (memref<4x8x3xf32, "gm">, memref<4x3xf32, "gm">) -> ()
  return
}

// -----

func.func @erf_int(%x: memref<16xi32, "gm">) {
  // expected-error@+1 {{unsupported element types (in: i32, out: i32); all operands must have the same element type, one of f16, f32}}
  "ascend.erf"(%x, %x) : (memref<16xi32, "gm">, memref<16xi32, "gm">) -> ()
  return
}

// -----

func.func @cmp_predicate(%x: memref<16xf32, "gm">, %y: memref<16xi8, "gm">) {
  // expected-error@+1 {{'ascend.cmp' op attribute 'predicate' must be one of "eq", "ne", "lt", "le", "gt", "ge"; got "lte"}}
  "ascend.cmp"(%x, %x, %y) {predicate = "lte"} : (memref<16xf32, "gm">, memref<16xf32, "gm">, memref<16xi8, "gm">) -> ()
  return
}

// -----

func.func @cmp_out_type(%x: memref<16xf32, "gm">) {
  // expected-error@+1 {{unsupported element types (lhs: f32, rhs: f32, out: f32); supported: (f16, f16, i8), (f32, f32, i8), (i32, i32, i8)}}
  "ascend.cmp"(%x, %x, %x) {predicate = "lt"} : (memref<16xf32, "gm">, memref<16xf32, "gm">, memref<16xf32, "gm">) -> ()
  return
}

// -----

func.func @cmp_broadcast(%x: memref<4x16xf16, "gm">, %r: memref<4xf16, "gm">, %y: memref<4x16xi8, "gm">) {
  // expected-error@+1 {{operand #1 ('rhs') of shape [4] cannot be broadcast to the output shape [4, 16]}}
  "ascend.cmp"(%x, %r, %y) {predicate = "eq"} : (memref<4x16xf16, "gm">, memref<4xf16, "gm">, memref<4x16xi8, "gm">) -> ()
  return
}

// -----

func.func @select_types(%c: memref<16xi8, "gm">, %a: memref<16xf32, "gm">, %b: memref<16xf16, "gm">) {
  // expected-error@+1 {{unsupported element types (cond: i8, a: f32, b: f16, out: f32); supported: (i8, f16, f16, f16), (i8, f32, f32, f32), (i8, i32, i32, i32)}}
  "ascend.select"(%c, %a, %b, %a) : (memref<16xi8, "gm">, memref<16xf32, "gm">, memref<16xf16, "gm">, memref<16xf32, "gm">) -> ()
  return
}

// -----

func.func @select_broadcast(%c: memref<3x1xi8, "gm">, %a: memref<4x16xf32, "gm">) {
  // expected-error@+1 {{operand #0 ('cond') of shape [3, 1] cannot be broadcast to the output shape [4, 16]}}
  "ascend.select"(%c, %a, %a, %a) : (memref<3x1xi8, "gm">, memref<4x16xf32, "gm">, memref<4x16xf32, "gm">, memref<4x16xf32, "gm">) -> ()
  return
}

// -----

func.func @broadcast_shape(%x: memref<2x16xf32, "gm">, %y: memref<4x16xf32, "gm">) {
  // expected-error@+1 {{operand #0 ('in') of shape [2, 16] cannot be broadcast to the output shape [4, 16]}}
  "ascend.broadcast"(%x, %y) : (memref<2x16xf32, "gm">, memref<4x16xf32, "gm">) -> ()
  return
}

// -----

func.func @gather_shape(%t: memref<30x16xf32, "gm">, %i: memref<4xi32, "gm">, %o: memref<4x8xf32, "gm">) {
  // expected-error@+1 {{output shape must be [4, 16] (table [30, 16] with axis 0 replaced by the indices' shape [4]), got [4, 8]}}
  "ascend.gather"(%t, %i, %o) {axis = 0 : i64} : (memref<30x16xf32, "gm">, memref<4xi32, "gm">, memref<4x8xf32, "gm">) -> ()
  return
}

// -----

func.func @gather_axis(%t: memref<30x16xf32, "gm">, %i: memref<4xi32, "gm">, %o: memref<4x16xf32, "gm">) {
  // expected-error@+1 {{'axis' 2 is out of range for the table of rank 2}}
  "ascend.gather"(%t, %i, %o) {axis = 2 : i64} : (memref<30x16xf32, "gm">, memref<4xi32, "gm">, memref<4x16xf32, "gm">) -> ()
  return
}

// -----

func.func @gather_index_type(%t: memref<30x16xf32, "gm">, %i: memref<4xf32, "gm">, %o: memref<4x16xf32, "gm">) {
  // expected-error@+1 {{'ascend.gather' op unsupported element types (table: f32, indices: f32, out: f32); supported: (f16, i32, f16), (f32, i32, f32), (i8, i32, i8), (i32, i32, i32)}}
  "ascend.gather"(%t, %i, %o) {axis = 0 : i64} : (memref<30x16xf32, "gm">, memref<4xf32, "gm">, memref<4x16xf32, "gm">) -> ()
  return
}

// -----

func.func @gather_dtypes(%t: memref<30x16xf32, "gm">, %i: memref<4xi32, "gm">, %o: memref<4x16xf16, "gm">) {
  // expected-error@+1 {{'ascend.gather' op unsupported element types (table: f32, indices: i32, out: f16)}}
  "ascend.gather"(%t, %i, %o) {axis = 0 : i64} : (memref<30x16xf32, "gm">, memref<4xi32, "gm">, memref<4x16xf16, "gm">) -> ()
  return
}

// -----

func.func @gather_missing_axis(%t: memref<30x16xf32, "gm">, %i: memref<4xi32, "gm">, %o: memref<4x16xf32, "gm">) {
  // expected-error@+1 {{attribute "axis" is expected but not provided}}
  "ascend.gather"(%t, %i, %o) : (memref<30x16xf32, "gm">, memref<4xi32, "gm">, memref<4x16xf32, "gm">) -> ()
  return
}

// -----

func.func @gather_elements_rank(%d: memref<4x6xf32, "gm">, %i: memref<5xi32, "gm">, %o: memref<5xf32, "gm">) {
  // expected-error@+1 {{indices must have the data's rank 2 (at least 1), got 1}}
  "ascend.gather_elements"(%d, %i, %o) {axis = 1 : i64} : (memref<4x6xf32, "gm">, memref<5xi32, "gm">, memref<5xf32, "gm">) -> ()
  return
}

// -----

func.func @gather_elements_longer(%d: memref<4x6xf32, "gm">, %i: memref<5x2xi32, "gm">, %o: memref<5x2xf32, "gm">) {
  // expected-error@+1 {{indices dimension 0 (5) exceeds the data's (4); only axis 1 may be longer}}
  "ascend.gather_elements"(%d, %i, %o) {axis = 1 : i64} : (memref<4x6xf32, "gm">, memref<5x2xi32, "gm">, memref<5x2xf32, "gm">) -> ()
  return
}

// -----

func.func @gather_elements_out(%d: memref<4x6xf32, "gm">, %i: memref<3x2xi32, "gm">, %o: memref<3x6xf32, "gm">) {
  // expected-error@+1 {{output shape must be the indices' shape [3, 2], got [3, 6]}}
  "ascend.gather_elements"(%d, %i, %o) {axis = 1 : i64} : (memref<4x6xf32, "gm">, memref<3x2xi32, "gm">, memref<3x6xf32, "gm">) -> ()
  return
}

// -----

func.func @slice_out_of_range(%x: memref<5x9xf32, "gm">, %y: memref<5x5xf32, "gm">) {
  // expected-error@+1 {{dimension 1: indices 1, 3, ..., 9 leave the input's 0..8}}
  "ascend.slice"(%x, %y) {offsets = array<i64: 0, 1>, strides = array<i64: 1, 2>} : (memref<5x9xf32, "gm">, memref<5x5xf32, "gm">) -> ()
  return
}

// -----

func.func @slice_zero_stride(%x: memref<5x9xf32, "gm">, %y: memref<5x2xf32, "gm">) {
  // expected-error@+1 {{stride of dimension 1 is 0}}
  "ascend.slice"(%x, %y) {offsets = array<i64: 0, 1>, strides = array<i64: 1, 0>} : (memref<5x9xf32, "gm">, memref<5x2xf32, "gm">) -> ()
  return
}

// -----

func.func @slice_rank(%x: memref<5x9xf32, "gm">, %y: memref<45xf32, "gm">) {
  // expected-error@+1 {{input rank 2, output rank 1, 2 offsets and 2 strides must agree}}
  "ascend.slice"(%x, %y) {offsets = array<i64: 0, 0>, strides = array<i64: 1, 1>} : (memref<5x9xf32, "gm">, memref<45xf32, "gm">) -> ()
  return
}

// -----

func.func @slice_missing_strides(%x: memref<5x9xf32, "gm">, %y: memref<5x2xf32, "gm">) {
  // expected-error@+1 {{attribute "strides" is expected but not provided}}
  "ascend.slice"(%x, %y) {offsets = array<i64: 0, 1>} : (memref<5x9xf32, "gm">, memref<5x2xf32, "gm">) -> ()
  return
}

// -----

func.func @insert_slice_does_not_fit(%x: memref<2x4xf32, "gm">, %y: memref<2x7xf32, "gm">) {
  // expected-error@+1 {{the input does not fit the output at the offsets: dimension 1: indices 4, 5, ..., 7 leave the output's 0..6}}
  "ascend.insert_slice"(%x, %y) {offsets = array<i64: 0, 4>} : (memref<2x4xf32, "gm">, memref<2x7xf32, "gm">) -> ()
  return
}

// -----

func.func @insert_slice_types(%x: memref<2x4xf16, "gm">, %y: memref<2x7xf32, "gm">) {
  // expected-error@+1 {{element types}}
  "ascend.insert_slice"(%x, %y) {offsets = array<i64: 0, 0>} : (memref<2x4xf16, "gm">, memref<2x7xf32, "gm">) -> ()
  return
}

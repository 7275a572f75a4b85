// RUN: npu-opt %s --split-input-file --verify-diagnostics --npu-lower-slices

// Bools (i8) in rows shorter than a block would need the element gather,
// which vnchwconv limits to 2- and 4-byte types.
func.func @short_i8(%a: memref<4x9xi8, "gm">, %b: memref<4x3xi8, "gm">) {
  // expected-error@+1 {{ascend.slice of i8 with rows of 3 elements (under one 32-byte block) needs the element gather}}
  "ascend.slice"(%a, %b) {offsets = array<i64: 0, 2>, strides = array<i64: 1, 1>} : (memref<4x9xi8, "gm">, memref<4x3xi8, "gm">) -> ()
  return
}

// -----

// Every other element of every other row of a large tensor: the gather would
// need it all in UB, and no leading dim is taken whole to cut it into chunks
// (every other element of whole rows goes in chunks of rows).
func.func @gather_too_large(%a: memref<300x400xf32, "gm">, %b: memref<150x200xf32, "gm">) {
  // expected-error@+1 {{ascend.slice with rows of 1 elements needs the element gather, which holds the tensors in UB}}
  "ascend.slice"(%a, %b) {offsets = array<i64: 0, 0>, strides = array<i64: 2, 2>} : (memref<300x400xf32, "gm">, memref<150x200xf32, "gm">) -> ()
  return
}

// RUN: npu-opt %s --split-input-file --verify-diagnostics --npu-lower-cce-to-hivm
// Inputs the cce -> hivm lowering cannot turn into hardware addresses or
// words: each is an error at the op, never a truncated field.

func.func @unplanned(%a: memref<256xf16, "gm">) {
  // expected-error@+1 {{on-chip allocation in ub has no planned address (npu.offset): run npu-plan-memory first}}
  %ub = memref.alloc() : memref<256xf16, "ub">
  "cce.copy_gm_to_ub"(%a, %ub) {n_burst = 1 : i64, burst_len = 16 : i64, src_gap = 0 : i64, dst_gap = 0 : i64} : (memref<256xf16, "gm">, memref<256xf16, "ub">) -> ()
  return
}

// -----

func.func @gm_temporary() {
  // expected-error@+1 {{GM temporaries (memref.alloc in gm) have no place in the kernel's argument area}}
  %t = memref.alloc() : memref<256xf16, "gm">
  return
}

// -----

func.func @misaligned(%a: memref<256xf16, "gm">) {
  %ub = memref.alloc() {npu.offset = 0 : i64} : memref<512xf16, "ub">
  %v = memref.subview %ub[8] [256] [1] : memref<512xf16, "ub"> to memref<256xf16, strided<[1], offset: 8>, "ub">
  // expected-error@+1 {{ub address 16 is not aligned to the 32-byte granule}}
  "cce.copy_gm_to_ub"(%a, %v) {n_burst = 1 : i64, burst_len = 16 : i64, src_gap = 0 : i64, dst_gap = 0 : i64} : (memref<256xf16, "gm">, memref<256xf16, strided<[1], offset: 8>, "ub">) -> ()
  return
}

// -----

func.func @outside_the_buffer(%a: memref<256xf16, "gm">) {
  %ub = memref.alloc() {npu.offset = 262144 : i64} : memref<256xf16, "ub">
  // expected-error@+1 {{ub address 262144 is outside the buffer [0, 262144)}}
  "cce.copy_gm_to_ub"(%a, %ub) {n_burst = 1 : i64, burst_len = 16 : i64, src_gap = 0 : i64, dst_gap = 0 : i64} : (memref<256xf16, "gm">, memref<256xf16, "ub">) -> ()
  return
}

// -----

// Counts wider than their field: n_burst has 12 bits (the cce verifier
// bounds every count by the field of the hivm word it is packed into).
func.func @n_burst_overflows(%a: memref<262144xf16, "gm">) {
  %ub = memref.alloc() {npu.offset = 0 : i64} : memref<256xf16, "ub">
  // expected-error@+1 {{attribute 'n_burst' must be in [1, 4095] (12-bit field of the instruction), got 4096}}
  "cce.copy_gm_to_ub"(%a, %ub) {n_burst = 4096 : i64, burst_len = 1 : i64, src_gap = 0 : i64, dst_gap = 0 : i64} : (memref<262144xf16, "gm">, memref<256xf16, "ub">) -> ()
  return
}

// -----

func.func @stride_overflows() {
  %l1 = memref.alloc() {npu.offset = 0 : i64} : memref<1024xf16, "l1">
  %a = memref.alloc() {npu.offset = 0 : i64} : memref<1024xf16, "l0a">
  // expected-error@+1 {{attribute 'src_stride' must be in [0, 65535] (16-bit field of the instruction), got 65536}}
  "cce.load_l1_to_l0a"(%l1, %a) {repeat = 1 : i64, src_stride = 65536 : i64, dst_stride = 1 : i64, transpose = false} : (memref<1024xf16, "l1">, memref<1024xf16, "l0a">) -> ()
  return
}

// -----

func.func @memref_escapes(%a: memref<256xf16, "gm">) -> f16 {
  %c0 = arith.constant 0 : index
  %ub = memref.alloc() {npu.offset = 0 : i64} : memref<256xf16, "ub">
  // expected-error@+1 {{'memref.load' of memref<256xf16, "ub">: the scalar unit loads i32 from GM only}}
  %x = memref.load %ub[%c0] : memref<256xf16, "ub">
  return %x : f16
}

// -----

func.func @memref_store_escapes(%a: memref<8xi32, "gm">) {
  %c0 = arith.constant 0 : index
  %v = arith.constant 7 : i32
  // expected-error@+1 {{'memref.store' uses a memref; only cce instructions and views can be lowered to hivm}}
  memref.store %v, %a[%c0] : memref<8xi32, "gm">
  return
}

// -----

// An attribute that is no field of the word (whatever its type) is refused
// by name, not dropped.
func.func @stray_attribute(%a: memref<256xf16, "gm">) {
  %ub = memref.alloc() {npu.offset = 0 : i64} : memref<256xf16, "ub">
  // expected-error@+1 {{attribute(s) x have no field in the copy configuration word}}
  "cce.copy_gm_to_ub"(%a, %ub) {n_burst = 1 : i64, burst_len = 16 : i64, src_gap = 0 : i64, dst_gap = 0 : i64, x = "y"} : (memref<256xf16, "gm">, memref<256xf16, "ub">) -> ()
  return
}

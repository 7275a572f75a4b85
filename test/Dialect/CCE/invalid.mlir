// RUN: npu-opt %s --split-input-file --verify-diagnostics
// One chunk per verifier rule of the cce dialect (IRDL and cce.py).

// === IRDL: operand kinds, attribute presence and values ===

func.func @operand_not_memref(%g: i64, %u: memref<256xf16, "ub">) {
  // expected-error@+1 {{'cce.copy_gm_to_ub' op operand #0 ('src') must be a memref, got i64}}
  "cce.copy_gm_to_ub"(%g, %u) {n_burst = 1 : i64, burst_len = 16 : i64, src_gap = 0 : i64, dst_gap = 0 : i64} : (i64, memref<256xf16, "ub">) -> ()
  return
}

// -----

func.func @wrong_operand_count(%g: memref<256xf16, "gm">) {
  // expected-error@+1 {{'cce.copy_gm_to_ub' op expects 2 operands (src, dst), got 1}}
  "cce.copy_gm_to_ub"(%g) {n_burst = 1 : i64, burst_len = 16 : i64, src_gap = 0 : i64, dst_gap = 0 : i64} : (memref<256xf16, "gm">) -> ()
  return
}

// -----

func.func @missing_attribute(%g: memref<256xf16, "gm">, %u: memref<256xf16, "ub">) {
  // expected-error@+1 {{attribute "dst_gap" is expected but not provided}}
  "cce.copy_gm_to_ub"(%g, %u) {n_burst = 1 : i64, burst_len = 16 : i64, src_gap = 0 : i64} : (memref<256xf16, "gm">, memref<256xf16, "ub">) -> ()
  return
}

// -----

func.func @attribute_wrong_kind(%g: memref<256xf16, "gm">, %u: memref<256xf16, "ub">) {
  // expected-error@+1 {{'cce.copy_gm_to_ub' op attribute 'n_burst' must be an integer attribute; got "one"}}
  "cce.copy_gm_to_ub"(%g, %u) {n_burst = "one", burst_len = 16 : i64, src_gap = 0 : i64, dst_gap = 0 : i64} : (memref<256xf16, "gm">, memref<256xf16, "ub">) -> ()
  return
}

// -----

func.func @unknown_pipe() {
  // expected-error@+1 {{'cce.set_flag' op attribute 'src' must be one of "S", "V", "M", "MTE1", "MTE2", "MTE3"; got "MTE4"}}
  "cce.set_flag"() {src = "MTE4", dst = "V", event = 0 : i64} : () -> ()
  return
}

// -----

func.func @all_only_for_barrier() {
  // expected-error@+1 {{'cce.wait_flag' op attribute 'src' must be one of "S", "V", "M", "MTE1", "MTE2", "MTE3"; got "ALL"}}
  "cce.wait_flag"() {src = "ALL", dst = "V", event = 0 : i64} : () -> ()
  return
}

// -----

func.func @unknown_round_mode(%d: memref<128xf32, "ub">, %s: memref<128xf16, "ub">) {
  // expected-error@+1 {{'cce.vconv' op attribute 'round_mode' must be one of "rint", "floor", "ceil", "trunc", "round", "none"; got "nearest"}}
  "cce.vconv"(%d, %s) {repeat = 2 : i64, mask = 64 : i64, dst_blk_stride = 1 : i64, dst_rep_stride = 8 : i64, src_blk_stride = 1 : i64, src_rep_stride = 4 : i64, round_mode = "nearest"} : (memref<128xf32, "ub">, memref<128xf16, "ub">) -> ()
  return
}

// -----

func.func @bool_attribute_not_bool(%l1: memref<256xf16, "l1">, %a: memref<256xf16, "l0a">) {
  // expected-error@+1 {{'cce.load_l1_to_l0a' op attribute 'transpose' must be one of true, false; got 1 : i64}}
  "cce.load_l1_to_l0a"(%l1, %a) {repeat = 1 : i64, src_stride = 1 : i64, dst_stride = 1 : i64, transpose = 1} : (memref<256xf16, "l1">, memref<256xf16, "l0a">) -> ()
  return
}

// -----

func.func @offsets_not_array(%d: memref<256xf16, "ub">, %s: memref<256xf16, "ub">) {
  // expected-error@+1 {{'cce.vnchwconv' op attribute 'src_offsets' must be a dense array; got [0, 1]}}
  "cce.vnchwconv"(%d, %s) {repeat = 1 : i64, src_offsets = [0, 1], dst_offsets = array<i64: 0>, src_rep_stride = 0 : i64, dst_rep_stride = 0 : i64} : (memref<256xf16, "ub">, memref<256xf16, "ub">) -> ()
  return
}

// === cce.py: attribute types ===

// -----

func.func @count_not_i64(%g: memref<256xf16, "gm">, %u: memref<256xf16, "ub">) {
  // expected-error@+1 {{attribute 'burst_len' must be a 64-bit integer (e.g. `3 : i64`), got 16 : i32}}
  "cce.copy_gm_to_ub"(%g, %u) {n_burst = 1 : i64, burst_len = 16 : i32, src_gap = 0 : i64, dst_gap = 0 : i64} : (memref<256xf16, "gm">, memref<256xf16, "ub">) -> ()
  return
}

// -----

func.func @scalar_not_f64(%d: memref<256xf16, "ub">, %s: memref<256xf16, "ub">) {
  // expected-error@+1 {{attribute 'scalar' must be an f64 float (e.g. `1.0 : f64`), got 1.000000e+00 : f16}}
  "cce.vadds"(%d, %s) {repeat = 2 : i64, mask = 128 : i64, dst_blk_stride = 1 : i64, dst_rep_stride = 8 : i64, src_blk_stride = 1 : i64, src_rep_stride = 8 : i64, scalar = 1.0 : f16} : (memref<256xf16, "ub">, memref<256xf16, "ub">) -> ()
  return
}

// === cce.py: memory spaces ===

// -----

func.func @copy_src_space(%g: memref<256xf16, "l1">, %u: memref<256xf16, "ub">) {
  // expected-error@+1 {{'cce.copy_gm_to_ub' op operand #0 ('src') must be in memory space 'gm', got 'l1'}}
  "cce.copy_gm_to_ub"(%g, %u) {n_burst = 1 : i64, burst_len = 16 : i64, src_gap = 0 : i64, dst_gap = 0 : i64} : (memref<256xf16, "l1">, memref<256xf16, "ub">) -> ()
  return
}

// -----

func.func @copy_dst_space(%u: memref<256xf16, "ub">, %g: memref<256xf16, "gm">) {
  // expected-error@+1 {{'cce.copy_ub_to_l1' op operand #1 ('dst') must be in memory space 'l1', got 'gm'}}
  "cce.copy_ub_to_l1"(%u, %g) {n_burst = 1 : i64, burst_len = 16 : i64, src_gap = 0 : i64, dst_gap = 0 : i64} : (memref<256xf16, "ub">, memref<256xf16, "gm">) -> ()
  return
}

// -----

func.func @no_memory_space(%g: memref<256xf16>, %u: memref<256xf16, "ub">) {
  // expected-error@+1 {{'cce.copy_ub_to_ub' op operand #0 ('src') has no memory space; write it in the type, e.g. memref<256xf16, "ub">}}
  "cce.copy_ub_to_ub"(%g, %u) {n_burst = 1 : i64, burst_len = 16 : i64, src_gap = 0 : i64, dst_gap = 0 : i64} : (memref<256xf16>, memref<256xf16, "ub">) -> ()
  return
}

// -----

func.func @load_dst_space(%l1: memref<256xf16, "l1">, %b: memref<256xf16, "l0b">) {
  // expected-error@+1 {{'cce.load_l1_to_l0a' op operand #1 ('dst') must be in memory space 'l0a', got 'l0b'}}
  "cce.load_l1_to_l0a"(%l1, %b) {repeat = 1 : i64, src_stride = 1 : i64, dst_stride = 1 : i64, transpose = false} : (memref<256xf16, "l1">, memref<256xf16, "l0b">) -> ()
  return
}

// -----

func.func @mad_operand_space(%a: memref<256xf16, "l0a">, %b: memref<256xf16, "l0a">, %c: memref<256xf32, "l0c">) {
  // expected-error@+1 {{'cce.mad' op operand #1 ('b') must be in memory space 'l0b', got 'l0a'}}
  "cce.mad"(%a, %b, %c) {m = 16 : i64, n = 16 : i64, k = 16 : i64, accumulate = false} : (memref<256xf16, "l0a">, memref<256xf16, "l0a">, memref<256xf32, "l0c">) -> ()
  return
}

// -----

func.func @vector_operand_space(%d: memref<256xf16, "ub">, %x: memref<256xf16, "l1">) {
  // expected-error@+1 {{'cce.vadd' op operand #2 ('src1') must be in memory space 'ub', got 'l1'}}
  "cce.vadd"(%d, %d, %x) {repeat = 2 : i64, mask = 128 : i64, dst_blk_stride = 1 : i64, dst_rep_stride = 8 : i64, src0_blk_stride = 1 : i64, src0_rep_stride = 8 : i64, src1_blk_stride = 1 : i64, src1_rep_stride = 8 : i64} : (memref<256xf16, "ub">, memref<256xf16, "ub">, memref<256xf16, "l1">) -> ()
  return
}

// === cce.py: element types ===

// -----

func.func @copy_mixed_types(%g: memref<256xf16, "gm">, %u: memref<128xf32, "ub">) {
  // expected-error@+1 {{unsupported element types (src: f16, dst: f32); all operands must have the same element type, one of f16, f32, i8, i32}}
  "cce.copy_gm_to_ub"(%g, %u) {n_burst = 1 : i64, burst_len = 16 : i64, src_gap = 0 : i64, dst_gap = 0 : i64} : (memref<256xf16, "gm">, memref<128xf32, "ub">) -> ()
  return
}

// -----

func.func @load_f32(%l1: memref<256xf32, "l1">, %a: memref<256xf32, "l0a">) {
  // expected-error@+1 {{unsupported element types (src: f32, dst: f32); all operands must have the same element type, one of f16, i8}}
  "cce.load_l1_to_l0a"(%l1, %a) {repeat = 1 : i64, src_stride = 1 : i64, dst_stride = 1 : i64, transpose = false} : (memref<256xf32, "l1">, memref<256xf32, "l0a">) -> ()
  return
}

// -----

func.func @mad_types(%a: memref<256xf16, "l0a">, %b: memref<256xf16, "l0b">, %c: memref<256xf16, "l0c">) {
  // expected-error@+1 {{unsupported element types (a: f16, b: f16, c: f16); supported: (f16, f16, f32), (i8, i8, i32)}}
  "cce.mad"(%a, %b, %c) {m = 16 : i64, n = 16 : i64, k = 16 : i64, accumulate = false} : (memref<256xf16, "l0a">, memref<256xf16, "l0b">, memref<256xf16, "l0c">) -> ()
  return
}

// -----

func.func @vector_mixed_types(%d: memref<256xf16, "ub">, %x: memref<128xf32, "ub">) {
  // expected-error@+1 {{unsupported element types (dst: f16, src0: f16, src1: f32); all operands must have the same element type, one of f16, f32, i32}}
  "cce.vmax"(%d, %d, %x) {repeat = 2 : i64, mask = 64 : i64, dst_blk_stride = 1 : i64, dst_rep_stride = 8 : i64, src0_blk_stride = 1 : i64, src0_rep_stride = 8 : i64, src1_blk_stride = 1 : i64, src1_rep_stride = 8 : i64} : (memref<256xf16, "ub">, memref<256xf16, "ub">, memref<128xf32, "ub">) -> ()
  return
}

// -----

func.func @vdiv_integer(%d: memref<64xi32, "ub">) {
  // expected-error@+1 {{unsupported element types (dst: i32, src0: i32, src1: i32); all operands must have the same element type, one of f16, f32}}
  "cce.vdiv"(%d, %d, %d) {repeat = 1 : i64, mask = 64 : i64, dst_blk_stride = 1 : i64, dst_rep_stride = 8 : i64, src0_blk_stride = 1 : i64, src0_rep_stride = 8 : i64, src1_blk_stride = 1 : i64, src1_rep_stride = 8 : i64} : (memref<64xi32, "ub">, memref<64xi32, "ub">, memref<64xi32, "ub">) -> ()
  return
}

// -----

func.func @vdup_i8(%d: memref<256xi8, "ub">) {
  // expected-error@+1 {{unsupported element types (dst: i8); element type must be one of f16, f32, i32}}
  "cce.vdup"(%d) {repeat = 1 : i64, mask = 128 : i64, dst_blk_stride = 1 : i64, dst_rep_stride = 8 : i64, scalar = 0.0 : f64} : (memref<256xi8, "ub">) -> ()
  return
}

// -----

func.func @vconv_pair(%d: memref<128xi8, "ub">, %s: memref<128xf32, "ub">) {
  // expected-error@+1 {{unsupported element types (dst: i8, src: f32); supported: (f32, f16), (f16, f32), (i32, f16), (i32, f32), (f16, i8), (i8, f16), (f32, i32)}}
  "cce.vconv"(%d, %s) {repeat = 2 : i64, mask = 64 : i64, dst_blk_stride = 1 : i64, dst_rep_stride = 2 : i64, src_blk_stride = 1 : i64, src_rep_stride = 8 : i64, round_mode = "rint"} : (memref<128xi8, "ub">, memref<128xf32, "ub">) -> ()
  return
}

// === cce.py: attribute ranges ===

// -----

func.func @n_burst_zero(%g: memref<256xf16, "gm">, %u: memref<256xf16, "ub">) {
  // expected-error@+1 {{attribute 'n_burst' must be in [1, 4095] (12-bit field of the instruction), got 0}}
  "cce.copy_gm_to_ub"(%g, %u) {n_burst = 0 : i64, burst_len = 16 : i64, src_gap = 0 : i64, dst_gap = 0 : i64} : (memref<256xf16, "gm">, memref<256xf16, "ub">) -> ()
  return
}

// -----

func.func @burst_len_too_long(%g: memref<256xf16, "gm">, %u: memref<256xf16, "ub">) {
  // expected-error@+1 {{attribute 'burst_len' must be in [1, 65535] (16-bit field of the instruction), got 65536}}
  "cce.copy_gm_to_ub"(%g, %u) {n_burst = 1 : i64, burst_len = 65536 : i64, src_gap = 0 : i64, dst_gap = 0 : i64} : (memref<256xf16, "gm">, memref<256xf16, "ub">) -> ()
  return
}

// -----

func.func @negative_gap(%u: memref<256xf16, "ub">, %g: memref<256xf16, "gm">) {
  // expected-error@+1 {{attribute 'dst_gap' must be in [0, 65535] (16-bit field of the instruction), got -1}}
  "cce.copy_ub_to_gm"(%u, %g) {n_burst = 2 : i64, burst_len = 4 : i64, src_gap = 0 : i64, dst_gap = -1 : i64} : (memref<256xf16, "ub">, memref<256xf16, "gm">) -> ()
  return
}

// -----

func.func @load_repeat_zero(%l1: memref<256xf16, "l1">, %b: memref<256xf16, "l0b">) {
  // expected-error@+1 {{attribute 'repeat' must be in [1, 255] (target max_repeat), got 0}}
  "cce.load_l1_to_l0b"(%l1, %b) {repeat = 0 : i64, src_stride = 1 : i64, dst_stride = 1 : i64, transpose = true} : (memref<256xf16, "l1">, memref<256xf16, "l0b">) -> ()
  return
}

// -----

func.func @mad_too_large(%a: memref<256xf16, "l0a">, %b: memref<256xf16, "l0b">, %c: memref<256xf32, "l0c">) {
  // expected-error@+1 {{attribute 'k' must be in [1, 4095] (12-bit field of the instruction), got 4096}}
  "cce.mad"(%a, %b, %c) {m = 16 : i64, n = 16 : i64, k = 4096 : i64, accumulate = false} : (memref<256xf16, "l0a">, memref<256xf16, "l0b">, memref<256xf32, "l0c">) -> ()
  return
}

// -----

func.func @vector_repeat_too_large(%d: memref<256xf16, "ub">) {
  // expected-error@+1 {{attribute 'repeat' must be in [1, 255] (target max_repeat), got 256}}
  "cce.vrelu"(%d, %d) {repeat = 256 : i64, mask = 128 : i64, dst_blk_stride = 1 : i64, dst_rep_stride = 8 : i64, src_blk_stride = 1 : i64, src_rep_stride = 8 : i64} : (memref<256xf16, "ub">, memref<256xf16, "ub">) -> ()
  return
}

// -----

func.func @mask_zero(%d: memref<256xf16, "ub">) {
  // expected-error@+1 {{attribute 'mask' must be in [1, 128] (lanes of one repeat for this element type), got 0}}
  "cce.vabs"(%d, %d) {repeat = 1 : i64, mask = 0 : i64, dst_blk_stride = 1 : i64, dst_rep_stride = 8 : i64, src_blk_stride = 1 : i64, src_rep_stride = 8 : i64} : (memref<256xf16, "ub">, memref<256xf16, "ub">) -> ()
  return
}

// -----

func.func @mask_over_f32_lanes(%d: memref<128xf32, "ub">) {
  // expected-error@+1 {{attribute 'mask' must be in [1, 64] (lanes of one repeat for this element type), got 128}}
  "cce.vexp"(%d, %d) {repeat = 1 : i64, mask = 128 : i64, dst_blk_stride = 1 : i64, dst_rep_stride = 8 : i64, src_blk_stride = 1 : i64, src_rep_stride = 8 : i64} : (memref<128xf32, "ub">, memref<128xf32, "ub">) -> ()
  return
}

// -----

func.func @vconv_lanes_from_widest(%d: memref<128xf32, "ub">, %s: memref<128xf16, "ub">) {
  // expected-error@+1 {{attribute 'mask' must be in [1, 64] (lanes of one repeat for this element type), got 65}}
  "cce.vconv"(%d, %s) {repeat = 2 : i64, mask = 65 : i64, dst_blk_stride = 1 : i64, dst_rep_stride = 8 : i64, src_blk_stride = 1 : i64, src_rep_stride = 4 : i64, round_mode = "none"} : (memref<128xf32, "ub">, memref<128xf16, "ub">) -> ()
  return
}

// -----

func.func @block_stride_too_large(%d: memref<256xf16, "ub">) {
  // expected-error@+1 {{attribute 'src1_blk_stride' must be in [0, 255] (8-bit field of the instruction), got 256}}
  "cce.vmul"(%d, %d, %d) {repeat = 1 : i64, mask = 128 : i64, dst_blk_stride = 1 : i64, dst_rep_stride = 8 : i64, src0_blk_stride = 1 : i64, src0_rep_stride = 8 : i64, src1_blk_stride = 256 : i64, src1_rep_stride = 8 : i64} : (memref<256xf16, "ub">, memref<256xf16, "ub">, memref<256xf16, "ub">) -> ()
  return
}

// -----

func.func @negative_rep_stride(%d: memref<16xf16, "ub">, %s: memref<256xf16, "ub">) {
  // expected-error@+1 {{attribute 'dst_rep_stride' must be in [0, 255] (8-bit field of the instruction), got -1}}
  "cce.vcadd"(%d, %s) {repeat = 2 : i64, mask = 128 : i64, src_blk_stride = 1 : i64, src_rep_stride = 8 : i64, dst_rep_stride = -1 : i64} : (memref<16xf16, "ub">, memref<256xf16, "ub">) -> ()
  return
}

// -----

func.func @negative_offset(%d: memref<256xf16, "ub">, %s: memref<256xf16, "ub">) {
  // expected-error@+1 {{attribute 'dst_offsets' entries must be >= 0, got -3}}
  "cce.vnchwconv"(%d, %s) {repeat = 1 : i64, src_offsets = array<i64: 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15>, dst_offsets = array<i64: 0, 1, 2, -3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15>, src_rep_stride = 0 : i64, dst_rep_stride = 0 : i64} : (memref<256xf16, "ub">, memref<256xf16, "ub">) -> ()
  return
}

// -----

func.func @event_out_of_range() {
  // expected-error@+1 {{'cce.set_flag' op attribute 'event' must be in [0, 7] (target events_per_pipe_pair - 1), got 8}}
  "cce.set_flag"() {src = "MTE2", dst = "V", event = 8 : i64} : () -> ()
  return
}

// -----

func.func @negative_event() {
  // expected-error@+1 {{'cce.wait_flag' op attribute 'event' must be in [0, 7] (target events_per_pipe_pair - 1), got -1}}
  "cce.wait_flag"() {src = "MTE2", dst = "V", event = -1 : i64} : () -> ()
  return
}

// === cce.py: op-specific rules ===

// -----

func.func @l0c_partial_granule(%c: memref<1024xf32, "l0c">, %u: memref<1024xf32, "ub">) {
  // expected-error@+1 {{an l0c burst must be a whole number of 512-byte granules: 'burst_len' must be a multiple of 16 blocks, got 8}}
  "cce.copy_l0c_to_ub"(%c, %u) {n_burst = 1 : i64, burst_len = 8 : i64, src_gap = 0 : i64, dst_gap = 0 : i64} : (memref<1024xf32, "l0c">, memref<1024xf32, "ub">) -> ()
  return
}

// -----

func.func @mad_m_not_fractal(%a: memref<256xf16, "l0a">, %b: memref<256xf16, "l0b">, %c: memref<256xf32, "l0c">) {
  // expected-error@+1 {{attribute 'm' must be a positive multiple of 16 (target fractal for f16), got 24}}
  "cce.mad"(%a, %b, %c) {m = 24 : i64, n = 16 : i64, k = 16 : i64, accumulate = true} : (memref<256xf16, "l0a">, memref<256xf16, "l0b">, memref<256xf32, "l0c">) -> ()
  return
}

// -----

func.func @mad_int8_reduction_block(%a: memref<512xi8, "l0a">, %b: memref<512xi8, "l0b">, %c: memref<256xi32, "l0c">) {
  // expected-error@+1 {{attribute 'n' must be a positive multiple of 32 (target fractal for i8), got 16}}
  "cce.mad"(%a, %b, %c) {m = 16 : i64, n = 16 : i64, k = 16 : i64, accumulate = false} : (memref<512xi8, "l0a">, memref<512xi8, "l0b">, memref<256xi32, "l0c">) -> ()
  return
}

// -----

func.func @vnchwconv_offset_count(%d: memref<256xf16, "ub">, %s: memref<256xf16, "ub">) {
  // expected-error@+1 {{attribute 'src_offsets' must have 16 entries (one per row of a 16x16 tile), got 8}}
  "cce.vnchwconv"(%d, %s) {repeat = 1 : i64, src_offsets = array<i64: 0, 1, 2, 3, 4, 5, 6, 7>, dst_offsets = array<i64: 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15>, src_rep_stride = 0 : i64, dst_rep_stride = 0 : i64} : (memref<256xf16, "ub">, memref<256xf16, "ub">) -> ()
  return
}

// -----

func.func @set_flag_same_pipe() {
  // expected-error@+1 {{'cce.set_flag' op src and dst pipes must differ (got 'V' for both); use pipe_barrier to order one pipe}}
  "cce.set_flag"() {src = "V", dst = "V", event = 0 : i64} : () -> ()
  return
}

// -----

func.func @wait_flag_same_pipe() {
  // expected-error@+1 {{'cce.wait_flag' op src and dst pipes must differ (got 'M' for both)}}
  "cce.wait_flag"() {src = "M", dst = "M", event = 0 : i64} : () -> ()
  return
}

// -----

func.func @vcmp_dst_type(%d: memref<128xf32, "ub">, %x: memref<128xf32, "ub">) {
  // expected-error@+1 {{unsupported element types (dst: f32, src0: f32, src1: f32); supported: (i8, f16, f16), (i8, f32, f32), (i8, i32, i32)}}
  "cce.vcmp"(%d, %x, %x) {repeat = 1 : i64, mask = 64 : i64, dst_blk_stride = 1 : i64, dst_rep_stride = 8 : i64, src0_blk_stride = 1 : i64, src0_rep_stride = 8 : i64, src1_blk_stride = 1 : i64, src1_rep_stride = 8 : i64, predicate = "eq"} : (memref<128xf32, "ub">, memref<128xf32, "ub">, memref<128xf32, "ub">) -> ()
  return
}

// -----

func.func @vcmp_predicate(%d: memref<128xi8, "ub">, %x: memref<128xf32, "ub">) {
  // expected-error@+1 {{'cce.vcmp' op attribute 'predicate' must be one of "eq", "ne", "lt", "le", "gt", "ge"; got "lte"}}
  "cce.vcmp"(%d, %x, %x) {repeat = 1 : i64, mask = 64 : i64, dst_blk_stride = 1 : i64, dst_rep_stride = 2 : i64, src0_blk_stride = 1 : i64, src0_rep_stride = 8 : i64, src1_blk_stride = 1 : i64, src1_rep_stride = 8 : i64, predicate = "lte"} : (memref<128xi8, "ub">, memref<128xf32, "ub">, memref<128xf32, "ub">) -> ()
  return
}

// -----

func.func @vsel_cond_type(%c: memref<128xf32, "ub">, %x: memref<128xf32, "ub">) {
  // expected-error@+1 {{unsupported element types (dst: f32, cond: f32, src0: f32, src1: f32); supported: (f16, i8, f16, f16), (f32, i8, f32, f32), (i32, i8, i32, i32)}}
  "cce.vsel"(%x, %c, %x, %x) {repeat = 1 : i64, mask = 64 : i64, dst_blk_stride = 1 : i64, dst_rep_stride = 8 : i64, cond_blk_stride = 1 : i64, cond_rep_stride = 8 : i64, src0_blk_stride = 1 : i64, src0_rep_stride = 8 : i64, src1_blk_stride = 1 : i64, src1_rep_stride = 8 : i64} : (memref<128xf32, "ub">, memref<128xf32, "ub">, memref<128xf32, "ub">, memref<128xf32, "ub">) -> ()
  return
}

// -----

func.func @vsel_cond_stride(%c: memref<128xi8, "ub">, %x: memref<128xf32, "ub">) {
  // expected-error@+1 {{attribute 'cond_rep_stride' must be in [0, 255] (8-bit field of the instruction), got 256}}
  "cce.vsel"(%x, %c, %x, %x) {repeat = 1 : i64, mask = 64 : i64, dst_blk_stride = 1 : i64, dst_rep_stride = 8 : i64, cond_blk_stride = 1 : i64, cond_rep_stride = 256 : i64, src0_blk_stride = 1 : i64, src0_rep_stride = 8 : i64, src1_blk_stride = 1 : i64, src1_rep_stride = 8 : i64} : (memref<128xf32, "ub">, memref<128xi8, "ub">, memref<128xf32, "ub">, memref<128xf32, "ub">) -> ()
  return
}

// -----

// vsel's word has four operands' strides: block strides get 4 bits each.
func.func @vsel_blk_stride(%c: memref<128xi8, "ub">, %x: memref<2048xf32, "ub">) {
  // expected-error@+1 {{attribute 'src0_blk_stride' must be in [0, 15] (4-bit field of the instruction), got 16}}
  "cce.vsel"(%x, %c, %x, %x) {repeat = 1 : i64, mask = 64 : i64, dst_blk_stride = 1 : i64, dst_rep_stride = 8 : i64, cond_blk_stride = 1 : i64, cond_rep_stride = 2 : i64, src0_blk_stride = 16 : i64, src0_rep_stride = 8 : i64, src1_blk_stride = 1 : i64, src1_rep_stride = 8 : i64} : (memref<2048xf32, "ub">, memref<128xi8, "ub">, memref<2048xf32, "ub">, memref<2048xf32, "ub">) -> ()
  return
}

// -----

func.func @vmadd_integer(%d: memref<64xi32, "ub">) {
  // expected-error@+1 {{'cce.vmadd' op unsupported element types (dst: i32, src0: i32, src1: i32); all operands must have the same element type, one of f16, f32}}
  "cce.vmadd"(%d, %d, %d) {repeat = 1 : i64, mask = 64 : i64, dst_blk_stride = 1 : i64, dst_rep_stride = 8 : i64, src0_blk_stride = 1 : i64, src0_rep_stride = 8 : i64, src1_blk_stride = 1 : i64, src1_rep_stride = 8 : i64} : (memref<64xi32, "ub">, memref<64xi32, "ub">, memref<64xi32, "ub">) -> ()
  return
}

// -----

func.func @vmla_mixed_types(%d: memref<64xf32, "ub">, %h: memref<128xf16, "ub">) {
  // expected-error@+1 {{'cce.vmla' op unsupported element types (dst: f32, src0: f16, src1: f16); all operands must have the same element type, one of f16, f32}}
  "cce.vmla"(%d, %h, %h) {repeat = 1 : i64, mask = 64 : i64, dst_blk_stride = 1 : i64, dst_rep_stride = 8 : i64, src0_blk_stride = 1 : i64, src0_rep_stride = 8 : i64, src1_blk_stride = 1 : i64, src1_rep_stride = 8 : i64} : (memref<64xf32, "ub">, memref<128xf16, "ub">, memref<128xf16, "ub">) -> ()
  return
}

// -----

func.func @vaxpy_no_scalar(%d: memref<64xf32, "ub">) {
  // expected-error@+1 {{attribute "scalar" is expected but not provided}}
  "cce.vaxpy"(%d, %d) {repeat = 1 : i64, mask = 64 : i64, dst_blk_stride = 1 : i64, dst_rep_stride = 8 : i64, src_blk_stride = 1 : i64, src_rep_stride = 8 : i64} : (memref<64xf32, "ub">, memref<64xf32, "ub">) -> ()
  return
}

// -----

func.func @vmadd_in_l1(%d: memref<64xf32, "l1">, %x: memref<64xf32, "ub">) {
  // expected-error@+1 {{'cce.vmadd' op operand #0 ('dst') must be in memory space 'ub', got 'l1'}}
  "cce.vmadd"(%d, %x, %x) {repeat = 1 : i64, mask = 64 : i64, dst_blk_stride = 1 : i64, dst_rep_stride = 8 : i64, src0_blk_stride = 1 : i64, src0_rep_stride = 8 : i64, src1_blk_stride = 1 : i64, src1_rep_stride = 8 : i64} : (memref<64xf32, "l1">, memref<64xf32, "ub">, memref<64xf32, "ub">) -> ()
  return
}

// -----

// The L0C -> UB conversion reads f32 and writes f16.
func.func @l0c_convert_types(%c: memref<1024xf32, "l0c">, %u: memref<1024xf32, "ub">) {
  // expected-error@+1 {{'cce.copy_l0c_to_ub' op convert = "f32_to_f16" moves f32 to f16, got f32 to f32}}
  "cce.copy_l0c_to_ub"(%c, %u) {n_burst = 1 : i64, burst_len = 128 : i64, src_gap = 0 : i64, dst_gap = 0 : i64, convert = "f32_to_f16"} : (memref<1024xf32, "l0c">, memref<1024xf32, "ub">) -> ()
  return
}

// -----

// The move's ReLU rounds to f16 too: it reads f32 and writes f16.
func.func @l0c_relu_convert_types(%c: memref<1024xf32, "l0c">, %u: memref<1024xf32, "ub">) {
  // expected-error@+1 {{'cce.copy_l0c_to_ub' op convert = "f32_to_f16_relu" moves f32 to f16, got f32 to f32}}
  "cce.copy_l0c_to_ub"(%c, %u) {n_burst = 1 : i64, burst_len = 128 : i64, src_gap = 0 : i64, dst_gap = 0 : i64, convert = "f32_to_f16_relu"} : (memref<1024xf32, "l0c">, memref<1024xf32, "ub">) -> ()
  return
}

// -----

// Without a conversion the types must match.
func.func @l0c_no_convert_types(%c: memref<1024xf32, "l0c">, %u: memref<1024xf16, "ub">) {
  // expected-error@+1 {{'cce.copy_l0c_to_ub' op convert = "none" moves f32 to f32, got f32 to f16}}
  "cce.copy_l0c_to_ub"(%c, %u) {n_burst = 1 : i64, burst_len = 128 : i64, src_gap = 0 : i64, dst_gap = 0 : i64} : (memref<1024xf32, "l0c">, memref<1024xf16, "ub">) -> ()
  return
}

// -----

func.func @l0c_unknown_conversion(%c: memref<1024xf32, "l0c">, %u: memref<1024xf16, "ub">) {
  // expected-error@+1 {{'cce.copy_l0c_to_ub' op unknown conversion 'f32_to_i8' (one of none, f32_to_f16, f32_to_f16_relu)}}
  "cce.copy_l0c_to_ub"(%c, %u) {n_burst = 1 : i64, burst_len = 128 : i64, src_gap = 0 : i64, dst_gap = 0 : i64, convert = "f32_to_i8"} : (memref<1024xf32, "l0c">, memref<1024xf16, "ub">) -> ()
  return
}

// -----

// Only the L0C -> UB move converts: a GM -> UB copy moves bytes of one type.
func.func @gm_copy_types(%g: memref<256xf32, "gm">, %u: memref<256xf16, "ub">) {
  // expected-error@+1 {{'cce.copy_gm_to_ub' op unsupported element types (src: f32, dst: f16); all operands must have the same element type}}
  "cce.copy_gm_to_ub"(%g, %u) {n_burst = 1 : i64, burst_len = 16 : i64, src_gap = 0 : i64, dst_gap = 0 : i64} : (memref<256xf32, "gm">, memref<256xf16, "ub">) -> ()
  return
}

// -----

// A chip barrier under a loop or branch: some cores could pass it a different number of times.
func.func @sync_all_in_a_branch(%c: i1) {
  scf.if %c {
    // expected-error@+1 {{'cce.sync_all' op sits in 'scf.if': the chip barrier must be in a function's body, outside loops and branches, so that every core reaches it equally often}}
    "cce.sync_all"() : () -> ()
  }
  return
}

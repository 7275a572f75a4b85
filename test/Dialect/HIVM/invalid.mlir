// RUN: npu-opt %s --split-input-file --verify-diagnostics
// One chunk per verifier rule of the hivm dialect (IRDL and hivm.py).

// === IRDL: operand types and attributes ===

func.func @operand_not_i64(%d: i32, %s: i64, %cfg: i64) {
  // expected-error@+1 {{'hivm.copy_gm_to_ub' op operand #0 ('dst') must be i64, got i32}}
  "hivm.copy_gm_to_ub"(%d, %s, %cfg) : (i32, i64, i64) -> ()
  return
}

// -----

func.func @memref_operand(%d: memref<16xf16, "ub">, %s: i64, %cfg: i64) {
  // expected-error@+1 {{'hivm.vrelu' op operand #0 ('dst') must be i64, got memref<16xf16, "ub">}}
  "hivm.vrelu"(%d, %s, %cfg) {dtype = f16} : (memref<16xf16, "ub">, i64, i64) -> ()
  return
}

// -----

func.func @missing_config(%d: i64, %s: i64) {
  // expected-error@+1 {{'hivm.load_l1_to_l0a' op expects 3 operands (dst, src, config), got 2}}
  "hivm.load_l1_to_l0a"(%d, %s) : (i64, i64) -> ()
  return
}

// -----

func.func @missing_dtype(%d: i64, %cfg: i64) {
  // expected-error@+1 {{attribute "dtype" is expected but not provided}}
  "hivm.vadd"(%d, %d, %d, %cfg) : (i64, i64, i64, i64) -> ()
  return
}

// -----

func.func @dtype_not_element_type(%d: i64, %cfg: i64) {
  // expected-error@+1 {{'hivm.vexp' op attribute 'dtype' must be one of f16, f32, i8, i32; got f64}}
  "hivm.vexp"(%d, %d, %cfg) {dtype = f64} : (i64, i64, i64) -> ()
  return
}

// -----

func.func @mad_dtype(%c: i64, %cfg: i64) {
  // expected-error@+1 {{'hivm.mad' op attribute 'dtype' must be one of f16, i8; got f32}}
  "hivm.mad"(%c, %c, %c, %cfg) {dtype = f32} : (i64, i64, i64, i64) -> ()
  return
}

// -----

func.func @barrier_pipe() {
  // expected-error@+1 {{'hivm.pipe_barrier' op attribute 'pipe' must be one of "S", "V", "M", "MTE1", "MTE2", "MTE3", "ALL"; got "v"}}
  "hivm.pipe_barrier"() {pipe = "v"} : () -> ()
  return
}

// === hivm.py: attributes ===

// -----

func.func @scalar_not_f64(%d: i64, %cfg: i64) {
  // expected-error@+1 {{attribute 'scalar' must be an f64 float (e.g. `1.0 : f64`), got 1.000000e+00 : f32}}
  "hivm.vdup"(%d, %cfg) {dtype = f32, scalar = 1.0 : f32} : (i64, i64) -> ()
  return
}

// -----

func.func @vdiv_integer(%d: i64, %cfg: i64) {
  // expected-error@+1 {{'hivm.vdiv' op dtype must be one of f16, f32, got i32}}
  "hivm.vdiv"(%d, %d, %d, %cfg) {dtype = i32} : (i64, i64, i64, i64) -> ()
  return
}

// -----

func.func @vconv_pair(%d: i64, %cfg: i64) {
  // expected-error@+1 {{unsupported conversion i32->f16; supported: f16->f32, f32->f16, f16->i32, f32->i32, i8->f16, f16->i8}}
  "hivm.vconv"(%d, %d, %cfg) {dtype = f16, src_dtype = i32, round_mode = "none"} : (i64, i64, i64) -> ()
  return
}

// -----

func.func @vnchwconv_offsets(%d: i64, %cfg: i64) {
  // expected-error@+1 {{attribute 'dst_offsets' must have 16 entries (one per row of a 16x16 tile), got 15}}
  "hivm.vnchwconv"(%d, %d, %cfg) {dtype = f16, src_offsets = array<i64: 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15>, dst_offsets = array<i64: 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14>} : (i64, i64, i64) -> ()
  return
}

// -----

func.func @event_range() {
  // expected-error@+1 {{'hivm.wait_flag' op attribute 'event' must be in [0, 7] (target events_per_pipe_pair - 1), got 9}}
  "hivm.wait_flag"() {src = "V", dst = "MTE3", event = 9 : i64} : () -> ()
  return
}

// -----

func.func @flag_same_pipe() {
  // expected-error@+1 {{'hivm.set_flag' op src and dst pipes must differ (got 'MTE2' for both)}}
  "hivm.set_flag"() {src = "MTE2", dst = "MTE2", event = 0 : i64} : () -> ()
  return
}

// === hivm.py: constant configuration words ===

// -----

func.func @vector_repeat_zero(%d: i64) {
  // block strides 1, repeat 0.
  %cfg = arith.constant 257 : i64
  // expected-error@+1 {{config field 'repeat' must be in [1, 255] (target max_repeat), got 0}}
  "hivm.vmax"(%d, %d, %d, %cfg) {dtype = f16} : (i64, i64, i64, i64) -> ()
  return
}

// -----

func.func @load_repeat_zero(%d: i64) {
  %cfg = arith.constant 65537 : i64
  // expected-error@+1 {{'hivm.load_l1_to_l0b' op config field 'repeat' must be in [1, 255] (target max_repeat), got 0}}
  "hivm.load_l1_to_l0b"(%d, %d, %cfg) : (i64, i64, i64) -> ()
  return
}

// -----

func.func @copy_no_bursts(%d: i64) {
  // n_burst 0, burst_len 4.
  %cfg = arith.constant 262144 : i64
  // expected-error@+1 {{'hivm.copy_ub_to_gm' op config field 'n_burst' must be >= 1, got 0}}
  "hivm.copy_ub_to_gm"(%d, %d, %cfg) : (i64, i64, i64) -> ()
  return
}

// -----

func.func @copy_empty_burst(%d: i64) {
  // n_burst 2, burst_len 0.
  %cfg = arith.constant 2 : i64
  // expected-error@+1 {{config field 'burst_len' must be >= 1, got 0}}
  "hivm.copy_gm_to_l1"(%d, %d, %cfg) : (i64, i64, i64) -> ()
  return
}

// -----

func.func @mad_m_not_fractal(%d: i64) {
  // m 24, k 16, n 16, init.
  %cfg = arith.constant -9223372036586274792 : i64
  // expected-error@+1 {{'hivm.mad' op config field 'm' must be a positive multiple of 16 (target fractal for f16), got 24}}
  "hivm.mad"(%d, %d, %d, %cfg) {dtype = f16} : (i64, i64, i64, i64) -> ()
  return
}

// -----

func.func @mad_int8_n(%d: i64) {
  // m 16, k 16, n 16, init: n must step by 32 for i8.
  %cfg = arith.constant -9223372036586274800 : i64
  // expected-error@+1 {{config field 'n' must be a positive multiple of 32 (target fractal for i8), got 16}}
  "hivm.mad"(%d, %d, %d, %cfg) {dtype = i8} : (i64, i64, i64, i64) -> ()
  return
}

// -----

// === hivm.addr ===

func.func @addr_scales_count(%i: index) {
  // expected-error@+1 {{has 1 operands but 2 scales (one per operand)}}
  %a = "hivm.addr"(%i) {base = 0 : i64, scales = array<i64: 2, 4>} : (index) -> i64
  return
}

// -----

func.func @addr_operand_type(%i: i64) {
  // expected-error@+1 {{expected 'index' but got 'i64'}}
  %a = "hivm.addr"(%i) {base = 0 : i64, scales = array<i64: 2>} : (i64) -> i64
  return
}

// -----

// === constant addresses and malformed words ===

func.func @address_misaligned() {
  %d = arith.constant 48 : i64
  %s = arith.constant 0 : i64
  %cfg = arith.constant 65537 : i64
  // expected-error@+1 {{'hivm.copy_gm_to_ub' op address operand #0 = 48 is not aligned to the 32-byte granule of ub}}
  "hivm.copy_gm_to_ub"(%d, %s, %cfg) : (i64, i64, i64) -> ()
  return
}

// -----

func.func @address_outside_buffer() {
  %a = arith.constant 0 : i64
  %cfg = arith.constant -9223372036317773792 : i64
  %c65536 = arith.constant 65536 : i64
  // expected-error@+1 {{address operand #1 = 65536 is outside l0a [0, 65536)}}
  "hivm.mad"(%a, %c65536, %a, %cfg) {dtype = f16} : (i64, i64, i64, i64) -> ()
  return
}

// -----

func.func @malformed_word() {
  %a = arith.constant 0 : i64
  // bit 12 lies between n_burst (0-11) and burst_len (16-31)
  %cfg = arith.constant 69633 : i64
  // expected-error@+1 {{malformed copy configuration word 0x0000000000011001: bits 0x0000000000001000 belong to no field}}
  "hivm.copy_ub_to_gm"(%a, %a, %cfg) : (i64, i64, i64) -> ()
  return
}

// -----

// === vcmp, vsel, vcmin ===

func.func @vcmp_unknown_predicate(%d: i64, %x: i64, %y: i64) {
  // predicate field (bits 48-50) = 6: there are six predicates, 0..5
  %cfg = arith.constant 145812868456055041 : i64
  // expected-error@+1 {{'hivm.vcmp' op config field 'predicate' = 6 names no predicate (0..5: eq, ne, lt, le, gt, ge)}}
  "hivm.vcmp"(%d, %x, %y, %cfg) {dtype = f16} : (i64, i64, i64, i64) -> ()
  return
}

// -----

func.func @vcmp_i8_sources(%d: i64, %x: i64, %y: i64) {
  %cfg = arith.constant 144686968549212417 : i64
  // expected-error@+1 {{'hivm.vcmp' op dtype must be one of f16, f32, i32, got i8}}
  "hivm.vcmp"(%d, %x, %y, %cfg) {dtype = i8} : (i64, i64, i64, i64) -> ()
  return
}

// -----

func.func @vsel_missing_cond(%d: i64, %x: i64, %y: i64, %cfg: i64) {
  // expected-error@+1 {{'hivm.vsel' op expects 5 operands (dst, cond, src0, src1, config), got 4}}
  "hivm.vsel"(%d, %x, %y, %cfg) {dtype = f16} : (i64, i64, i64, i64) -> ()
  return
}

// -----

func.func @vsel_malformed_word(%d: i64, %c: i64, %x: i64, %y: i64) {
  // bit 50 lies in no field of the select word (bits 48-55 are unused)
  %cfg = arith.constant 145249918503096593 : i64
  // expected-error@+1 {{malformed select configuration word 0x0204080804081111: bits 0x0004000000000000 belong to no field}}
  "hivm.vsel"(%d, %c, %x, %y, %cfg) {dtype = f16} : (i64, i64, i64, i64, i64) -> ()
  return
}

// -----

func.func @vcmin_integer(%d: i64, %x: i64, %cfg: i64) {
  // expected-error@+1 {{'hivm.vcmin' op dtype must be one of f16, f32, got i32}}
  "hivm.vcmin"(%d, %x, %cfg) {dtype = i32} : (i64, i64, i64) -> ()
  return
}

// -----

func.func @vmadd_integer(%d: i64, %cfg: i64) {
  // expected-error@+1 {{'hivm.vmadd' op dtype must be one of f16, f32, got i32}}
  "hivm.vmadd"(%d, %d, %d, %cfg) {dtype = i32} : (i64, i64, i64, i64) -> ()
  return
}

// -----

func.func @l0c_unknown_conversion() {
  %a = arith.constant 0 : i64
  // n_burst 1, burst_len 16, convert field (bits 12-13) = 3
  %cfg = arith.constant 1060865 : i64
  // expected-error@+1 {{'hivm.copy_l0c_to_ub' op config field 'convert' = 3 names no conversion (0..2: none, f32_to_f16, f32_to_f16_relu)}}
  "hivm.copy_l0c_to_ub"(%a, %a, %cfg) : (i64, i64, i64) -> ()
  return
}

// -----

func.func @convert_on_a_gm_copy() {
  %a = arith.constant 0 : i64
  // n_burst 1, burst_len 16, bit 12 set: no field of a plain copy word
  %cfg = arith.constant 1052673 : i64
  // expected-error@+1 {{malformed copy configuration word 0x0000000000101001: bits 0x0000000000001000 belong to no field}}
  "hivm.copy_gm_to_ub"(%a, %a, %cfg) : (i64, i64, i64) -> ()
  return
}

// -----

func.func @img2col_stray_pos_bits(%l1: i64, %l0a: i64) {
  // bit 30 is in no field of the img2col_pos word
  %pos = arith.constant 1073741824 : i64
  %cfg = arith.constant 148636448880341122 : i64
  // expected-error@+1 {{malformed img2col_pos configuration word 0x0000000040000000: bits 0x0000000040000000 belong to no field}}
  "hivm.img2col_l1_to_l0a"(%l0a, %l1, %pos, %cfg) : (i64, i64, i64, i64) -> ()
  return
}

// -----

func.func @padding_stray_bits() {
  // value 0x80 and bit 16, which is in no field of the padding word
  %pad = arith.constant 65664 : i64
  // expected-error@+1 {{malformed padding configuration word 0x0000000000010080: bits 0x0000000000010000 belong to no field}}
  "hivm.set_padding"(%pad) : (i64) -> ()
  return
}

// -----

func.func @img2col_zero_repeat(%l1: i64, %l0a: i64) {
  %pos = arith.constant 0 : i64
  // the config word above with repeat 0
  %cfg = arith.constant 4521260804485250 : i64
  // expected-error@+1 {{config field 'repeat' must be in [1, 255] (target max_repeat), got 0}}
  "hivm.img2col_l1_to_l0a"(%l0a, %l1, %pos, %cfg) : (i64, i64, i64, i64) -> ()
  return
}

// -----

func.func @img2col_three_operands(%l1: i64, %l0a: i64) {
  %cfg = arith.constant 148636448880341122 : i64
  // expected-error@+1 {{'hivm.img2col_l1_to_l0a' op expects 4 operands (dst, src, pos, config), got 3}}
  "hivm.img2col_l1_to_l0a"(%l0a, %l1, %cfg) : (i64, i64, i64) -> ()
  return
}

// -----

// A chip barrier under a loop or branch: some cores could pass it a different number of times.
func.func @sync_all_in_a_branch(%c: i1) {
  scf.if %c {
    // expected-error@+1 {{'hivm.sync_all' op sits in 'scf.if': the chip barrier must be in a function's body, outside loops and branches, so that every core reaches it equally often}}
    "hivm.sync_all"() : () -> ()
  }
  return
}


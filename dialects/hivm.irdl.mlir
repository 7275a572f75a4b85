// The `hivm` dialect: raw instructions on i64 byte addresses.
//
// Contract: dialects/README.md. Addresses are offsets inside the buffer the
// op name implies (vector ops: ub); `config` is the packed 64-bit word whose
// fields hivm.py documents and decodes. IRDL checks operand types and the
// attributes; hivm.py checks constant configuration words.
// Each constraint has its own SSA value: IRDL unifies the uses of one value,
// so sharing it would force two operands (or attributes) to be equal.
irdl.dialect @hivm {

  // ===== Data movement: (dst, src, config); config packs n_burst/burst_len/src_gap/dst_gap =====

  // gm -> l1 on pipe MTE2
  irdl.operation @copy_gm_to_l1 {
    %dst = irdl.is i64
    %src = irdl.is i64
    %config = irdl.is i64
    irdl.operands(dst: %dst, src: %src, config: %config)
  }

  // gm -> ub on pipe MTE2
  irdl.operation @copy_gm_to_ub {
    %dst = irdl.is i64
    %src = irdl.is i64
    %config = irdl.is i64
    irdl.operands(dst: %dst, src: %src, config: %config)
  }

  // ub -> gm on pipe MTE3
  irdl.operation @copy_ub_to_gm {
    %dst = irdl.is i64
    %src = irdl.is i64
    %config = irdl.is i64
    irdl.operands(dst: %dst, src: %src, config: %config)
  }

  // ub -> l1 on pipe MTE3
  irdl.operation @copy_ub_to_l1 {
    %dst = irdl.is i64
    %src = irdl.is i64
    %config = irdl.is i64
    irdl.operands(dst: %dst, src: %src, config: %config)
  }

  // ub -> ub on pipe V
  irdl.operation @copy_ub_to_ub {
    %dst = irdl.is i64
    %src = irdl.is i64
    %config = irdl.is i64
    irdl.operands(dst: %dst, src: %src, config: %config)
  }

  // l0c -> ub on pipe V
  irdl.operation @copy_l0c_to_ub {
    %dst = irdl.is i64
    %src = irdl.is i64
    %config = irdl.is i64
    irdl.operands(dst: %dst, src: %src, config: %config)
  }

  // l1 -> l0a on pipe MTE1; config packs strides, transpose, repeat
  irdl.operation @load_l1_to_l0a {
    %dst = irdl.is i64
    %src = irdl.is i64
    %config = irdl.is i64
    irdl.operands(dst: %dst, src: %src, config: %config)
  }

  // l1 -> l0b on pipe MTE1; config packs strides, transpose, repeat
  irdl.operation @load_l1_to_l0b {
    %dst = irdl.is i64
    %src = irdl.is i64
    %config = irdl.is i64
    irdl.operands(dst: %dst, src: %src, config: %config)
  }

  // ===== Cube: (c, a, b, config); config packs m, k, n and init; dtype is the input type =====

  // c (l0c) = [c +] a (l0a) x b (l0b)
  irdl.operation @mad {
    %c = irdl.is i64
    %a = irdl.is i64
    %b = irdl.is i64
    %config = irdl.is i64
    %attr_dtype_f16 = irdl.is f16
    %attr_dtype_i8 = irdl.is i8
    %attr_dtype = irdl.any_of(%attr_dtype_f16, %attr_dtype_i8)
    irdl.operands(c: %c, a: %a, b: %b, config: %config)
    irdl.attributes {"dtype" = %attr_dtype}
  }

  // ===== Vector: addresses in ub; config packs strides and repeat; dtype is the element type =====

  // dst = src0 + src1
  irdl.operation @vadd {
    %dst = irdl.is i64
    %src0 = irdl.is i64
    %src1 = irdl.is i64
    %config = irdl.is i64
    %attr_dtype_f16 = irdl.is f16
    %attr_dtype_f32 = irdl.is f32
    %attr_dtype_i8 = irdl.is i8
    %attr_dtype_i32 = irdl.is i32
    %attr_dtype = irdl.any_of(%attr_dtype_f16, %attr_dtype_f32, %attr_dtype_i8, %attr_dtype_i32)
    irdl.operands(dst: %dst, src0: %src0, src1: %src1, config: %config)
    irdl.attributes {"dtype" = %attr_dtype}
  }

  // dst = src0 - src1
  irdl.operation @vsub {
    %dst = irdl.is i64
    %src0 = irdl.is i64
    %src1 = irdl.is i64
    %config = irdl.is i64
    %attr_dtype_f16 = irdl.is f16
    %attr_dtype_f32 = irdl.is f32
    %attr_dtype_i8 = irdl.is i8
    %attr_dtype_i32 = irdl.is i32
    %attr_dtype = irdl.any_of(%attr_dtype_f16, %attr_dtype_f32, %attr_dtype_i8, %attr_dtype_i32)
    irdl.operands(dst: %dst, src0: %src0, src1: %src1, config: %config)
    irdl.attributes {"dtype" = %attr_dtype}
  }

  // dst = src0 * src1
  irdl.operation @vmul {
    %dst = irdl.is i64
    %src0 = irdl.is i64
    %src1 = irdl.is i64
    %config = irdl.is i64
    %attr_dtype_f16 = irdl.is f16
    %attr_dtype_f32 = irdl.is f32
    %attr_dtype_i8 = irdl.is i8
    %attr_dtype_i32 = irdl.is i32
    %attr_dtype = irdl.any_of(%attr_dtype_f16, %attr_dtype_f32, %attr_dtype_i8, %attr_dtype_i32)
    irdl.operands(dst: %dst, src0: %src0, src1: %src1, config: %config)
    irdl.attributes {"dtype" = %attr_dtype}
  }

  // dst = src0 / src1
  irdl.operation @vdiv {
    %dst = irdl.is i64
    %src0 = irdl.is i64
    %src1 = irdl.is i64
    %config = irdl.is i64
    %attr_dtype_f16 = irdl.is f16
    %attr_dtype_f32 = irdl.is f32
    %attr_dtype_i8 = irdl.is i8
    %attr_dtype_i32 = irdl.is i32
    %attr_dtype = irdl.any_of(%attr_dtype_f16, %attr_dtype_f32, %attr_dtype_i8, %attr_dtype_i32)
    irdl.operands(dst: %dst, src0: %src0, src1: %src1, config: %config)
    irdl.attributes {"dtype" = %attr_dtype}
  }

  // dst = max(src0, src1)
  irdl.operation @vmax {
    %dst = irdl.is i64
    %src0 = irdl.is i64
    %src1 = irdl.is i64
    %config = irdl.is i64
    %attr_dtype_f16 = irdl.is f16
    %attr_dtype_f32 = irdl.is f32
    %attr_dtype_i8 = irdl.is i8
    %attr_dtype_i32 = irdl.is i32
    %attr_dtype = irdl.any_of(%attr_dtype_f16, %attr_dtype_f32, %attr_dtype_i8, %attr_dtype_i32)
    irdl.operands(dst: %dst, src0: %src0, src1: %src1, config: %config)
    irdl.attributes {"dtype" = %attr_dtype}
  }

  // dst = min(src0, src1)
  irdl.operation @vmin {
    %dst = irdl.is i64
    %src0 = irdl.is i64
    %src1 = irdl.is i64
    %config = irdl.is i64
    %attr_dtype_f16 = irdl.is f16
    %attr_dtype_f32 = irdl.is f32
    %attr_dtype_i8 = irdl.is i8
    %attr_dtype_i32 = irdl.is i32
    %attr_dtype = irdl.any_of(%attr_dtype_f16, %attr_dtype_f32, %attr_dtype_i8, %attr_dtype_i32)
    irdl.operands(dst: %dst, src0: %src0, src1: %src1, config: %config)
    irdl.attributes {"dtype" = %attr_dtype}
  }

  // dst = src0 * dst + src1
  irdl.operation @vmadd {
    %dst = irdl.is i64
    %src0 = irdl.is i64
    %src1 = irdl.is i64
    %config = irdl.is i64
    %attr_dtype_f16 = irdl.is f16
    %attr_dtype_f32 = irdl.is f32
    %attr_dtype_i8 = irdl.is i8
    %attr_dtype_i32 = irdl.is i32
    %attr_dtype = irdl.any_of(%attr_dtype_f16, %attr_dtype_f32, %attr_dtype_i8, %attr_dtype_i32)
    irdl.operands(dst: %dst, src0: %src0, src1: %src1, config: %config)
    irdl.attributes {"dtype" = %attr_dtype}
  }

  // dst = src0 * src1 + dst
  irdl.operation @vmla {
    %dst = irdl.is i64
    %src0 = irdl.is i64
    %src1 = irdl.is i64
    %config = irdl.is i64
    %attr_dtype_f16 = irdl.is f16
    %attr_dtype_f32 = irdl.is f32
    %attr_dtype_i8 = irdl.is i8
    %attr_dtype_i32 = irdl.is i32
    %attr_dtype = irdl.any_of(%attr_dtype_f16, %attr_dtype_f32, %attr_dtype_i8, %attr_dtype_i32)
    irdl.operands(dst: %dst, src0: %src0, src1: %src1, config: %config)
    irdl.attributes {"dtype" = %attr_dtype}
  }

  // dst = src + scalar
  irdl.operation @vadds {
    %dst = irdl.is i64
    %src = irdl.is i64
    %config = irdl.is i64
    %attr_dtype_f16 = irdl.is f16
    %attr_dtype_f32 = irdl.is f32
    %attr_dtype_i8 = irdl.is i8
    %attr_dtype_i32 = irdl.is i32
    %attr_dtype = irdl.any_of(%attr_dtype_f16, %attr_dtype_f32, %attr_dtype_i8, %attr_dtype_i32)
    %attr_scalar = irdl.base "#builtin.float"
    irdl.operands(dst: %dst, src: %src, config: %config)
    irdl.attributes {"dtype" = %attr_dtype, "scalar" = %attr_scalar}
  }

  // dst = src * scalar
  irdl.operation @vmuls {
    %dst = irdl.is i64
    %src = irdl.is i64
    %config = irdl.is i64
    %attr_dtype_f16 = irdl.is f16
    %attr_dtype_f32 = irdl.is f32
    %attr_dtype_i8 = irdl.is i8
    %attr_dtype_i32 = irdl.is i32
    %attr_dtype = irdl.any_of(%attr_dtype_f16, %attr_dtype_f32, %attr_dtype_i8, %attr_dtype_i32)
    %attr_scalar = irdl.base "#builtin.float"
    irdl.operands(dst: %dst, src: %src, config: %config)
    irdl.attributes {"dtype" = %attr_dtype, "scalar" = %attr_scalar}
  }

  // dst = scalar * src + dst
  irdl.operation @vaxpy {
    %dst = irdl.is i64
    %src = irdl.is i64
    %config = irdl.is i64
    %attr_dtype_f16 = irdl.is f16
    %attr_dtype_f32 = irdl.is f32
    %attr_dtype_i8 = irdl.is i8
    %attr_dtype_i32 = irdl.is i32
    %attr_dtype = irdl.any_of(%attr_dtype_f16, %attr_dtype_f32, %attr_dtype_i8, %attr_dtype_i32)
    %attr_scalar = irdl.base "#builtin.float"
    irdl.operands(dst: %dst, src: %src, config: %config)
    irdl.attributes {"dtype" = %attr_dtype, "scalar" = %attr_scalar}
  }

  // dst = max(src, scalar)
  irdl.operation @vmaxs {
    %dst = irdl.is i64
    %src = irdl.is i64
    %config = irdl.is i64
    %attr_dtype_f16 = irdl.is f16
    %attr_dtype_f32 = irdl.is f32
    %attr_dtype_i8 = irdl.is i8
    %attr_dtype_i32 = irdl.is i32
    %attr_dtype = irdl.any_of(%attr_dtype_f16, %attr_dtype_f32, %attr_dtype_i8, %attr_dtype_i32)
    %attr_scalar = irdl.base "#builtin.float"
    irdl.operands(dst: %dst, src: %src, config: %config)
    irdl.attributes {"dtype" = %attr_dtype, "scalar" = %attr_scalar}
  }

  // dst = min(src, scalar)
  irdl.operation @vmins {
    %dst = irdl.is i64
    %src = irdl.is i64
    %config = irdl.is i64
    %attr_dtype_f16 = irdl.is f16
    %attr_dtype_f32 = irdl.is f32
    %attr_dtype_i8 = irdl.is i8
    %attr_dtype_i32 = irdl.is i32
    %attr_dtype = irdl.any_of(%attr_dtype_f16, %attr_dtype_f32, %attr_dtype_i8, %attr_dtype_i32)
    %attr_scalar = irdl.base "#builtin.float"
    irdl.operands(dst: %dst, src: %src, config: %config)
    irdl.attributes {"dtype" = %attr_dtype, "scalar" = %attr_scalar}
  }

  // dst = max(src, 0)
  irdl.operation @vrelu {
    %dst = irdl.is i64
    %src = irdl.is i64
    %config = irdl.is i64
    %attr_dtype_f16 = irdl.is f16
    %attr_dtype_f32 = irdl.is f32
    %attr_dtype_i8 = irdl.is i8
    %attr_dtype_i32 = irdl.is i32
    %attr_dtype = irdl.any_of(%attr_dtype_f16, %attr_dtype_f32, %attr_dtype_i8, %attr_dtype_i32)
    irdl.operands(dst: %dst, src: %src, config: %config)
    irdl.attributes {"dtype" = %attr_dtype}
  }

  // dst = |src|
  irdl.operation @vabs {
    %dst = irdl.is i64
    %src = irdl.is i64
    %config = irdl.is i64
    %attr_dtype_f16 = irdl.is f16
    %attr_dtype_f32 = irdl.is f32
    %attr_dtype_i8 = irdl.is i8
    %attr_dtype_i32 = irdl.is i32
    %attr_dtype = irdl.any_of(%attr_dtype_f16, %attr_dtype_f32, %attr_dtype_i8, %attr_dtype_i32)
    irdl.operands(dst: %dst, src: %src, config: %config)
    irdl.attributes {"dtype" = %attr_dtype}
  }

  // dst = exp(src)
  irdl.operation @vexp {
    %dst = irdl.is i64
    %src = irdl.is i64
    %config = irdl.is i64
    %attr_dtype_f16 = irdl.is f16
    %attr_dtype_f32 = irdl.is f32
    %attr_dtype_i8 = irdl.is i8
    %attr_dtype_i32 = irdl.is i32
    %attr_dtype = irdl.any_of(%attr_dtype_f16, %attr_dtype_f32, %attr_dtype_i8, %attr_dtype_i32)
    irdl.operands(dst: %dst, src: %src, config: %config)
    irdl.attributes {"dtype" = %attr_dtype}
  }

  // dst = ln(src)
  irdl.operation @vln {
    %dst = irdl.is i64
    %src = irdl.is i64
    %config = irdl.is i64
    %attr_dtype_f16 = irdl.is f16
    %attr_dtype_f32 = irdl.is f32
    %attr_dtype_i8 = irdl.is i8
    %attr_dtype_i32 = irdl.is i32
    %attr_dtype = irdl.any_of(%attr_dtype_f16, %attr_dtype_f32, %attr_dtype_i8, %attr_dtype_i32)
    irdl.operands(dst: %dst, src: %src, config: %config)
    irdl.attributes {"dtype" = %attr_dtype}
  }

  // dst = sqrt(src)
  irdl.operation @vsqrt {
    %dst = irdl.is i64
    %src = irdl.is i64
    %config = irdl.is i64
    %attr_dtype_f16 = irdl.is f16
    %attr_dtype_f32 = irdl.is f32
    %attr_dtype_i8 = irdl.is i8
    %attr_dtype_i32 = irdl.is i32
    %attr_dtype = irdl.any_of(%attr_dtype_f16, %attr_dtype_f32, %attr_dtype_i8, %attr_dtype_i32)
    irdl.operands(dst: %dst, src: %src, config: %config)
    irdl.attributes {"dtype" = %attr_dtype}
  }

  // dst = 1/sqrt(src)
  irdl.operation @vrsqrt {
    %dst = irdl.is i64
    %src = irdl.is i64
    %config = irdl.is i64
    %attr_dtype_f16 = irdl.is f16
    %attr_dtype_f32 = irdl.is f32
    %attr_dtype_i8 = irdl.is i8
    %attr_dtype_i32 = irdl.is i32
    %attr_dtype = irdl.any_of(%attr_dtype_f16, %attr_dtype_f32, %attr_dtype_i8, %attr_dtype_i32)
    irdl.operands(dst: %dst, src: %src, config: %config)
    irdl.attributes {"dtype" = %attr_dtype}
  }

  // dst = 1/src
  irdl.operation @vrec {
    %dst = irdl.is i64
    %src = irdl.is i64
    %config = irdl.is i64
    %attr_dtype_f16 = irdl.is f16
    %attr_dtype_f32 = irdl.is f32
    %attr_dtype_i8 = irdl.is i8
    %attr_dtype_i32 = irdl.is i32
    %attr_dtype = irdl.any_of(%attr_dtype_f16, %attr_dtype_f32, %attr_dtype_i8, %attr_dtype_i32)
    irdl.operands(dst: %dst, src: %src, config: %config)
    irdl.attributes {"dtype" = %attr_dtype}
  }

  // dst (dtype) = convert(src (src_dtype))
  irdl.operation @vconv {
    %dst = irdl.is i64
    %src = irdl.is i64
    %config = irdl.is i64
    %attr_dtype_f16 = irdl.is f16
    %attr_dtype_f32 = irdl.is f32
    %attr_dtype_i8 = irdl.is i8
    %attr_dtype_i32 = irdl.is i32
    %attr_dtype = irdl.any_of(%attr_dtype_f16, %attr_dtype_f32, %attr_dtype_i8, %attr_dtype_i32)
    %attr_src_dtype_f16 = irdl.is f16
    %attr_src_dtype_f32 = irdl.is f32
    %attr_src_dtype_i8 = irdl.is i8
    %attr_src_dtype_i32 = irdl.is i32
    %attr_src_dtype = irdl.any_of(%attr_src_dtype_f16, %attr_src_dtype_f32, %attr_src_dtype_i8, %attr_src_dtype_i32)
    %attr_round_mode_0 = irdl.is "rint"
    %attr_round_mode_1 = irdl.is "floor"
    %attr_round_mode_2 = irdl.is "ceil"
    %attr_round_mode_3 = irdl.is "trunc"
    %attr_round_mode_4 = irdl.is "round"
    %attr_round_mode_5 = irdl.is "none"
    %attr_round_mode = irdl.any_of(%attr_round_mode_0, %attr_round_mode_1, %attr_round_mode_2, %attr_round_mode_3, %attr_round_mode_4, %attr_round_mode_5)
    irdl.operands(dst: %dst, src: %src, config: %config)
    irdl.attributes {"dtype" = %attr_dtype, "src_dtype" = %attr_src_dtype, "round_mode" = %attr_round_mode}
  }

  // dst = scalar
  irdl.operation @vdup {
    %dst = irdl.is i64
    %config = irdl.is i64
    %attr_dtype_f16 = irdl.is f16
    %attr_dtype_f32 = irdl.is f32
    %attr_dtype_i8 = irdl.is i8
    %attr_dtype_i32 = irdl.is i32
    %attr_dtype = irdl.any_of(%attr_dtype_f16, %attr_dtype_f32, %attr_dtype_i8, %attr_dtype_i32)
    %attr_scalar = irdl.base "#builtin.float"
    irdl.operands(dst: %dst, config: %config)
    irdl.attributes {"dtype" = %attr_dtype, "scalar" = %attr_scalar}
  }

  // per-repeat sum of the active lanes
  irdl.operation @vcadd {
    %dst = irdl.is i64
    %src = irdl.is i64
    %config = irdl.is i64
    %attr_dtype_f16 = irdl.is f16
    %attr_dtype_f32 = irdl.is f32
    %attr_dtype_i8 = irdl.is i8
    %attr_dtype_i32 = irdl.is i32
    %attr_dtype = irdl.any_of(%attr_dtype_f16, %attr_dtype_f32, %attr_dtype_i8, %attr_dtype_i32)
    irdl.operands(dst: %dst, src: %src, config: %config)
    irdl.attributes {"dtype" = %attr_dtype}
  }

  // per-repeat max of the active lanes
  irdl.operation @vcmax {
    %dst = irdl.is i64
    %src = irdl.is i64
    %config = irdl.is i64
    %attr_dtype_f16 = irdl.is f16
    %attr_dtype_f32 = irdl.is f32
    %attr_dtype_i8 = irdl.is i8
    %attr_dtype_i32 = irdl.is i32
    %attr_dtype = irdl.any_of(%attr_dtype_f16, %attr_dtype_f32, %attr_dtype_i8, %attr_dtype_i32)
    irdl.operands(dst: %dst, src: %src, config: %config)
    irdl.attributes {"dtype" = %attr_dtype}
  }

  // per-repeat min of the active lanes
  irdl.operation @vcmin {
    %dst = irdl.is i64
    %src = irdl.is i64
    %config = irdl.is i64
    %attr_dtype_f16 = irdl.is f16
    %attr_dtype_f32 = irdl.is f32
    %attr_dtype_i8 = irdl.is i8
    %attr_dtype_i32 = irdl.is i32
    %attr_dtype = irdl.any_of(%attr_dtype_f16, %attr_dtype_f32, %attr_dtype_i8, %attr_dtype_i32)
    irdl.operands(dst: %dst, src: %src, config: %config)
    irdl.attributes {"dtype" = %attr_dtype}
  }

  // dst (i8) = src0 <predicate> src1 ? 1 : 0; config packs the predicate
  // (bits 48-50); dtype is the sources' type
  irdl.operation @vcmp {
    %dst = irdl.is i64
    %src0 = irdl.is i64
    %src1 = irdl.is i64
    %config = irdl.is i64
    %attr_dtype_f16 = irdl.is f16
    %attr_dtype_f32 = irdl.is f32
    %attr_dtype_i8 = irdl.is i8
    %attr_dtype_i32 = irdl.is i32
    %attr_dtype = irdl.any_of(%attr_dtype_f16, %attr_dtype_f32, %attr_dtype_i8, %attr_dtype_i32)
    irdl.operands(dst: %dst, src0: %src0, src1: %src1, config: %config)
    irdl.attributes {"dtype" = %attr_dtype}
  }

  // dst = cond (i8) != 0 ? src0 : src1; config has the select layout (four
  // operands' strides); dtype is dst's, src0's and src1's type
  irdl.operation @vsel {
    %dst = irdl.is i64
    %cond = irdl.is i64
    %src0 = irdl.is i64
    %src1 = irdl.is i64
    %config = irdl.is i64
    %attr_dtype_f16 = irdl.is f16
    %attr_dtype_f32 = irdl.is f32
    %attr_dtype_i8 = irdl.is i8
    %attr_dtype_i32 = irdl.is i32
    %attr_dtype = irdl.any_of(%attr_dtype_f16, %attr_dtype_f32, %attr_dtype_i8, %attr_dtype_i32)
    irdl.operands(dst: %dst, cond: %cond, src0: %src0, src1: %src1, config: %config)
    irdl.attributes {"dtype" = %attr_dtype}
  }

  // 16x16 transposes; config packs repeat and repeat strides
  irdl.operation @vnchwconv {
    %dst = irdl.is i64
    %src = irdl.is i64
    %config = irdl.is i64
    %attr_dtype_f16 = irdl.is f16
    %attr_dtype_f32 = irdl.is f32
    %attr_dtype_i8 = irdl.is i8
    %attr_dtype_i32 = irdl.is i32
    %attr_dtype = irdl.any_of(%attr_dtype_f16, %attr_dtype_f32, %attr_dtype_i8, %attr_dtype_i32)
    %attr_src_offsets = irdl.base "#builtin.dense_array"
    %attr_dst_offsets = irdl.base "#builtin.dense_array"
    irdl.operands(dst: %dst, src: %src, config: %config)
    irdl.attributes {"dtype" = %attr_dtype, "src_offsets" = %attr_src_offsets, "dst_offsets" = %attr_dst_offsets}
  }

  // mask register for later vector ops: lane e active iff bit e of (hi:lo)
  irdl.operation @set_vector_mask {
    %hi = irdl.is i64
    %lo = irdl.is i64
    irdl.operands(hi: %hi, lo: %lo)
  }

  // ===== Scalar address arithmetic =====

  // addr = base + sum(operand_i * scales[i]): one scalar instruction (like
  // getelementptr) for an address that depends on loop indices.
  irdl.operation @addr {
    %term = irdl.is index
    %result = irdl.is i64
    %attr_base = irdl.base "#builtin.integer"
    %attr_scales = irdl.base "#builtin.dense_array"
    irdl.operands(terms: variadic %term)
    irdl.results(addr: %result)
    irdl.attributes {"base" = %attr_base, "scales" = %attr_scales}
  }

  // value = the i32 at GM byte address `addr`: a scalar load of the scalar
  // unit, through its data cache (a gather's index; cce: memref.load).
  irdl.operation @load_gm_scalar {
    %address = irdl.is i64
    %result = irdl.is i32
    irdl.operands(addr: %address)
    irdl.results(value: %result)
  }

  // ===== Synchronisation (as in cce) =====

  // raise event `event` of (src, dst)
  irdl.operation @set_flag {
    %attr_src_0 = irdl.is "S"
    %attr_src_1 = irdl.is "V"
    %attr_src_2 = irdl.is "M"
    %attr_src_3 = irdl.is "MTE1"
    %attr_src_4 = irdl.is "MTE2"
    %attr_src_5 = irdl.is "MTE3"
    %attr_src = irdl.any_of(%attr_src_0, %attr_src_1, %attr_src_2, %attr_src_3, %attr_src_4, %attr_src_5)
    %attr_dst_0 = irdl.is "S"
    %attr_dst_1 = irdl.is "V"
    %attr_dst_2 = irdl.is "M"
    %attr_dst_3 = irdl.is "MTE1"
    %attr_dst_4 = irdl.is "MTE2"
    %attr_dst_5 = irdl.is "MTE3"
    %attr_dst = irdl.any_of(%attr_dst_0, %attr_dst_1, %attr_dst_2, %attr_dst_3, %attr_dst_4, %attr_dst_5)
    %attr_event = irdl.base "#builtin.integer"
    irdl.attributes {"src" = %attr_src, "dst" = %attr_dst, "event" = %attr_event}
  }

  // wait for and consume event `event` of (src, dst)
  irdl.operation @wait_flag {
    %attr_src_0 = irdl.is "S"
    %attr_src_1 = irdl.is "V"
    %attr_src_2 = irdl.is "M"
    %attr_src_3 = irdl.is "MTE1"
    %attr_src_4 = irdl.is "MTE2"
    %attr_src_5 = irdl.is "MTE3"
    %attr_src = irdl.any_of(%attr_src_0, %attr_src_1, %attr_src_2, %attr_src_3, %attr_src_4, %attr_src_5)
    %attr_dst_0 = irdl.is "S"
    %attr_dst_1 = irdl.is "V"
    %attr_dst_2 = irdl.is "M"
    %attr_dst_3 = irdl.is "MTE1"
    %attr_dst_4 = irdl.is "MTE2"
    %attr_dst_5 = irdl.is "MTE3"
    %attr_dst = irdl.any_of(%attr_dst_0, %attr_dst_1, %attr_dst_2, %attr_dst_3, %attr_dst_4, %attr_dst_5)
    %attr_event = irdl.base "#builtin.integer"
    irdl.attributes {"src" = %attr_src, "dst" = %attr_dst, "event" = %attr_event}
  }

  // order the instructions of `pipe`
  irdl.operation @pipe_barrier {
    %attr_pipe_0 = irdl.is "S"
    %attr_pipe_1 = irdl.is "V"
    %attr_pipe_2 = irdl.is "M"
    %attr_pipe_3 = irdl.is "MTE1"
    %attr_pipe_4 = irdl.is "MTE2"
    %attr_pipe_5 = irdl.is "MTE3"
    %attr_pipe_6 = irdl.is "ALL"
    %attr_pipe = irdl.any_of(%attr_pipe_0, %attr_pipe_1, %attr_pipe_2, %attr_pipe_3, %attr_pipe_4, %attr_pipe_5, %attr_pipe_6)
    irdl.attributes {"pipe" = %attr_pipe}
  }

  // ===== img2col (load3d) =====

  // the feature-map register (FMATRIX) img2col reads: map width/height and
  // its four pads (fmatrix word); set once per map, free like the mask
  irdl.operation @set_fmatrix {
    %config = irdl.is i64
    irdl.operands(config: %config)
  }

  // the padding register img2col's taps in the pads take (padding word: the
  // pad element's bits, the low 8 for an int8 map); 0 until set; free like
  // the mask
  irdl.operation @set_padding {
    %config = irdl.is i64
    irdl.operands(config: %config)
  }

  // l1 (NC1HWC0 map, f16 or int8) -> l0a on pipe MTE1: `repeat` im2col'd
  // 512-byte fractals; pos packs the C1 index, kernel point and window
  // top-left, config the stride/kernel/dilation, dst stride, repeat mode,
  // element size (b8) and repeat count
  irdl.operation @img2col_l1_to_l0a {
    %dst = irdl.is i64
    %src = irdl.is i64
    %pos = irdl.is i64
    %config = irdl.is i64
    irdl.operands(dst: %dst, src: %src, pos: %pos, config: %config)
  }

  // the chip-wide barrier between the cores of a launch (cce.sync_all)
  irdl.operation @sync_all {
  }
}

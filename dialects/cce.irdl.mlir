// The `cce` dialect: instruction-like ops on memrefs in a named memory space.
//
// Contract: dialects/README.md. IRDL checks operand kinds (memrefs) and the
// presence and kind of every attribute; memory spaces, element types and
// attribute ranges are checked by the rules in cce.py. All counts are i64.
// Each constraint has its own SSA value: IRDL unifies the uses of one value,
// so sharing it would force two operands (or attributes) to be equal.
irdl.dialect @cce {

  // ===== Data movement: bursts of 32-byte blocks, one op per hardware path =====

  // gm -> l1 on pipe MTE2: n_burst bursts of burst_len blocks, gaps in blocks
  irdl.operation @copy_gm_to_l1 {
    %src = irdl.base "!builtin.memref"
    %dst = irdl.base "!builtin.memref"
    %attr_n_burst = irdl.base "#builtin.integer"
    %attr_burst_len = irdl.base "#builtin.integer"
    %attr_src_gap = irdl.base "#builtin.integer"
    %attr_dst_gap = irdl.base "#builtin.integer"
    irdl.operands(src: %src, dst: %dst)
    irdl.attributes {"n_burst" = %attr_n_burst, "burst_len" = %attr_burst_len, "src_gap" = %attr_src_gap, "dst_gap" = %attr_dst_gap}
  }

  // gm -> ub on pipe MTE2: n_burst bursts of burst_len blocks, gaps in blocks
  irdl.operation @copy_gm_to_ub {
    %src = irdl.base "!builtin.memref"
    %dst = irdl.base "!builtin.memref"
    %attr_n_burst = irdl.base "#builtin.integer"
    %attr_burst_len = irdl.base "#builtin.integer"
    %attr_src_gap = irdl.base "#builtin.integer"
    %attr_dst_gap = irdl.base "#builtin.integer"
    irdl.operands(src: %src, dst: %dst)
    irdl.attributes {"n_burst" = %attr_n_burst, "burst_len" = %attr_burst_len, "src_gap" = %attr_src_gap, "dst_gap" = %attr_dst_gap}
  }

  // ub -> gm on pipe MTE3: n_burst bursts of burst_len blocks, gaps in blocks
  irdl.operation @copy_ub_to_gm {
    %src = irdl.base "!builtin.memref"
    %dst = irdl.base "!builtin.memref"
    %attr_n_burst = irdl.base "#builtin.integer"
    %attr_burst_len = irdl.base "#builtin.integer"
    %attr_src_gap = irdl.base "#builtin.integer"
    %attr_dst_gap = irdl.base "#builtin.integer"
    irdl.operands(src: %src, dst: %dst)
    irdl.attributes {"n_burst" = %attr_n_burst, "burst_len" = %attr_burst_len, "src_gap" = %attr_src_gap, "dst_gap" = %attr_dst_gap}
  }

  // ub -> l1 on pipe MTE3: n_burst bursts of burst_len blocks, gaps in blocks
  irdl.operation @copy_ub_to_l1 {
    %src = irdl.base "!builtin.memref"
    %dst = irdl.base "!builtin.memref"
    %attr_n_burst = irdl.base "#builtin.integer"
    %attr_burst_len = irdl.base "#builtin.integer"
    %attr_src_gap = irdl.base "#builtin.integer"
    %attr_dst_gap = irdl.base "#builtin.integer"
    irdl.operands(src: %src, dst: %dst)
    irdl.attributes {"n_burst" = %attr_n_burst, "burst_len" = %attr_burst_len, "src_gap" = %attr_src_gap, "dst_gap" = %attr_dst_gap}
  }

  // ub -> ub on pipe V: n_burst bursts of burst_len blocks, gaps in blocks
  irdl.operation @copy_ub_to_ub {
    %src = irdl.base "!builtin.memref"
    %dst = irdl.base "!builtin.memref"
    %attr_n_burst = irdl.base "#builtin.integer"
    %attr_burst_len = irdl.base "#builtin.integer"
    %attr_src_gap = irdl.base "#builtin.integer"
    %attr_dst_gap = irdl.base "#builtin.integer"
    irdl.operands(src: %src, dst: %dst)
    irdl.attributes {"n_burst" = %attr_n_burst, "burst_len" = %attr_burst_len, "src_gap" = %attr_src_gap, "dst_gap" = %attr_dst_gap}
  }

  // l0c -> ub on pipe V: n_burst bursts of burst_len blocks, gaps in blocks;
  // optional `convert = "f32_to_f16"` (checked by npu.dialects.cce): f32 in
  // l0c to f16 in ub, rounded to nearest even (burst_len, src_gap: source blocks);
  // "f32_to_f16_relu": the same of max(x, 0)
  irdl.operation @copy_l0c_to_ub {
    %src = irdl.base "!builtin.memref"
    %dst = irdl.base "!builtin.memref"
    %attr_n_burst = irdl.base "#builtin.integer"
    %attr_burst_len = irdl.base "#builtin.integer"
    %attr_src_gap = irdl.base "#builtin.integer"
    %attr_dst_gap = irdl.base "#builtin.integer"
    irdl.operands(src: %src, dst: %dst)
    irdl.attributes {"n_burst" = %attr_n_burst, "burst_len" = %attr_burst_len, "src_gap" = %attr_src_gap, "dst_gap" = %attr_dst_gap}
  }

  // l1 -> l0a on pipe MTE1: repeat 512-byte fractals, strides in fractals
  irdl.operation @load_l1_to_l0a {
    %src = irdl.base "!builtin.memref"
    %dst = irdl.base "!builtin.memref"
    %attr_repeat = irdl.base "#builtin.integer"
    %attr_src_stride = irdl.base "#builtin.integer"
    %attr_dst_stride = irdl.base "#builtin.integer"
    %attr_transpose_t = irdl.is true
    %attr_transpose_f = irdl.is false
    %attr_transpose = irdl.any_of(%attr_transpose_t, %attr_transpose_f)
    irdl.operands(src: %src, dst: %dst)
    irdl.attributes {"repeat" = %attr_repeat, "src_stride" = %attr_src_stride, "dst_stride" = %attr_dst_stride, "transpose" = %attr_transpose}
  }

  // l1 -> l0b on pipe MTE1: repeat 512-byte fractals, strides in fractals
  irdl.operation @load_l1_to_l0b {
    %src = irdl.base "!builtin.memref"
    %dst = irdl.base "!builtin.memref"
    %attr_repeat = irdl.base "#builtin.integer"
    %attr_src_stride = irdl.base "#builtin.integer"
    %attr_dst_stride = irdl.base "#builtin.integer"
    %attr_transpose_t = irdl.is true
    %attr_transpose_f = irdl.is false
    %attr_transpose = irdl.any_of(%attr_transpose_t, %attr_transpose_f)
    irdl.operands(src: %src, dst: %dst)
    irdl.attributes {"repeat" = %attr_repeat, "src_stride" = %attr_src_stride, "dst_stride" = %attr_dst_stride, "transpose" = %attr_transpose}
  }

  // l1 -> l0a on pipe MTE1, img2col (load3d): from src, a feature map
  // [C1, fm_h, fm_w, C0] in l1 (NC1HWC0, one image; f16 with C0 = 16 or i8
  // with C0 = 32), `repeat` 16 x C0 fractals of the im2col matrix (rows: 16
  // windows in raster order, columns: the C0 channels of one kernel point of
  // one C1 block; taps in the pads read 0, or an i8 map's optional pad_value),
  // dst_stride fractals apart. repeat_mode 0 steps the kernel point (along
  // K: fetch_w, fetch_h, then c1), 1 the windows by 16 (along M). The window
  // starts at (left_top_h, left_top_w) in map coordinates (-pad for the first)
  irdl.operation @img2col_l1_to_l0a {
    %src = irdl.base "!builtin.memref"
    %dst = irdl.base "!builtin.memref"
    %attr_fm_h = irdl.base "#builtin.integer"
    %attr_fm_w = irdl.base "#builtin.integer"
    %attr_pad_top = irdl.base "#builtin.integer"
    %attr_pad_bottom = irdl.base "#builtin.integer"
    %attr_pad_left = irdl.base "#builtin.integer"
    %attr_pad_right = irdl.base "#builtin.integer"
    %attr_c1 = irdl.base "#builtin.integer"
    %attr_fetch_h = irdl.base "#builtin.integer"
    %attr_fetch_w = irdl.base "#builtin.integer"
    %attr_left_top_h = irdl.base "#builtin.integer"
    %attr_left_top_w = irdl.base "#builtin.integer"
    %attr_stride_h = irdl.base "#builtin.integer"
    %attr_stride_w = irdl.base "#builtin.integer"
    %attr_kernel_h = irdl.base "#builtin.integer"
    %attr_kernel_w = irdl.base "#builtin.integer"
    %attr_dilation_h = irdl.base "#builtin.integer"
    %attr_dilation_w = irdl.base "#builtin.integer"
    %attr_dst_stride = irdl.base "#builtin.integer"
    %attr_repeat_mode = irdl.base "#builtin.integer"
    %attr_repeat = irdl.base "#builtin.integer"
    irdl.operands(src: %src, dst: %dst)
    irdl.attributes {"fm_h" = %attr_fm_h, "fm_w" = %attr_fm_w, "pad_top" = %attr_pad_top, "pad_bottom" = %attr_pad_bottom, "pad_left" = %attr_pad_left, "pad_right" = %attr_pad_right, "c1" = %attr_c1, "fetch_h" = %attr_fetch_h, "fetch_w" = %attr_fetch_w, "left_top_h" = %attr_left_top_h, "left_top_w" = %attr_left_top_w, "stride_h" = %attr_stride_h, "stride_w" = %attr_stride_w, "kernel_h" = %attr_kernel_h, "kernel_w" = %attr_kernel_w, "dilation_h" = %attr_dilation_h, "dilation_w" = %attr_dilation_w, "dst_stride" = %attr_dst_stride, "repeat_mode" = %attr_repeat_mode, "repeat" = %attr_repeat}
  }

  // ===== Cube (pipe M) =====

  // c (l0c, Nz) = [c +] a (l0a, Zz) x b (l0b, Zn); m x n times n x k
  irdl.operation @mad {
    %a = irdl.base "!builtin.memref"
    %b = irdl.base "!builtin.memref"
    %c = irdl.base "!builtin.memref"
    %attr_m = irdl.base "#builtin.integer"
    %attr_n = irdl.base "#builtin.integer"
    %attr_k = irdl.base "#builtin.integer"
    %attr_accumulate_t = irdl.is true
    %attr_accumulate_f = irdl.is false
    %attr_accumulate = irdl.any_of(%attr_accumulate_t, %attr_accumulate_f)
    irdl.operands(a: %a, b: %b, c: %c)
    irdl.attributes {"m" = %attr_m, "n" = %attr_n, "k" = %attr_k, "accumulate" = %attr_accumulate}
  }

  // ===== Vector, binary (pipe V) =====

  // dst = src0 + src1
  irdl.operation @vadd {
    %dst = irdl.base "!builtin.memref"
    %src0 = irdl.base "!builtin.memref"
    %src1 = irdl.base "!builtin.memref"
    %attr_repeat = irdl.base "#builtin.integer"
    %attr_mask = irdl.base "#builtin.integer"
    %attr_dst_blk_stride = irdl.base "#builtin.integer"
    %attr_dst_rep_stride = irdl.base "#builtin.integer"
    %attr_src0_blk_stride = irdl.base "#builtin.integer"
    %attr_src0_rep_stride = irdl.base "#builtin.integer"
    %attr_src1_blk_stride = irdl.base "#builtin.integer"
    %attr_src1_rep_stride = irdl.base "#builtin.integer"
    irdl.operands(dst: %dst, src0: %src0, src1: %src1)
    irdl.attributes {"repeat" = %attr_repeat, "mask" = %attr_mask, "dst_blk_stride" = %attr_dst_blk_stride, "dst_rep_stride" = %attr_dst_rep_stride, "src0_blk_stride" = %attr_src0_blk_stride, "src0_rep_stride" = %attr_src0_rep_stride, "src1_blk_stride" = %attr_src1_blk_stride, "src1_rep_stride" = %attr_src1_rep_stride}
  }

  // dst = src0 - src1
  irdl.operation @vsub {
    %dst = irdl.base "!builtin.memref"
    %src0 = irdl.base "!builtin.memref"
    %src1 = irdl.base "!builtin.memref"
    %attr_repeat = irdl.base "#builtin.integer"
    %attr_mask = irdl.base "#builtin.integer"
    %attr_dst_blk_stride = irdl.base "#builtin.integer"
    %attr_dst_rep_stride = irdl.base "#builtin.integer"
    %attr_src0_blk_stride = irdl.base "#builtin.integer"
    %attr_src0_rep_stride = irdl.base "#builtin.integer"
    %attr_src1_blk_stride = irdl.base "#builtin.integer"
    %attr_src1_rep_stride = irdl.base "#builtin.integer"
    irdl.operands(dst: %dst, src0: %src0, src1: %src1)
    irdl.attributes {"repeat" = %attr_repeat, "mask" = %attr_mask, "dst_blk_stride" = %attr_dst_blk_stride, "dst_rep_stride" = %attr_dst_rep_stride, "src0_blk_stride" = %attr_src0_blk_stride, "src0_rep_stride" = %attr_src0_rep_stride, "src1_blk_stride" = %attr_src1_blk_stride, "src1_rep_stride" = %attr_src1_rep_stride}
  }

  // dst = src0 * src1
  irdl.operation @vmul {
    %dst = irdl.base "!builtin.memref"
    %src0 = irdl.base "!builtin.memref"
    %src1 = irdl.base "!builtin.memref"
    %attr_repeat = irdl.base "#builtin.integer"
    %attr_mask = irdl.base "#builtin.integer"
    %attr_dst_blk_stride = irdl.base "#builtin.integer"
    %attr_dst_rep_stride = irdl.base "#builtin.integer"
    %attr_src0_blk_stride = irdl.base "#builtin.integer"
    %attr_src0_rep_stride = irdl.base "#builtin.integer"
    %attr_src1_blk_stride = irdl.base "#builtin.integer"
    %attr_src1_rep_stride = irdl.base "#builtin.integer"
    irdl.operands(dst: %dst, src0: %src0, src1: %src1)
    irdl.attributes {"repeat" = %attr_repeat, "mask" = %attr_mask, "dst_blk_stride" = %attr_dst_blk_stride, "dst_rep_stride" = %attr_dst_rep_stride, "src0_blk_stride" = %attr_src0_blk_stride, "src0_rep_stride" = %attr_src0_rep_stride, "src1_blk_stride" = %attr_src1_blk_stride, "src1_rep_stride" = %attr_src1_rep_stride}
  }

  // dst = src0 / src1
  irdl.operation @vdiv {
    %dst = irdl.base "!builtin.memref"
    %src0 = irdl.base "!builtin.memref"
    %src1 = irdl.base "!builtin.memref"
    %attr_repeat = irdl.base "#builtin.integer"
    %attr_mask = irdl.base "#builtin.integer"
    %attr_dst_blk_stride = irdl.base "#builtin.integer"
    %attr_dst_rep_stride = irdl.base "#builtin.integer"
    %attr_src0_blk_stride = irdl.base "#builtin.integer"
    %attr_src0_rep_stride = irdl.base "#builtin.integer"
    %attr_src1_blk_stride = irdl.base "#builtin.integer"
    %attr_src1_rep_stride = irdl.base "#builtin.integer"
    irdl.operands(dst: %dst, src0: %src0, src1: %src1)
    irdl.attributes {"repeat" = %attr_repeat, "mask" = %attr_mask, "dst_blk_stride" = %attr_dst_blk_stride, "dst_rep_stride" = %attr_dst_rep_stride, "src0_blk_stride" = %attr_src0_blk_stride, "src0_rep_stride" = %attr_src0_rep_stride, "src1_blk_stride" = %attr_src1_blk_stride, "src1_rep_stride" = %attr_src1_rep_stride}
  }

  // dst = max(src0, src1)
  irdl.operation @vmax {
    %dst = irdl.base "!builtin.memref"
    %src0 = irdl.base "!builtin.memref"
    %src1 = irdl.base "!builtin.memref"
    %attr_repeat = irdl.base "#builtin.integer"
    %attr_mask = irdl.base "#builtin.integer"
    %attr_dst_blk_stride = irdl.base "#builtin.integer"
    %attr_dst_rep_stride = irdl.base "#builtin.integer"
    %attr_src0_blk_stride = irdl.base "#builtin.integer"
    %attr_src0_rep_stride = irdl.base "#builtin.integer"
    %attr_src1_blk_stride = irdl.base "#builtin.integer"
    %attr_src1_rep_stride = irdl.base "#builtin.integer"
    irdl.operands(dst: %dst, src0: %src0, src1: %src1)
    irdl.attributes {"repeat" = %attr_repeat, "mask" = %attr_mask, "dst_blk_stride" = %attr_dst_blk_stride, "dst_rep_stride" = %attr_dst_rep_stride, "src0_blk_stride" = %attr_src0_blk_stride, "src0_rep_stride" = %attr_src0_rep_stride, "src1_blk_stride" = %attr_src1_blk_stride, "src1_rep_stride" = %attr_src1_rep_stride}
  }

  // dst = min(src0, src1)
  irdl.operation @vmin {
    %dst = irdl.base "!builtin.memref"
    %src0 = irdl.base "!builtin.memref"
    %src1 = irdl.base "!builtin.memref"
    %attr_repeat = irdl.base "#builtin.integer"
    %attr_mask = irdl.base "#builtin.integer"
    %attr_dst_blk_stride = irdl.base "#builtin.integer"
    %attr_dst_rep_stride = irdl.base "#builtin.integer"
    %attr_src0_blk_stride = irdl.base "#builtin.integer"
    %attr_src0_rep_stride = irdl.base "#builtin.integer"
    %attr_src1_blk_stride = irdl.base "#builtin.integer"
    %attr_src1_rep_stride = irdl.base "#builtin.integer"
    irdl.operands(dst: %dst, src0: %src0, src1: %src1)
    irdl.attributes {"repeat" = %attr_repeat, "mask" = %attr_mask, "dst_blk_stride" = %attr_dst_blk_stride, "dst_rep_stride" = %attr_dst_rep_stride, "src0_blk_stride" = %attr_src0_blk_stride, "src0_rep_stride" = %attr_src0_rep_stride, "src1_blk_stride" = %attr_src1_blk_stride, "src1_rep_stride" = %attr_src1_rep_stride}
  }

  // dst = src0 * dst + src1 (multiply-add, one rounding: dialects/README.md)
  irdl.operation @vmadd {
    %dst = irdl.base "!builtin.memref"
    %src0 = irdl.base "!builtin.memref"
    %src1 = irdl.base "!builtin.memref"
    %attr_repeat = irdl.base "#builtin.integer"
    %attr_mask = irdl.base "#builtin.integer"
    %attr_dst_blk_stride = irdl.base "#builtin.integer"
    %attr_dst_rep_stride = irdl.base "#builtin.integer"
    %attr_src0_blk_stride = irdl.base "#builtin.integer"
    %attr_src0_rep_stride = irdl.base "#builtin.integer"
    %attr_src1_blk_stride = irdl.base "#builtin.integer"
    %attr_src1_rep_stride = irdl.base "#builtin.integer"
    irdl.operands(dst: %dst, src0: %src0, src1: %src1)
    irdl.attributes {"repeat" = %attr_repeat, "mask" = %attr_mask, "dst_blk_stride" = %attr_dst_blk_stride, "dst_rep_stride" = %attr_dst_rep_stride, "src0_blk_stride" = %attr_src0_blk_stride, "src0_rep_stride" = %attr_src0_rep_stride, "src1_blk_stride" = %attr_src1_blk_stride, "src1_rep_stride" = %attr_src1_rep_stride}
  }

  // dst = src0 * src1 + dst (multiply-accumulate, one rounding)
  irdl.operation @vmla {
    %dst = irdl.base "!builtin.memref"
    %src0 = irdl.base "!builtin.memref"
    %src1 = irdl.base "!builtin.memref"
    %attr_repeat = irdl.base "#builtin.integer"
    %attr_mask = irdl.base "#builtin.integer"
    %attr_dst_blk_stride = irdl.base "#builtin.integer"
    %attr_dst_rep_stride = irdl.base "#builtin.integer"
    %attr_src0_blk_stride = irdl.base "#builtin.integer"
    %attr_src0_rep_stride = irdl.base "#builtin.integer"
    %attr_src1_blk_stride = irdl.base "#builtin.integer"
    %attr_src1_rep_stride = irdl.base "#builtin.integer"
    irdl.operands(dst: %dst, src0: %src0, src1: %src1)
    irdl.attributes {"repeat" = %attr_repeat, "mask" = %attr_mask, "dst_blk_stride" = %attr_dst_blk_stride, "dst_rep_stride" = %attr_dst_rep_stride, "src0_blk_stride" = %attr_src0_blk_stride, "src0_rep_stride" = %attr_src0_rep_stride, "src1_blk_stride" = %attr_src1_blk_stride, "src1_rep_stride" = %attr_src1_rep_stride}
  }

  // ===== Vector, with a scalar (pipe V) =====

  // dst = src + scalar
  irdl.operation @vadds {
    %dst = irdl.base "!builtin.memref"
    %src = irdl.base "!builtin.memref"
    %attr_repeat = irdl.base "#builtin.integer"
    %attr_mask = irdl.base "#builtin.integer"
    %attr_dst_blk_stride = irdl.base "#builtin.integer"
    %attr_dst_rep_stride = irdl.base "#builtin.integer"
    %attr_src_blk_stride = irdl.base "#builtin.integer"
    %attr_src_rep_stride = irdl.base "#builtin.integer"
    %attr_scalar = irdl.base "#builtin.float"
    irdl.operands(dst: %dst, src: %src)
    irdl.attributes {"repeat" = %attr_repeat, "mask" = %attr_mask, "dst_blk_stride" = %attr_dst_blk_stride, "dst_rep_stride" = %attr_dst_rep_stride, "src_blk_stride" = %attr_src_blk_stride, "src_rep_stride" = %attr_src_rep_stride, "scalar" = %attr_scalar}
  }

  // dst = src * scalar
  irdl.operation @vmuls {
    %dst = irdl.base "!builtin.memref"
    %src = irdl.base "!builtin.memref"
    %attr_repeat = irdl.base "#builtin.integer"
    %attr_mask = irdl.base "#builtin.integer"
    %attr_dst_blk_stride = irdl.base "#builtin.integer"
    %attr_dst_rep_stride = irdl.base "#builtin.integer"
    %attr_src_blk_stride = irdl.base "#builtin.integer"
    %attr_src_rep_stride = irdl.base "#builtin.integer"
    %attr_scalar = irdl.base "#builtin.float"
    irdl.operands(dst: %dst, src: %src)
    irdl.attributes {"repeat" = %attr_repeat, "mask" = %attr_mask, "dst_blk_stride" = %attr_dst_blk_stride, "dst_rep_stride" = %attr_dst_rep_stride, "src_blk_stride" = %attr_src_blk_stride, "src_rep_stride" = %attr_src_rep_stride, "scalar" = %attr_scalar}
  }

  // dst = scalar * src + dst (one rounding)
  irdl.operation @vaxpy {
    %dst = irdl.base "!builtin.memref"
    %src = irdl.base "!builtin.memref"
    %attr_repeat = irdl.base "#builtin.integer"
    %attr_mask = irdl.base "#builtin.integer"
    %attr_dst_blk_stride = irdl.base "#builtin.integer"
    %attr_dst_rep_stride = irdl.base "#builtin.integer"
    %attr_src_blk_stride = irdl.base "#builtin.integer"
    %attr_src_rep_stride = irdl.base "#builtin.integer"
    %attr_scalar = irdl.base "#builtin.float"
    irdl.operands(dst: %dst, src: %src)
    irdl.attributes {"repeat" = %attr_repeat, "mask" = %attr_mask, "dst_blk_stride" = %attr_dst_blk_stride, "dst_rep_stride" = %attr_dst_rep_stride, "src_blk_stride" = %attr_src_blk_stride, "src_rep_stride" = %attr_src_rep_stride, "scalar" = %attr_scalar}
  }

  // dst = max(src, scalar)
  irdl.operation @vmaxs {
    %dst = irdl.base "!builtin.memref"
    %src = irdl.base "!builtin.memref"
    %attr_repeat = irdl.base "#builtin.integer"
    %attr_mask = irdl.base "#builtin.integer"
    %attr_dst_blk_stride = irdl.base "#builtin.integer"
    %attr_dst_rep_stride = irdl.base "#builtin.integer"
    %attr_src_blk_stride = irdl.base "#builtin.integer"
    %attr_src_rep_stride = irdl.base "#builtin.integer"
    %attr_scalar = irdl.base "#builtin.float"
    irdl.operands(dst: %dst, src: %src)
    irdl.attributes {"repeat" = %attr_repeat, "mask" = %attr_mask, "dst_blk_stride" = %attr_dst_blk_stride, "dst_rep_stride" = %attr_dst_rep_stride, "src_blk_stride" = %attr_src_blk_stride, "src_rep_stride" = %attr_src_rep_stride, "scalar" = %attr_scalar}
  }

  // dst = min(src, scalar)
  irdl.operation @vmins {
    %dst = irdl.base "!builtin.memref"
    %src = irdl.base "!builtin.memref"
    %attr_repeat = irdl.base "#builtin.integer"
    %attr_mask = irdl.base "#builtin.integer"
    %attr_dst_blk_stride = irdl.base "#builtin.integer"
    %attr_dst_rep_stride = irdl.base "#builtin.integer"
    %attr_src_blk_stride = irdl.base "#builtin.integer"
    %attr_src_rep_stride = irdl.base "#builtin.integer"
    %attr_scalar = irdl.base "#builtin.float"
    irdl.operands(dst: %dst, src: %src)
    irdl.attributes {"repeat" = %attr_repeat, "mask" = %attr_mask, "dst_blk_stride" = %attr_dst_blk_stride, "dst_rep_stride" = %attr_dst_rep_stride, "src_blk_stride" = %attr_src_blk_stride, "src_rep_stride" = %attr_src_rep_stride, "scalar" = %attr_scalar}
  }

  // ===== Vector, unary (pipe V) =====

  // dst = max(src, 0)
  irdl.operation @vrelu {
    %dst = irdl.base "!builtin.memref"
    %src = irdl.base "!builtin.memref"
    %attr_repeat = irdl.base "#builtin.integer"
    %attr_mask = irdl.base "#builtin.integer"
    %attr_dst_blk_stride = irdl.base "#builtin.integer"
    %attr_dst_rep_stride = irdl.base "#builtin.integer"
    %attr_src_blk_stride = irdl.base "#builtin.integer"
    %attr_src_rep_stride = irdl.base "#builtin.integer"
    irdl.operands(dst: %dst, src: %src)
    irdl.attributes {"repeat" = %attr_repeat, "mask" = %attr_mask, "dst_blk_stride" = %attr_dst_blk_stride, "dst_rep_stride" = %attr_dst_rep_stride, "src_blk_stride" = %attr_src_blk_stride, "src_rep_stride" = %attr_src_rep_stride}
  }

  // dst = |src|
  irdl.operation @vabs {
    %dst = irdl.base "!builtin.memref"
    %src = irdl.base "!builtin.memref"
    %attr_repeat = irdl.base "#builtin.integer"
    %attr_mask = irdl.base "#builtin.integer"
    %attr_dst_blk_stride = irdl.base "#builtin.integer"
    %attr_dst_rep_stride = irdl.base "#builtin.integer"
    %attr_src_blk_stride = irdl.base "#builtin.integer"
    %attr_src_rep_stride = irdl.base "#builtin.integer"
    irdl.operands(dst: %dst, src: %src)
    irdl.attributes {"repeat" = %attr_repeat, "mask" = %attr_mask, "dst_blk_stride" = %attr_dst_blk_stride, "dst_rep_stride" = %attr_dst_rep_stride, "src_blk_stride" = %attr_src_blk_stride, "src_rep_stride" = %attr_src_rep_stride}
  }

  // dst = exp(src)
  irdl.operation @vexp {
    %dst = irdl.base "!builtin.memref"
    %src = irdl.base "!builtin.memref"
    %attr_repeat = irdl.base "#builtin.integer"
    %attr_mask = irdl.base "#builtin.integer"
    %attr_dst_blk_stride = irdl.base "#builtin.integer"
    %attr_dst_rep_stride = irdl.base "#builtin.integer"
    %attr_src_blk_stride = irdl.base "#builtin.integer"
    %attr_src_rep_stride = irdl.base "#builtin.integer"
    irdl.operands(dst: %dst, src: %src)
    irdl.attributes {"repeat" = %attr_repeat, "mask" = %attr_mask, "dst_blk_stride" = %attr_dst_blk_stride, "dst_rep_stride" = %attr_dst_rep_stride, "src_blk_stride" = %attr_src_blk_stride, "src_rep_stride" = %attr_src_rep_stride}
  }

  // dst = ln(src)
  irdl.operation @vln {
    %dst = irdl.base "!builtin.memref"
    %src = irdl.base "!builtin.memref"
    %attr_repeat = irdl.base "#builtin.integer"
    %attr_mask = irdl.base "#builtin.integer"
    %attr_dst_blk_stride = irdl.base "#builtin.integer"
    %attr_dst_rep_stride = irdl.base "#builtin.integer"
    %attr_src_blk_stride = irdl.base "#builtin.integer"
    %attr_src_rep_stride = irdl.base "#builtin.integer"
    irdl.operands(dst: %dst, src: %src)
    irdl.attributes {"repeat" = %attr_repeat, "mask" = %attr_mask, "dst_blk_stride" = %attr_dst_blk_stride, "dst_rep_stride" = %attr_dst_rep_stride, "src_blk_stride" = %attr_src_blk_stride, "src_rep_stride" = %attr_src_rep_stride}
  }

  // dst = sqrt(src)
  irdl.operation @vsqrt {
    %dst = irdl.base "!builtin.memref"
    %src = irdl.base "!builtin.memref"
    %attr_repeat = irdl.base "#builtin.integer"
    %attr_mask = irdl.base "#builtin.integer"
    %attr_dst_blk_stride = irdl.base "#builtin.integer"
    %attr_dst_rep_stride = irdl.base "#builtin.integer"
    %attr_src_blk_stride = irdl.base "#builtin.integer"
    %attr_src_rep_stride = irdl.base "#builtin.integer"
    irdl.operands(dst: %dst, src: %src)
    irdl.attributes {"repeat" = %attr_repeat, "mask" = %attr_mask, "dst_blk_stride" = %attr_dst_blk_stride, "dst_rep_stride" = %attr_dst_rep_stride, "src_blk_stride" = %attr_src_blk_stride, "src_rep_stride" = %attr_src_rep_stride}
  }

  // dst = 1/sqrt(src)
  irdl.operation @vrsqrt {
    %dst = irdl.base "!builtin.memref"
    %src = irdl.base "!builtin.memref"
    %attr_repeat = irdl.base "#builtin.integer"
    %attr_mask = irdl.base "#builtin.integer"
    %attr_dst_blk_stride = irdl.base "#builtin.integer"
    %attr_dst_rep_stride = irdl.base "#builtin.integer"
    %attr_src_blk_stride = irdl.base "#builtin.integer"
    %attr_src_rep_stride = irdl.base "#builtin.integer"
    irdl.operands(dst: %dst, src: %src)
    irdl.attributes {"repeat" = %attr_repeat, "mask" = %attr_mask, "dst_blk_stride" = %attr_dst_blk_stride, "dst_rep_stride" = %attr_dst_rep_stride, "src_blk_stride" = %attr_src_blk_stride, "src_rep_stride" = %attr_src_rep_stride}
  }

  // dst = 1/src
  irdl.operation @vrec {
    %dst = irdl.base "!builtin.memref"
    %src = irdl.base "!builtin.memref"
    %attr_repeat = irdl.base "#builtin.integer"
    %attr_mask = irdl.base "#builtin.integer"
    %attr_dst_blk_stride = irdl.base "#builtin.integer"
    %attr_dst_rep_stride = irdl.base "#builtin.integer"
    %attr_src_blk_stride = irdl.base "#builtin.integer"
    %attr_src_rep_stride = irdl.base "#builtin.integer"
    irdl.operands(dst: %dst, src: %src)
    irdl.attributes {"repeat" = %attr_repeat, "mask" = %attr_mask, "dst_blk_stride" = %attr_dst_blk_stride, "dst_rep_stride" = %attr_dst_rep_stride, "src_blk_stride" = %attr_src_blk_stride, "src_rep_stride" = %attr_src_rep_stride}
  }

  // dst = convert(src) between the two element types, rounding per round_mode
  irdl.operation @vconv {
    %dst = irdl.base "!builtin.memref"
    %src = irdl.base "!builtin.memref"
    %attr_repeat = irdl.base "#builtin.integer"
    %attr_mask = irdl.base "#builtin.integer"
    %attr_dst_blk_stride = irdl.base "#builtin.integer"
    %attr_dst_rep_stride = irdl.base "#builtin.integer"
    %attr_src_blk_stride = irdl.base "#builtin.integer"
    %attr_src_rep_stride = irdl.base "#builtin.integer"
    %attr_round_mode_0 = irdl.is "rint"
    %attr_round_mode_1 = irdl.is "floor"
    %attr_round_mode_2 = irdl.is "ceil"
    %attr_round_mode_3 = irdl.is "trunc"
    %attr_round_mode_4 = irdl.is "round"
    %attr_round_mode_5 = irdl.is "none"
    %attr_round_mode = irdl.any_of(%attr_round_mode_0, %attr_round_mode_1, %attr_round_mode_2, %attr_round_mode_3, %attr_round_mode_4, %attr_round_mode_5)
    irdl.operands(dst: %dst, src: %src)
    irdl.attributes {"repeat" = %attr_repeat, "mask" = %attr_mask, "dst_blk_stride" = %attr_dst_blk_stride, "dst_rep_stride" = %attr_dst_rep_stride, "src_blk_stride" = %attr_src_blk_stride, "src_rep_stride" = %attr_src_rep_stride, "round_mode" = %attr_round_mode}
  }

  // dst = scalar on every active lane
  irdl.operation @vdup {
    %dst = irdl.base "!builtin.memref"
    %attr_repeat = irdl.base "#builtin.integer"
    %attr_mask = irdl.base "#builtin.integer"
    %attr_dst_blk_stride = irdl.base "#builtin.integer"
    %attr_dst_rep_stride = irdl.base "#builtin.integer"
    %attr_scalar = irdl.base "#builtin.float"
    irdl.operands(dst: %dst)
    irdl.attributes {"repeat" = %attr_repeat, "mask" = %attr_mask, "dst_blk_stride" = %attr_dst_blk_stride, "dst_rep_stride" = %attr_dst_rep_stride, "scalar" = %attr_scalar}
  }

  // ===== Vector, cross-lane reductions (pipe V) =====

  // dst[r*dst_rep_stride] = sum of the active lanes of repeat r
  irdl.operation @vcadd {
    %dst = irdl.base "!builtin.memref"
    %src = irdl.base "!builtin.memref"
    %attr_repeat = irdl.base "#builtin.integer"
    %attr_mask = irdl.base "#builtin.integer"
    %attr_src_blk_stride = irdl.base "#builtin.integer"
    %attr_src_rep_stride = irdl.base "#builtin.integer"
    %attr_dst_rep_stride = irdl.base "#builtin.integer"
    irdl.operands(dst: %dst, src: %src)
    irdl.attributes {"repeat" = %attr_repeat, "mask" = %attr_mask, "src_blk_stride" = %attr_src_blk_stride, "src_rep_stride" = %attr_src_rep_stride, "dst_rep_stride" = %attr_dst_rep_stride}
  }

  // dst[r*dst_rep_stride] = max of the active lanes of repeat r
  irdl.operation @vcmax {
    %dst = irdl.base "!builtin.memref"
    %src = irdl.base "!builtin.memref"
    %attr_repeat = irdl.base "#builtin.integer"
    %attr_mask = irdl.base "#builtin.integer"
    %attr_src_blk_stride = irdl.base "#builtin.integer"
    %attr_src_rep_stride = irdl.base "#builtin.integer"
    %attr_dst_rep_stride = irdl.base "#builtin.integer"
    irdl.operands(dst: %dst, src: %src)
    irdl.attributes {"repeat" = %attr_repeat, "mask" = %attr_mask, "src_blk_stride" = %attr_src_blk_stride, "src_rep_stride" = %attr_src_rep_stride, "dst_rep_stride" = %attr_dst_rep_stride}
  }

  // min over each repeat's active lanes, one element per repeat
  irdl.operation @vcmin {
    %dst = irdl.base "!builtin.memref"
    %src = irdl.base "!builtin.memref"
    %attr_repeat = irdl.base "#builtin.integer"
    %attr_mask = irdl.base "#builtin.integer"
    %attr_src_blk_stride = irdl.base "#builtin.integer"
    %attr_src_rep_stride = irdl.base "#builtin.integer"
    %attr_dst_rep_stride = irdl.base "#builtin.integer"
    irdl.operands(dst: %dst, src: %src)
    irdl.attributes {"repeat" = %attr_repeat, "mask" = %attr_mask, "src_blk_stride" = %attr_src_blk_stride, "src_rep_stride" = %attr_src_rep_stride, "dst_rep_stride" = %attr_dst_rep_stride}
  }

  // dst (i8) = src0 <predicate> src1 ? 1 : 0
  irdl.operation @vcmp {
    %dst = irdl.base "!builtin.memref"
    %src0 = irdl.base "!builtin.memref"
    %src1 = irdl.base "!builtin.memref"
    %attr_repeat = irdl.base "#builtin.integer"
    %attr_mask = irdl.base "#builtin.integer"
    %attr_dst_blk_stride = irdl.base "#builtin.integer"
    %attr_dst_rep_stride = irdl.base "#builtin.integer"
    %attr_src0_blk_stride = irdl.base "#builtin.integer"
    %attr_src0_rep_stride = irdl.base "#builtin.integer"
    %attr_src1_blk_stride = irdl.base "#builtin.integer"
    %attr_src1_rep_stride = irdl.base "#builtin.integer"
    %attr_predicate_0 = irdl.is "eq"
    %attr_predicate_1 = irdl.is "ne"
    %attr_predicate_2 = irdl.is "lt"
    %attr_predicate_3 = irdl.is "le"
    %attr_predicate_4 = irdl.is "gt"
    %attr_predicate_5 = irdl.is "ge"
    %attr_predicate = irdl.any_of(%attr_predicate_0, %attr_predicate_1, %attr_predicate_2, %attr_predicate_3, %attr_predicate_4, %attr_predicate_5)
    irdl.operands(dst: %dst, src0: %src0, src1: %src1)
    irdl.attributes {"repeat" = %attr_repeat, "mask" = %attr_mask, "dst_blk_stride" = %attr_dst_blk_stride, "dst_rep_stride" = %attr_dst_rep_stride, "src0_blk_stride" = %attr_src0_blk_stride, "src0_rep_stride" = %attr_src0_rep_stride, "src1_blk_stride" = %attr_src1_blk_stride, "src1_rep_stride" = %attr_src1_rep_stride, "predicate" = %attr_predicate}
  }

  // dst = cond (i8) != 0 ? src0 : src1
  irdl.operation @vsel {
    %dst = irdl.base "!builtin.memref"
    %cond = irdl.base "!builtin.memref"
    %src0 = irdl.base "!builtin.memref"
    %src1 = irdl.base "!builtin.memref"
    %attr_repeat = irdl.base "#builtin.integer"
    %attr_mask = irdl.base "#builtin.integer"
    %attr_dst_blk_stride = irdl.base "#builtin.integer"
    %attr_dst_rep_stride = irdl.base "#builtin.integer"
    %attr_cond_blk_stride = irdl.base "#builtin.integer"
    %attr_cond_rep_stride = irdl.base "#builtin.integer"
    %attr_src0_blk_stride = irdl.base "#builtin.integer"
    %attr_src0_rep_stride = irdl.base "#builtin.integer"
    %attr_src1_blk_stride = irdl.base "#builtin.integer"
    %attr_src1_rep_stride = irdl.base "#builtin.integer"
    irdl.operands(dst: %dst, cond: %cond, src0: %src0, src1: %src1)
    irdl.attributes {"repeat" = %attr_repeat, "mask" = %attr_mask, "dst_blk_stride" = %attr_dst_blk_stride, "dst_rep_stride" = %attr_dst_rep_stride, "cond_blk_stride" = %attr_cond_blk_stride, "cond_rep_stride" = %attr_cond_rep_stride, "src0_blk_stride" = %attr_src0_blk_stride, "src0_rep_stride" = %attr_src0_rep_stride, "src1_blk_stride" = %attr_src1_blk_stride, "src1_rep_stride" = %attr_src1_rep_stride}
  }

  // 16x16 transpose of rows at src_offsets to rows at dst_offsets (32-byte blocks)
  irdl.operation @vnchwconv {
    %dst = irdl.base "!builtin.memref"
    %src = irdl.base "!builtin.memref"
    %attr_repeat = irdl.base "#builtin.integer"
    %attr_src_offsets = irdl.base "#builtin.dense_array"
    %attr_dst_offsets = irdl.base "#builtin.dense_array"
    %attr_src_rep_stride = irdl.base "#builtin.integer"
    %attr_dst_rep_stride = irdl.base "#builtin.integer"
    irdl.operands(dst: %dst, src: %src)
    irdl.attributes {"repeat" = %attr_repeat, "src_offsets" = %attr_src_offsets, "dst_offsets" = %attr_dst_offsets, "src_rep_stride" = %attr_src_rep_stride, "dst_rep_stride" = %attr_dst_rep_stride}
  }

  // ===== Synchronisation =====

  // raise event `event` of pipe pair (src, dst) once pipe src has drained
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

  // pipe dst stalls until event `event` of (src, dst) is raised, then consumes it
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

  // later instructions of `pipe` ("ALL": of every pipe) wait for earlier ones
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

  // the chip-wide barrier of a multi-core launch: this core's pipes finish
  // everything before it, then every core waits until all cores reach it
  irdl.operation @sync_all {
  }
}

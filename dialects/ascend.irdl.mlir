// The `ascend` dialect: coarse tensor ops on GM memrefs, destination-passing
// style (the last operand is the output; no results).
//
// Contract: dialects/README.md. IRDL checks operand kinds and attributes;
// shapes, element types and memory spaces are checked by ascend.py.
// Each constraint has its own SSA value: IRDL unifies the uses of one value,
// so sharing it would force two operands (or attributes) to be equal.
irdl.dialect @ascend {

  // ===== Cube =====

  // C (Nz [K1,M1,16,16]) = A (Nz [N1,M1,16,16]) x B (Nz [K1,N1,16,16])
  irdl.operation @matmul {
    %a = irdl.base "!builtin.memref"
    %b = irdl.base "!builtin.memref"
    %c = irdl.base "!builtin.memref"
    irdl.operands(a: %a, b: %b, c: %c)
  }

  // matmul with one leading batch dimension on all three operands
  irdl.operation @batch_matmul {
    %a = irdl.base "!builtin.memref"
    %b = irdl.base "!builtin.memref"
    %c = irdl.base "!builtin.memref"
    irdl.operands(a: %a, b: %b, c: %c)
  }

  // out [N, Cout, Ho, Wo] = conv2d(input [N, C, H, W], weight [Cout, C/groups,
  // Kh, Kw]) (+ bias [Cout]), NCHW on GM; pads (top, left, bottom, right) are
  // zeros; Ho = (H + top + bottom - dh*(Kh-1) - 1) / sh + 1 (floor), same for Wo
  irdl.operation @conv2d {
    %input = irdl.base "!builtin.memref"
    %weight = irdl.base "!builtin.memref"
    %bias = irdl.base "!builtin.memref"
    %out = irdl.base "!builtin.memref"
    %attr_strides = irdl.base "#builtin.dense_array"
    %attr_pads = irdl.base "#builtin.dense_array"
    %attr_dilations = irdl.base "#builtin.dense_array"
    %attr_groups = irdl.base "#builtin.integer"
    irdl.operands(input: %input, weight: %weight, bias: optional %bias, out: %out)
    irdl.attributes {"strides" = %attr_strides, "pads" = %attr_pads,
                     "dilations" = %attr_dilations, "groups" = %attr_groups}
  }

  // ===== Layout =====

  // ND [...,R,C] -> Nz [...,ceil(C/16),ceil(R/16),16,16], zero padding
  irdl.operation @fractalize {
    %src = irdl.base "!builtin.memref"
    %dst = irdl.base "!builtin.memref"
    irdl.operands(src: %src, dst: %dst)
  }

  // Nz -> ND, inverse of fractalize
  irdl.operation @defractalize {
    %src = irdl.base "!builtin.memref"
    %dst = irdl.base "!builtin.memref"
    irdl.operands(src: %src, dst: %dst)
  }

  // out.shape[i] = in.shape[permutation[i]]
  irdl.operation @transpose {
    %in = irdl.base "!builtin.memref"
    %out = irdl.base "!builtin.memref"
    %attr_permutation = irdl.base "#builtin.dense_array"
    irdl.operands(in: %in, out: %out)
    irdl.attributes {"permutation" = %attr_permutation}
  }

  // out = take(table, indices, axis): rows of `table` along `axis` chosen by
  // i32 `indices` (negative ones count from the end, ONNX Gather); out shape =
  // table.shape[:axis] + indices.shape + table.shape[axis+1:]
  irdl.operation @gather {
    %table = irdl.base "!builtin.memref"
    %indices = irdl.base "!builtin.memref"
    %out = irdl.base "!builtin.memref"
    %attr_axis = irdl.base "#builtin.integer"
    irdl.operands(table: %table, indices: %indices, out: %out)
    irdl.attributes {"axis" = %attr_axis}
  }

  // out[p] = data[p with p[axis] replaced by indices[p]] (ONNX GatherElements,
  // numpy take_along_axis): indices i32 of data's rank (negative ones count
  // from the end of axis), out shape = indices shape
  irdl.operation @gather_elements {
    %data = irdl.base "!builtin.memref"
    %indices = irdl.base "!builtin.memref"
    %out = irdl.base "!builtin.memref"
    %attr_axis = irdl.base "#builtin.integer"
    irdl.operands(data: %data, indices: %indices, out: %out)
    irdl.attributes {"axis" = %attr_axis}
  }

  // ===== Elementwise, binary with numpy broadcasting to out's shape =====

  // out = lhs + rhs
  irdl.operation @add {
    %lhs = irdl.base "!builtin.memref"
    %rhs = irdl.base "!builtin.memref"
    %out = irdl.base "!builtin.memref"
    irdl.operands(lhs: %lhs, rhs: %rhs, out: %out)
  }

  // out = lhs - rhs
  irdl.operation @sub {
    %lhs = irdl.base "!builtin.memref"
    %rhs = irdl.base "!builtin.memref"
    %out = irdl.base "!builtin.memref"
    irdl.operands(lhs: %lhs, rhs: %rhs, out: %out)
  }

  // out = lhs * rhs
  irdl.operation @mul {
    %lhs = irdl.base "!builtin.memref"
    %rhs = irdl.base "!builtin.memref"
    %out = irdl.base "!builtin.memref"
    irdl.operands(lhs: %lhs, rhs: %rhs, out: %out)
  }

  // out = lhs / rhs
  irdl.operation @div {
    %lhs = irdl.base "!builtin.memref"
    %rhs = irdl.base "!builtin.memref"
    %out = irdl.base "!builtin.memref"
    irdl.operands(lhs: %lhs, rhs: %rhs, out: %out)
  }

  // out = max(lhs, rhs)
  irdl.operation @max {
    %lhs = irdl.base "!builtin.memref"
    %rhs = irdl.base "!builtin.memref"
    %out = irdl.base "!builtin.memref"
    irdl.operands(lhs: %lhs, rhs: %rhs, out: %out)
  }

  // out = min(lhs, rhs)
  irdl.operation @min {
    %lhs = irdl.base "!builtin.memref"
    %rhs = irdl.base "!builtin.memref"
    %out = irdl.base "!builtin.memref"
    irdl.operands(lhs: %lhs, rhs: %rhs, out: %out)
  }

  // ===== Elementwise with a scalar =====

  // out = in + scalar
  irdl.operation @adds {
    %in = irdl.base "!builtin.memref"
    %out = irdl.base "!builtin.memref"
    %attr_scalar = irdl.base "#builtin.float"
    irdl.operands(in: %in, out: %out)
    irdl.attributes {"scalar" = %attr_scalar}
  }

  // out = in * scalar
  irdl.operation @muls {
    %in = irdl.base "!builtin.memref"
    %out = irdl.base "!builtin.memref"
    %attr_scalar = irdl.base "#builtin.float"
    irdl.operands(in: %in, out: %out)
    irdl.attributes {"scalar" = %attr_scalar}
  }

  // out = max(in, scalar)
  irdl.operation @maxs {
    %in = irdl.base "!builtin.memref"
    %out = irdl.base "!builtin.memref"
    %attr_scalar = irdl.base "#builtin.float"
    irdl.operands(in: %in, out: %out)
    irdl.attributes {"scalar" = %attr_scalar}
  }

  // out = min(in, scalar)
  irdl.operation @mins {
    %in = irdl.base "!builtin.memref"
    %out = irdl.base "!builtin.memref"
    %attr_scalar = irdl.base "#builtin.float"
    irdl.operands(in: %in, out: %out)
    irdl.attributes {"scalar" = %attr_scalar}
  }

  // ===== Elementwise, unary =====

  // out = max(x, 0)
  irdl.operation @relu {
    %in = irdl.base "!builtin.memref"
    %out = irdl.base "!builtin.memref"
    irdl.operands(in: %in, out: %out)
  }

  // out = |x|
  irdl.operation @abs {
    %in = irdl.base "!builtin.memref"
    %out = irdl.base "!builtin.memref"
    irdl.operands(in: %in, out: %out)
  }

  // out = -x
  irdl.operation @neg {
    %in = irdl.base "!builtin.memref"
    %out = irdl.base "!builtin.memref"
    irdl.operands(in: %in, out: %out)
  }

  // out = exp(x)
  irdl.operation @exp {
    %in = irdl.base "!builtin.memref"
    %out = irdl.base "!builtin.memref"
    irdl.operands(in: %in, out: %out)
  }

  // out = ln(x)
  irdl.operation @ln {
    %in = irdl.base "!builtin.memref"
    %out = irdl.base "!builtin.memref"
    irdl.operands(in: %in, out: %out)
  }

  // out = sqrt(x)
  irdl.operation @sqrt {
    %in = irdl.base "!builtin.memref"
    %out = irdl.base "!builtin.memref"
    irdl.operands(in: %in, out: %out)
  }

  // out = 1/sqrt(x)
  irdl.operation @rsqrt {
    %in = irdl.base "!builtin.memref"
    %out = irdl.base "!builtin.memref"
    irdl.operands(in: %in, out: %out)
  }

  // out = 1/x
  irdl.operation @reciprocal {
    %in = irdl.base "!builtin.memref"
    %out = irdl.base "!builtin.memref"
    irdl.operands(in: %in, out: %out)
  }

  // out = tanh(x)
  irdl.operation @tanh {
    %in = irdl.base "!builtin.memref"
    %out = irdl.base "!builtin.memref"
    irdl.operands(in: %in, out: %out)
  }

  // out = 1/(1+exp(-x))
  irdl.operation @sigmoid {
    %in = irdl.base "!builtin.memref"
    %out = irdl.base "!builtin.memref"
    irdl.operands(in: %in, out: %out)
  }

  // out = convert(in), rounding per round_mode
  irdl.operation @cast {
    %in = irdl.base "!builtin.memref"
    %out = irdl.base "!builtin.memref"
    %attr_round_mode_0 = irdl.is "rint"
    %attr_round_mode_1 = irdl.is "floor"
    %attr_round_mode_2 = irdl.is "ceil"
    %attr_round_mode_3 = irdl.is "trunc"
    %attr_round_mode_4 = irdl.is "round"
    %attr_round_mode_5 = irdl.is "none"
    %attr_round_mode = irdl.any_of(%attr_round_mode_0, %attr_round_mode_1, %attr_round_mode_2, %attr_round_mode_3, %attr_round_mode_4, %attr_round_mode_5)
    irdl.operands(in: %in, out: %out)
    irdl.attributes {"round_mode" = %attr_round_mode}
  }

  // out = min(max, max(in, min))
  irdl.operation @clamp {
    %in = irdl.base "!builtin.memref"
    %out = irdl.base "!builtin.memref"
    %attr_min = irdl.base "#builtin.float"
    %attr_max = irdl.base "#builtin.float"
    irdl.operands(in: %in, out: %out)
    irdl.attributes {"min" = %attr_min, "max" = %attr_max}
  }

  // out = erf(x)
  irdl.operation @erf {
    %in = irdl.base "!builtin.memref"
    %out = irdl.base "!builtin.memref"
    irdl.operands(in: %in, out: %out)
  }

  // ===== Comparison, selection, broadcast =====

  // out (i8) = lhs <predicate> rhs ? 1 : 0, numpy broadcasting to out's shape
  irdl.operation @cmp {
    %lhs = irdl.base "!builtin.memref"
    %rhs = irdl.base "!builtin.memref"
    %out = irdl.base "!builtin.memref"
    %attr_predicate_0 = irdl.is "eq"
    %attr_predicate_1 = irdl.is "ne"
    %attr_predicate_2 = irdl.is "lt"
    %attr_predicate_3 = irdl.is "le"
    %attr_predicate_4 = irdl.is "gt"
    %attr_predicate_5 = irdl.is "ge"
    %attr_predicate = irdl.any_of(%attr_predicate_0, %attr_predicate_1, %attr_predicate_2, %attr_predicate_3, %attr_predicate_4, %attr_predicate_5)
    irdl.operands(lhs: %lhs, rhs: %rhs, out: %out)
    irdl.attributes {"predicate" = %attr_predicate}
  }

  // out = cond != 0 ? a : b, numpy broadcasting of all three to out's shape
  irdl.operation @select {
    %cond = irdl.base "!builtin.memref"
    %a = irdl.base "!builtin.memref"
    %b = irdl.base "!builtin.memref"
    %out = irdl.base "!builtin.memref"
    irdl.operands(cond: %cond, a: %a, b: %b, out: %out)
  }

  // out = numpy.broadcast_to(in, out.shape)
  irdl.operation @broadcast {
    %in = irdl.base "!builtin.memref"
    %out = irdl.base "!builtin.memref"
    irdl.operands(in: %in, out: %out)
  }

  // ===== Data movement: slices =====

  // out[i] = in[offsets + i * strides] per dimension (strides nonzero; negative reverses)
  irdl.operation @slice {
    %in = irdl.base "!builtin.memref"
    %out = irdl.base "!builtin.memref"
    %attr_offsets = irdl.base "#builtin.dense_array"
    %attr_strides = irdl.base "#builtin.dense_array"
    irdl.operands(in: %in, out: %out)
    irdl.attributes {"offsets" = %attr_offsets, "strides" = %attr_strides}
  }

  // out[offsets + i] = in[i]; the rest of out keeps its value (Concat is one per input)
  irdl.operation @insert_slice {
    %in = irdl.base "!builtin.memref"
    %out = irdl.base "!builtin.memref"
    %attr_offsets = irdl.base "#builtin.dense_array"
    irdl.operands(in: %in, out: %out)
    irdl.attributes {"offsets" = %attr_offsets}
  }

  // ===== Reductions along one axis (optional `axis : i64`, default -1) =====

  // out = sum over the axis (removed, or kept as size 1)
  irdl.operation @reduce_sum {
    %in = irdl.base "!builtin.memref"
    %out = irdl.base "!builtin.memref"
    irdl.operands(in: %in, out: %out)
  }

  // out = max over the axis (removed, or kept as size 1)
  irdl.operation @reduce_max {
    %in = irdl.base "!builtin.memref"
    %out = irdl.base "!builtin.memref"
    irdl.operands(in: %in, out: %out)
  }

  // out = min over the axis (removed, or kept as size 1)
  irdl.operation @reduce_min {
    %in = irdl.base "!builtin.memref"
    %out = irdl.base "!builtin.memref"
    irdl.operands(in: %in, out: %out)
  }

  // ===== Pooling (dialects/ascend_pool.py) =====

  // 2-D pooling of an NCHW tensor: kind "max" | "sum" | "avg", kernel [kh, kw],
  // strides [sh, sw], dilations [dh, dw], pads [top, left, bottom, right];
  // avg divides by kh*kw (count_include_pad = 1) or by the kernel points
  // inside the unpadded input (0)
  irdl.operation @pool2d {
    %in = irdl.base "!builtin.memref"
    %out = irdl.base "!builtin.memref"
    %attr_kind_0 = irdl.is "max"
    %attr_kind_1 = irdl.is "sum"
    %attr_kind_2 = irdl.is "avg"
    %attr_kind = irdl.any_of(%attr_kind_0, %attr_kind_1, %attr_kind_2)
    %attr_kernel = irdl.base "#builtin.dense_array"
    %attr_strides = irdl.base "#builtin.dense_array"
    %attr_dilations = irdl.base "#builtin.dense_array"
    %attr_pads = irdl.base "#builtin.dense_array"
    %attr_count_include_pad = irdl.base "#builtin.integer"
    irdl.operands(in: %in, out: %out)
    irdl.attributes {"kind" = %attr_kind, "kernel" = %attr_kernel, "strides" = %attr_strides, "dilations" = %attr_dilations, "pads" = %attr_pads, "count_include_pad" = %attr_count_include_pad}
  }
}

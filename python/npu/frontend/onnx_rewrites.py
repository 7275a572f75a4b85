"""The graph rewrites between constant folding and torch-mlir, in their order.

Each rewrite (a module of its own) writes nodes that torch-mlir imports, or
that lower better, in place of ones it cannot or that lower worse. This
module holds only their order, and the reasons for it: the QDQ and integer
products first (they read the quantised weights), then the folds of
constants into weights (BatchNorm before the summed convs and the patch
convs, which read conv weights), then the expansions of single nodes, the
LayerNorms' rows after the unit transposes around them, and the MatMuls'
shapes after every rewrite that writes a MatMul. `types` is the one shape
inference of the folded model; a rewrite that makes a value adds its type.
"""

from __future__ import annotations

from typing import Callable

from npu.frontend import (onnx_attention_bias, onnx_batchnorm, onnx_computed_gather, onnx_conv,
                          onnx_conv1d, onnx_conv_integer, onnx_conv_sums, onnx_cumsum, onnx_gelu,
                          onnx_hard_activations, onnx_instance_norm, onnx_int_div, onnx_int_pow,
                          onnx_layer_scale, onnx_layernorm_rows, onnx_matmul_integer,
                          onnx_matmul_shapes, onnx_packed_attention, onnx_packed_qkv, onnx_pad, onnx_pow,
                          onnx_qdq_float, onnx_reduce_norms, onnx_resize, onnx_rotate_half,
                          onnx_slice_steps, onnx_small_ints, onnx_space_to_depth, onnx_spatial_means,
                          onnx_unit_transposes)


def rewrite_for_import(model, types: dict, fail: Callable, remark: Callable[[str], None]) -> None:
    """Rewrite (in place) the folded `model` for torch-mlir; `fail` raises a
    located error, `remark` says what a rewrite chose."""
    onnx_qdq_float.rewrite_qdq_in_float(model, types, remark)
    onnx_matmul_integer.rewrite_matmul_integers(model, types, fail, remark)
    onnx_conv_integer.rewrite_conv_integers(model, types, fail, remark)
    onnx_batchnorm.fold_batchnorms(model)  # before the patch-conv rewrite reads Conv weights
    onnx_layer_scale.fold_layer_scales(model, types)
    onnx_conv_sums.fold_summed_convs(model)  # after the BNs are in the convs' weights
    onnx_conv1d.convs_as_2d(model, types)
    onnx_instance_norm.expand_instance_norms(model, types)
    onnx_cumsum.expand_cumsums(model, types)
    onnx_reduce_norms.expand_reduce_norms(model, types)
    onnx_computed_gather.gathers_as_one_hot(model, types)
    onnx_rotate_half.rotate_halves_as_matmuls(model, types)
    onnx_conv.rewrite_patch_convs(model)
    onnx_gelu.expand_tanh_gelus(model)
    onnx_hard_activations.expand_hard_activations(model, types)
    onnx_spatial_means.pools_for_spatial_means(model, types)
    onnx_pad.expand_constant_pads(model, types)
    onnx_packed_attention.unpack_attentions(model, types)  # before its batch-1 transposes are read
    onnx_packed_qkv.split_packed_projections(model, types)
    onnx_space_to_depth.concats_as_space_to_depth(model, types)
    onnx_resize.resizes_as_matmuls(model, types, fail)  # its MatMuls before their shapes are read
    onnx_attention_bias.merge_attention_biases(model, types)
    onnx_pow.expand_tensor_pows(model, types)
    onnx_int_pow.expand_integer_pows(model, fail, types)
    onnx_small_ints.rewrite_small_int_ops(model, types)
    onnx_int_div.rewrite_int_divs(model, types)
    onnx_unit_transposes.rewrite_unit_transposes(model, types)  # before the LayerNorms' rows are read
    onnx_layernorm_rows.flatten_layernorm_rows(model, types)
    onnx_matmul_shapes.rewrite_matmul_shapes(model, types)
    onnx_slice_steps.clamp_negative_step_starts(model, types)

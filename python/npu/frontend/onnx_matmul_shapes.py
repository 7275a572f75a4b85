"""MatMul operands the cube path does not take as they are, reshaped in ONNX.

* A 1-D operand: ONNX (like numpy) makes a vector a one-row matrix on the
  left or a one-column matrix on the right and drops that dimension from
  the result. torch-mlir cannot lower a vector against a batch, nor the
  vector-vector dot product to anything the conversion takes; written as
  `Unsqueeze -> MatMul -> Squeeze` it is an ordinary matmul (an f32 dot
  product takes the vector form below).
* Batches of tiny matrices: `npu-lower-fractalize` cannot lay out a batch
  of matrices smaller than one 32-byte block whose rows are not whole
  blocks (the end-of-tensor window would leave the last matrix). In f32,
  when the products are few (`VECTOR_MAX_PRODUCTS`), they are computed on
  the vector unit in f32: `ReduceSum(Unsqueeze(A, -1) * Unsqueeze(B, -3),
  -2)` (the cube would round f32 operands to f16, off by more than ONNX's
  1e-3 on such sums, and pad each matrix to a 16x16 fractal anyway).
  Otherwise the operands are padded with zeros along K (to a whole f16
  block, 16) and N (to 16), which adds only zero products, and the result
  is sliced back.
* A batch of rows against one matrix (`[..., M, K] x [K, N]`, the leading
  dimensions more than one matrix: ConvNeXt's pointwise layers on NHWC
  maps, a batch of sequences): torch-mlir broadcasts B over the batch, so
  the host would store B once per matrix and the cube read every copy. The
  rows of every matrix are rows of one `[L*M, K] x [K, N]` product, whose
  result is reshaped back.
"""

from __future__ import annotations

import numpy as np

BLOCK_BYTES = 32          # target.vector_block_bytes of both targets
PAD_TO = 16               # elements: a whole 32-byte block of f16 (the cube's operand type)
# Batches of tiny f32 matrices with at most this many products (batch*M*K*N)
# run on the vector unit in f32. A tool limit: the products are one tensor.
VECTOR_MAX_PRODUCTS = 16384


def _small(rows: int, cols: int, itemsize: int) -> bool:
    """A matrix under one block whose rows are not whole blocks."""
    return rows * cols * itemsize < BLOCK_BYTES and (cols * itemsize) % BLOCK_BYTES != 0


def rewrite_matmul_shapes(model, types: dict | None = None) -> list[str]:
    """Rewrite (in place) the MatMuls above; their names."""
    if not any(n.op_type == "MatMul" for n in model.graph.node):
        return []
    from npu.frontend.onnx_expansion import rewrite_nodes

    def expand(node, types: dict, expansion) -> bool:
        a_dims, elem = types.get(node.input[0], (None, 0)) if node.op_type == "MatMul" else (None, 0)
        b_dims = types.get(node.input[1], (None, 0))[0] if node.op_type == "MatMul" else None
        if node.domain not in ("", "ai.onnx") or a_dims is None or b_dims is None or elem not in (1, 10) \
                or 0 in a_dims or 0 in b_dims:
            return False
        a_vec, b_vec = len(a_dims) == 1, len(b_dims) == 1
        a_m = [1] + a_dims if a_vec else a_dims
        b_m = b_dims + [1] if b_vec else b_dims
        batch = int(np.prod(np.broadcast_shapes(tuple(a_m[:-2]), tuple(b_m[:-2])), dtype=np.int64))
        (m, k), n = a_m[-2:], b_m[-1]
        out_size = 4 if elem == 1 else 2
        if len(b_dims) == 2 and len(a_dims) > 2 and batch > 1 and all(d > 0 for d in a_dims + b_dims):
            ex = expansion()
            rows = ex.make("Reshape", [node.input[0], ex.const("rows_shape", np.array([-1, k], np.int64),
                                                               np.int64)], "rows")
            product = ex.make("MatMul", [rows, node.input[1]], "mm")
            ex.final("Reshape", [product, ex.const("out_shape", np.array(a_dims[:-1] + [n], np.int64),
                                                   np.int64)], "unrows")
            return True
        pad_k = batch > 1 and (_small(m, k, 2) or _small(k, n, 2)) and k % PAD_TO != 0
        pad_n = batch > 1 and _small(m, n, out_size) and n % PAD_TO != 0
        if not (a_vec or b_vec or pad_k or pad_n):
            return False
        dtype = np.float32 if elem == 1 else np.float16
        ex = expansion()
        make = ex.make

        def step(op: str, inputs: list[str], tag: str, last: bool, **attrs) -> str:
            return (ex.final if last else ex.make)(op, inputs, tag, **attrs)

        def const(name: str, value: np.ndarray) -> str:
            return ex.const(name, value, value.dtype)

        a, b = node.input
        if a_vec:
            a = make("Unsqueeze", [a, const("a_axis", np.array([0], np.int64))], "a2")
        if b_vec:
            b = make("Unsqueeze", [b, const("b_axis", np.array([1], np.int64))], "b2")
        kp = -(-k // PAD_TO) * PAD_TO if pad_k else k
        np_ = -(-n // PAD_TO) * PAD_TO if pad_n else n
        squeeze = ([-2] if a_vec else []) + ([-1] if b_vec else [])
        products = batch * m * k * n
        if (pad_k or pad_n or (a_vec and b_vec)) and elem == 1 and products <= VECTOR_MAX_PRODUCTS:
            a = make("Unsqueeze", [a, const("a_k_axis", np.array([-1], np.int64))], "a3")
            b = make("Unsqueeze", [b, const("b_m_axis", np.array([-3], np.int64))], "b3")
            prods = make("Mul", [a, b], "products")
            result = step("ReduceSum", [prods, const("k_axis", np.array([-2], np.int64))], "mm",
                          not squeeze, keepdims=0)
        else:
            if kp > k:
                a = make("Concat", [a, const("a_pad", np.zeros(a_m[:-1] + [kp - k], dtype))], "a_k", axis=-1)
                b = make("Concat", [b, const("b_pad", np.zeros(b_m[:-2] + [kp - k, n], dtype))], "b_k", axis=-2)
            if np_ > n:
                b = make("Concat", [b, const("n_pad", np.zeros(b_m[:-2] + [kp, np_ - n], dtype))], "b_n",
                         axis=-1)
            result = step("MatMul", [a, b], "mm", not (squeeze or np_ > n))
            if np_ > n:
                result = step("Slice", [result, const("starts", np.array([0], np.int64)),
                                        const("ends", np.array([n], np.int64)),
                                        const("axes", np.array([-1], np.int64))], "sliced", not squeeze)
        if squeeze:
            ex.final("Squeeze", [result, const("squeeze", np.array(squeeze, np.int64))], "squeezed")
        return True

    return rewrite_nodes(model, types, expand)

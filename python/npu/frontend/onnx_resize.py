"""`Resize` of a 4-D NCHW map (`F.interpolate`, `nn.Upsample`) written as
matmuls by constant interpolation matrices, before torch-mlir.

A Resize of H and W is `out[n, c] = Mh @ x[n, c] @ Mw^T`, Mh [Ho, H] and
Mw [Wo, W] the per-axis matrices of `onnx_resize_weights` (a `linear`
row blends two inputs, a `nearest` row is one-hot). Measured on ascend910,
32 cores (docs/exports.md, "Resize"), the forms are, cheapest first:

* a small map: one matmul `x [N*C, H*W] @ kron(Mh, Mw)^T`, the Kronecker
  product at most `KRON_MAX_ELEMENTS` (bilinear 14x14 -> 28x28 of 128
  channels: 7,998 cycles against 53,509 for the two passes; at the limit,
  256 channels of 32x32 -> 64x64, 22,110 against 23,006);
* otherwise a pass per axis, each a matmul: W's of the map's rows by Mw^T,
  H's of the [N*C, H*W] rows by kron(Mh, I_W)^T while that is at most
  `KRON_MAX_ELEMENTS` (deeplabv3's 21 classes of 14x14 -> 224x224: 19,966
  cycles; its transposes do not lower), else of the map transposed to
  [N*C, W, H] and back by Mh^T. The H pass goes where W is the smaller:
  first when W grows. Growing through the transposes, H and W are padded
  with zeros to whole 32-byte blocks (zero rows in Mh^T and Mw^T), so both
  matmuls' A lay out as Nz on every core, not one: H by zero rows before
  the transpose, W by zero rows after it (a Concat along the last axis
  moves elements one by one). lraspp's 21 classes of 28x28 -> 224x224:
  47,998 cycles unpadded, 35,294 with both pads before the transpose,
  23,646; 32 channels of 60x60 -> 120x120: 55,966 -> 19,486. Shrinking,
  the pads cost more than they save (100x100 -> 50x50: 46,570 unpadded,
  62,437 padded before) and are not written;
* a nearest H of an integer factor t (after the W pass) is each row's t
  copies side by side, a Concat of whole rows: exact, and cheaper than
  the transposes (1,824 cycles for 64 channels of 16x16 -> 32x16);
* a 1x1 map is an Expand (every output element is the one input).

Data movement alone is slower: a nearest x2 of 256 channels of 32x32 as
an Expand of W's elements and the Concat of rows takes 56,734 cycles,
the W matmul and the Concat 12,126 (an Expand of [N, C, H, 1, W, 1],
64 channels of 16x16: 50,032; the Kronecker matmul 3,372).

The cube's operands are f16: an f32 map is rounded to f16 by each matmul
(as by every conv), so a nearest Resize is exact only in f16. A linear
pass's two weights are put on multiples of 2^-11 first, so both are f16
values and every row sums to exactly 1 (a flat map stays flat); the source
position moves by at most 2^-12 of a pixel. The Kronecker form's products
are rounded to f16 on the device.

What cannot run this way is one located error naming the node and the
attribute or input: another mode (cubic), coordinate transformation
(tf_crop_and_resize and its ROI), rank, antialias, scales or sizes
computed at run time, or a resize of N or C.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from npu.frontend import onnx_resize_weights as rw
from npu.frontend.onnx_expansion import constants
from npu.frontend.onnx_matmul_shapes import BLOCK_BYTES

# Elements of the Kronecker matrix (H*W x Ho*Wo) the one-matmul form takes:
# 8 MB as f16 operands. A choice from the measurements above, not a
# hardware number.
KRON_MAX_ELEMENTS = 1 << 22
# A linear weight's grid: 2^-11, so that w and 1 - w are both f16 values.
_WEIGHT_STEPS = 2048
_FLOATS = {1: np.float32, 10: np.float16}


@dataclass
class ResizePlan:
    """The per-axis matrices of one Resize, [out, in], and what they are."""
    dims: list[int]            # x's [N, C, H, W]
    out: list[int]             # [N, C, Ho, Wo]
    mh: np.ndarray
    mw: np.ndarray
    h_repeat: int | None       # t when the H matrix repeats each row t times
    dtype: type


def _attr(node, name: str, default):
    from onnx import helper

    a = next((a for a in node.attribute if a.name == name), None)
    value = default if a is None else helper.get_attribute_value(a)
    return value.decode() if isinstance(value, bytes) else value


def plan_resize(node, constant: Callable[[str], np.ndarray | None], types: dict, opset: int,
                fail: Callable) -> ResizePlan:
    """The matrices of `node`, or `fail`'s located error saying what of it
    does not run."""
    def refuse(what: str):
        raise fail(f"node '{node.name}' (Resize): {what}")

    mode = _attr(node, "mode", "nearest")
    if mode not in ("nearest", "linear"):
        refuse(f"mode '{mode}' is not supported (nearest, linear)")
    coords = _attr(node, "coordinate_transformation_mode", "asymmetric" if opset < 11 else "half_pixel")
    if coords not in rw.COORDINATE_MODES:
        refuse(f"coordinate_transformation_mode '{coords}' is not supported "
               f"({', '.join(rw.COORDINATE_MODES)})")
    nearest = _attr(node, "nearest_mode", "round_prefer_floor")
    if mode == "nearest" and nearest not in rw.NEAREST_MODES:
        refuse(f"nearest_mode '{nearest}' is not supported")
    if _attr(node, "antialias", 0):
        refuse("antialias 1 is not supported")
    if _attr(node, "exclude_outside", 0):
        refuse("exclude_outside 1 is not supported")
    if _attr(node, "keep_aspect_ratio_policy", "stretch") != "stretch":
        refuse(f"keep_aspect_ratio_policy '{_attr(node, 'keep_aspect_ratio_policy', '')}' is not "
               "supported (stretch)")
    dims, elem = types.get(node.input[0], (None, 0))
    if dims is None or not all(isinstance(d, int) and d > 0 for d in dims):
        refuse("input 'X' has no static shape")
    if len(dims) != 4:
        refuse(f"a {len(dims)}-D input is not supported (4-D NCHW)")
    if elem not in _FLOATS:
        refuse("only f32 and f16 maps are supported")
    rank = len(dims)
    axes = [int(a) % rank for a in (_attr(node, "axes", None) or range(rank))]
    inputs = list(node.input) + [""] * (4 - len(node.input))
    if opset < 11:  # Resize-10: (X, scales)
        inputs = [inputs[0], "", inputs[1], ""]
    scales_in, sizes_in = inputs[2], inputs[3]
    scales, out = [1.0] * rank, list(dims)
    if sizes_in:
        sizes = constant(sizes_in)
        if sizes is None:
            refuse(f"input 'sizes' ('{sizes_in}') is computed at run time (only constant sizes compile)")
        if sizes.size != len(axes):
            refuse(f"input 'sizes' has {sizes.size} values for {len(axes)} axes")
        for a, s in zip(axes, sizes.ravel().tolist()):
            out[a], scales[a] = int(s), int(s) / dims[a]
    elif scales_in:
        given = constant(scales_in)
        if given is None:
            refuse(f"input 'scales' ('{scales_in}') is computed at run time (only constant scales compile)")
        if given.size != len(axes):
            refuse(f"input 'scales' has {given.size} values for {len(axes)} axes")
        for a, s in zip(axes, given.ravel().tolist()):
            scales[a], out[a] = float(s), int(np.floor(dims[a] * np.float32(s)))
            if coords == "align_corners" and out[a] > 1 and out[a] != dims[a] * np.float32(s):
                # ONNX's reference divides by the unrounded length, onnxruntime
                # (and torch) by the output's: which one a model means is unknown
                refuse(f"coordinate_transformation_mode 'align_corners' with scale {s:g} on axis {a}, "
                       f"whose output length {dims[a]} * {s:g} is not whole, is not supported")
    else:
        refuse("neither 'scales' nor 'sizes' is given")
    if out[:2] != dims[:2]:
        refuse(f"resizing N or C ({dims[:2]} -> {out[:2]}) is not supported (only H and W)")
    if min(out) <= 0 or min(scales) <= 0:
        refuse(f"an empty or negative output size {out}")
    mats = []
    for axis in (2, 3):
        x = rw.source_coordinates(coords, dims[axis], out[axis], scales[axis])
        if mode == "nearest":
            m = np.zeros((out[axis], dims[axis]))
            m[np.arange(out[axis]), rw.nearest_indices(x, nearest, dims[axis])] = 1
        else:
            m = rw.linear_matrix(_on_f16_grid(x), dims[axis])
        mats.append(m)
    h_repeat = None
    if mode == "nearest":
        h_repeat = rw.repeat_factor(np.argmax(mats[0], axis=1), dims[2])
    return ResizePlan(list(dims), out, mats[0], mats[1], h_repeat, _FLOATS[elem])


def _on_f16_grid(coords: np.ndarray) -> np.ndarray:
    """Coordinates whose fractions are multiples of 2^-11 (see the module's
    docstring)."""
    coords = coords.astype(np.float64)
    low = np.floor(coords)
    return low + np.round((coords - low) * _WEIGHT_STEPS) / _WEIGHT_STEPS


def _identity(m: np.ndarray) -> bool:
    return m.shape[0] == m.shape[1] and np.array_equal(m, np.eye(m.shape[0]))


def emit(ex, x: str, plan: ResizePlan, types: dict, elem: int) -> None:
    """The nodes computing `plan` from `x` (the node's own output last);
    each value's type goes into `types` for the rewrites after this one."""
    n, c, h, w = plan.dims
    ho, wo = plan.out[2:]
    dt = plan.dtype

    def node(op: str, inputs: list[str], tag: str, dims: list[int], last: bool = False, **attrs) -> str:
        name = (ex.final if last else ex.make)(op, inputs, tag, **attrs)
        types[name] = (list(dims), elem)
        return name

    def const(tag: str, value: np.ndarray) -> str:
        name = ex.const(tag, value, value.dtype)
        types[name] = (list(value.shape), 7 if value.dtype == np.int64 else elem)
        return name

    shape = lambda tag, dims: const(tag, np.asarray(dims, np.int64))  # noqa: E731
    passes_h, passes_w = not _identity(plan.mh), not _identity(plan.mw)
    if not passes_h and not passes_w:
        node("Identity", [x], "identity", plan.out, last=True)
        return
    if h == w == 1:  # MobileViT's 1x1 map to 2x2: 1,714 cycles, 4,761 as a matmul
        node("Expand", [x, shape("out_shape", plan.out)], "expand", plan.out, last=True)
        return
    if passes_h and (passes_w or plan.h_repeat is None) and h * w * ho * wo <= KRON_MAX_ELEMENTS:
        rows = node("Reshape", [x, shape("flat_shape", [n * c, h * w])], "flat", [n * c, h * w])
        kron = const("kron", np.kron(plan.mh, plan.mw).T.astype(dt))
        y = node("MatMul", [rows, kron], "kron_matmul", [n * c, ho * wo])
        node("Reshape", [y, shape("out_shape", plan.out)], "out", plan.out, last=True)
        return
    h_kind = None if not passes_h else "repeat" if plan.h_repeat is not None else "kron"
    h_first = h_kind != "repeat" and wo >= w  # the H pass where W is the smaller
    if h_kind == "kron" and h * ho * (w if h_first else wo) ** 2 > KRON_MAX_ELEMENTS:
        h_kind = "transposed"
    steps = (["w"] if passes_w else [])
    if h_kind:
        steps.insert(0 if h_first else len(steps), h_kind)
    pad_h, pad_w = h, w
    if h_kind == "transposed" and h_first:  # K of both matmuls whole blocks (the docstring)
        block = BLOCK_BYTES // np.dtype(dt).itemsize
        pad_h, pad_w = -(-h // block) * block, -(-w // block) * block if passes_w else w
        x = _padded(node, const, x, [n, c, h, w], 2, pad_h, dt, "pad_h")  # rows; W's after the transpose
    cur_h, cur_w = pad_h, w
    for i, step in enumerate(steps):
        last = i == len(steps) - 1
        rows_in = [n * c * cur_h, cur_w]
        if step == "w":
            rows = node("Reshape", [x, shape("w_rows_shape", rows_in)], "w_rows", rows_in)
            y = node("MatMul", [rows, const("mw_t", _rows_to(plan.mw.T, cur_w, dt))], "w_matmul",
                     [n * c * cur_h, wo])
            cur_w = wo
        elif step == "repeat":
            rows = node("Reshape", [x, shape("h_rows_shape", rows_in)], "h_rows", rows_in)
            y = node("Concat", [rows] * plan.h_repeat, "h_repeat", [n * c * cur_h, plan.h_repeat * cur_w],
                     axis=1)
            cur_h = ho
        elif step == "kron":
            rows = node("Reshape", [x, shape("h_rows_shape", [n * c, cur_h * cur_w])], "h_rows",
                        [n * c, cur_h * cur_w])
            kron = const("h_kron", np.kron(plan.mh, np.eye(cur_w)).T.astype(dt))
            y = node("MatMul", [rows, kron], "h_matmul", [n * c, ho * cur_w])
            cur_h = ho
        else:
            t = node("Transpose", [x], "h_transpose", [n, c, cur_w, cur_h], perm=[0, 1, 3, 2])
            if h_first:  # (before the W pass: its K)
                t = _padded(node, const, t, [n, c, cur_w, cur_h], 2, pad_w, dt, "pad_w")
                cur_w = pad_w
            rows = node("Reshape", [t, shape("h_rows_shape", [n * c * cur_w, cur_h])], "h_rows",
                        [n * c * cur_w, cur_h])
            y = node("MatMul", [rows, const("mh_t", _rows_to(plan.mh.T, cur_h, dt))], "h_matmul",
                     [n * c * cur_w, ho])
            y = node("Reshape", [y, shape("h_cols_shape", [n, c, cur_w, ho])], "h_cols", [n, c, cur_w, ho])
            cur_h = ho
            x = node("Transpose", [y], "h_back", [n, c, cur_h, cur_w], last, perm=[0, 1, 3, 2])
            continue
        x = node("Reshape", [y, shape(f"{step}_out_shape", [n, c, cur_h, cur_w])], f"{step}_out",
                 [n, c, cur_h, cur_w], last)


def _padded(node, const, x: str, dims: list[int], axis: int, length: int, dtype, tag: str) -> str:
    """`x` with zeros after its end along `axis`, to `length`."""
    if length == dims[axis]:
        return x
    zeros = np.zeros(dims[:axis] + [length - dims[axis]] + dims[axis + 1:], dtype)
    return node("Concat", [x, const(f"{tag}_zeros", zeros)], tag, dims[:axis] + [length] + dims[axis + 1:],
                axis=axis)


def _rows_to(m: np.ndarray, rows: int, dtype) -> np.ndarray:
    """`m` with zero rows after its own, `rows` in all."""
    out = np.zeros((rows, m.shape[1]), dtype)
    out[:len(m)] = m
    return out


def resizes_as_matmuls(model, types: dict, fail: Callable) -> list[str]:
    """Rewrite (in place) every Resize; the names rewritten. One that cannot
    run is `fail`'s located error."""
    if not any(n.op_type == "Resize" for n in model.graph.node):
        return []
    from npu.frontend.onnx_expansion import rewrite_nodes

    constant = constants(model)
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 13)

    def expand(node, types: dict, expansion) -> bool:
        if node.op_type != "Resize":
            return False
        plan = plan_resize(node, constant, types, opset, fail)
        emit(expansion(), node.input[0], plan, types, types[node.input[0]][1])
        return True

    return rewrite_nodes(model, types, expand)

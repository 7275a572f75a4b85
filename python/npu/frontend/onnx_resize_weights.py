"""Where ONNX `Resize` reads each output element from, one axis at a time.

A Resize of a 4-D map is separable: along each resized axis an output
index `o` reads the input at a source coordinate `x(o)` given by the
coordinate transformation mode, and `nearest` takes one input index near
`x(o)` where `linear` blends the two around it. Both are a constant
[out, in] matrix per axis (`nearest`'s rows one-hot), which
`onnx_resize` writes as data movement or matmuls. The formulas are
ONNX's (Resize, opset 11-19); out-of-range source indices take the edge
element, as onnxruntime's `exclude_outside=0` does.
"""

from __future__ import annotations

import numpy as np

# coordinate_transformation_mode values computed here, each checked against
# onnxruntime; tf_crop_and_resize (it reads the ROI) and the rest are refused.
COORDINATE_MODES = ("half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric")
NEAREST_MODES = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")


def source_coordinates(mode: str, in_len: int, out_len: int, scale: float) -> np.ndarray:
    """x(o) for o in [0, out_len): the input coordinate each output index
    reads; `scale` is the Resize's scale of this axis (out / in when the
    node gives sizes)."""
    f = np.float32  # onnxruntime's arithmetic: a nearest index on a tie depends on it
    o, scale, n_in, n_out = np.arange(out_len, dtype=f), f(scale), f(in_len), f(out_len)
    half = f(0.5)
    if mode == "half_pixel":
        return (o + half) / scale - half
    if mode == "pytorch_half_pixel":
        return (o + half) / scale - half if out_len > 1 else np.zeros(out_len, f)
    if mode == "align_corners":
        return o * (n_in - 1) / (n_out - 1) if out_len > 1 else np.zeros(out_len, f)
    if mode == "asymmetric":
        return o / scale
    raise ValueError(f"coordinate_transformation_mode '{mode}'")


def nearest_indices(coords: np.ndarray, nearest_mode: str, in_len: int) -> np.ndarray:
    """The input index each output index copies."""
    half = np.float32(0.5)
    if nearest_mode == "round_prefer_floor":
        idx = np.ceil(coords - half)
    elif nearest_mode == "round_prefer_ceil":
        idx = np.floor(coords + half)
    elif nearest_mode == "floor":
        idx = np.floor(coords)
    elif nearest_mode == "ceil":
        idx = np.ceil(coords)
    else:
        raise ValueError(f"nearest_mode '{nearest_mode}'")
    return np.clip(idx, 0, in_len - 1).astype(np.int64)


def linear_matrix(coords: np.ndarray, in_len: int) -> np.ndarray:
    """[out, in]: row o blends the two input elements around x(o) by its
    distance to each (both the edge one past either end)."""
    coords = coords.astype(np.float64)
    low = np.floor(coords)
    frac = coords - low
    low = low.astype(np.int64)
    out = np.zeros((len(coords), in_len))
    rows = np.arange(len(coords))
    np.add.at(out, (rows, np.clip(low, 0, in_len - 1)), 1 - frac)
    np.add.at(out, (rows, np.clip(low + 1, 0, in_len - 1)), frac)
    return out


def repeat_factor(indices: np.ndarray, in_len: int) -> int | None:
    """s when `indices` is every input index s times in order (an integer
    nearest upsample: Unsqueeze, Expand, Reshape), else None."""
    if len(indices) % in_len:
        return None
    s = len(indices) // in_len
    return s if np.array_equal(indices, np.arange(len(indices)) // s) else None


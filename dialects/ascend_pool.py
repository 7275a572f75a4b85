"""`ascend.pool2d`: 2-D max / sum / average pooling of an NCHW tensor, or of
an f16 or f32 NC1HWC0 one (`layout = "nc1hwc0"`: [N, C1, H, W, 16], a
conv's result, pooled per channel as it lies; padded channels stay harmless).

Kept beside `ascend.py` (whose op table registers the spec made here) so the
pooling contract, its shape rule and its numpy semantics are in one place:
the verifier, the conversion from `linalg` (`linalg_to_ascend/pooling.py`),
the lowering (`npu-lower-pool`) and the reference (`npu.reference`) all use
`Pool2d` instead of re-reading the attributes.

Semantics (`pool2d_numpy`): the input is padded by `pads` = [top, left,
bottom, right] with the kind's identity (-inf for max, 0 for sum/avg);
output (n, c, i, j) combines the kernel points (a, b) at padded row
i*sh + a*dh and column j*sw + b*dw. `sum` and `avg` add in f32 and round
once to the element type (as `reduce_sum`); `avg` then multiplies by
1/count rounded to the element type, count being kh*kw
(`count_include_pad` = 1) or the number of kernel points inside the
unpadded input (`count_include_pad` = 0; at least 1). The vector lowering
adds in the element type (separably: along rows, then down columns), so
f16 sums differ from this by the rounding of up to kh*kw adds.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
from mlir import ir

from npu.dialects.ascend_conv import C0, NC1HWC0, NCHW, layout
from npu.dialects.opspec import FLOAT_TYPES, I64, I64_ARRAY, STR, OpSpec, Operand, same_dtype
from npu.dialects.rules import RuleError
from npu.ir.accessors import int_array_attr, int_attr, memref_shape, str_attr
from npu.target import Target

POOL2D = "ascend.pool2d"
POOL_KINDS = ("max", "sum", "avg")


@dataclass(frozen=True)
class Pool2d:
    """The attributes of one pool2d, with the shape rule."""

    kind: str
    kernel: tuple[int, int]
    strides: tuple[int, int]
    dilations: tuple[int, int]
    pads: tuple[int, int, int, int]  # top, left, bottom, right
    count_include_pad: int = 1

    @staticmethod
    def of(op: ir.Operation) -> "Pool2d":
        return Pool2d(str_attr(op, "kind"), tuple(int_array_attr(op, "kernel")),
                      tuple(int_array_attr(op, "strides")), tuple(int_array_attr(op, "dilations")),
                      tuple(int_array_attr(op, "pads")), int_attr(op, "count_include_pad"))

    def span(self, axis: int) -> int:
        """Rows (axis 0) or columns (1) one window covers."""
        return self.dilations[axis] * (self.kernel[axis] - 1) + 1

    def out_size(self, h: int, w: int) -> tuple[int, int]:
        """(Ho, Wo) for an h x w input (floor rule on the padded input)."""
        t, l, b, r = self.pads
        return ((h + t + b - self.span(0)) // self.strides[0] + 1,
                (w + l + r - self.span(1)) // self.strides[1] + 1)

    def counts(self, h: int, w: int) -> tuple[np.ndarray, np.ndarray]:
        """Kernel points inside the unpadded input per output row and column."""
        ho, wo = self.out_size(h, w)
        rows = [sum(0 <= i * self.strides[0] - self.pads[0] + a * self.dilations[0] < h
                    for a in range(self.kernel[0])) for i in range(ho)]
        cols = [sum(0 <= j * self.strides[1] - self.pads[1] + b * self.dilations[1] < w
                    for b in range(self.kernel[1])) for j in range(wo)]
        return np.array(rows), np.array(cols)

    def divisor(self, h: int, w: int) -> np.ndarray:
        """[Ho, Wo] divisor of `avg`."""
        if self.count_include_pad:
            ho, wo = self.out_size(h, w)
            return np.full((ho, wo), self.kernel[0] * self.kernel[1])
        rows, cols = self.counts(h, w)
        return np.maximum(np.outer(rows, cols), 1)

    def attrs(self) -> dict[str, str]:
        """The op's attributes as MLIR text, for emitters."""
        arr = lambda v: f"array<i64: {', '.join(str(int(x)) for x in v)}>"  # noqa: E731
        return {"kind": f'"{self.kind}"', "kernel": arr(self.kernel), "strides": arr(self.strides),
                "dilations": arr(self.dilations), "pads": arr(self.pads),
                "count_include_pad": f"{self.count_include_pad} : i64"}


def pool2d_numpy(x: np.ndarray, p: Pool2d) -> np.ndarray:
    """The reference semantics (module docstring) of pool2d on an NCHW array."""
    n, c, h, w = x.shape
    ho, wo = p.out_size(h, w)
    t, l, b, r = p.pads
    fill = -np.inf if p.kind == "max" else 0
    work = x.dtype if p.kind == "max" else np.float32
    padded = np.full((n, c, h + t + b, w + l + r), fill, work)
    padded[:, :, t:t + h, l:l + w] = x
    acc = None
    for a in range(p.kernel[0]):
        for bb in range(p.kernel[1]):
            r0, c0 = a * p.dilations[0], bb * p.dilations[1]
            win = padded[:, :, r0:r0 + (ho - 1) * p.strides[0] + 1:p.strides[0],
                         c0:c0 + (wo - 1) * p.strides[1] + 1:p.strides[1]]
            if acc is None:
                acc = win.copy()
            elif p.kind == "max":
                acc = np.maximum(acc, win)
            else:
                acc = acc + win
    acc = acc.astype(x.dtype)
    if p.kind == "avg":
        scale = (np.float32(1) / p.divisor(h, w).astype(np.float32)).astype(x.dtype)
        acc = (acc.astype(np.float32) * scale.astype(np.float32)).astype(x.dtype)
    return acc


def pool2d_5hd_numpy(x: np.ndarray, p: Pool2d) -> np.ndarray:
    """pool2d of an [N, C1, H, W, C0] array, channel by channel."""
    n, c1, h, w, c0 = x.shape
    planes = np.ascontiguousarray(x.transpose(0, 1, 4, 2, 3)).reshape(n, c1 * c0, h, w)
    out = pool2d_numpy(planes, p)
    ho, wo = out.shape[2:]
    return np.ascontiguousarray(out.reshape(n, c1, c0, ho, wo).transpose(0, 1, 3, 4, 2))


def _check_pool(op: ir.Operation, target: Target) -> None:
    src, dst = (memref_shape(v.type) for v in op.operands)
    form = layout(op)
    if form not in (NCHW, NC1HWC0):
        raise RuleError(f"attribute 'layout' must be \"nchw\" or \"nc1hwc0\", got "
                        f"{op.attributes['layout']}")
    if form == NC1HWC0:
        elem = str(ir.MemRefType(op.operands[0].type).element_type)
        if len(src) != 5 or len(dst) != 5 or src[4] != C0 or dst[4] != C0 or elem not in ("f16", "f32"):
            raise RuleError(f"layout \"nc1hwc0\" takes f16 or f32 [N, C1, H, W, {C0}] input and output, "
                            f"got {elem} {src} and {dst}")
        src, dst = src[:4], dst[:4]
    elif len(src) != 4 or len(dst) != 4:
        raise RuleError(f"input and output must be NCHW (rank 4), got ranks {len(src)} and "
                        f"{len(dst)}")
    kind = str_attr(op, "kind")
    if kind not in POOL_KINDS:
        raise RuleError(f"'kind' must be one of {', '.join(POOL_KINDS)}, got '{kind}'")
    lengths = {"kernel": 2, "strides": 2, "dilations": 2, "pads": 4}
    for name, length in lengths.items():
        values = int_array_attr(op, name)
        if len(values) != length:
            raise RuleError(f"'{name}' must have {length} values, got {len(values)}")
        low = 0 if name == "pads" else 1
        if any(v < low for v in values):
            raise RuleError(f"'{name}' values must be at least {low}, got {values}")
    if int_attr(op, "count_include_pad") not in (0, 1):
        raise RuleError("'count_include_pad' must be 0 or 1")
    p = Pool2d.of(op)
    if src[2] + p.pads[0] + p.pads[2] < p.span(0) or src[3] + p.pads[1] + p.pads[3] < p.span(1):
        raise RuleError(f"the window ({p.span(0)} x {p.span(1)}) is larger than the padded input")
    want = [src[0], src[1], *p.out_size(src[2], src[3])]
    if dst != want:
        raise RuleError(f"output shape must be {want} for input {src}, got {dst}")


def pool_specs() -> list[OpSpec]:
    attrs = {"kind": STR, "kernel": I64_ARRAY, "strides": I64_ARRAY, "dilations": I64_ARRAY,
             "pads": I64_ARRAY, "count_include_pad": I64}
    return [OpSpec(POOL2D, (Operand("in", "gm"), Operand("out", "gm")),
                   same_dtype(2, FLOAT_TYPES), attrs, {}, (_check_pool,), static_shapes=True)]


def pooled_shape(shape: Sequence[int], p: Pool2d) -> list[int]:
    return [shape[0], shape[1], *p.out_size(shape[2], shape[3])]

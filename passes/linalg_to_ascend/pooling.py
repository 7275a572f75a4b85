"""torch-mlir's pooling forms -> `ascend.pool2d` (or a reduction).

What torch-mlir emits for ONNX MaxPool / AveragePool / GlobalAveragePool:
  * `tensor.pad` of the input with the pool's identity (-inf or 0), when
    there are pads or ceil_mode (it pads enough for every window);
  * `linalg.pooling_nchw_max` / `pooling_nchw_sum` on the padded tensor
    (a `tensor.empty` kernel operand gives the window size), into a fill of
    the identity;
  * for an average, a parallel `linalg.generic` dividing the sum by the
    count: a constant (count_include_pad), a function of the output indices
    (the window points inside the input), or, with ceil_mode, the sum pool
    of a padded constant of ones.
1-D pools (`pooling_ncw_*`) are the same on an [N, C, 1, L] view with a
1 x k window. The pad is not materialised: it becomes the op's `pads` (trimmed to what
the windows reach). A divisor generic that is the only user of the sum is
absorbed when it multiplies by 1/count of one of pool2d's two counting
rules (found by evaluating it on the host with the input 1 and 2); any
other division stays an elementwise op after a `sum` pool. A global pool
(the window is the whole map, output 1x1) is an `ascend.reduce_*` over
[N*C, H*W] instead: the reduction lowering already tiles rows.

Maps under one 32-byte block per plane (the lowering transposes planes in
16-plane groups of whole blocks) are widened here: the input is copied into
a wider GM temporary filled with the identity (`ascend.broadcast` +
`ascend.insert_slice`), pooled, and the first Wo columns sliced out.
"""

from __future__ import annotations

import numpy as np
from mlir import ir

from npu.dialects.ascend_pool import Pool2d
from npu.passes.linalg_to_ascend.emitter import Buf, i64_array
from npu.passes.linalg_to_ascend.structure import UnsupportedOp, tensor_shape
from npu.passes.linalg_to_ascend.values import Tensor

POOLING_OPS = {"linalg.pooling_nchw_max": "max", "linalg.pooling_nchw_sum": "sum",
               # 1-D pools (MaxPool1d, AvgPool1d): an NCL map is NC1L with a 1 x k window
               "linalg.pooling_ncw_max": "max", "linalg.pooling_ncw_sum": "sum"}
IDENTITY = {"max": -np.inf, "sum": 0.0}
BLOCK_BYTES = 32
# An NC1HWC0 pool's band of input rows (pixels of 16 channels) for one
# output row, with room to spare, must fit this: a quarter of the smallest UB
# of the targets (256 KB), so npu-lower-pool always finds a band; wider maps
# are pooled in NCHW, which npu-lower-pool cuts into column slices.
MAX_5HD_BAND_BYTES = 64 * 1024


def _ints(op: ir.Operation, name: str) -> list[int]:
    return [int(v) for v in ir.DenseIntElementsAttr(op.attributes[name])]


def _pad_value(op: ir.Operation, scalars: dict) -> float | None:
    """The constant a `tensor.pad` yields, or None."""
    body = op.regions[0].blocks[0]
    yielded = list(body.operations)[-1].operands[0]
    value = scalars.get(yielded)
    return None if value is None else float(value)


class PoolingLowering:
    """Mixed into `Converter`."""

    def pool_pad(self, op: ir.Operation) -> None:
        """Record a pad that only feeds pooling ops (the converter's dispatch
        checks the users; other pads are left to the other lowerings)."""
        low = list(ir.DenseI64ArrayAttr(op.attributes["static_low"]))
        high = list(ir.DenseI64ArrayAttr(op.attributes["static_high"]))
        if len(low) not in (3, 4) or low[:2] != [0, 0] or high[:2] != [0, 0] or min(low + high) < 0:
            raise UnsupportedOp(op, f"pads low {low} high {high}: only non-negative spatial "
                                "pads of an NCHW or NCL tensor are supported")
        pads = low[2:] + high[2:] if len(low) == 4 else [0, low[2], 0, high[2]]
        self.pool_pads[op.results[0]] = (op.operands[0], pads, _pad_value(op, self.scalars))

    def pooling(self, op: ir.Operation) -> None:
        loc = self.loc(op)
        kind = POOLING_OPS[op.name]
        src_value, (top, left, bottom, right), pad_value = self.pool_pads.get(
            op.operands[0], (op.operands[0], (0, 0, 0, 0), None))
        if pad_value is not None and pad_value != IDENTITY[kind]:
            raise UnsupportedOp(op, f"a {kind} pool of input padded with {pad_value} (only "
                                f"{IDENTITY[kind]} is supported)")
        init = self.tensors.get(op.operands[2])
        if init is None or not init.is_constant or not np.all(init.array == IDENTITY[kind]):
            raise UnsupportedOp(op, f"a {kind} pool must start from {IDENTITY[kind]}")
        if self._pool_5hd(op, kind, src_value, (top, left, bottom, right)):
            return
        x = self.nd(src_value, loc)
        if x.dtype not in ("f16", "f32"):
            raise UnsupportedOp(op, f"pooling of {x.dtype} is not supported (f16, f32)")
        kernel = tensor_shape(op.operands[1])
        out_shape = tuple(tensor_shape(op.results[0]))
        strides, dilations = _ints(op, "strides"), _ints(op, "dilations")
        if len(x.shape) == 3:  # 1-D: [N, C, 1, L], a 1 x k window
            x = self.em.reshape(x, (x.shape[0], x.shape[1], 1, x.shape[2]), loc)
            kernel, strides, dilations = [1] + list(kernel), [1] + strides, [1] + dilations
        n, c, h, w = x.shape
        work_shape = (n, c) + (out_shape[2:] if len(out_shape) == 4 else (1, out_shape[2]))
        ho, wo = work_shape[2:]
        p = _trimmed(Pool2d(kind, tuple(kernel), tuple(strides), tuple(dilations),
                            (top, left, bottom, right)), h, w, ho, wo)
        if p.out_size(h, w) != (ho, wo):
            raise UnsupportedOp(op, f"output {list(out_shape)} does not follow from input "
                                f"{list(x.shape)} and the pool's attributes")
        p, result = self._with_divisor(op, p, (h, w))
        if (h, w) == (p.span(0), p.span(1)) and (ho, wo) == (1, 1) and not any(p.pads):
            out = self._global_pool(x, p, result, loc)
        else:
            out = self._pool2d(x, p, result, loc)
        self.tensors[result] = Tensor(out_shape, x.dtype, nd=self.em.reshape(out, out_shape, loc))

    def _pool_5hd(self, op, kind: str, src_value, pads: tuple) -> bool:
        """A 2-D pool of an f16 or f32 conv result held in NC1HWC0 pools it as it lies
        and leaves its result NC1HWC0 (the next conv, or a residual Add with
        one, reads it with no conversion); a global one is a reduction down
        the pixels, many channel blocks a chunk (npu-lower-reduce's
        OuterBatches; ResNet-18's head: ~3,250 cycles, 15,150 with a load
        per channel block, 31,321 converted to NCHW and reduced along rows).
        False (nothing emitted) for other
        inputs and for rows too wide for one band in UB."""
        t = self.tensors.get(src_value)
        if (t is None or t.c1hwc0 is None or t.c1hwc0.dtype not in ("f16", "f32")
                or len(t.shape) != 4):
            return False
        n, c1, h, w, c0 = t.c1hwc0.shape
        kernel, strides = tensor_shape(op.operands[1]), _ints(op, "strides")
        p = Pool2d(kind, tuple(kernel), tuple(strides), tuple(_ints(op, "dilations")), pads)
        ho, wo = tensor_shape(op.results[0])[2:]
        is_global = (h, w) == (p.span(0), p.span(1)) and (ho, wo) == (1, 1) and not any(pads)
        # An f32 map (an f32 model's conv results) is pooled as it lies too:
        # its pixels are two blocks, which npu-lower-pool steps over (the
        # stem's max pool of ResNet-50 f32 on 32 cores: ~109k cycles on one
        # core in NCHW, with a transpose each way and a cast, before).
        es = 2 if t.c1hwc0.dtype == "f16" else 4
        if not is_global and (p.span(0) + 2) * w * c0 * es > MAX_5HD_BAND_BYTES:
            return False
        p = _trimmed(p, h, w, ho, wo)
        if p.out_size(h, w) != (ho, wo):
            return False
        p, result = self._with_divisor(op, p, (h, w))
        if p.kind == "sum":
            return False  # a sum the NCHW path divides by its own generic
        loc = self.loc(op)
        out5 = self.em.alloc([n, c1, ho, wo, c0], t.c1hwc0.dtype, loc)
        if is_global:  # each channel's pixels: a reduction down [N*C1, H*W, C0]'s middle axis
            self._global_pool_5hd(t.c1hwc0, p, out5, loc)
        else:
            self.em.op("ascend.pool2d", [t.c1hwc0, out5], loc, **p.attrs(), layout='"nc1hwc0"')
        self.tensors[result] = Tensor(tuple(tensor_shape(result)), t.dtype, c1hwc0=out5, nz_loc=loc)
        return True

    def _global_pool_5hd(self, x5: Buf, p: Pool2d, out5: Buf, loc: str) -> None:
        n, c1, h, w, c0 = x5.shape
        pixels = self.em.reshape(x5, (n * c1, h * w, c0), loc)
        reduced = self.em.reshape(out5, (n * c1, 1, c0), loc)
        name = "ascend.reduce_max" if p.kind == "max" else "ascend.reduce_sum"
        if p.kind != "avg":
            self.em.op(name, [pixels, reduced], loc, axis="1 : i64")
            return
        # The average's 1/(H*W) as the reduction's `scale`: one kernel, the
        # sums never stored and read back through GM (ResNet-50's head: the
        # fc's weights no longer wait behind that round trip).
        scale = float(np.float32(1) / np.float32(h * w))
        self.em.op(name, [pixels, reduced], loc, axis="1 : i64", scale=f"{scale!r} : f64")

    def _with_divisor(self, op, p: Pool2d, hw) -> tuple[Pool2d, ir.Value]:
        """(the pool, the value it makes): an average with the divisor
        generic it absorbs, else the op itself."""
        divisor_op, cip = self._absorbed_divisor(op, p, hw)
        if divisor_op is None:
            return p, op.results[0]
        self.absorbed.add(divisor_op.results[0])
        return Pool2d("avg", p.kernel, p.strides, p.dilations, p.pads, cip), divisor_op.results[0]

    def _absorbed_divisor(self, op, p: Pool2d, hw) -> tuple[ir.Operation | None, int]:
        """The generic dividing this sum pool by a count pool2d knows, if any."""
        if p.kind != "sum":
            return None, 1
        uses = list(op.results[0].uses)
        if len(uses) != 1 or uses[0].owner.name != "linalg.generic":
            return None, 1
        user = uses[0].owner
        view = user.opview
        if list(view.inputs) != [op.results[0]] or len(view.outputs) != 1:
            return None, 1
        if any("reduction" in str(a) for a in user.attributes["iterator_types"]):
            return None, 1
        shape = tensor_shape(op.results[0])
        try:
            init = np.zeros(shape, np.float32)
            f1, f2 = (np.asarray(self.folder.structured_op(user, [np.full(shape, v, np.float32), init])[0],
                                 np.float64) for v in (1.0, 2.0))
        except Exception:  # a body the host evaluator cannot run: not a plain division
            return None, 1
        if not np.allclose(f2, 2 * f1, rtol=1e-3, atol=0):
            return None, 1
        # The generic divides in its own type: f16 rounds 1/count to 11 bits.
        rtol = 1e-3 if "f16" in str(user.results[0].type) else 1e-6
        for cip in (1, 0):
            want = 1.0 / Pool2d("avg", p.kernel, p.strides, p.dilations, p.pads, cip).divisor(*hw)
            if np.allclose(f1, np.broadcast_to(want, shape), rtol=rtol, atol=0):
                return user, cip
        return None, 1

    def _global_pool(self, x: Buf, p: Pool2d, result, loc: str) -> Buf:
        n, c, h, w = x.shape
        out = self.dest(result, (n, c, 1, 1), x.dtype, loc)
        rows = self.em.reshape(x, (n * c, h * w), loc)
        reduced = self.em.reshape(out, (n * c, 1), loc)
        name = "ascend.reduce_max" if p.kind == "max" else "ascend.reduce_sum"
        if p.kind == "avg":
            total = self.em.alloc((n * c, 1), x.dtype, loc)
            self.em.op(name, [rows, total], loc)
            scale = float(np.float32(1) / np.float32(h * w))
            self.em.op("ascend.muls", [total, reduced], loc, scalar=f"{scale!r} : f64")
        else:
            self.em.op(name, [rows, reduced], loc)
        return out

    def _pool2d(self, x: Buf, p: Pool2d, result, loc: str) -> Buf:
        n, c, h, w = x.shape
        ho, wo = p.out_size(h, w)
        out = self.dest(result, (n, c, ho, wo), x.dtype, loc)
        block = BLOCK_BYTES // (2 if x.dtype == "f16" else 4)
        if h * w >= block and ho * wo >= block:
            self.em.op("ascend.pool2d", [x, out], loc, **p.attrs())
            return out
        # Widen: explicit identity columns on the right (module docstring).
        extra = 1
        while True:
            wide = Pool2d(p.kind if p.kind != "avg" or p.count_include_pad else "sum", p.kernel,
                          p.strides, p.dilations, p.pads[:3] + (max(0, p.pads[3] - extra),),
                          p.count_include_pad)
            wo2 = wide.out_size(h, w + extra)[1]
            if h * (w + extra) >= block and ho * wo2 >= block:
                break
            extra += 1
        identity = IDENTITY["max" if p.kind == "max" else "sum"]
        fill = self.em.constant(np.full((1, 1, 1, 1), identity, np.float16 if x.dtype == "f16"
                                        else np.float32))
        padded = self.em.alloc((n, c, h, w + extra), x.dtype, loc)
        self.em.op("ascend.broadcast", [fill, padded], loc)
        self.em.op("ascend.insert_slice", [x, padded], loc, offsets=i64_array([0, 0, 0, 0]))
        pooled = self.em.alloc((n, c, ho, wo2), x.dtype, loc)
        self.em.op("ascend.pool2d", [padded, pooled], loc, **wide.attrs())
        target = out if wide.kind == p.kind else self.em.alloc((n, c, ho, wo), x.dtype, loc)
        self.em.op("ascend.slice", [pooled, target], loc, offsets=i64_array([0, 0, 0, 0]),
                   strides=i64_array([1, 1, 1, 1]))
        if target is not out:  # avg over the input only: sum, then 1/count
            dtype = np.float16 if x.dtype == "f16" else np.float32
            scale = (np.float32(1) / p.divisor(h, w).astype(np.float32)).astype(dtype)
            self.em.op("ascend.mul", [target, self.em.constant(scale.reshape(1, 1, ho, wo)), out], loc)
        return out


def _trimmed(p: Pool2d, h: int, w: int, ho: int, wo: int) -> Pool2d:
    """`p` without the bottom and right pads no window reaches (torch-mlir's
    ceil_mode pads generously)."""
    top, left, bottom, right = p.pads
    bottom = max(0, min(bottom, (ho - 1) * p.strides[0] + p.span(0) - h - top))
    right = max(0, min(right, (wo - 1) * p.strides[1] + p.span(1) - w - left))
    return Pool2d(p.kind, p.kernel, p.strides, p.dilations, (top, left, bottom, right),
                  p.count_include_pad)

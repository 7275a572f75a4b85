"""The cube's layouts of a convolution, chosen by the conversion.

A groups = 1 conv with constant weights becomes `ascend.conv2d` in layout
"nc1hwc0": the weights in fractal-Z and the bias padded to whole C0 blocks
are made here on the host; the input, unless it already is the NC1HWC0
result of a conv, is converted on the device (cast to f16, channels padded
with zeros by a broadcast + insert_slice when C is not whole blocks, and
one transpose [N*C1, 16, H*W] -> [N*C1, H*W, 16]). The result stays
NC1HWC0 (`Tensor.c1hwc0`), so a following conv reads it as it is, like Nz
between matmuls; it is converted to NCHW (transpose, then a slice of the
real channels) only when another consumer asks (`Converter.nd`).
"""

from __future__ import annotations

import numpy as np
from mlir import ir

from npu.passes.linalg_to_ascend.emitter import Buf, i64_array
from npu.passes.linalg_to_ascend.values import Tensor

C0 = 16  # f16 channels of one 32-byte block


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def fractal_z(w: np.ndarray) -> np.ndarray:
    """[Cout, C, Kh, Kw] -> [C1*Kh*Kw, Cout1, 16, 16] (zero padded), K as (c1, kh, kw)."""
    cout, c, kh, kw = w.shape
    co1, c1 = ceil_div(cout, C0), ceil_div(c, C0)
    padded = np.zeros((co1 * C0, c1 * C0, kh, kw), w.dtype)
    padded[:cout, :c] = w
    return np.ascontiguousarray(padded.reshape(co1, C0, c1, C0, kh, kw).transpose(
        2, 4, 5, 0, 1, 3).reshape(c1 * kh * kw, co1, C0, C0))


def fractal_z_int8(w: np.ndarray) -> np.ndarray:
    """[Cout, C, Kh, Kw] i8 -> the int8 form's [C1_32*Kh*Kw, Cout1, 16, 32]:
    K as (c1_32, kh, kw), each fractal 16 output channels x 32 input channels
    (the L0B block the int8 cube reads, loaded without a transpose)."""
    cout, c, kh, kw = w.shape
    co1, c1 = ceil_div(cout, C0), ceil_div(c, 2 * C0)
    padded = np.zeros((co1 * C0, c1 * 2 * C0, kh, kw), np.int8)
    padded[:cout, :c] = w
    return np.ascontiguousarray(padded.reshape(co1, C0, c1, 2 * C0, kh, kw).transpose(
        2, 4, 5, 0, 1, 3).reshape(c1 * kh * kw, co1, C0, 2 * C0))


def fractal_z_diagonal(w: np.ndarray) -> np.ndarray:
    """Dense block-diagonal [C, C, Kh, Kw] weights -> the diagonal fractals
    [Kh*Kw, C1, 16, 16] of layout "nc1hwc0_bd" (block j's own kernel points)."""
    full = fractal_z(w)
    taps = w.shape[2] * w.shape[3]
    c1 = full.shape[1]
    return np.ascontiguousarray(np.stack([full[j * taps:(j + 1) * taps, j] for j in range(c1)], axis=1))


def fractal_z_small(w: np.ndarray) -> np.ndarray:
    """[Cout, C <= 4, Kh, Kw] -> [ceil(Kh*Kw/4), Cout1, 16, 16] for img2col's
    small-channel mode: column j of group g is kernel point 4g + j // 4,
    channel j % 4 (zero past the kernel and the channels)."""
    cout, c, kh, kw = w.shape
    co1, groups = ceil_div(cout, C0), ceil_div(kh * kw, 4)
    points = np.zeros((co1 * C0, 4, groups * 4), w.dtype)
    points[:cout, :c, :kh * kw] = w.reshape(cout, c, kh * kw)
    return np.ascontiguousarray(points.reshape(co1, C0, 4, groups, 4).transpose(3, 0, 1, 4, 2)
                                .reshape(groups, co1, C0, 16))


def _five(t: Tensor) -> Buf | None:
    """The NC1HWC0 buffer holding `t`: a conv result's, or the f16 one of
    int8 values the int8 convs read (`Tensor.int8_f16`; widening reads it
    as exactly as the i8 tensor)."""
    if t.c1hwc0 is not None:
        return t.c1hwc0
    if t.int8_f16 is not None and len(t.int8_f16.shape) == 5:
        return t.int8_f16
    return None


def _defining(value: ir.Value) -> ir.Operation | None:
    """The op that defines `value`, or None for a block argument."""
    owner = value.owner
    return None if isinstance(owner, ir.Block) else owner.operation


def _per_channel(t: Tensor, results, loops) -> bool:
    """`t` is [N, C, 1, 1] read per channel (broadcast over H and W) in a
    loop over [N, C, H, W]."""
    return (len(results) == 4 and len(t.shape) == 4 and results[1] == 1
            and results[2] is None and results[3] is None
            and t.shape[1] == loops[1] and t.shape[2] == t.shape[3] == 1
            and (t.shape[0] == loops[0] and results[0] == 0 or t.shape[0] == 1))


def to_5hd(array: np.ndarray) -> np.ndarray:
    """[N, C, H, W] -> [N, C1, H, W, 16] (zero padded channels)."""
    n, c, h, w = array.shape
    c1 = ceil_div(c, C0)
    padded = np.zeros((n, c1 * C0, h, w), array.dtype)
    padded[:, :c] = array
    return np.ascontiguousarray(padded.reshape(n, c1, C0, h, w).transpose(0, 1, 3, 4, 2))


class ConvLayouts:
    """Mixed into `Converter` through `ConvLowering`."""

    def _conv_5hd(self, op, x_val, x4, weight: np.ndarray, bias, out4, out_dtype: str, attrs: dict,
                  loc: str, diagonal: bool = False) -> None:
        n, cout, ho, wo = out4
        co1 = ceil_div(cout, C0)
        small = weight.shape[1] <= 4 and weight.shape[2] * weight.shape[3] > 1 and not diagonal
        x5 = self.image_nchw(x_val, x4, loc) if small else None
        x5 = x5 if x5 is not None else self.input_5hd(x_val, x4, loc)
        pack = fractal_z_diagonal if diagonal else fractal_z_small if small else fractal_z
        wz = self.em.constant(pack(self.host_f16(weight)))
        operands = [x5, wz]
        if bias is not None:
            padded = np.zeros(co1 * C0, bias.dtype)
            padded[:cout] = bias
            operands.append(self.em.constant(padded))
        out5 = self.em.alloc([n, co1, ho, wo, C0], out_dtype, loc)
        kh, kw = weight.shape[2:]
        form = '"nc1hwc0_bd"' if diagonal else '"nc1hwc0_c4"' if small else '"nc1hwc0"'
        self.em.op("ascend.conv2d", operands + [out5], loc, **attrs, layout=form,
                   kernel=i64_array([kh, kw]))
        result = op.results[0]
        self.tensors[result] = Tensor(tuple(int(d) for d in result.type.shape), out_dtype,
                                      c1hwc0=out5, nz_loc=loc)

    def input_5hd(self, value, x4, loc: str) -> Buf:
        """`value` ([N, C, H, W]) as an f16 NC1HWC0 buffer (an int8 one's
        values in f16 for the int8 conv)."""
        t = self.tensors[value]
        if t.int8_f16 is not None and len(t.int8_f16.shape) == 5:
            return t.int8_f16
        if t.c1hwc0 is not None and t.c1hwc0.dtype == "f16":
            return t.c1hwc0
        if t.is_constant:
            return self.em.constant(to_5hd(self.host_f16(t.array.reshape(x4))))
        if t.half5 is None:
            t.half5 = self._half_5hd(value, x4, loc)
        return t.half5

    def _half_5hd(self, value, x4, loc: str) -> Buf:
        """`input_5hd` of a tensor not held in f16 NC1HWC0: cast (and
        transpose from NCHW)."""
        t = self.tensors[value]
        if t.c1hwc0 is not None:
            half = self.em.alloc(list(t.c1hwc0.shape), "f16", loc)
            self.em.op("ascend.cast", [t.c1hwc0, half], loc, round_mode='"rint"')
            return half
        n, c, h, w = x4
        c1 = ceil_div(c, C0)
        src = self.em.reshape(t.int8_f16 if t.int8_f16 is not None else self.nd(value, loc),
                              [n, c, h * w], loc)
        if src.dtype != "f16":  # exact for an int8 tensor (the int8 conv's input)
            half = self.em.alloc([n, c, h * w], "f16", loc)
            self.em.op("ascend.cast", [src, half], loc, round_mode='"rint"')
            src = half
        if c % C0:
            padded = self.em.alloc([n, c1 * C0, h * w], "f16", loc)
            zero = self.em.constant(np.zeros((1, 1, 1), np.float16))
            self.em.op("ascend.broadcast", [zero, padded], loc)
            self.em.op("ascend.insert_slice", [src, padded], loc, offsets=i64_array([0, 0, 0]))
            src = padded
        out = self.em.alloc([n * c1, h * w, C0], "f16", loc)
        self.em.op("ascend.transpose", [self.em.reshape(src, [n * c1, C0, h * w], loc), out], loc,
                   permutation=i64_array([0, 2, 1]))
        return self.em.reshape(out, [n, c1, h, w, C0], loc)

    def image_nchw(self, value, x4, loc: str) -> Buf | None:
        """A small-channel conv's input as the f16 NCHW image it reads itself
        (npu-lower-conv lays each band out in L1: no NC1HWC0 copy in GM), or
        None when it is already NC1HWC0, a constant, or under 16 pixels wide."""
        t = self.tensors[value]
        if t.c1hwc0 is not None or t.is_constant or x4[3] < C0:
            return None
        src = self.em.reshape(self.nd(value, loc), list(x4), loc)
        if src.dtype == "f16":
            return src
        half = self.em.alloc(list(x4), "f16", loc)
        self.em.op("ascend.cast", [src, half], loc, round_mode='"rint"')
        return half

    def nchw_of_5hd(self, value, loc: str) -> Buf:
        """The NCHW buffer of a tensor held in NC1HWC0 (transpose, then the real channels)."""
        t = self.tensors[value]
        n, co1, ho, wo, _ = t.c1hwc0.shape
        cout = int(np.prod(t.shape[1:-2]))  # [N, G, C/G, H, W] for a grouped conv's result
        if ho * wo == 1 and cout == co1 * C0 and value not in self.claims:
            # one pixel (a global pool's result before the classifier): the
            # transpose would move nothing, so NCHW is a view of the same bytes
            # (ResNet-50's Flatten: a GM -> UB -> GM copy of 4 KB, 832 cycles)
            return self.em.reshape(t.c1hwc0, list(t.shape), loc)
        src = self.em.reshape(t.c1hwc0, [n * co1, ho * wo, C0], loc)
        if cout == co1 * C0:
            out = self.dest(value, [n * co1, C0, ho * wo], t.dtype, loc)
            self.em.op("ascend.transpose", [src, out], loc, permutation=i64_array([0, 2, 1]))
            return self.em.reshape(out, list(t.shape), loc)
        full = self.em.alloc([n * co1, C0, ho * wo], t.dtype, loc)
        self.em.op("ascend.transpose", [src, full], loc, permutation=i64_array([0, 2, 1]))
        out = self.dest(value, [n, cout, ho * wo], t.dtype, loc)
        self.em.op("ascend.slice", [self.em.reshape(full, [n, co1 * C0, ho * wo], loc), out], loc,
                   offsets=i64_array([0, 0, 0]), strides=i64_array([1, 1, 1]))
        return self.em.reshape(out, list(t.shape), loc)

    def elementwise_in_5hd(self, op, s) -> bool:
        """An elementwise generic over conv results (the ReLU / Clip after a
        conv, a residual Add of two) runs on their NC1HWC0 buffers and its
        result stays NC1HWC0, so the next conv needs no conversion. Only
        when every tensor input is such a result of the same shape read with
        the identity map, such a result of one value a channel ([N, C, 1, 1]:
        a squeeze-excite gate, read broadcast), a scalar, or a constant (laid
        out NC1HWC0 on the host, a per-channel one as [1, C1, 1, 1, 16]), and
        the body maps zeros to finite values (the padded channels stay
        harmless: they meet zero weights). Returns False (nothing emitted)
        otherwise."""
        from npu.passes.linalg_to_ascend.elementwise import BodyLowering, Unreadable
        from npu.passes.linalg_to_ascend.structure import element_name, tensor_shape, to_loop_space

        n = len(s.loop_sizes)
        identity = list(range(n))
        if n != 4 or len(s.outputs) != 1 or len(op.results) != 1 or s.maps[-1] != identity:
            return False
        dtype = element_name(op.results[0])
        body = op.regions[0].blocks[0]
        if dtype not in ("f16", "f32") or any(
                o.name not in SAFE_BODY_OPS | {"arith.divf"} and not self._sigmoid_exp(o)
                for o in body.operations):
            return False
        shape5 = None
        kinds = []
        for v, m in zip(s.inputs, s.maps):
            t = self.tensors.get(v)
            if v in self.scalars or (t is not None and t.is_constant):
                kinds.append("host")
            elif t is not None and _five(t) is not None and m == identity and \
                    list(t.shape) == list(s.loop_sizes) and shape5 in (None, _five(t).shape):
                shape5 = _five(t).shape
                kinds.append("5hd")
            elif t is not None and _five(t) is not None and _per_channel(t, m, s.loop_sizes):
                kinds.append("channels")  # a squeeze-excite gate [N, C, 1, 1], NC1HWC0 itself
            else:
                return False
        if shape5 is None or any(o.name == "arith.divf" and not (self._nonzero_host(
                o.operands[1], body, s, kinds) or self._one_plus_exp(o.operands[1]))
                for o in body.operations):
            return False
        gates = [_five(self.tensors[v]) for v, k in zip(s.inputs, kinds) if k == "channels"]
        maps5 = [_five(self.tensors[v]) for v, k in zip(s.inputs, kinds) if k == "5hd"]
        if any(g.shape[1] != shape5[1] or g.dtype != maps5[0].dtype for g in gates):
            return False
        loc = self.loc(op)
        half = self._clamp_in_f16(op, s, kinds, body, dtype)
        args = []
        for v, m, kind in zip(s.inputs, s.maps, kinds):
            if kind == "5hd":
                args.append(self.input_5hd(v, None, loc) if half else _five(self.tensors[v]))
            elif kind == "channels":  # [N, C1, 1, 1, 16]: broadcast over H and W
                args.append(_five(self.tensors[v]))
            elif v in self.scalars:
                args.append(self.scalars[v])
            else:
                arr = np.broadcast_to(to_loop_space(self.tensors[v].array, m, n), s.loop_sizes)
                flat = arr.reshape(-1)
                if flat.size and np.all(flat == flat[0]):
                    args.append(flat[0].item())
                    continue
                per_channel = arr[:1, :, :1, :1]
                if np.array_equal(np.broadcast_to(per_channel, arr.shape), arr):
                    args.append(self.em.constant(to_5hd(np.ascontiguousarray(per_channel))))
                else:
                    args.append(self.em.constant(to_5hd(np.ascontiguousarray(arr))))
        lowering = BodyLowering(self.em, loc, 5, self.scalar)
        (term,) = lowering.run(body, args + [Unreadable()], [list(body.operations)[-1].operands[0]])
        held = "f16" if half else dtype
        if not isinstance(term, Buf) or term.shape != tuple(shape5) or term.dtype != held:
            if half:
                raise ValueError(f"a clamp of an f16 copy made {term}, not an f16 NC1HWC0 map")
            return False  # a body that computes no full-size result: the NCHW path
        self.tensors[op.results[0]] = Tensor(tuple(tensor_shape(op.results[0])), held, c1hwc0=term,
                                             nz_loc=loc)
        return True

    def _clamp_in_f16(self, op, s, kinds: list[str], body, dtype: str) -> bool:
        """A ReLU / Clip of one f32 conv result that only convs read: run on
        the f16 copy they read (clamp_f16.py; the result is held as f16)."""
        from npu.passes.linalg_to_ascend.clamp_f16 import clamp_body, read_by_convs

        fives = [v for v, k in zip(s.inputs, kinds) if k == "5hd"]
        if dtype != "f32" or len(fives) != 1 or len(op.results) != 1 or "channels" in kinds:
            return False
        t = self.tensors[fives[0]]
        if t.c1hwc0 is None or t.c1hwc0.dtype != "f32" or len(list(fives[0].uses)) != 1:
            return False
        others = [self.scalars[v] if v in self.scalars else
                  float(self.tensors[v].array.reshape(-1)[0]) if self.tensors[v].array.size == 1
                  else None for v, k in zip(s.inputs, kinds) if k != "5hd"]
        return clamp_body(body, others) and read_by_convs(op.results[0])

    def _one_plus_exp(self, divisor) -> bool:
        """A divisor c + exp(v) with c a positive host value (a sigmoid's
        1 + exp(-x)): at least c, so any finite padded value divides to a
        finite one (exp's overflow to inf divides to 0)."""
        add = _defining(divisor)
        if add is None or add.name != "arith.addf":
            return False
        exps = [v for v in add.operands
                if _defining(v) is not None and _defining(v).name == "math.exp"]
        others = [v for v in add.operands if v not in exps]
        if len(exps) != 1 or len(others) != 1:
            return False
        value = self.scalars.get(others[0])
        return value is not None and float(np.asarray(value).reshape(-1)[0]) > 0

    def _sigmoid_exp(self, op) -> bool:
        """An exp whose only use is such a divisor (`_one_plus_exp`): alone,
        exp may overflow a padded channel to inf, which a zero weight would
        make NaN; inside 1 / (1 + exp) it cannot."""
        if op.name != "math.exp":
            return False
        uses = [u.owner for u in op.results[0].uses]
        return (len(uses) == 1 and uses[0].name == "arith.addf"
                and all(u.owner.name == "arith.divf" and u.owner.operands[1] == uses[0].results[0]
                        for u in uses[0].results[0].uses)
                and self._one_plus_exp(uses[0].results[0]))

    def _nonzero_host(self, divisor, body, s, kinds: list[str]) -> bool:
        """A divisor that is one non-zero host value (a quantisation's scale):
        dividing the padded channels' zeros by it keeps them finite. (A
        per-channel divisor is laid out with zeros in the padded channels.)"""
        args = list(body.arguments)
        if divisor in args:
            i = args.index(divisor)
            if i >= len(s.inputs) or kinds[i] != "host":
                return False
            v = s.inputs[i]
            value = self.scalars[v] if v in self.scalars else self.tensors[v].array
        else:
            value = self.scalars.get(divisor)
        flat = np.asarray(value).reshape(-1) if value is not None else np.zeros(0)
        return flat.size > 0 and bool(np.all(flat == flat[0])) and bool(flat[0] != 0)


# Body ops that keep zeros finite (0 -> 0 or a finite constant); a division
# does when its divisor is one non-zero host value (`_nonzero_host`).
SAFE_BODY_OPS = frozenset({
    "arith.addf", "arith.subf", "arith.mulf", "arith.maximumf", "arith.minimumf",
    "arith.maxnumf", "arith.minnumf", "arith.cmpf", "arith.select", "arith.negf", "arith.extf",
    "arith.truncf", "arith.sitofp", "arith.constant", "linalg.yield"})

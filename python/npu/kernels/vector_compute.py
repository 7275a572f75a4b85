"""Emission of the elementwise recipes (`npu.costmodel.vector.recipes`) on
UB views: `emit` writes one `Compute` per vector instruction, `constant_blocks`
the constant vectors its multiply-adds read, `emit_flat_run` a `Compute`
over a contiguous run of UB buffers."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

from mlir import ir

from npu import ir as nir
from npu.costmodel.vector.recipes import CMP_TO_CCE, SELECT_TO_CCE, Compute
from npu.costmodel.vector.tiling import VectorGeometry, split_repeats
from npu.kernels.cce_build import View, sub


@dataclass
class Constants:
    """The constant operands of a recipe's multiply-adds in UB: one vector
    block per value (`constant_blocks`), read with block and repeat stride
    0 as a whole repeat of that value."""

    buf: ir.Value
    per_block: int  # elements of one block
    index: Mapping[float, int]

    def view(self, value: float) -> View:
        return View(sub(self.buf, self.index[value] * self.per_block, self.per_block), 0, 0)


def emit(compute: Compute, dst: View, srcs: Sequence[View], repeat: int, mask: int,
         tmps: Sequence[View] = (), consts: Constants | None = None) -> None:
    """`compute` as vector instructions of `repeat` repeats under `mask` on
    the views `dst` and `srcs`, with `tmps` the buffers of `compute.temps`.
    `consts` (from `constant_blocks`) lets vmadd steps with a constant run
    as one instruction; without it each is a vmul and a vadds (the same
    value up to one more rounding)."""
    common = dict(repeat=repeat, mask=mask)
    if compute.kind == "binary":
        a, b = srcs
        nir.create_op(compute.vop, [dst.value, a.value, b.value], **common,
                      **_strides(dst=dst, src0=a, src1=b))
    elif compute.kind == "multiply_add":  # dst = srcs[0] * dst + srcs[1], in place
        a, b = srcs
        nir.create_op("cce.vmadd", [dst.value, a.value, b.value], **common,
                      **_strides(dst=dst, src0=a, src1=b))
    elif compute.kind == "copy":  # max(x, x) == x for every type, NaN included
        (a,) = srcs
        nir.create_op("cce.vmax", [dst.value, a.value, a.value], **common,
                      **_strides(dst=dst, src0=a, src1=a))
    elif compute.kind == "cmp":
        a, b = srcs
        nir.create_op(CMP_TO_CCE, [dst.value, a.value, b.value], **common,
                      predicate=compute.predicate, **_strides(dst=dst, src0=a, src1=b))
    elif compute.kind == "select":
        c, a, b = srcs
        nir.create_op(SELECT_TO_CCE, [dst.value, c.value, a.value, b.value], **common,
                      **_strides(dst=dst, cond=c, src0=a, src1=b))
    elif compute.kind == "scalar":
        _unary(compute.vop, dst, srcs[0], common, compute.scalar)
    elif compute.kind == "cast":
        src = srcs[0]
        for k, (_, mode) in enumerate(compute.chain):
            out = dst if k == len(compute.chain) - 1 else tmps[k]
            nir.create_op("cce.vconv", [out.value, src.value], **common,
                          round_mode=mode, **_strides(dst=out, src=src))
            src = out
    else:
        _recipe(compute, dst, srcs[0], common, tmps, consts)


def _recipe(compute: Compute, dst: View, src: View, common: dict, tmps: Sequence[View],
            consts: Constants | None) -> None:
    regs: dict[str, View] = {"x": src, "y": dst}
    if compute.widen:
        # f16 -> f32, the recipe in f32 (input and result share the
        # buffer: recipes write "y" last or in place), one rounding back.
        wide, *rest = tmps
        nir.create_op("cce.vconv", [wide.value, src.value], **common, round_mode="none",
                      **_strides(dst=wide, src=src))
        regs = {"x": wide, "y": wide}
        tmps = rest
    regs.update({f"t{i}": v for i, v in enumerate(tmps)})
    for step in compute.steps:
        out = regs[step.dst]
        if step.op == "cce.vmadd" and step.scalar is not None:
            factor = step.srcs[0]
            if consts is None:  # dst = src0 * dst + c as two instructions
                if isinstance(factor, float):
                    _unary("cce.vmuls", out, out, common, factor)
                else:
                    nir.create_op("cce.vmul", [out.value, regs[factor].value, out.value],
                                  **common, **_strides(dst=out, src0=regs[factor], src1=out))
                _unary("cce.vadds", out, out, common, step.scalar)
                continue
            ins = [consts.view(factor) if isinstance(factor, float) else regs[factor],
                   consts.view(step.scalar)]
        else:
            ins = [regs[s] for s in step.srcs]
        if len(ins) == 2:
            nir.create_op(step.op, [out.value, ins[0].value, ins[1].value], **common,
                          **_strides(dst=out, src0=ins[0], src1=ins[1]))
        else:
            _unary(step.op, out, ins[0], common, step.scalar)
    if compute.widen:
        nir.create_op("cce.vconv", [dst.value, regs["y"].value], **common, round_mode="rint",
                      **_strides(dst=dst, src=regs["y"]))


def constant_blocks(compute: Compute, target) -> Constants | None:
    """A UB buffer holding `compute.constants`, one vdup'ed block each, at
    the insertion point (before the loops that emit `compute`); None when
    the recipe has none."""
    values = compute.constants
    if not values:
        return None
    elem = compute.widen or compute.temps[-1]
    per_block = target.vector_block_bytes // nir.element_bytes(elem)
    buf = nir.alloc([len(values) * per_block], elem, "ub")
    for k, value in enumerate(values):
        blk = sub(buf, k * per_block, per_block)
        nir.create_op("cce.vdup", [blk], repeat=1, mask=per_block, dst_blk_stride=1,
                      dst_rep_stride=target.vector_bytes // target.vector_block_bytes,
                      scalar=float(value))
    return Constants(buf, per_block, {v: k for k, v in enumerate(values)})


def _strides(**views: View) -> dict[str, int]:
    out = {}
    for name, v in views.items():
        out[f"{name}_blk_stride"] = v.blk
        out[f"{name}_rep_stride"] = v.rep
    return out


def _unary(name: str, dst: View, src: View, common: dict, scalar: float | None) -> None:
    extra = {} if scalar is None else {"scalar": float(scalar)}
    nir.create_op(name, [dst.value, src.value], **common, **_strides(dst=dst, src=src), **extra)


def emit_flat_run(compute: Compute, target, count: int, dst: tuple[ir.Value, str],
                  srcs: Sequence[tuple[ir.Value, str] | View], temps: Sequence[ir.Value] = (),
                  consts: Constants | None = None) -> None:
    """`compute` over `count` contiguous elements of UB buffers given as
    (buffer, element type); a `View` source (a broadcast scalar) is passed
    as is. `temps` are the buffers of `compute.temps`, `count` elements each."""
    types = [dst[1]] + [s[1] for s in srcs if not isinstance(s, View)] + list(compute.temps)
    geo = VectorGeometry.for_types(target, [nir.element_bytes(t) for t in types])
    lanes, granule = geo.lanes, target.granule("ub")
    for piece in split_repeats(count, lanes, geo.max_repeat):
        touched = (piece.repeat - 1) * lanes + piece.mask

        def flat(buf: ir.Value, elem: str) -> View:
            return View(sub(buf, piece.offset, touched), 1,
                        lanes * nir.element_bytes(elem) // granule)

        emit(compute, flat(*dst), [s if isinstance(s, View) else flat(*s) for s in srcs],
                     piece.repeat, piece.mask,
                     [flat(t, elem) for t, elem in zip(temps, compute.temps)], consts)


def vdup_fill(target, buf: ir.Value, count: int, elem: str, value: float) -> None:
    """The first `count` elements of UB buffer `buf` (`elem`) set to `value`:
    whole repeats of `vdup`, then one masked repeat for the rest."""
    lanes = target.lanes(nir.element_bytes(elem))
    for piece in split_repeats(count, lanes, target.max_repeat):
        nir.create_op("cce.vdup", [sub(buf, piece.offset, (piece.repeat - 1) * lanes + piece.mask)],
                      repeat=piece.repeat, mask=piece.mask, dst_blk_stride=1, dst_rep_stride=8,
                      scalar=value)

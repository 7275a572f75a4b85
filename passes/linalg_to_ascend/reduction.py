"""Reductions (`linalg.generic` with reduction loops): `out = x + out` or
`out = max(x, out)` where x is any elementwise expression of the inputs.

x is computed in loop space, then each reduction loop is reduced with
`ascend.reduce_sum` / `reduce_max` along its axis (unit axes dropped by a
view first, the reduced axis kept as size 1), so the loop space's rank
stays; an init that is not the neutral element is combined at the end.
"""

from __future__ import annotations

import numpy as np

from npu.passes.linalg_to_ascend.structure import Structured, UnsupportedOp
from npu.passes.linalg_to_ascend.elementwise import Unreadable
from npu.passes.linalg_to_ascend.emitter import Buf, float_text

COMBINERS = {"arith.addf": "sum", "arith.addi": "sum", "arith.maximumf": "max",
             "arith.maxnumf": "max", "arith.maxsi": "max"}


def is_neutral(array: np.ndarray, kind: str) -> bool:
    if kind == "sum":
        return bool(np.all(array == 0))
    return bool(np.all(array <= np.finfo(np.float32).min)) if array.dtype.kind == "f" else False


class ReductionLowering:
    """Mixed into `Converter`."""

    def reduction(self, op, s: Structured) -> None:
        loc = self.loc(op)
        body = op.regions[0].blocks[0]
        n_in = len(s.inputs)
        yields = list(body.operations)[-1].operands
        since = self.em.mark()
        lowering, args = self._body(op, s, loc)
        args += [Unreadable() for _ in s.outputs]
        body_ops = {r: o for o in body.operations for r in o.results}
        for i in self._used_results(op):
            comb = body_ops.get(yields[i])
            out_arg = body.arguments[n_in + i]
            kind = COMBINERS.get(comb.name) if comb is not None else None
            if kind is None or out_arg not in list(comb.operands):
                raise UnsupportedOp(op, "reduction body is not `out = x + out` or `out = max(x, out)`")
            x_value = comb.operands[1] if comb.operands[0] == out_arg else comb.operands[0]
            (x,) = lowering.run(body, args, [x_value])
            if not isinstance(x, Buf):
                raise UnsupportedOp(op, "reduction of a constant")
            x = self._reduce(x, kind, s, loc)
            init = self.tensors[s.outputs[i]]
            if not (init.is_constant and is_neutral(init.array, kind)):
                init_term = self.loop_term(s.outputs[i], s.maps[n_in + i], len(s.loop_sizes), loc)
                lowering_bin = "ascend.add" if kind == "sum" else "ascend.max"
                init_buf = lowering.buffer(init_term, x.dtype)
                out = self.em.alloc(x.shape, x.dtype, loc)
                self.em.op(lowering_bin, [x, init_buf, out], loc)
                x = out
            self._store(op, op.results[i], x, self._loop_shape_of_output(op, s, i), since, loc)

    def _reduce(self, x: Buf, kind: str, s: Structured, loc: str) -> Buf:
        name = "ascend.reduce_sum" if kind == "sum" else "ascend.reduce_max"
        # Outer axes first: their rows of trailing elements are longest then.
        for d in sorted(s.reduction_dims):
            size = s.loop_sizes[d]
            if x.shape[d] == 1:
                if kind == "sum" and size > 1:
                    scaled = self.em.alloc(x.shape, x.dtype, loc)
                    self.em.op("ascend.muls", [x, scaled], loc, scalar=f"{float_text(size)} : f64")
                    x = scaled
                continue
            # Size-1 axes are dropped first (a view): the reduction then sees
            # the fewest, largest dims; the result keeps the reduced axis as 1.
            keep = [j for j in range(len(x.shape)) if x.shape[j] != 1 or j == d]
            squeezed = self.em.reshape(x, [x.shape[j] for j in keep], loc)
            axis = keep.index(d)
            reduced = [e if j != axis else 1 for j, e in enumerate(squeezed.shape)]
            out = self.em.alloc(reduced, x.dtype, loc)
            attrs = {} if axis == len(keep) - 1 else {"axis": f"{axis} : i64"}
            self.em.op(name, [squeezed, out], loc, **attrs)
            kept = list(x.shape)
            kept[d] = 1
            x = self.em.reshape(out, kept, loc)
        return x



"""`linalg` on tensors -> `ascend` on GM memrefs, one function at a time.

Route (why not one-shot-bufferize): tensors are immutable SSA values, so we
give each one a GM buffer ourselves while walking the function once, in
order: function inputs and results become arguments (results in
destination-passing style), every computed tensor a `memref.alloc` in "gm"
(the GM planner packs them into one workspace later), reshapes views.
Doing the buffer assignment here keeps every buffer in "gm" with an
identity layout and lets the final op of each tensor write straight into
its destination, where bufferization would add copies and strided layouts.

Layouts are chosen here: a matmul's operands are cast to f16 and
fractalized (constant weights on the host, at compile time), its f32 Nz
result stays Nz for a following matmul and is defractalized only when a
non-matmul consumer needs it. Ops whose inputs are all constants are
evaluated on the host (`linalg_eval`).
"""

from __future__ import annotations

import numpy as np
from mlir import ir

from npu.dialects.ascend import fractalized_shape
from npu.frontend.linalg_eval import Evaluator, constant_value
from npu.frontend.structure import (Structured, UnsupportedOp, element_name, structured,
                                    tensor_shape, to_loop_space)
from npu.frontend.to_ascend.elementwise import SUPPORTED_TYPES, BodyLowering, Term, Unreadable
from npu.frontend.to_ascend.emitter import Buf, Emitter, float_text
from npu.frontend.to_ascend.values import Tensor
from npu.ir import NUMPY_DTYPES
from npu.reference import fractalize

COMBINERS = {"arith.addf": "sum", "arith.addi": "sum", "arith.maximumf": "max",
             "arith.maxnumf": "max", "arith.maxsi": "max"}
CONTRACTIONS = ("linalg.matmul", "linalg.batch_matmul")




def storage_type(element: str) -> str:
    """Booleans (i1 compare results) are held as i8 0/1."""
    return "i8" if element == "i1" else element


def is_neutral(array: np.ndarray, kind: str) -> bool:
    if kind == "sum":
        return bool(np.all(array == 0))
    return bool(np.all(array <= np.finfo(np.float32).min)) if array.dtype.kind == "f" else False


class Converter:
    def __init__(self, func_op: ir.Operation, input_names=None, output_names=None, locate=None):
        self.func = func_op
        self.locate = locate
        self.em = Emitter()
        self.tensors: dict[ir.Value, Tensor] = {}
        self.scalars: dict[ir.Value, Term] = {}
        self.folder = Evaluator(func_op)
        self.input_names = input_names
        self.output_names = output_names
        self.claims: dict[ir.Value, Buf] = {}    # returned value -> its output argument

    # -- the function ---------------------------------------------------------
    def convert(self) -> str:
        block = self.func.regions[0].blocks[0]
        for i, arg in enumerate(block.arguments):
            shape, dtype = self._checked_type(arg, self.func, f"argument #{i}")
            name = self.input_names[i] if self.input_names else f"arg{i}"
            self.tensors[arg] = Tensor(shape, dtype, nd=self.em.argument(shape, dtype, "input", name))
        ret = [op for op in block.operations if op.name == "func.return"][0]
        outputs = []
        for i, v in enumerate(ret.operands):
            shape, dtype = self._checked_type(v, ret, f"result #{i}")
            name = self.output_names[i] if self.output_names else f"result{i}"
            out = self.em.argument(shape, dtype, "output", name)
            outputs.append(out)
            self.claims.setdefault(v, out)
        for op in block.operations:
            if op.name != "func.return":
                self.visit(op)
        for v, out in zip(ret.operands, outputs):
            self.finish_output(v, out, self.loc(ret))
        name = ir.StringAttr(self.func.attributes["sym_name"]).value
        return self.em.function_text(name, self.loc(self.func))

    def loc(self, op: ir.Operation) -> str:
        """The location ascend ops made for `op` carry (see NodeLocations)."""
        return self.locate.text(op.location) if self.locate else str(op.location)

    def _checked_type(self, value, op, what: str):
        if not isinstance(value.type, ir.RankedTensorType):
            raise UnsupportedOp(op, f"{what} is not a ranked tensor ({value.type})")
        t = ir.RankedTensorType(value.type)
        if not t.has_static_shape:
            raise UnsupportedOp(op, f"{what} has a dynamic shape {value.type}")
        dtype = element_name(t)
        if dtype not in SUPPORTED_TYPES:
            raise UnsupportedOp(op, f"{what} has element type {dtype}; the NPU holds "
                                f"{', '.join(SUPPORTED_TYPES)}")
        return tuple(t.shape), dtype

    def finish_output(self, value: ir.Value, out: Buf, loc: str) -> None:
        t = self.tensors[value]
        if t.nd is None and t.bcast is not None and value in self.claims:
            self.nd(value, loc)
        if t.nd is not None and self._is_view_of(t.nd, out):
            return
        src = self.nd(value, loc)
        if src.name == out.name:
            return
        root = self.em.root(src)
        if root.size == out.size and root.dtype == out.dtype and \
                self.em.retarget(root, 0, lambda: self.em.reshape(out, root.shape, loc)) is not None:
            return  # the temporary holding the result becomes the output itself
        src = self.em.reshape(src, out.shape, loc)
        if out.dtype.startswith("f"):
            self.em.op("ascend.muls", [src, out], loc, scalar="1.0 : f64")
        else:
            zero = self.em.constant(np.zeros([1] * len(out.shape), NUMPY_DTYPES[out.dtype]))
            self.em.op("ascend.add", [src, zero, out], loc)

    def _is_view_of(self, buf: Buf, out: Buf) -> bool:
        return buf.name in self._views_of.get(out.name, {out.name})

    @property
    def _views_of(self) -> dict:
        if not hasattr(self, "_views"):
            self._views = {}
        return self._views

    # -- buffers ---------------------------------------------------------------
    def dest(self, value: ir.Value, shape, dtype: str, loc: str) -> Buf:
        """Where `value` (or its `shape`-d form) is written: its output
        argument when the function returns it, else a new GM temporary."""
        out = self.claims.pop(value, None)
        if out is not None and out.dtype == dtype and int(np.prod(shape)) == out.size:
            view = self.em.reshape(out, shape, loc)
            self._views_of.setdefault(out.name, {out.name}).add(view.name)
            return view
        if out is not None:
            self.claims[value] = out
        return self.em.alloc(shape, dtype, loc)

    def claimed_view(self, value: ir.Value, shape, dtype: str):
        out = self.claims.get(value)
        if out is None or out.dtype != dtype or int(np.prod(shape)) != out.size:
            return None
        return lambda: self.dest(value, shape, dtype, "")

    def nd(self, value: ir.Value, loc: str) -> Buf:
        """`value` as a row-major GM buffer (materialised on first use)."""
        t = self.tensors[value]
        if t.nd is None and t.array is not None:
            t.nd = self.em.constant(t.array)
        elif t.nd is None and t.bcast is not None:
            t.nd = self.dest(value, t.shape, t.dtype, loc)
            self.em.op("ascend.broadcast", [t.bcast, t.nd], loc)
        elif t.nd is None:
            rows_cols = t.nz_nd_shape
            dst = self.dest(value, rows_cols, t.dtype, t.nz_loc)
            self.em.op("ascend.defractalize", [t.nz, dst], t.nz_loc)
            t.nd = self.em.reshape(dst, t.shape, t.nz_loc)
        return t.nd

    def nz16(self, value: ir.Value, matrix_shape, loc: str) -> Buf:
        """`value` (viewed as `matrix_shape` = [batch?, R, C]) in Nz f16 for the cube."""
        t = self.tensors[value]
        if t.nz16 is not None and t.nz_nd_shape == tuple(matrix_shape):
            return t.nz16
        nz_shape = fractalized_shape(matrix_shape)
        if t.array is not None:
            host = fractalize(t.array.reshape(matrix_shape).astype(np.float16), nz_shape)
            t.nz16 = self.em.constant(host)
        elif t.nz is not None and t.nz_nd_shape == tuple(matrix_shape):
            t.nz16 = self.em.alloc(nz_shape, "f16", loc)
            self.em.op("ascend.cast", [t.nz, t.nz16], loc, round_mode='"rint"')
        else:
            src = self.em.reshape(self.nd(value, loc), matrix_shape, loc)
            if src.dtype != "f16":
                half = self.em.alloc(matrix_shape, "f16", loc)
                self.em.op("ascend.cast", [src, half], loc, round_mode='"rint"')
                src = half
            t.nz16 = self.em.alloc(nz_shape, "f16", loc)
            self.em.op("ascend.fractalize", [src, t.nz16], loc)
        t.nz_nd_shape = t.nz_nd_shape or tuple(matrix_shape)
        return t.nz16

    def scalar(self, value: ir.Value) -> Term:
        if value in self.scalars:
            return self.scalars[value]
        if value in self.tensors:
            raise UnsupportedOp(value.owner, "a tensor captured inside a linalg body")
        owner = value.owner
        raise UnsupportedOp(owner if isinstance(owner, ir.Operation) else self.func,
                            "a value computed at run time is used as a scalar")

    # -- ops -------------------------------------------------------------------
    def visit(self, op: ir.Operation) -> None:
        name = op.name
        loc = self.loc(op)
        if name == "arith.constant":
            value = constant_value(op)
            self.folder.env[op.results[0]] = value
            if isinstance(value, np.ndarray):
                self.tensors[op.results[0]] = Tensor(value.shape, element_name(op.results[0]), array=value)
            else:
                self.scalars[op.results[0]] = value
            return
        if name.startswith(("arith.", "math.")) and all(v in self.scalars for v in op.operands):
            value = self.folder.evaluate_op(op, [self.scalars[v] for v in op.operands])[0]
            self.scalars[op.results[0]] = value.item() if hasattr(value, "item") else value
            self.folder.env[op.results[0]] = self.scalars[op.results[0]]
            return
        tensor_ins = [v for v in op.operands if v in self.tensors]
        if name == "tensor.empty" or (tensor_ins and all(self.tensors[v].is_constant for v in tensor_ins)
                                      and all(v in self.tensors or v in self.scalars for v in op.operands)):
            self.fold(op)
            return
        if name in ("tensor.expand_shape", "tensor.collapse_shape", "tensor.cast", "linalg.copy"):
            src = self.nd(op.operands[0], loc)
            shape = tensor_shape(op.results[0])
            self.tensors[op.results[0]] = Tensor(tuple(shape), src.dtype, nd=self.em.reshape(src, shape, loc))
            return
        if name in CONTRACTIONS:
            self.matmul(op, structured(op))
            return
        if name == "linalg.transpose":
            self.transpose(op)
            return
        if name == "linalg.broadcast":
            self.broadcast(op)
            return
        if name == "linalg.generic":
            s = structured(op)
            if s.reduction_dims:
                contraction = self._contraction(op, s)
                if contraction:
                    self.matmul(op, s)
                else:
                    self.reduction(op, s)
            else:
                self.elementwise(op, s)
            return
        raise UnsupportedOp(op, f"'{name}' is not supported by the conversion to ascend")

    def fold(self, op: ir.Operation) -> None:
        operands = []
        for v in op.operands:
            operands.append(self.tensors[v].array if v in self.tensors else self.scalars[v])
        results = self.folder.evaluate_op(op, operands)
        for r, value in zip(op.results, results):
            value = np.asarray(value)
            self.tensors[r] = Tensor(tuple(value.shape), element_name(r), array=value)

    # -- matmul ----------------------------------------------------------------
    def _contraction(self, op, s: Structured) -> bool:
        """A generic whose body is out + a * b over one reduction loop."""
        body = op.regions[0].blocks[0]
        names = [o.name for o in body.operations]
        return (len(s.inputs) == 2 and len(s.outputs) == 1 and len(s.reduction_dims) == 1
                and names == ["arith.mulf", "arith.addf", "linalg.yield"])

    def matmul(self, op, s: Structured) -> None:
        loc = self.loc(op)
        a_map, b_map, c_map = s.maps
        if None in a_map + b_map + c_map or len(s.reduction_dims) != 1:
            raise UnsupportedOp(op, "contraction maps are not plain permutations over one reduction")
        k = s.reduction_dims[0]
        batch = [d for d in c_map if d in a_map and d in b_map]
        ms = [d for d in c_map if d in a_map and d not in b_map]
        ns = [d for d in c_map if d in b_map and d not in a_map]
        if len(ms) != 1 or len(ns) != 1 or c_map != batch + ms + ns:
            raise UnsupportedOp(op, "contraction is not [batch..., M, N] = A[batch..., M, K] x B[batch..., K, N]")
        m, n = ms[0], ns[0]
        sizes = s.loop_sizes
        nb = int(np.prod([sizes[d] for d in batch])) if batch else 0
        lead = [nb] if batch else []
        a_nz = self._cube_operand(op, s.inputs[0], a_map, batch + [m, k], lead + [sizes[m], sizes[k]], loc)
        b_nz = self._cube_operand(op, s.inputs[1], b_map, batch + [k, n], lead + [sizes[k], sizes[n]], loc)
        c_nd_shape = tuple(lead + [sizes[m], sizes[n]])
        c = self.em.alloc(fractalized_shape(c_nd_shape), "f32", loc)
        self.em.op("ascend.batch_matmul" if batch else "ascend.matmul", [a_nz, b_nz, c], loc)
        result = op.results[0]
        out_dtype = element_name(result)
        if out_dtype != "f32":
            raise UnsupportedOp(op, f"matmul result type {out_dtype}: the cube accumulates in f32")
        t = Tensor(tuple(tensor_shape(result)), "f32", nz=c, nz_loc=loc)
        t.nz_nd_shape = c_nd_shape
        self.tensors[result] = t
        init = self.tensors.get(s.outputs[0])
        if init is not None and not (init.is_constant and is_neutral(init.array, "sum")):
            acc = self.nd(result, loc)
            total = self.dest(result, t.shape, "f32", loc)
            self.em.op("ascend.add", [acc, self.nd(s.outputs[0], loc), total], loc)
            self.tensors[result] = Tensor(t.shape, "f32", nd=total)

    def _cube_operand(self, op, value, op_map, want_dims, matrix_shape, loc) -> Buf:
        t = self.tensors[value]
        missing = [d for d in want_dims if d not in op_map]
        if missing:
            raise UnsupportedOp(op, f"a matmul operand broadcast along batch loops {missing}")
        perm = [op_map.index(d) for d in want_dims]
        if perm == sorted(perm) and perm == list(range(len(perm))):
            return self.nz16(value, matrix_shape, loc)
        if t.is_constant:
            host = Tensor(t.shape, t.dtype, array=np.ascontiguousarray(np.transpose(t.array, perm)))
        else:
            src = self.nd(value, loc)
            out = self.em.alloc([src.shape[p] for p in perm], src.dtype, loc)
            self.em.op("ascend.transpose", [src, out], loc, permutation=_i64_array(perm))
            host = Tensor(out.shape, out.dtype, nd=out)
        key = _Synthetic()
        self.tensors[key] = host
        return self.nz16(key, matrix_shape, loc)

    # -- transpose / broadcast -------------------------------------------------
    def transpose(self, op) -> None:
        loc = self.loc(op)
        perm = list(ir.DenseI64ArrayAttr(op.attributes["permutation"]))
        src = self.nd(op.operands[0], loc)
        shape = tuple(tensor_shape(op.results[0]))
        out = self.dest(op.results[0], shape, src.dtype, loc)
        self.em.op("ascend.transpose", [src, out], loc, permutation=_i64_array(perm))
        self.tensors[op.results[0]] = Tensor(shape, src.dtype, nd=out)

    def broadcast(self, op) -> None:
        loc = self.loc(op)
        added = list(ir.DenseI64ArrayAttr(op.attributes["dimensions"]))
        src = self.nd(op.operands[0], loc)
        shape = tuple(tensor_shape(op.results[0]))
        keep = [1 if i in added else shape[i] for i in range(len(shape))]
        out = self.dest(op.results[0], shape, src.dtype, loc)
        self.em.op("ascend.broadcast", [self.em.reshape(src, keep, loc), out], loc)
        self.tensors[op.results[0]] = Tensor(shape, src.dtype, nd=out)

    # -- generics ----------------------------------------------------------------
    def loop_term(self, value, op_map, n_loops: int, loc: str) -> Term:
        """`value` viewed in the loop space of a generic (see module docstring)."""
        if value in self.scalars:
            return self.scalars[value]
        t = self.tensors[value]
        if t.is_constant:
            arr = to_loop_space(t.array, op_map, n_loops)
            flat = arr.reshape(-1)
            if flat.size and np.all(flat == flat[0]):
                return flat[0].item()
            return self.em.constant(np.ascontiguousarray(arr))
        buf = t.bcast if t.nd is None and t.bcast is not None else self.nd(value, loc)
        dims = [d for d in op_map if d is not None]
        kept = [s for s, d in zip(buf.shape, op_map) if d is not None]
        if len(kept) != len(buf.shape):
            buf = self.em.reshape(buf, kept or [1], loc)
        order = sorted(range(len(dims)), key=lambda i: dims[i])
        if order != list(range(len(dims))):
            out = self.em.alloc([kept[i] for i in order], buf.dtype, loc)
            self.em.op("ascend.transpose", [buf, out], loc, permutation=_i64_array(order))
            buf = out
        shape = [1] * n_loops
        for d, size in zip(sorted(dims), buf.shape if dims else []):
            shape[d] = size
        return self.em.reshape(buf, shape, loc)

    def _loop_shape_of_output(self, op, s: Structured, i: int) -> list[int]:
        out_map = s.maps[len(s.inputs) + i]
        dims = [d for d in out_map if d is not None]
        if dims != sorted(dims):
            raise UnsupportedOp(op, "output indexing map permutes the loops")
        return [s.loop_sizes[d] if d in dims else 1 for d in range(len(s.loop_sizes))]

    def _output_map(self, op, result):
        s = structured(op)
        return s.maps[len(s.inputs) + list(op.results).index(result)]

    def _used_results(self, op) -> list[int]:
        return [i for i, r in enumerate(op.results) if any(True for _ in r.uses)]

    def _body(self, op, s: Structured, loc: str) -> tuple[BodyLowering, list[Term]]:
        n = len(s.loop_sizes)
        args = [self.loop_term(v, m, n, loc) for v, m in zip(s.inputs, s.maps)]
        return BodyLowering(self.em, loc, n, self.scalar), args

    def _store(self, op, result: ir.Value, term: Term, loop_shape, since: int, loc: str) -> None:
        """Make `term` (loop space) the value of `result`, writing into its destination."""
        shape = tuple(tensor_shape(result))
        dtype = storage_type(element_name(result))
        if not isinstance(term, Buf):
            array = np.full(shape, term, dtype=NUMPY_DTYPES[dtype])
            self.tensors[result] = Tensor(shape, dtype, array=array)
            return
        if term.dtype != dtype:
            raise UnsupportedOp(op, f"body yields {term.dtype} for a {dtype} result")
        if tuple(term.shape) == tuple(loop_shape):
            claimed = self.claimed_view(result, loop_shape, dtype)
            if claimed is not None:
                view = self.em.retarget(term, since, claimed)
                if view is not None:
                    term = view
            self.tensors[result] = Tensor(shape, dtype, nd=self.em.reshape(term, shape, loc))
            return
        # A broadcast: consumers read the small buffer (ascend ops broadcast);
        # it is materialised only for a consumer that needs the full tensor.
        out_map = self._output_map(op, result)
        small = [term.shape[d] if d is not None else 1 for d in out_map]
        self.tensors[result] = Tensor(shape, dtype, bcast=self.em.reshape(term, small, loc))

    def elementwise(self, op, s: Structured) -> None:
        loc = self.loc(op)
        body = op.regions[0].blocks[0]
        used = self._used_results(op)
        since = self.em.mark()
        lowering, args = self._body(op, s, loc)
        args += [self._out_arg(op, s, i, loc) for i in range(len(s.outputs))]
        yields = list(body.operations)[-1].operands
        terms = lowering.run(body, args, [yields[i] for i in used])
        for i, term in zip(used, terms):
            self._store(op, op.results[i], term, self._loop_shape_of_output(op, s, i), since, loc)

    def _out_arg(self, op, s: Structured, i: int, loc: str) -> Term:
        """The `%out` block argument: only a constant init can be read."""
        v = s.outputs[i]
        t = self.tensors.get(v)
        if t is not None and t.is_constant:
            return self.loop_term(v, s.maps[len(s.inputs) + i], len(s.loop_sizes), loc)
        return Unreadable()

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
        for d in sorted(s.reduction_dims, reverse=True):
            size = s.loop_sizes[d]
            if x.shape[d] == 1:
                if kind == "sum" and size > 1:
                    scaled = self.em.alloc(x.shape, x.dtype, loc)
                    self.em.op("ascend.muls", [x, scaled], loc, scalar=f"{float_text(size)} : f64")
                    x = scaled
                continue
            src = x
            if d != len(x.shape) - 1:
                # Bring the axis last (the reductions reduce the last axis);
                # size-1 axes are dropped first (a view) so the transpose is
                # as small a permutation as possible.
                keep = [j for j in range(len(x.shape)) if x.shape[j] != 1 or j == d]
                squeezed = self.em.reshape(x, [x.shape[j] for j in keep], loc)
                axis = keep.index(d)
                perm = [j for j in range(len(keep)) if j != axis] + [axis]
                if perm != list(range(len(keep))):
                    src = self.em.alloc([squeezed.shape[j] for j in perm], x.dtype, loc)
                    self.em.op("ascend.transpose", [squeezed, src], loc, permutation=_i64_array(perm))
                else:
                    src = squeezed
            out = self.em.alloc(list(src.shape[:-1]) or [1], x.dtype, loc)
            self.em.op(name, [src, out], loc)
            kept = list(x.shape)
            kept[d] = 1
            x = self.em.reshape(out, kept, loc)
        return x


class _Synthetic:
    """A dictionary key for a tensor the conversion makes (a transposed operand)."""


def _i64_array(values) -> str:
    return "array<i64: " + ", ".join(str(int(v)) for v in values) + ">"

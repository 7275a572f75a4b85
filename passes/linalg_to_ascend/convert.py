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

from dataclasses import replace

import numpy as np
from mlir import ir

from npu.passes.linalg_to_ascend.linalg_eval import Evaluator, constant_value
from npu.passes.linalg_to_ascend.structure import (Structured, UnsupportedOp, element_name,
                                                   from_loop_space, structured, tensor_shape,
                                                   to_loop_space)
from npu.passes.linalg_to_ascend.elementwise import SUPPORTED_TYPES, BodyLowering, Term, Unreadable
from npu.passes.linalg_to_ascend.emitter import Buf, Emitter, i64_array
from npu.passes.linalg_to_ascend.conv import CONV_OPS, ConvLowering
from npu.passes.linalg_to_ascend.conv_int8 import INT8_CONV
from npu.passes.linalg_to_ascend.gather import GatherLowering
from npu.passes.linalg_to_ascend.matmul import MatmulLowering
from npu.passes.linalg_to_ascend.matmul_int8 import Int8MatmulLowering
from npu.passes.linalg_to_ascend.pooling import POOLING_OPS, PoolingLowering
from npu.passes.linalg_to_ascend.reduction import ReductionLowering
from npu.passes.linalg_to_ascend.slices import SliceLowering
from npu.passes.linalg_to_ascend.values import Tensor
from npu.ir import NUMPY_DTYPES

CONTRACTIONS = ("linalg.matmul", "linalg.batch_matmul")
SLICE_OPS = {"tensor.extract_slice": "extract_slice", "tensor.insert_slice": "insert_slice",
             "tensor.concat": "concat"}


def storage_type(element: str) -> str:
    """Booleans (i1 compare results) are held as i8 0/1."""
    return "i8" if element == "i1" else element


class Converter(MatmulLowering, Int8MatmulLowering, ReductionLowering, GatherLowering,
                SliceLowering, ConvLowering, PoolingLowering):
    def __init__(self, func_op: ir.Operation, input_names=None, output_names=None, locate=None,
                 detach_constants: bool = False, weights: dict[str, np.ndarray] | None = None):
        self.func = func_op
        self.weights = weights  # the imported constants' data kept out of the module (`constant_value`)
        self.locate = locate
        self.em = Emitter(detached={} if detach_constants else None)
        self.tensors: dict[ir.Value, Tensor] = {}
        self.scalars: dict[ir.Value, Term] = {}
        self.folder = Evaluator(func_op)
        self.input_names = input_names or _names(func_op, "npu.input_names")
        self.output_names = output_names or _names(func_op, "npu.output_names")
        # "name=type": model inputs/outputs of an integer type held as i32 (onnx_narrow).
        self.host_types = dict(n.split("=", 1) for n in _names(func_op, "npu.host_types") or ())
        self.claims: dict[ir.Value, Buf] = {}    # returned value -> its output argument
        self.current: ir.Operation = func_op     # the op being converted
        # (op, message): what the caller reports as located warnings.
        self.warnings: list[tuple[ir.Operation, str]] = []
        self.pool_pads: dict[ir.Value, tuple] = {}  # run-time tensor.pad results (pooling.py)
        self.absorbed: set[ir.Value] = set()        # results an earlier op already computed
        self.concat_bytes: dict[str, tuple] = {}  # NC1HWC0 concats' bytes: (parts, dtype, buf)

    # -- the function ---------------------------------------------------------
    def convert(self) -> str:
        block = self.func.regions[0].blocks[0]
        for i, arg in enumerate(block.arguments):
            shape, dtype = self._checked_type(arg, self.func, f"argument #{i}")
            name = self.input_names[i] if self.input_names else f"arg{i}"
            buf = self.em.argument(shape, storage_type(dtype), "input", name, boolean=dtype == "i1",
                                   host_type=self.host_types.get(name, ""))
            self.tensors[arg] = Tensor(shape, storage_type(dtype), nd=buf)
        ret = [op for op in block.operations if op.name == "func.return"][0]
        outputs = []
        for i, v in enumerate(ret.operands):
            shape, dtype = self._checked_type(v, ret, f"result #{i}")
            name = self.output_names[i] if self.output_names else f"result{i}"
            out = self.em.argument(shape, storage_type(dtype), "output", name, boolean=dtype == "i1",
                                   host_type=self.host_types.get(name, ""))
            outputs.append(out)
            self.claims.setdefault(v, out)
        for op in block.operations:
            if op.name != "func.return":
                self.visit(op)
        for v, out in zip(ret.operands, outputs):
            self.finish_output(v, out, self.loc(ret))
        name = ir.StringAttr(self.func.attributes["sym_name"]).value
        return self.em.function_text(name, self.loc(self.func))

    def warn(self, message: str) -> None:
        self.warnings.append((self.current, message))

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
        if dtype not in SUPPORTED_TYPES and dtype != "i1":  # i1: bool, held as i8 0/1
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
        elif out.dtype == "i8":  # bools: no i8 arithmetic, a round trip through f16 is exact
            wide = self.em.alloc(out.shape, "f16", loc)
            self.em.op("ascend.cast", [src, wide], loc, round_mode='"rint"')
            self.em.op("ascend.cast", [wide, out], loc, round_mode='"rint"')
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

    def reshape_nz(self, op: ir.Operation) -> bool:
        """A reshape that keeps the last dim of a (not batched) matmul result
        held only in Nz and regroups its rows (GPT-2's Gemm [S, 4H] viewed as
        [1, S, 4H] before its GELU; ConvNeXt's [H*W, 4C] as [1, H, W, 4C]):
        the result shares the Nz buffers, so the elementwise ops after it
        still run on them (`elementwise_in_nz`) and a matmul epilogue can
        take them. (Batched results, attention's scores, keep the ND form
        its pattern reads.) False when it does not apply."""
        t = self.tensors.get(op.operands[0])
        if t is None or t.nz is None or t.nd is not None or len(t.nz_nd_shape) != 2:
            return False
        shape = tuple(tensor_shape(op.results[0]))
        if len(shape) < 2 or shape[-1] != t.shape[-1] or np.prod(shape) != np.prod(t.shape):
            return False
        self.tensors[op.results[0]] = replace(t, shape=shape)
        return True

    def nd(self, value: ir.Value, loc: str) -> Buf:
        """`value` as a row-major GM buffer (materialised on first use)."""
        t = self.tensors[value]
        if t.nd is None and t.array is not None:
            t.nd = self.em.constant(t.array)
        elif t.nd is None and (t.c1hwc0 is not None or t.int8_f16 is not None):  # (conv_int8's f16)
            t.nd = self.nchw_of_5hd(value, loc) if t.c1hwc0 is not None else self.nd_of_int8_f16(value, loc)
        elif t.nd is None and t.widened is not None:  # an int8 tensor read as i32 after all
            t.nd = self.dest(value, t.shape, "i32", loc)
            self.em.op("ascend.cast", [self.nd(t.widened, loc), t.nd], loc, round_mode='"rint"')
        elif t.nd is None and t.bcast is not None:
            t.nd = self.dest(value, t.shape, t.dtype, loc)
            self.emit_broadcast(t.bcast, t.nd, loc)
        elif t.nd is None:
            rows_cols = t.nz_nd_shape
            dst = self.dest(value, rows_cols, t.dtype, t.nz_loc)
            self.em.op("ascend.defractalize", [t.nz, dst], t.nz_loc)
            t.nd = self.em.reshape(dst, t.shape, t.nz_loc)
        return t.nd

    def scalar(self, value: ir.Value) -> Term:
        if value in self.scalars:
            return self.scalars[value]
        if value in self.tensors:  # its owner may be a block (a function argument)
            raise UnsupportedOp(self.current, "a tensor captured inside a linalg body (an element "
                                "read at a computed index)")
        owner = value.owner
        raise UnsupportedOp(owner if isinstance(owner, ir.Operation) else self.func,
                            "a value computed at run time is used as a scalar")

    # -- ops -------------------------------------------------------------------
    def visit(self, op: ir.Operation) -> None:
        name = op.name
        loc = self.loc(op)
        self.em.origin = loc
        self.current = op
        if name == "arith.constant":
            value = constant_value(op, self.weights)
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
        if op.results and op.results[0] in self.absorbed:
            return
        if self._pooling(op):
            return
        if name == "linalg.generic" and self.gather(op):
            return
        tensor_ins = [v for v in op.operands if v in self.tensors]
        if name == "tensor.empty" or (tensor_ins and all(self.tensors[v].is_constant for v in tensor_ins)
                                      and all(v in self.tensors or v in self.scalars for v in op.operands)):
            self.fold(op)
            return
        if name == "tensor.expand_shape" and self.expand_padded(op):
            return
        if name == "tensor.pad":
            self.pad(op)
            return
        if name in CONV_OPS:
            self.conv(op)
            return
        if name == INT8_CONV:
            self.conv_int8(op)
            return
        if name in ("tensor.expand_shape", "tensor.collapse_shape") and (
                self.reshape_5hd(op) or self.reshape_nz(op)):
            return
        if name in ("tensor.expand_shape", "tensor.collapse_shape", "tensor.cast", "linalg.copy"):
            src = self.nd(op.operands[0], loc)
            shape = tensor_shape(op.results[0])
            self.tensors[op.results[0]] = Tensor(tuple(shape), src.dtype, nd=self.em.reshape(src, shape, loc))
            return
        if name in SLICE_OPS:
            getattr(self, SLICE_OPS[name])(op)
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
            elif not (self.gather_generic(op) or self.widening(op, s) or self.int8_of_nz(op, s)
                      or self.int8_for_convs(op, s) or self.truncation_of_int8_matmul(op, s)):
                self.elementwise(op, s)
            return
        raise UnsupportedOp(op, f"'{name}' is not supported by the conversion to ascend")

    def _pooling(self, op: ir.Operation) -> bool:
        """tensor.pad and pooling ops of run-time tensors (pooling.py)."""
        src = op.operands[0] if len(op.operands) else None
        run_time = src is not None and (src in self.pool_pads or
                                         (src in self.tensors and not self.tensors[src].is_constant))
        if op.name == "tensor.pad" and run_time and all(
                u.owner.name in POOLING_OPS for u in op.results[0].uses):
            self.pool_pad(op)
        elif op.name in POOLING_OPS and run_time:
            self.pooling(op)
        else:
            return False
        return True

    def fold(self, op: ir.Operation) -> None:
        operands = []
        for v in op.operands:
            operands.append(self.tensors[v].array if v in self.tensors else self.scalars[v])
        results = self.folder.evaluate_op(op, operands)
        for r, value in zip(op.results, results):
            value = np.asarray(value)
            self.tensors[r] = Tensor(tuple(value.shape), element_name(r), array=value)

    # -- transpose / broadcast -------------------------------------------------
    def transpose(self, op) -> None:
        loc = self.loc(op)
        perm = list(ir.DenseI64ArrayAttr(op.attributes["permutation"]))
        src = self.nd(op.operands[0], loc)
        shape = tuple(tensor_shape(op.results[0]))
        out = self.dest(op.results[0], shape, src.dtype, loc)
        self.em.op("ascend.transpose", [src, out], loc, permutation=i64_array(perm))
        self.tensors[op.results[0]] = Tensor(shape, src.dtype, nd=out)

    def broadcast(self, op) -> None:
        loc = self.loc(op)
        added = list(ir.DenseI64ArrayAttr(op.attributes["dimensions"]))
        src = self.nd(op.operands[0], loc)
        shape = tuple(tensor_shape(op.results[0]))
        keep = [1 if i in added else shape[i] for i in range(len(shape))]
        out = self.dest(op.results[0], shape, src.dtype, loc)
        self.emit_broadcast(self.em.reshape(src, keep, loc), out, loc)
        self.tensors[op.results[0]] = Tensor(shape, src.dtype, nd=out)

    def emit_broadcast(self, src: Buf, out: Buf, loc: str) -> None:
        """ascend.broadcast; bools (i8) through f16, exact (no i8 vector ops)."""
        if src.dtype != "i8":
            self.em.op("ascend.broadcast", [src, out], loc)
            return
        wide_in, wide_out = self.em.alloc(src.shape, "f16", loc), self.em.alloc(out.shape, "f16", loc)
        self.em.op("ascend.cast", [src, wide_in], loc, round_mode='"rint"')
        self.em.op("ascend.broadcast", [wide_in, wide_out], loc)
        self.em.op("ascend.cast", [wide_out, out], loc, round_mode='"rint"')

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
            self.em.op("ascend.transpose", [buf, out], loc, permutation=i64_array(order))
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
        return BodyLowering(self.em, loc, n, self.scalar, s.loop_sizes), args

    def _store(self, op, result: ir.Value, term: Term, loop_shape, since: int, loc: str) -> None:
        """Make `term` (loop space) the value of `result`, writing into its destination."""
        shape = tuple(tensor_shape(result))
        dtype = storage_type(element_name(result))
        if isinstance(term, np.ndarray) and term.ndim:  # computed from the loop indices only
            full = np.broadcast_to(term, loop_shape).astype(NUMPY_DTYPES[dtype])
            array = np.ascontiguousarray(from_loop_space(full, self._output_map(op, result)))
            self.tensors[result] = Tensor(shape, dtype, array=array.reshape(shape))
            return
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
        if self.elementwise_in_nz(op, s) or self.elementwise_in_5hd(op, s):
            return
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


def _names(func_op: ir.Operation, attr: str) -> list[str] | None:
    """Names an importer recorded on the function (see onnx_import)."""
    if attr not in func_op.attributes:
        return None
    return [ir.StringAttr(a).value for a in ir.ArrayAttr(func_op.attributes[attr])]

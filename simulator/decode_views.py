"""Decoding of the scalar side of a program: arith ops, allocations and
memref views (subview, reinterpret_cast, view), each into a closure over the
decoder's slot list (`Decoder` in program.py mixes this in)."""

from __future__ import annotations

from operator import mul
from typing import Callable

from mlir import ir

from npu import ir as npu_ir
from npu.simulator import scalar_unit
from npu.simulator.scalar_loads import ScalarLoads, assert_fn
from npu.simulator.errors import BOUNDS, INVALID, UNSUPPORTED, SimulationError
from npu.simulator.memory import Memory, Region
from npu.simulator.scalar_unit import View
from npu.target import ON_CHIP_BUFFERS

Fn = Callable[[list], None]
DYNAMIC = ir.ShapedType.get_dynamic_stride_or_offset()
VIEW_MEMO_ENTRIES = 1 << 12


class ScalarAndViewDecoding:
    """Mixed into `Decoder` (uses its target, slots and `use`/`slot`)."""

    def scalar(self, op: ir.Operation) -> tuple[Fn | None, int]:
        name = op.name
        where = self.where_of(op.location)
        if name == "arith.constant":
            self.env[self.slot(op.results[0])] = _constant(op, where)
            return None, 0
        if name in scalar_unit.INT_BINARY:
            f = scalar_unit.INT_BINARY[name]
            a, b = (self.use(v, op) for v in op.operands)
            r = self.slot(op.results[0])

            def binary(env: list, r=r, a=a, b=b, f=f) -> None:
                env[r] = f(env[a], env[b])
            binary.code = ("binary", name, r, a, b)  # the compiled walk's (walk_code.py)
            return binary, self.issue
        if name == "arith.cmpi":
            f = scalar_unit.CMPI[npu_ir.int_attr(op, "predicate")]
            a, b = (self.use(v, op) for v in op.operands)
            r = self.slot(op.results[0])

            def cmp(env: list, r=r, a=a, b=b, f=f) -> None:
                env[r] = f(env[a], env[b])
            cmp.code = ("cmpi", npu_ir.int_attr(op, "predicate"), r, a, b)
            return cmp, self.issue
        if name == "arith.select":
            c, t, f_ = (self.use(v, op) for v in op.operands)
            r = self.slot(op.results[0])

            def select(env: list, r=r, c=c, t=t, f_=f_) -> None:
                env[r] = env[t] if env[c] else env[f_]
            select.code = ("select", r, c, t, f_)
            return select, self.issue
        if name in scalar_unit.INT_IDENTITY:
            a = self.use(op.operands[0], op)
            r = self.slot(op.results[0])

            def copy(env: list, r=r, a=a) -> None:
                env[r] = env[a]
            copy.code = ("copy", r, a)
            return copy, self.issue
        if name in ("memref.alloc", "memref.alloca"):
            self.env[self.slot(op.results[0])] = self.alloc(op, where)
            return None, 0
        if name == "memref.dealloc":
            return None, 0
        if name in ("memref.cast", "memref.memory_space_cast"):
            a = self.use(op.operands[0], op)
            r = self.slot(op.results[0])

            def same(env: list, r=r, a=a) -> None:
                env[r] = env[a]
            return same, 0
        if name == "memref.load":
            return self.scalar_load(op, where)
        if name == "cf.assert":
            msg = ir.StringAttr(op.attributes["msg"]).value if "msg" in op.attributes else \
                "assertion failed"
            return assert_fn(self.use(op.operands[0], op), msg, where), self.issue
        if name == "memref.subview":
            return self.subview(op, where)
        if name == "memref.reinterpret_cast":
            return self.reinterpret_cast(op, where)
        if name == "memref.view":
            return self.view(op, where)
        if name in ("memref.collapse_shape", "memref.expand_shape"):
            a = self.use(op.operands[0], op)
            r = self.slot(op.results[0])
            groups = [[int(ir.IntegerAttr(x).value) for x in ir.ArrayAttr(g)]
                      for g in ir.ArrayAttr(op.attributes["reassociation"])]
            shape = _static_shape(op.results[0].type, op, where)
            f = scalar_unit.collapse if name == "memref.collapse_shape" else scalar_unit.expand

            def reshape(env: list, r=r, a=a, groups=groups, shape=shape, f=f, last=[None, None]) -> None:
                source = env[a]
                if last[0] is not source:
                    last[0], last[1] = source, f(source, groups, shape)
                env[r] = last[1]
            return reshape, 0
        raise SimulationError(UNSUPPORTED, f"the simulator cannot execute '{name}'", where)

    @property
    def scalar_loads(self) -> ScalarLoads:
        loads = getattr(self, "_scalar_loads", None)
        if loads is None:
            loads = self._scalar_loads = ScalarLoads(self.target)
        return loads

    def scalar_load(self, op: ir.Operation, where: str) -> tuple[Fn, int]:
        """`memref.load` of one GM element by the scalar unit (see `scalar_loads`):
        its address costs an issue when an index is dynamic, as `hivm.addr` does."""
        operands = list(op.operands)
        src = self.use(operands[0], op)
        idx = tuple(self.use(v, op) for v in operands[1:])
        dynamic = any(npu_ir.defining_op(v) is None or npu_ir.defining_op(v).name != "arith.constant"
                      for v in operands[1:])
        dtype = npu_ir.memref_element(operands[0].type)
        esize = npu_ir.element_bytes(dtype)
        r = self.slot(op.results[0])
        loads, pending = self.scalar_loads, self.pending

        def load(env: list) -> None:
            view = env[src]
            offset = view.offset
            for d, (s, size, stride) in enumerate(zip(idx, view.shape, view.strides)):
                i = env[s]
                if not 0 <= i < size:
                    raise SimulationError(BOUNDS, f"'memref.load' index {i} is outside dimension "
                                          f"{d} of size {size}", where)
                offset += i * stride
            region = view.region
            env[r], cycles = loads.load(region, region.base + offset * esize, dtype, where)
            pending[0] += cycles
        return load, self.issue if dynamic else 0

    def alloc(self, op: ir.Operation, where: str) -> View:
        t = op.results[0].type
        space = npu_ir.memory_space(t)
        shape = _static_shape(t, op, where)
        dtype = npu_ir.memref_element(t)
        nbytes = numel(shape) * npu_ir.element_bytes(dtype)
        strides = tuple(identity_strides(shape))
        if space == "gm":
            _, region = self.gm_memory(f"gm:alloc@{where}", f"{t} @ {where}", nbytes)
            self.gm_alloc_bytes += nbytes
            return View(region, 0, shape, strides)
        if space not in ON_CHIP_BUFFERS:
            raise SimulationError(INVALID, f"'memref.alloc' in unknown memory space '{space}'", where)
        mem = self.on_chip.get(space)
        if mem is None:
            mem = self.on_chip[space] = Memory(space, space, self.target.capacity(space),
                                               self.target.granule(space))
        offset = npu_ir.int_attr(op, "npu.offset") if "npu.offset" in op.attributes else None
        region = self.placement.place(mem, space, nbytes, offset, where, str(t))
        return View(region, 0, shape, strides)

    def subview(self, op: ir.Operation, where: str) -> tuple[Fn, int]:
        operands = list(op.operands)
        src = self.use(operands[0], op)
        seg = list(ir.DenseI32ArrayAttr(op.attributes["operandSegmentSizes"]))
        n_off, n_size, n_stride = seg[1], seg[2], seg[3]
        dyn_off = [self.use(v, op) for v in operands[1:1 + n_off]]
        if n_size:
            raise SimulationError(UNSUPPORTED, "'memref.subview' with dynamic sizes", where)
        if n_stride:
            raise SimulationError(UNSUPPORTED, "'memref.subview' with dynamic strides", where)
        static_off = list(ir.DenseI64ArrayAttr(op.attributes["static_offsets"]))
        steps = list(ir.DenseI64ArrayAttr(op.attributes["static_strides"]))
        shape = _static_shape(op.results[0].type, op, where)
        res_strides, _ = npu_ir.memref_layout(op.results[0].type)
        r = self.slot(op.results[0])
        # Offsets: static entries as ints, dynamic ones as slot references.
        spec = []
        it = iter(dyn_off)
        for o in static_off:
            spec.append((True, next(it)) if o == DYNAMIC else (False, o))
        cost = self.issue if dyn_off else 0

        memo: dict[tuple, tuple] = {}  # offsets -> (source, view): one object per distinct view
        # The result's strides, when the type gives them all (`scalar_unit.subview`'s
        # first case), are the same every time: made once, not per new view.
        fixed = (tuple(res_strides) if all(s is not None for s in res_strides) else None)
        if fixed is not None and len(dyn_off) == 1:
            return _subview_one(r, src, spec, shape, fixed), cost

        def sub(env: list, r=r, src=src, spec=tuple(spec), shape=shape, steps=steps,
                res_strides=res_strides) -> None:
            offs = tuple([env[v] if dyn else v for dyn, v in spec])
            source = env[src]
            hit = memo.get(offs)
            if hit is None or hit[0] is not source:
                if len(memo) >= VIEW_MEMO_ENTRIES:
                    memo.clear()
                if fixed is not None:  # scalar_unit.subview, inlined
                    view = View(source.region, source.offset + sum(map(mul, offs, source.strides)),
                                shape, fixed)
                else:
                    view = scalar_unit.subview(source, offs, shape, steps, res_strides)
                hit = memo[offs] = (source, view)
            env[r] = hit[1]
        return sub, cost

    def reinterpret_cast(self, op: ir.Operation, where: str) -> tuple[Fn, int]:
        operands = list(op.operands)
        src = self.use(operands[0], op)
        seg = list(ir.DenseI32ArrayAttr(op.attributes["operandSegmentSizes"]))
        n_size = seg[2]
        if n_size:
            raise SimulationError(UNSUPPORTED, "'memref.reinterpret_cast' with dynamic sizes", where)
        dyn = [self.use(v, op) for v in operands[1:]]
        static_off = list(ir.DenseI64ArrayAttr(op.attributes["static_offsets"]))
        static_strides = list(ir.DenseI64ArrayAttr(op.attributes["static_strides"]))
        shape = _static_shape(op.results[0].type, op, where)
        it = iter(dyn)
        off_spec = [(True, next(it)) if o == DYNAMIC else (False, o) for o in static_off]
        stride_spec = [(True, next(it)) if s == DYNAMIC else (False, s) for s in static_strides]
        r = self.slot(op.results[0])
        cost = self.issue if dyn else 0

        def cast(env: list, r=r, src=src, off_spec=tuple(off_spec), stride_spec=tuple(stride_spec),
                 shape=shape) -> None:
            v = env[src]
            off = sum(env[x] if d else x for d, x in off_spec)
            strides = tuple(env[x] if d else x for d, x in stride_spec)
            env[r] = View(v.region, off, shape, strides)
        return cast, cost


    def view(self, op: ir.Operation, where: str) -> tuple[Fn, int]:
        """`memref.view`: a typed tensor at a byte shift of an i8 buffer. It is a
        root of its own for bounds (its bytes, rounded up to the GM granule
        like any GM tensor, inside its source) and shares the source's memory
        and hazard group, so reuse of the same bytes is race-checked."""
        operands = list(op.operands)
        if len(operands) > 2:
            raise SimulationError(UNSUPPORTED, "'memref.view' with dynamic sizes", where)
        src, shift = self.use(operands[0], op), self.use(operands[1], op)
        src_bytes = npu_ir.element_bytes(npu_ir.memref_element(operands[0].type))
        t = op.results[0].type
        shape = _static_shape(t, op, where)
        strides = tuple(identity_strides(shape))
        nbytes = numel(shape) * npu_ir.element_bytes(npu_ir.memref_element(t))
        granule = self.target.gm_alloc_granule_bytes if npu_ir.memory_space(t) == "gm" else 1
        padded = -(-max(nbytes, 1) // granule) * granule
        r = self.slot(op.results[0])
        label = f"{t} view @ {where}"
        shift_op = npu_ir.defining_op(operands[1])
        cost = 0 if shift_op is not None and shift_op.name == "arith.constant" else self.issue

        def view(env: list, r=r, src=src, shift=shift, src_bytes=src_bytes) -> None:
            source = env[src]
            region = source.region
            start = region.base + source.offset * src_bytes + env[shift]
            end = region.base + region.size
            if env[shift] < 0 or start + nbytes > end:
                raise SimulationError(
                    BOUNDS, f"'memref.view' of {nbytes} bytes at byte shift {env[shift]} does not "
                    f"fit its source's allocation [{region.base}, {end}) ({region.label})", where)
            env[r] = View(Region(region.mem, start, min(padded, end - start), region.group, label),
                          0, shape, strides)
        return view, cost


def _subview_one(r: int, src: int, spec: list, shape: tuple, strides: tuple) -> Fn:
    """`sub` of a subview with one dynamic offset and the result's strides
    given by its type (a tile of a loop): the source's part of the address
    (its offset plus the static offsets') is computed once per source, the
    view built without the NamedTuple's Python-level constructor. Half the
    cost of `sub` (the vector bench of bench/sim_throughput.py: two per tile)."""
    (k, d), = ((k, v) for k, (dyn, v) in enumerate(spec) if dyn)
    static = [(k2, v) for k2, (dyn, v) in enumerate(spec) if not dyn]
    memo: dict[int, tuple] = {}  # offset -> (source, view): one object per distinct view
    last: list = [None, None, 0, 0]  # the source; its region, base offset, dynamic stride

    def sub(env: list) -> None:
        o = env[d]
        source = env[src]
        hit = memo.get(o)
        if hit is None or hit[0] is not source:
            if len(memo) >= VIEW_MEMO_ENTRIES:
                memo.clear()
            if last[0] is not source:
                st = source.strides
                last[:] = (source, source.region,
                           source.offset + sum(v * st[k2] for k2, v in static), st[k])
            hit = memo[o] = (source, _new_view(View, (last[1], last[2] + o * last[3], shape,
                                                      strides)))
        env[r] = hit[1]
    return sub


_new_view = tuple.__new__  # View((region, offset, shape, strides)) without its Python __new__


def _constant(op: ir.Operation, where: str):
    attr = op.attributes["value"]
    if isinstance(attr, ir.BoolAttr):
        return ir.BoolAttr(attr).value
    if isinstance(attr, ir.IntegerAttr):
        t = ir.IntegerAttr(attr).type
        v = ir.IntegerAttr(attr).value
        if isinstance(t, ir.IntegerType) and ir.IntegerType(t).width == 1:
            return bool(v & 1)
        return v
    if isinstance(attr, ir.FloatAttr):
        return ir.FloatAttr(attr).value
    raise SimulationError(UNSUPPORTED, f"'arith.constant' of {attr} (only scalars)", where)


def _static_shape(t: ir.Type, op: ir.Operation, where: str) -> tuple[int, ...]:
    mt = npu_ir.memref_type(t)
    if not mt.has_static_shape:
        raise SimulationError(UNSUPPORTED, f"'{op.name}' produces a dynamically shaped {t}", where)
    return tuple(mt.shape)


def identity_strides(shape: tuple[int, ...]) -> list[int]:
    strides, acc = [], 1
    for d in reversed(shape):
        strides.append(acc)
        acc *= d
    return list(reversed(strides))


def numel(shape: tuple[int, ...]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n

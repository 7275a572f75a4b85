"""npu-fuse-horizontal: sibling matmuls that read the same A (the Q, K and V
projections of an attention layer all read x) run as one matmul over their
weights laid side by side, and sibling elementwise ops over its result (the
three bias adds) as one op.

In Nz a [K, N] matrix is [N/16, K/16, 16, 16]: its column blocks are the
outermost axis, so placing B_1..B_n one after the other along that axis *is*
the concatenated [K, N_1 + ... + N_n] weight, and sibling i's result is the
contiguous run of column blocks [o_i, o_i + N_i/16) of the combined C. Each
sibling's C therefore becomes a `memref.view` (a byte shift, dense row-major
type) of one combined GM buffer: every consumer keeps reading a dense
operand, no copy and no strided access. Odd N are padded to whole column
blocks by the Nz layout already, so the slices stay block aligned.

Weights may be:
  * host constants (`npu.constant` arguments, as the frontend lays out
    weights): concatenated on the host into one new constant argument;
  * GM temporaries the program writes (`memref.alloc`, e.g. weights that are
    model inputs, cast and fractalized on the device): their allocs become
    views of one combined buffer, so the producers write the concatenation
    in place, at no cost;
  * anything else (a weight that is a plain function argument): joining them
    would copy every weight through GM, which the cost model weighs against
    the A loads saved (and refuses in practice; the remark gives both).

The cost model is the matmul lowering's own traffic model
(`npu.costmodel.matmul.tiling.choose_tiling`): the group is formed when the fused
matmul's modelled GM bytes are below the siblings' sum (A is loaded once
instead of once per sibling) and a tiling of it fits on chip. Elementwise
siblings (same op and attributes, each reading slice i of one combined
buffer and otherwise only constants of the slice's shape or scalars) move
the same bytes fused, in one kernel instead of n; they are joined when every
sibling qualifies.

The fused op takes the place of the last sibling; ops between the siblings
that depend on an earlier sibling's result (through GM, by view roots) move
after it, in order. A group whose weights are produced by such an op is not
formed. Runs first in `npu-lower` (before npu-fuse and the matmul
epilogues), on `ascend` ops.

With `cores` above 1 (npu-lower on several cores) the group is formed only
over host-constant weights and only when `npu.passes.split_cores.qkv`'s
model prices each core's columns of every sibling below the siblings apart
(the remark gives both); the fused matmul is marked `npu.siblings` for
npu-split-cores, which cuts each sibling's columns.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
from mlir import ir
from mlir.dialects import arith, memref

from npu import ir as nir
from npu.costmodel.matmul.fitting import MatmulShape
from npu.costmodel.matmul.tiling import TilingError, choose_tiling
from npu.passes.base import Option, Pass
from npu.passes.applies import MATMULS
from npu.passes.split_cores import qkv

ELEMENTWISE = ("ascend.add", "ascend.sub", "ascend.mul", "ascend.div", "ascend.max", "ascend.min",
               "ascend.adds", "ascend.muls", "ascend.cast", "ascend.relu", "ascend.exp",
               "ascend.tanh", "ascend.sigmoid", "ascend.erf", "ascend.abs", "ascend.neg")


def _parts_phases(between: list[ir.Operation]) -> bool:
    """Ops between the siblings that keep them apart in phases of their own:
    an elementwise op (no cast) on a sibling's transposed heads, a LLaMA's
    rotary, which no later fusion moves past the next sibling (BERT's head
    transposes and casts join the attention, after all three)."""
    transposed = {nir.view_root(o.operands[-1]) for o in between if o.name == "ascend.transpose"}
    return any(o.name in ELEMENTWISE and o.name != "ascend.cast"
               and any(nir.view_root(v) in transposed for v in list(o.operands)[:-1])
               for o in between)


@dataclass
class _Slices:
    """A combined GM buffer and the views of it that stand for each sibling."""
    buffer: ir.Value            # the i8 alloc
    full: ir.Value              # a view of it with the combined shape
    parts: list[ir.Value]       # sibling i's view, in order


def _effects(op: ir.Operation) -> tuple[set, set]:
    """(roots read, roots written): an ascend op writes its last operand;
    any other op with memref operands is taken to read and write them all."""
    if op.name in nir.VIEW_OPS or op.name in ("memref.alloc", "memref.dealloc"):
        return set(), set()
    roots = [nir.view_root(v) for v in op.operands if nir.is_memref(v.type)]
    if op.name.startswith("ascend.") and roots:
        return set(roots[:-1]), {roots[-1]}
    return set(roots), set(roots)


def _is_fresh_alloc(value: ir.Value) -> bool:
    op = nir.defining_op(value)
    return (op is not None and op.name == "memref.alloc" and nir.memory_space(value) == "gm"
            and nir.is_contiguous(value) and nir.memref_layout(value)[1] == 0
            and not any(u.owner.name == "memref.dealloc" for u in value.uses))


class FuseHorizontalPass(Pass):
    name = "npu-fuse-horizontal"
    acts_on = MATMULS  # every option: the program has one
    summary = "Join sibling matmuls sharing A (Q/K/V) into one over concatenated weights"
    options = (
        Option("remarks", bool, True, "report each group formed and why siblings were left apart"),
        Option("min-siblings", int, 2, "fewest matmuls sharing A that form a group", low=2),
        Option("cores", int, 1, "cores npu-split-cores will split over: above 1, a group forms "
               "only over host-constant weights and when each core computing its columns of "
               "every sibling models faster than the siblings apart (`split_cores.qkv`)",
               low=1),
    )

    def run(self, module: ir.Operation) -> None:
        for func in nir.functions(module):
            if len(func.regions[0].blocks):
                self.fuse_function(func)

    # -- the function ---------------------------------------------------------
    def fuse_function(self, func: ir.Operation) -> None:
        self.func = func
        self.block = func.regions[0].blocks[0]
        done: set = set()
        while True:
            group = self._next_matmul_group(done)
            if group is None:
                break
            done.add(group[0].operands[0])
            slices = self._fuse_matmuls(group)
            while slices is not None:  # the bias adds (casts, ...) of the combined result
                slices = self._fuse_elementwise(slices)
        self._erase_unused_constants()

    def _ops(self) -> list[ir.Operation]:
        return [o.operation for o in self.block.operations]

    def _next_matmul_group(self, done: set) -> list[ir.Operation] | None:
        by_a: dict = {}
        for op in self._ops():
            if op.name == "ascend.matmul" and op.operands[0] not in done:
                by_a.setdefault(op.operands[0], []).append(op)
        for a, ops in by_a.items():
            if len(ops) >= self.min_siblings:
                return ops
        return None

    # -- matmuls ---------------------------------------------------------------
    def _fuse_matmuls(self, group: list[ir.Operation]) -> _Slices | None:
        first = group[0]
        names = ", ".join(_label(op) for op in group)
        why = self._matmul_refusal(group)
        if why is not None:
            self._remark(first, f"npu-fuse-horizontal: matmuls {names} share A but stay apart: {why}")
            return None
        a = first.operands[0]
        f = self.target.fractal
        a_shape = nir.memref_shape(a)
        b_blocks = [nir.memref_shape(op.operands[1])[0] for op in group]
        M, K = a_shape[1] * f, a_shape[0] * f
        shape = MatmulShape(M, K, sum(b_blocks) * f)
        try:
            apart = sum(self._traffic(MatmulShape(M, K, n * f)) for n in b_blocks)
            fused = self._traffic(shape)
        except TilingError as e:
            self._remark(first, f"npu-fuse-horizontal: matmuls {names} stay apart: the fused "
                                f"matmul has no tiling that fits on chip ({e})")
            return None
        if fused > apart:  # equal traffic still saves n - 1 kernels' fill and drain
            self._remark(first, f"npu-fuse-horizontal: matmuls {names} stay apart: fused they "
                                f"move {fused} GM bytes, apart {apart}")
            return None
        last = group[-1]
        weights = [op.operands[1] for op in group]
        sunk = self._to_sink(group, [a] + weights)
        if not isinstance(sunk, str) and len(set(weights)) < len(group):  # an alloc joins once
            sunk = "two of them read the same weight (laid side by side it would be copied)"
        if isinstance(sunk, str):
            self._remark(first, f"npu-fuse-horizontal: matmuls {names} stay apart: {sunk}")
            return None
        many = ""
        if self.cores > 1:
            pays, many = qkv.pays(M, K, [n * f for n in b_blocks], self.cores, self.target,
                                  side_by_side=not _parts_phases(sunk))
            if not pays:
                self._remark(first, f"npu-fuse-horizontal: matmuls {names} stay apart on "
                                    f"{self.cores} cores: {many}")
                return None
            many = f"; on {self.cores} cores each its columns of every sibling: {many}"
        moved = self._sink(group, sunk)
        kinds = [self._weight_kind(op.operands[1]) for op in group]
        with self.func.context, first.location:
            if kinds[0] == "constant":
                b_full = self._concat_constants(weights, first)
            else:
                b_full = self._join_allocs(weights).full
            c_slices = self._join_allocs([op.operands[2] for op in group])
            with ir.InsertionPoint(last):
                fused_op = nir.create_op("ascend.matmul", [a, b_full, c_slices.full])
            if self.cores > 1:  # npu-split-cores cuts each sibling's columns (`qkv`)
                fused_op.attributes[qkv.SIBLINGS_ATTR] = nir.i64_attr(len(group))
                fused_op.attributes[qkv.BLOCKS_ATTR] = ir.DenseI64ArrayAttr.get(b_blocks)
        for op in group:
            op.erase()
        self._remark(c_slices.full.owner, f"npu-fuse-horizontal: matmuls {names} are one matmul "
                     f"{M}x{K}x{shape.K} over {'host-concatenated' if kinds[0] == 'constant' else 'adjacent'} "
                     f"weights ({len(group)} column slices of C, views of one buffer); modelled GM "
                     f"bytes {apart} -> {fused}; {moved} dependent op(s) moved after it{many}")
        return c_slices

    def _matmul_refusal(self, group: list[ir.Operation]) -> str | None:
        a_type, c0 = group[0].operands[0].type, group[0].operands[2].type
        kinds = {self._weight_kind(op.operands[1]) for op in group}
        if "argument" in kinds:
            b_bytes = sum(nir.memref_bytes(op.operands[1].type) for op in group)
            a_bytes = nir.memref_bytes(a_type) * (len(group) - 1)
            return (f"a weight is a function argument: joining would copy {b_bytes} weight bytes "
                    f"through GM twice ({2 * b_bytes} bytes) to save at least {a_bytes} bytes of A loads")
        if len(kinds) > 1:
            return "some weights are host constants and some are computed on the device"
        if self.cores > 1 and kinds != {"constant"}:
            return (f"on {self.cores} cores the weights must be host constants (laid out again "
                    "for each core's columns of every sibling)")
        for op in group:
            b, c = op.operands[1].type, op.operands[2].type
            if nir.memref_shape(b)[1:] != nir.memref_shape(group[0].operands[1].type)[1:] or \
                    nir.memref_element(b) != nir.memref_element(group[0].operands[1].type):
                return "their weights differ in reduction size or element type"
            if nir.memref_shape(c)[1:] != nir.memref_shape(c0)[1:] or \
                    nir.memref_element(c) != nir.memref_element(c0):
                return "their results differ in rows or element type"
            if not _is_fresh_alloc(op.operands[2]):
                return f"the result of {_label(op)} is not a GM temporary (memref.alloc) it can place"
        if len({nir.view_root(op.operands[2]) for op in group}) < len(group):
            return "two of them write the same buffer"
        return None

    def _weight_kind(self, b: ir.Value) -> str:
        if nir.is_block_argument(b):
            index = ir.BlockArgument(b).arg_number
            return "constant" if nir.CONSTANT_ATTR in nir.arg_attrs(self.func, index) else "argument"
        return "alloc" if _is_fresh_alloc(b) else "argument"

    def _traffic(self, shape: MatmulShape) -> int:
        choice = choose_tiling(shape, self.target, "os")
        return choice.traffic.read_bytes(shape) + choice.traffic.write_bytes(shape)

    # -- elementwise siblings over the slices ------------------------------------
    def _fuse_elementwise(self, slices: _Slices) -> _Slices | None:
        readers = []
        # The first ascend op of the block reading each part, from the parts'
        # uses (scanning the block's operands per part was quadratic).
        position = {op: i for i, op in enumerate(self._ops())}
        for part in slices.parts:
            ops = [u for u in (use.owner.operation for use in part.uses)
                   if u in position and u.name.startswith("ascend.")]
            if not ops:
                return None
            readers.append(min(ops, key=position.__getitem__))
        first = readers[0]
        names = ", ".join(_label(op) for op in readers)
        why = self._elementwise_refusal(readers, slices)
        if why is not None:
            if first.name in ELEMENTWISE:
                self._remark(first, f"npu-fuse-horizontal: {names} stay apart: {why}")
            return None
        moved = self._make_room(readers, [v for op in readers for v in list(op.operands)[:-1]])
        if isinstance(moved, str):
            self._remark(first, f"npu-fuse-horizontal: {names} stay apart: {moved}")
            return None
        with self.func.context, first.location:
            operands = []
            for k in range(len(first.operands) - 1):
                column = [op.operands[k] for op in readers]
                if column == slices.parts:
                    operands.append(slices.full)
                else:
                    operands.append(self._concat_constants(column, first))
            outs = self._join_allocs([op.operands[-1] for op in readers])
            attrs = {name: first.attributes[name] for name in first.attributes}
            with ir.InsertionPoint(readers[-1]):
                fused = ir.Operation.create(first.name, results=[], operands=operands + [outs.full],
                                            attributes=attrs)
        op_name = first.name
        for op in readers:
            op.erase()
        self._remark(fused, f"npu-fuse-horizontal: {names} are one {op_name} over the "
                            f"combined result (the same GM bytes in one kernel instead of "
                            f"{len(readers)})")
        return outs

    def _elementwise_refusal(self, readers: list[ir.Operation], slices: _Slices) -> str | None:
        first = readers[0]
        if first.name not in ELEMENTWISE:
            return f"'{first.name}' is not elementwise"
        attrs = {name: str(first.attributes[name]) for name in first.attributes}
        for i, op in enumerate(readers):
            if op.name != first.name or {name: str(op.attributes[name]) for name in op.attributes} != attrs:
                return "they are different ops"
            out, out0 = op.operands[-1], first.operands[-1]
            if not _is_fresh_alloc(out) or nir.memref_shape(out)[1:] != nir.memref_shape(out0)[1:] \
                    or nir.memref_element(out) != nir.memref_element(out0):
                return f"the result of {_label(op)} is not a GM temporary like the others"
        if len(set(readers)) < len(readers):
            return f"{_label(first)} reads two of the slices"
        for k in range(len(first.operands) - 1):
            column = [op.operands[k] for op in readers]
            if column != slices.parts and not all(
                    v.type == part.type and self._weight_kind(v) == "constant"
                    for v, part in zip(column, slices.parts)):
                return (f"their operand #{k} is neither each one's slice of the combined "
                        f"result nor a host constant of the slice's shape")
        return None

    # -- building blocks ---------------------------------------------------------
    def _join_allocs(self, values: list[ir.Value]) -> _Slices:
        """One i8 GM buffer at the top of the function; each alloc in
        `values` becomes a view of its part (in order), the combined shape a
        view of the whole."""
        sizes = [nir.memref_bytes(v.type) for v in values]
        shape = nir.memref_shape(values[0].type)
        full_shape = [sum(nir.memref_shape(v.type)[0] for v in values)] + shape[1:]
        element = nir.memref_element(values[0].type)
        with ir.InsertionPoint.at_block_begin(self.block):
            buffer = nir.alloc([sum(sizes)], "i8", "gm")
        parts, offset = [], 0
        for v, size in zip(values, sizes):
            alloc_op = nir.defining_op(v)
            with ir.InsertionPoint(alloc_op):
                view = self._view(buffer, offset, v.type)
            v.replace_all_uses_with(view)
            alloc_op.erase()
            parts.append(view)
            offset += size
        with ir.InsertionPoint(self._after(nir.defining_op(buffer))):
            full = self._view(buffer, 0, nir.memref_of(full_shape, element, "gm"))
        return _Slices(buffer, full, parts)

    def _after(self, op: ir.Operation) -> ir.Operation:
        ops = self._ops()
        return ops[ops.index(op) + 1]

    @staticmethod
    def _view(buffer: ir.Value, offset: int, t: ir.Type) -> ir.Value:
        shift = arith.ConstantOp(ir.IndexType.get(), offset).result
        return memref.ViewOp(t, buffer, shift, []).result

    def _concat_constants(self, values: list[ir.Value], where: ir.Operation) -> ir.Value:
        """A new constant argument holding `values`' data one after another
        along the outermost axis (column blocks in Nz)."""
        arrays = [self._constant(v) for v in values]
        data = np.concatenate(arrays, axis=0)
        element = nir.memref_element(values[0].type)
        et = ir.Type.parse(element)
        attr = ir.DenseElementsAttr.get(np.ascontiguousarray(data),
                                        type=ir.RankedTensorType.get(list(data.shape), et))
        return nir.append_argument(self.func, nir.memref_of(data.shape, element, "gm"),
                                   {nir.CONSTANT_ATTR: attr})

    def _constant(self, value: ir.Value) -> np.ndarray:
        return nir.constant_argument(value)

    def _make_room(self, group: list[ir.Operation], inputs: list[ir.Value]) -> int | str:
        """Move `_to_sink`'s ops after the last member of `group`; the
        number moved, or why the group cannot be placed there."""
        sunk = self._to_sink(group, inputs)
        return sunk if isinstance(sunk, str) else self._sink(group, sunk)

    @staticmethod
    def _sink(group: list[ir.Operation], ops: list[ir.Operation]) -> int:
        anchor = group[-1]
        for op in ops:
            op.move_after(anchor)
            anchor = op
        return len(ops)

    def _to_sink(self, group: list[ir.Operation], inputs: list[ir.Value]) -> list | str:
        """The ops between the first and the last member of `group` that
        depend on an earlier member (through GM, transitively, in order),
        which must move after the last member; or why the group cannot be
        placed at its last member."""
        ops = self._ops()
        start, end = ops.index(group[0]), ops.index(group[-1])
        members = set(group)
        reads, writes = _effects(group[0])  # later members join as the walk reaches them
        needed = {nir.view_root(v) for v in inputs}
        sunk = []
        for op in ops[start + 1:end]:
            if op in members:
                r, w = _effects(op)
                reads |= r
                writes |= w
                continue
            r, w = _effects(op)
            if (r & writes) or (w & (reads | writes)):
                if w & needed:
                    return (f"{_label(op)} between them must stay after the first (it touches "
                            f"what that one reads or writes) but writes an input of the group")
                sunk.append(op)
                reads |= r
                writes |= w
            # views and constants that a moved op uses stay where they are: they dominate it
        return sunk

    def _erase_unused_constants(self) -> None:
        """Constant arguments no op reads any more (their data moved into a
        concatenation) leave the signature."""
        for index in reversed(range(len(self.block.arguments))):
            arg = self.block.arguments[index]
            if nir.CONSTANT_ATTR in nir.arg_attrs(self.func, index) and not list(arg.uses):
                with self.func.context:
                    nir.erase_argument(self.func, index)

    def _remark(self, op: ir.Operation, message: str) -> None:
        if self.remarks:
            self.remark(op, message)


def _label(op: ir.Operation) -> str:
    """The ONNX node name of a frontend op, else the op and its line:col."""
    loc = op.location
    try:
        if loc.is_a_name():
            return f"'{loc.name_str}'"
    except AttributeError:
        pass
    where = re.search(r":(\d+):(\d+)", str(loc))
    return f"{op.name} at {where.group(1)}:{where.group(2)}" if where else op.name

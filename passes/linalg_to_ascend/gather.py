"""ONNX Gather and GatherElements as torch-mlir lowers them -> `ascend.gather`
and `ascend.gather_elements` (GatherND too: torch-mlir gathers the
flattened data at flat indices it computes, on the host when the indices
are constants).

torch-mlir writes `Gather(table, ids, axis)` as a `linalg.generic` over the
output's loops whose body reads the captured table with `tensor.extract`,
one index of which is the id (`arith.index_cast` of the input) and the
others the loops around it (`linalg.index`). Before it, three elementwise
generics wrap negative ids (`select(ids < 0, ids + size, ids)`); ascend.gather
does that itself (ONNX semantics), so when their only use is gathers of that
axis size they are skipped and the gather reads the ids directly.
GatherElements is the same generic with the ids over every loop (and
`cf.assert`s of the range in its body, which the ascend op checks itself).

A gather whose table and ids are both host constants is folded like any
other op; one whose constant ids take every entry of the axis in order is
the table reshaped (GatherND's flattened form of a mask's [0, k] pairs);
everything else becomes one `ascend.gather` (the ids as i32: a
constant of another integer type is narrowed on the host, with an error
when a value is out of range for the axis).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from mlir import ir

from npu.passes.linalg_to_ascend.linalg_eval import constant_value
from npu.passes.linalg_to_ascend.structure import UnsupportedOp, element_name, structured, tensor_shape
from npu.passes.linalg_to_ascend.values import Tensor


def storage_type(element: str) -> str:
    """Booleans (i1) are held as i8 0/1 (as `convert.storage_type`)."""
    return "i8" if element == "i1" else element

RESHAPES = ("tensor.collapse_shape", "tensor.expand_shape")


@dataclass
class GatherForm:
    table: ir.Value  # the captured tensor
    ids: ir.Value    # the generic's input
    axis: int
    elements: bool = False  # GatherElements: one id per output element, same rank as the table


def _body_ops(op: ir.Operation) -> list[ir.Operation]:
    return [o.operation for o in op.regions[0].blocks[0].operations]


def _reads_arguments(value: ir.Value, body: ir.Block) -> bool:
    """Whether `value` depends on an argument of `body` (an element of an
    input: a gather's id), not only on loop indices and constants."""
    owner = value.owner
    if isinstance(owner, ir.Block):
        return owner == body
    return any(_reads_arguments(v, body) for v in owner.operands)


def gather_form(op: ir.Operation) -> GatherForm | None:
    """The gather a `linalg.generic` computes, None if it is not one. Raises
    `UnsupportedOp` for a body that reads a tensor in a way no rule covers."""
    body = op.regions[0].blocks[0]
    ops = _body_ops(op)
    extracts = [o for o in ops if o.name == "tensor.extract"]
    if not extracts or not any(_reads_arguments(v, body) for e in extracts
                               for v in list(e.operands)[1:]):
        return None  # indices from the loops alone: a slice (`slices.GatherGeneric`)
    s = structured(op)
    n_loops = len(s.loop_sizes)
    if (len(extracts) != 1 or len(s.inputs) != 1 or len(op.results) != 1 or s.reduction_dims
            or ops[-1].operands[0] != extracts[0].results[0]
            or s.maps[-1] != list(range(n_loops))):
        raise UnsupportedOp(op, "reads a tensor inside its body in a form the conversion does not "
                            "recognise (only ONNX Gather's: one id per output element)")
    extract = extracts[0]
    table, indices = extract.operands[0], list(extract.operands)[1:]
    ids_arg = body.arguments[0]
    ids_loops = s.maps[0]
    axis, loops = None, []
    for k, index in enumerate(indices):
        owner = index.owner
        if not isinstance(owner, ir.Block) and owner.name == "linalg.index":
            loops.append(ir.IntegerAttr(owner.attributes["dim"]).value)
        elif (not isinstance(owner, ir.Block) and owner.name == "arith.index_cast"
              and owner.operands[0] == ids_arg and axis is None):
            axis = k
        else:
            axis = None
            break
    if axis is None or None in ids_loops:
        raise UnsupportedOp(op, "reads a tensor inside its body with computed indices the "
                            "conversion does not recognise (only ONNX Gather's)")
    rank = len(ids_loops)
    want = list(range(axis)) + list(range(axis + rank, n_loops))
    table_shape = tensor_shape(table)
    out_shape = tensor_shape(op.results[0])
    ids_shape = tensor_shape(s.inputs[0])
    if (loops == want and ids_loops == list(range(axis, axis + rank))
            and out_shape == table_shape[:axis] + ids_shape + table_shape[axis + 1:]):
        return GatherForm(table, s.inputs[0], axis)
    others = [d for d in range(n_loops) if d != axis]
    if (len(indices) == n_loops and loops == others and ids_loops == list(range(n_loops))
            and out_shape == ids_shape):
        return GatherForm(table, s.inputs[0], axis, elements=True)
    raise UnsupportedOp(op, "a gather whose loops do not follow the table's dimensions in "
                        "order (only ONNX Gather's and GatherElements' forms are recognised)")


def _producer(value: ir.Value) -> ir.Operation | None:
    owner = value.owner
    return None if isinstance(owner, ir.Block) else owner.operation


def _single_body_op(op: ir.Operation, name: str) -> ir.Operation | None:
    ops = [o for o in _body_ops(op) if o.name != "linalg.yield"]
    return ops[-1] if ops and ops[-1].name == name else None


def _wrap_size(select: ir.Operation) -> tuple[ir.Value, int, list[ir.Operation]] | None:
    """(ids, size, the two producer generics) when `select` is torch-mlir's
    `select(ids < 0, ids + size, ids)` over three identity-mapped generics."""
    if select.name != "linalg.generic" or len(structured(select).inputs) != 3:
        return None
    s = structured(select)
    if any(m != list(range(len(s.loop_sizes))) for m in s.maps):
        return None
    sel = _single_body_op(select, "arith.select")
    args = list(select.regions[0].blocks[0].arguments)
    if sel is None or list(sel.operands) != args[:3]:
        return None
    cond_op, wrapped_op, ids = _producer(s.inputs[0]), _producer(s.inputs[1]), s.inputs[2]
    if cond_op is None or wrapped_op is None or cond_op.name != "linalg.generic" \
            or wrapped_op.name != "linalg.generic":
        return None
    if structured(cond_op).inputs != [ids] or structured(wrapped_op).inputs != [ids]:
        return None
    cmp = _single_body_op(cond_op, "arith.cmpi")
    add = _single_body_op(wrapped_op, "arith.addi")
    if cmp is None or add is None or ir.IntegerAttr(cmp.attributes["predicate"]).value != 2:
        return None  # 2: slt
    zero = _producer(cmp.operands[1])
    if zero is None or zero.name != "arith.constant" or constant_value(zero) != 0:
        return None
    size_op = _producer(add.operands[1])
    if size_op is None or size_op.name != "arith.constant":
        return None
    uses = [u.owner for r in (cond_op.results[0], wrapped_op.results[0]) for u in r.uses]
    if any(u != select for u in uses):
        return None
    return ids, int(constant_value(size_op)), [cond_op, wrapped_op]


class GatherLowering:
    """Mixed into `Converter`: Gather generics and their id wrapping."""

    def gather(self, op: ir.Operation) -> bool:
        """Converts `op` when it is a gather or part of one's id wrapping; False otherwise."""
        plan = getattr(self, "_gather_plan", None)
        if plan is None:
            plan = self._gather_plan = self._scan_gathers()
        skipped, aliases = plan
        if op in skipped:
            return True
        if op in aliases:
            self.tensors[op.results[0]] = self.tensors[aliases[op]]
            return True
        form = gather_form(op)
        if form is None:
            return False
        ids, table = self.tensors[form.ids], self.tensors.get(form.table)
        if table is None:
            raise UnsupportedOp(op, "gathers from a tensor defined outside the function body")
        if ids.is_constant:
            _check_range(op, form, ids.array)
        if ids.is_constant and table.is_constant:
            return False  # folded on the host
        self._emit_gather(op, form, ids, table)
        return True

    def _emit_gather(self, op: ir.Operation, form: GatherForm, ids: Tensor, table: Tensor) -> None:
        loc = self.loc(op)
        size = tensor_shape(form.table)[form.axis]
        if ids.is_constant:
            wrapped = np.asarray(ids.array).astype(np.int64).reshape(-1) % max(size, 1)
            if not form.elements and np.array_equal(wrapped, np.arange(size)):
                # Every entry of the axis in order (GatherND's flattened form of
                # an identity, a mask's [0, k] pairs): the table itself, reshaped.
                table_buf = self.nd(form.table, loc)
                shape = tuple(tensor_shape(op.results[0]))
                self.tensors[op.results[0]] = Tensor(
                    shape, table_buf.dtype, nd=self.em.reshape(table_buf, shape, loc))
                return
            ids_buf = self.em.constant(np.asarray(ids.array).astype(np.int32))
        elif ids.dtype != "i32":
            raise UnsupportedOp(op, f"gather indices of type {ids.dtype}: the NPU reads i32 ids")
        else:
            ids_buf = self.nd(form.ids, loc)
        table_buf = self.nd(form.table, loc)
        shape = tuple(tensor_shape(op.results[0]))
        dtype = storage_type(element_name(op.results[0]))
        out = self.dest(op.results[0], shape, dtype, loc)
        name = "ascend.gather_elements" if form.elements else "ascend.gather"
        rows = int(np.prod(table_buf.shape[form.axis + 1:], dtype=np.int64))
        if dtype == "i8" and (form.elements or rows % 32):
            # Rows that are not whole blocks are realigned in UB by vnchwconv,
            # which moves 2- and 4-byte elements: i8 (booleans) go through f16,
            # exact for every i8 value.
            wide = self.em.alloc(table_buf.shape, "f16", loc)
            self.em.op("ascend.cast", [table_buf, wide], loc, round_mode='"rint"')
            gathered = self.em.alloc(shape, "f16", loc)
            self.em.op(name, [wide, ids_buf, gathered], loc, axis=f"{form.axis} : i64")
            self.em.op("ascend.cast", [gathered, out], loc, round_mode='"rint"')
        else:
            self.em.op(name, [table_buf, ids_buf, out], loc, axis=f"{form.axis} : i64")
        self.tensors[op.results[0]] = Tensor(shape, dtype, nd=out)

    def _scan_gathers(self) -> tuple[set, dict]:
        """The id-wrapping generics to skip and the selects that alias the raw
        ids: those whose every use (through reshapes) is a gather of their size."""
        skipped: set = set()
        aliases: dict = {}
        for op in self.func.regions[0].blocks[0].operations:
            op = op.operation
            if op.name != "linalg.generic":
                continue
            try:
                wrap = _wrap_size(op)
            except UnsupportedOp:
                wrap = None
            if wrap is None:
                continue
            ids, size, producers = wrap
            if all(_gathers_of_size(u.owner, size) for u in op.results[0].uses):
                skipped.update(producers)
                aliases[op] = ids
        return skipped, aliases


def _check_range(op: ir.Operation, form: GatherForm, ids: np.ndarray) -> None:
    """Constant ids: an id outside [-size, size) is an error at the node (as
    onnxruntime refuses it)."""
    size = tensor_shape(form.table)[form.axis]
    values = np.asarray(ids).astype(np.int64)
    bad = (values < -size) | (values >= size)
    if bad.any():
        raise UnsupportedOp(op, f"index {int(values[bad][0])} is out of range for axis "
                            f"{form.axis} of size {size}")


def _gathers_of_size(user: ir.Operation, size: int) -> bool:
    if user.name in RESHAPES:
        return all(_gathers_of_size(u.owner, size) for u in user.results[0].uses)
    if user.name != "linalg.generic":
        return False
    try:
        form = gather_form(user)
    except UnsupportedOp:
        return False
    return form is not None and tensor_shape(form.table)[form.axis] == size

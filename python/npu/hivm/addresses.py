"""Byte addresses of cce memref values, and the hivm ops that compute them.

The cce -> hivm lowering follows every memref value back to its root (a GM
argument or a planned on-chip `memref.alloc`) and keeps its address as an
affine form `const + sum(index_value * scale)` in bytes. A view whose offset
is dynamic becomes one `hivm.addr` (one scalar instruction, as the
simulator charges one scalar issue for a cce view op with a dynamic
operand); static views fold into constants, which are free. So the scalar
unit does the same work at both levels and the cycle counts agree.
"""

from __future__ import annotations

from typing import NamedTuple

from mlir import ir

from npu import ir as nir
from npu.dialects.hivm import gm_arg_bases

DYNAMIC = ir.ShapedType.get_dynamic_stride_or_offset()


class Address(NamedTuple):
    """Where a memref value starts: `const + sum(value * scale)` bytes in `space`.

    `root` is the byte address of its root allocation (reinterpret_cast
    offsets count from there); `value` is the i64 SSA value holding exactly
    this address once a `hivm.addr` computed it. A named tuple rather than a
    frozen dataclass: one is made per view (35k in BERT-12 on 32 cores), and
    a frozen dataclass's constructor sets each field through a call.
    """

    space: str
    const: int
    terms: tuple[tuple[ir.Value, int], ...] = ()
    root: int = 0
    value: ir.Value | None = None

    def shifted(self, const: int, terms: tuple[tuple[ir.Value, int], ...] = ()) -> "Address":
        if not terms:  # (most views: a constant shift; `terms` has no zero scale)
            return self if not const else Address(self.space, self.const + const, self.terms,
                                                  self.root)
        merged = list(self.terms)
        for v, s in terms:
            for i, (w, t) in enumerate(merged):
                if w == v:
                    merged[i] = (w, t + s)
                    break
            else:
                merged.append((v, s))
        merged = [(v, s) for v, s in merged if s]
        same = const == 0 and tuple(merged) == self.terms
        return Address(self.space, self.const + const, tuple(merged), self.root,
                       self.value if same else None)


class AddressError(Exception):
    """An address the hardware cannot form; the lowering reports it at the op."""


def gm_argument_addresses(func_op: ir.Operation, gm_granule: int) -> dict[ir.Value, Address]:
    """The GM arguments as base pointers into the kernel's argument area (the
    `npu.block_idx` argument of a multi-core kernel is a scalar, not GM)."""
    blk = nir.block_idx_arg(func_op)
    args = [a for i, a in enumerate(func_op.regions[0].blocks[0].arguments) if i != blk]
    sizes = []
    for a in args:
        if not nir.is_memref(a.type) or nir.memory_space(a.type) != "gm":
            raise AddressError(f"kernel argument of type {a.type}: only GM memrefs can be "
                               "passed to a kernel")
        n = 1
        for d in nir.memref_shape(a.type):
            n *= d
        sizes.append(n * nir.element_bytes(nir.memref_element(a.type)))
    return {a: Address("gm", b, (), b) for a, b in zip(args, gm_arg_bases(sizes, gm_granule))}


def _element_size(t: ir.Type) -> int:
    return nir.ELEMENT_BYTES[str(ir.MemRefType(t).element_type)]


def view_address(op: ir.Operation, source: Address,
                 layouts: dict[ir.Type, list[int]] | None = None,
                 element_sizes: dict[ir.Type, int] | None = None,
                 offsets: dict[ir.Attribute, list[int]] | None = None,
                 name: str | None = None, operands: list[ir.Value] | None = None
                 ) -> tuple[Address, bool]:
    """The address of a view op's result from its source's; True when it has a
    dynamic operand (and so costs a scalar instruction). `layouts` and
    `element_sizes` cache memref types' (static) strides and element bytes
    across calls, `offsets` subviews' static offsets by their attribute (one
    lowering's types and attributes: each is only unique in its context;
    BERT-12 on 32 cores has 111 distinct ones over 27k subviews, and reading
    each subview's was 0.09 of the 0.13 CPU s its offsets cost). `name` and
    `operands`: the op's, when the caller has read them (each read is a
    binding call)."""
    name = name or op.name
    if name in ("memref.collapse_shape", "memref.expand_shape", "memref.cast",
                "memref.memory_space_cast"):
        return source, False
    operands = operands if operands is not None else list(op.operands)
    # A subview's elements are its source's: the source type alone is read
    # (reading a type is the costly part of a view, 37k of them in BERT-12
    # on 32 cores).
    source_type = operands[0].type if name == "memref.subview" else None
    result_type = source_type or op.results[0].type
    esize = element_sizes.get(result_type) if element_sizes is not None else None
    if esize is None:
        esize = _element_size(result_type)
        if element_sizes is not None:
            element_sizes[result_type] = esize
    if name == "memref.subview":
        strides = layouts.get(source_type) if layouts is not None else None
        if strides is None:
            strides, _ = nir.memref_layout(source_type)
            if any(s == DYNAMIC for s in strides):
                raise AddressError(f"subview of {operands[0].type}: dynamic strides are not "
                                   "supported")
            if layouts is not None:
                layouts[source_type] = strides
        attr = op.attributes["static_offsets"]
        static = offsets.get(attr) if offsets is not None else None
        if static is None:
            static = list(ir.DenseI64ArrayAttr(attr))
            if offsets is not None:
                offsets[attr] = static
        dynamic = iter(operands[1:])
        const, terms = 0, []
        for off, stride in zip(static, strides):
            if off == DYNAMIC:
                terms.append((next(dynamic), stride * esize))
            else:
                const += off * stride * esize
        return source.shifted(const, tuple(terms)), bool(terms)
    if name == "memref.view":
        # A typed tensor at a byte shift of an i8 buffer (the GM workspace).
        if len(operands) > 2:
            raise AddressError("memref.view with dynamic sizes is not supported")
        shift = operands[1]
        value = nir.constant_int(shift)
        if value is not None:
            return source.shifted(value), False
        return source.shifted(0, ((shift, 1),)), True
    if name == "memref.reinterpret_cast":
        offsets = list(ir.DenseI64ArrayAttr(op.attributes["static_offsets"]))
        base = Address(source.space, source.root, (), source.root)
        if offsets[0] == DYNAMIC:
            return base.shifted(0, ((operands[1], esize),)), True
        return base.shifted(offsets[0] * esize), len(operands) > 1
    raise AddressError(f"'{name}' cannot be lowered to a hivm address")


def alloc_address(op: ir.Operation) -> Address:
    space = nir.memory_space(op.results[0].type)
    if space == "gm":
        raise AddressError("GM temporaries (memref.alloc in gm) have no place in the kernel's "
                           "argument area: plan them into the workspace argument (npu-plan-gm) "
                           "or stop at cce (npu-lower emit=cce)")
    if "npu.offset" not in op.attributes:
        raise AddressError(f"on-chip allocation in {space} has no planned address (npu.offset): "
                           "run npu-plan-memory first")
    offset = nir.int_attr(op, "npu.offset")
    return Address(space, offset, (), offset)


def materialize(address: Address) -> ir.Value:
    """One `hivm.addr` computing `address` at the insertion point."""
    values = [v for v, _ in address.terms]
    op = nir.create_op("hivm.addr", values, [ir.IntegerType.get_signless(64)],
                       base=address.const, scales=[s for _, s in address.terms])
    return op.results[0]


class Constants:
    """The function's i64 constants, one per value, created at first use at
    the start of its entry block (before `anchor`, the block's first op when
    the lowering began), so that they dominate every use. They are free for
    the scalar unit; one per value and function, instead of one per block
    using it, keeps them from being a third of the lowered ops."""

    def __init__(self, anchor: ir.Operation) -> None:
        self.anchor = anchor
        self.cache: dict[int, ir.Value] = {}
        self.i64 = ir.IntegerType.get_signless(64, anchor.context)

    def get(self, value: int) -> ir.Value:
        v = self.cache.get(value)
        if v is None:
            with ir.InsertionPoint(self.anchor):
                v = self.cache[value] = ir.Operation.create(
                    "arith.constant", results=[self.i64],
                    attributes={"value": ir.IntegerAttr.get(self.i64, value)}).results[0]
        return v

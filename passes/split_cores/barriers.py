"""Where `npu-split-cores` puts chip barriers (`cce.sync_all`).

Each unit of work (an ascend op on its own split, or a kernel that runs on
core 0 alone) touches, per core, a box of each GM operand. A later unit
needs a barrier before it exactly when some core touches bytes that an
earlier unit since the previous barrier touched on *another* core, one of
the two writing them. Boxes of the same view compare exactly, and so do
boxes of two views that are chains of static, unit-stride subviews of one
view (`_lifted`: a split reduction's partial matmul reads a run of the
columns that ffn_in's cores wrote, `split_k`); two other views of one
buffer reached by subviews and reshapes of static layouts overlap unless
the elements their boxes span are apart in the buffer (`_apart`: a peeled
row group's rest beside its whole blocks, `peel`, through its reshapes);
any others are taken to overlap (the barrier is only ever extra, never
missing).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from mlir import ir

from npu import ir as nir

Box = tuple[tuple[int, int], ...]


@dataclass
class Access:
    """One GM operand of a unit: per core, the box it touches (None: all of it)."""

    root: ir.Value
    value: ir.Value | None
    write: bool
    boxes: dict[int, Box | None]


@dataclass
class Unit:
    op: ir.Operation
    cores: int  # the cores that run it: base .. base + cores - 1
    accesses: list[Access] = field(default_factory=list)
    what: str = ""  # the remark's text for it
    base: int = 0  # its first core (`share`: beside independent units)

    def moved_to(self, base: int) -> None:
        """Run on cores base .. base + cores - 1: its boxes by those cores."""
        for a in self.accesses:
            a.boxes = {base + c - self.base: box for c, box in a.boxes.items()}
        self.base = base
        self.what += f" on cores {base}-{base + self.cores - 1}"


def _overlap(a: Box | None, b: Box | None) -> bool:
    if a is None or b is None:
        return True
    return all(x0 < y0 + ys and y0 < x0 + xs for (x0, xs), (y0, ys) in zip(a, b))


def _lifted(value: ir.Value) -> tuple[ir.Value, tuple[int, ...]]:
    """The view that `value` is a chain of static, unit-stride, rank-keeping
    subviews of (itself if none), and `value`'s offsets in it."""
    offsets = [0] * len(nir.memref_shape(value.type))
    dyn = ir.ShapedType.get_dynamic_stride_or_offset()
    while True:
        op = nir.defining_op(value)
        if op is None or op.name != "memref.subview" or len(op.operands) != 1:
            return value, tuple(offsets)
        static = list(ir.DenseI64ArrayAttr(op.attributes["static_offsets"]))
        strides = list(ir.DenseI64ArrayAttr(op.attributes["static_strides"]))
        source = op.operands[0]
        if (dyn in static or any(s != 1 for s in strides)
                or len(static) != len(offsets) or len(nir.memref_shape(source.type)) != len(offsets)):
            return value, tuple(offsets)
        offsets = [o + s for o, s in zip(offsets, static)]
        value = source


def _shifted(box: Box | None, offsets: tuple[int, ...]) -> Box | None:
    return None if box is None else tuple((o + x, n) for o, (x, n) in zip(offsets, box))


# Views whose type's layout (strides, offset) counts from the root's first
# element: an element's place in the buffer is its index times the strides.
_LAID_OUT = ("memref.subview", "memref.expand_shape", "memref.collapse_shape")


def _extent(value: ir.Value, box: Box | None) -> tuple[int, int] | None:
    """The elements [first, last] of its root buffer that `box` of `value`
    spans, when `value` is the root or reached from it by subviews and
    reshapes with static layouts (none: None)."""
    v = value
    while (op := nir.defining_op(v)) is not None and op.name in nir.VIEW_OPS:
        if op.name not in _LAID_OUT:
            return None
        v = op.operands[0]
    strides, offset = nir.memref_layout(value.type)
    if box is None or offset is None or None in strides:
        return None
    first = offset + sum(x * s for (x, _), s in zip(box, strides))
    return first, first + sum((n - 1) * s for (_, n), s in zip(box, strides))


def _apart(a: Access, box_a: Box | None, b: Access, box_b: Box | None) -> bool:
    """Two boxes of different views of one buffer (a tensor and its
    reshape: a row group's [1, 197, 768] and [197, 768]) that span disjoint
    elements of it."""
    if nir.memref_element(a.value.type) != nir.memref_element(b.value.type):
        return False
    ea, eb = _extent(a.value, box_a), _extent(b.value, box_b)
    return ea is not None and eb is not None and (ea[1] < eb[0] or eb[1] < ea[0])


def conflicts(earlier: Unit, later: Unit) -> bool:
    """Some core of `later` touches bytes that another core touched in
    `earlier`, one of the two writing them."""
    for a in earlier.accesses:
        for b in later.accesses:
            if a.root != b.root or not (a.write or b.write):
                continue
            lift_a = lift_b = None
            if a.value is not None and b.value is not None:
                lift_a, lift_b = _lifted(a.value), _lifted(b.value)
            same_view = lift_a is not None and lift_a[0] == lift_b[0]
            for c, box_a in a.boxes.items():
                for d, box_b in b.boxes.items():
                    if c == d:
                        continue
                    if same_view:
                        if _overlap(_shifted(box_a, lift_a[1]), _shifted(box_b, lift_b[1])):
                            return True
                    elif lift_a is None or not _apart(a, box_a, b, box_b):
                        return True
    return False


def place(units: list[Unit]) -> list[int]:
    """Indices of the units that need a barrier before them."""
    since: list[Unit] = []
    before: list[int] = []
    for i, u in enumerate(units):
        if any(conflicts(e, u) for e in since):
            before.append(i)
            since = []
        since.append(u)
    return before


def gm_operands(op: ir.Operation) -> list[ir.Value]:
    """The GM memrefs a kernel (an op with regions) uses from outside it."""
    seen: list[ir.Value] = []
    for inner in nir.walk(op, lambda o: True):
        for v in inner.operands:
            if (nir.is_memref(v.type) and nir.memory_space(v.type) == "gm"
                    and v not in seen and not nir.within(v.owner, op)):
                seen.append(v)
    return seen

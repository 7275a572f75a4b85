"""Which pipe runs each `cce` op and which bytes it reads and writes.

The one dependence analysis shared by `npu-insert-sync`, `npu-plan-memory`
and `npu-double-buffer`: every `cce` instruction becomes an `OpAccess` (its
pipe plus byte ranges read and written), derived from the op's attributes
exactly as dialects/README.md defines them, on planned addresses
(`npu.offset` of the root alloc + view offsets).

Addresses inside loops are affine expressions of the enclosing `scf.for`
induction variables when the index arithmetic is affine (constants,
addi/subi/muli by a constant: `npu.analysis.index_values`); anything else
falls back, conservatively, to the whole root allocation, or to the bytes of
the `memref.view` the operand derives from (a tensor of a planned GM
workspace) when its shift is known, narrowed to the offsets' interval where
`npu.analysis.offset_intervals` bounds it. Each range is the hull of the
bytes the op touches, never missing a dependence; but a copy's GM side in
bursts, at a known start, keeps them (`Range.period`): the hull of a conv's
last band store (a burst per C1 block) would cover the next conv's first
band. The ranges' values and overlap tests are
`npu.analysis.byte_ranges`; the accesses of a loop body's unrolled copies,
derived from the original's, `npu.analysis.unrolled`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Iterable

from mlir import ir

from npu.analysis.affine import Affine, ident
from npu.analysis.alloc_uses import AllocUses
from npu.analysis.img2col_rows import img2col_read_bytes
from npu.analysis.byte_ranges import OFFSET_ATTR, OpAccess, Range, planned_range
from npu.analysis.index_values import IndexAnalysis
from npu.analysis.offset_intervals import byte_interval
from npu.dialects.cce import pipe_of
from npu.dialects.hivm import L0C_HALVING
from npu.ir import (bool_attr, defining_op, element_bytes, element_type_name, int_array_attr, int_attr, memory_space,
                    str_attr, walk)
from npu.target import ON_CHIP_BUFFERS, PATH_PIPES, Target

SYNC_OPS = ("cce.set_flag", "cce.wait_flag", "cce.pipe_barrier", "cce.sync_all")
VIEW_OPS = ("memref.subview", "memref.reinterpret_cast", "memref.collapse_shape",
            "memref.expand_shape", "memref.cast")
VECTOR_OPS = ("vadd", "vsub", "vmul", "vdiv", "vmax", "vmin", "vadds", "vmuls", "vmaxs",
              "vmins", "vrelu", "vabs", "vexp", "vln", "vsqrt", "vrsqrt", "vrec", "vconv",
              "vdup", "vcadd", "vcmax", "vcmin", "vnchwconv", "vcmp", "vsel", "vmadd", "vmla",
              "vaxpy")
# Vector ops that read their destination as well (multiply-adds).
READS_DST = ("vmadd", "vmla", "vaxpy")


class AccessError(Exception):
    """An op whose accesses cannot be derived (unknown cce op, bad operand)."""

    def __init__(self, message: str, op: ir.Operation):
        super().__init__(message)
        self.message = message
        self.op = op


@dataclass(frozen=True)
class _MemrefFacts:
    """What the analysis reads of a memref type, read once per type."""

    element_bytes: int
    static_offset: int | None  # of the strided layout; None when dynamic
    space: str
    size: int  # bytes


_DYNAMIC = ir.ShapedType.get_dynamic_stride_or_offset()


class AccessAnalysis(IndexAnalysis, AllocUses):
    """Derives `OpAccess`es for the cce ops of one function (on the affine
    index values its base class finds)."""

    def __init__(self, target: Target, types: "AccessAnalysis | None" = None):
        """`types`: an analysis of the same context whose facts of memref
        types this one shares (a type's facts never change, and
        `BufferCollector` makes an analysis per top-level op: re-reading
        the types for each was 0.1 CPU s of BERT-12's on 32 cores)."""
        super().__init__()
        AllocUses.__init__(self)  # the allocs each op uses, kept and forgotten with its access
        self.target = target
        # op -> its access: npu-insert-sync asks again for every loop an op
        # is nested in. An analysis lives while the IR it reads is unchanged.
        self._accesses: dict[ir.Operation, OpAccess] = {}
        # types are uniqued: few distinct
        self._memrefs: dict[ir.Type, _MemrefFacts] = {} if types is None else types._memrefs
        # value -> root_of(value): an operand's root is asked for its ranges
        # and again for the alloc it uses (npu-plan-memory's lifetimes).
        self._roots: dict[ir.Value, tuple[ir.Value, Affine | None]] = {}
        # value -> `_chain(value)` (its base, the base's defining op, its own):
        # the defining ops are asked again by `_root_of` and `_elem_offset`,
        # and `value.owner` is the dearest binding call on this path.
        self._bases: dict[ir.Value, tuple[ir.Value, ir.Operation | None, ir.Operation | None]] = {}
        self._layouts: dict[ir.Type, tuple[list[int], int]] = (  # see `layout`
            {} if types is None else types._layouts)
        # root memref value -> (`root_key`, the root's alloc when keyed by it)
        self._root_keys: dict[ir.Value, tuple[tuple[tuple, str, int, int], ir.Operation | None]] = {}
        self._interval_ranges = 0  # ranges bounded by an interval so far ...
        self._interval_ops: set[ir.Operation] = set()  # ... and the ops that have one

    def memref_facts(self, t: ir.Type) -> "_MemrefFacts":
        facts = self._memrefs.get(t)
        if facts is None:
            mt = ir.MemRefType(t)
            ebytes = element_bytes(element_type_name(mt.element_type))
            try:
                _, offset = mt.get_strides_and_offset()
            except Exception:
                offset = None
            if offset == ir.ShapedType.get_dynamic_stride_or_offset():
                offset = None
            size = ebytes
            for d in mt.shape:
                size *= d
            facts = self._memrefs[t] = _MemrefFacts(ebytes, offset, memory_space(mt), size)
        return facts

    # -- roots and view offsets ------------------------------------------------
    def root_of(self, value: ir.Value) -> tuple[ir.Value, Affine | None]:
        """(root memref value, byte offset of `value` from the root's base or None).

        A `memref.view` starts a new base (its result's layout offsets count
        from the view's first byte), so its byte shift is added and the walk
        goes on from its source: views of a GM workspace resolve to the
        workspace argument.
        """
        found = self._roots.get(value)
        if found is None:
            found = self._roots[value] = self._root_of(value)
        return found

    def _root_of(self, value: ir.Value) -> tuple[ir.Value, Affine | None]:
        base, offset = self._base_of(value)
        view = self._chain(value)[1]
        if view is None or view.name != "memref.view":
            return base, offset
        shift = self.index_value(view.operands[1])
        root, src_offset = self.root_of(view.operands[0])
        if offset is None or shift is None or src_offset is None:
            return root, None
        return root, src_offset + shift + offset

    def _base_of(self, value: ir.Value) -> tuple[ir.Value, Affine | None]:
        """(root or memref.view result `value` derives from, byte offset from it)."""
        facts = self.memref_facts(value.type)
        ebytes, static_off = facts.element_bytes, facts.static_offset
        # The strided layout offset of a view is relative to the root's base
        # (MLIR semantics), so a static one is final; dynamic ones are rebuilt.
        if static_off is not None:
            return self._chain(value)[0], Affine(static_off * ebytes)
        elems = self._elem_offset(value)
        return self._chain(value)[0], (elems.scale(ebytes) if elems is not None else None)

    def _chain(self, value: ir.Value) -> tuple[ir.Value, ir.Operation | None, ir.Operation | None]:
        """(the value at the end of `value`'s chain of VIEW_OPS, its defining
        op, `value`'s defining op), memoised per value: the views of one buffer
        share the rest of the chain, and an operand is used by several ops."""
        found = self._bases.get(value)
        if found is None:
            op = defining_op(value)
            if op is None or op.name not in VIEW_OPS:
                found = (value, op, op)
            else:
                base, base_op, _ = self._chain(op.operands[0])
                found = (base, base_op, op)
            self._bases[value] = found
        return found

    def _elem_offset(self, value: ir.Value, depth: int = 0) -> Affine | None:
        """Element offset of a (possibly dynamic) view from its root's base."""
        strides, off = self.layout(value.type)
        dyn = _DYNAMIC
        if off != dyn:
            return Affine(off)
        op = self._chain(value)[2]
        if op is None or depth > 32:
            return None
        if op.name in ("memref.collapse_shape", "memref.expand_shape", "memref.cast"):
            return self._elem_offset(op.operands[0], depth + 1)
        if op.name == "memref.subview":
            src = op.operands[0]
            src_strides, _ = self.layout(src.type)
            base = self._elem_offset(src, depth + 1)
            if base is None or any(s == dyn for s in src_strides):
                return None
            static = list(ir.DenseI64ArrayAttr(op.attributes["static_offsets"]))
            dynamic = iter(list(op.operands)[1:1 + sum(1 for s in static if s == dyn)])
            total = base
            for s, stride in zip(static, src_strides):
                if s == dyn:
                    part = self.index_value(next(dynamic))
                    if part is None:
                        return None
                    total = total + part.scale(stride)
                else:
                    total = total + Affine(s * stride)
            return total
        if op.name == "memref.reinterpret_cast":
            static = list(ir.DenseI64ArrayAttr(op.attributes["static_offsets"]))
            if static and static[0] != dyn:
                return Affine(static[0])
            # the dynamic offset is the first index operand after the source
            return self.index_value(op.operands[1]) if len(op.operands) > 1 else None
        return None

    def root_key(self, root: ir.Value) -> tuple[tuple, str, int, int]:
        """(key, space, base byte offset, byte size) of a root memref."""
        facts = self.memref_facts(root.type)
        space, size = facts.space, facts.size
        op = defining_op(root)
        if op is None:
            return ("arg", ir.BlockArgument(root).arg_number), space, 0, size
        if op.name == "memref.alloc" and OFFSET_ATTR in op.attributes and space in ON_CHIP_BUFFERS:
            return ("space", space), space, ir.IntegerAttr(op.attributes[OFFSET_ATTR]).value, size
        return ("alloc", ident(op)), space, 0, size

    def range_of(self, operand: ir.Value, lo: int, length: int) -> Range:
        """Bytes [lo, lo+length) relative to `operand`'s address."""
        root, offset = self.root_of(operand)
        known = self._root_keys.get(root)
        if known is None:
            root_key = self.root_key(root)
            known = self._root_keys[root] = (
                root_key, defining_op(root) if root_key[0][0] == "alloc" else None)
        (key, space, base, size), alloc = known
        if offset is None:
            # Unknown dynamic offset: the tensor's own bytes when it is a
            # memref.view at a known shift (a tensor of a planned workspace),
            # else the whole root allocation; within both, the hull of the
            # offsets' interval (`npu.analysis.offset_intervals`) when it is known.
            extent = self._view_extent(operand)
            start, stop = (base, base + size) if extent is None or extent[0].terms else (
                base + extent[0].const, base + extent[0].const + extent[1])
            span = byte_interval(self, operand)
            if span is not None:
                self._interval_ranges += 1
                start, stop = max(start, base + span[0] + lo), min(stop, base + span[1] + lo + length)
            if extent is not None and extent[0].terms and span is None:
                return Range(key, space, extent[0] + Affine(base), extent[1], alloc)
            return Range(key, space, Affine(start), max(0, stop - start), alloc)
        return Range(key, space, offset + Affine(base + lo), length, alloc)

    def _view_extent(self, value: ir.Value) -> tuple[Affine, int] | None:
        """(byte offset from the root, length) of the `memref.view` `value`
        derives from, its bytes rounded up to whole GM allocation granules
        (the padding a GM tensor may be accessed in); None if unknown."""
        base, view, _ = self._chain(value)
        if view is None or view.name != "memref.view":
            return None
        root, start = self.root_of(base)
        if start is None:
            return None
        facts = self.memref_facts(base.type)
        nbytes = facts.size
        granule = self.target.gm_alloc_granule_bytes if facts.space == "gm" else 1
        return start, -(-nbytes // granule) * granule

    def adopt(self, earlier: Iterable["AccessAnalysis"]) -> None:
        """Take the accesses (and loop ranges) of analyses of the same IR made
        before `npu-plan-memory` gave the allocs their `npu.offset`s, as this
        analysis would derive them now: a range of an alloc since planned is
        moved to its offset in the space (what `root_key` gives a planned
        alloc). The IR must not have changed otherwise."""
        offsets: dict[ir.Operation, int | None] = {}  # alloc -> its npu.offset, read once
        for other in earlier:
            self.iv_ranges.update(other.iv_ranges)
            self._interval_ops |= other._interval_ops
            for op, acc in other._accesses.items():
                self._accesses[op] = OpAccess(acc.op, acc.pipe,
                                              [planned_range(r, offsets) for r in acc.reads],
                                              [planned_range(r, offsets) for r in acc.writes])

    def reusable_access(self, op: ir.Operation) -> OpAccess | None:
        """`op`'s access if derived already and no range of it was bounded by
        an interval (which holds for `op`'s own loop bounds, not a copy's):
        what `npu.analysis.unrolled` may carry over to copies of `op`."""
        return None if op in self._interval_ops else self._accesses.get(op)

    def forget(self, ops: Iterable[ir.Operation]) -> None:
        """Drop `ops`, about to be erased (no later op may find one's access at its address)."""
        for op in ops:
            self._accesses.pop(op, None)
            self._allocs_used.pop(op, None)
            self._interval_ops.discard(op)

    def take_access(self, op: ir.Operation, acc: OpAccess) -> None:
        """Record `acc`, derived elsewhere (`npu.analysis.unrolled`), as `op`'s access."""
        self._accesses[op] = acc

    def root_value(self, value: ir.Value) -> ir.Value:
        """`root_of(value)[0]` without the offset (only the chain of views is
        followed): which buffer an operand is, for the lifetimes."""
        found = self._roots.get(value)
        if found is not None:
            return found[0]
        base, view, _ = self._chain(value)
        if view is None or view.name != "memref.view":
            return base
        return self.root_value(view.operands[0])

    # -- per op ------------------------------------------------------------------
    def access(self, op: ir.Operation) -> OpAccess:
        """Pipe and byte ranges of one cce instruction (the pipe from the dialect's table)."""
        acc = self._accesses.get(op)
        if acc is not None:
            return acc
        intervals = self._interval_ranges
        acc = self._accesses[op] = self._access(op)
        if self._interval_ranges != intervals:
            self._interval_ops.add(op)
        pipe = pipe_of(op.name)
        if pipe is not None:
            acc.pipe = pipe
        return acc

    def _access(self, op: ir.Operation) -> OpAccess:
        name = op.name
        short = name.split(".", 1)[1]
        t = self.target
        blk = t.vector_block_bytes
        if short.startswith("copy_"):
            path = short[len("copy_"):]
            if path not in PATH_PIPES:
                raise AccessError(f"unknown data path '{path}'", op)
            n, ln = int_attr(op, "n_burst"), int_attr(op, "burst_len")
            sg, dg = int_attr(op, "src_gap"), int_attr(op, "dst_gap")
            # A converting L0C -> UB copy (f32 -> f16) writes bursts of half
            # its source's: counting whole source bursts made a piece's move
            # seem to overwrite the next UB buffer too (a false dependency).
            dst_ln = ln // 2 if _converts(op) else ln
            src_len = ((n - 1) * (ln + sg) + ln) * blk if n > 0 else 0
            dst_len = ((n - 1) * (dst_ln + dg) + dst_ln) * blk if n > 0 else 0
            return OpAccess(op, PATH_PIPES[path],
                            [self._bursts(op.operands[0], src_len, n, ln * blk, sg * blk)],
                            [self._bursts(op.operands[1], dst_len, n, dst_ln * blk, dg * blk)])
        if short in ("load_l1_to_l0a", "load_l1_to_l0b"):
            frac = t.fractal_bytes(2)
            rep = int_attr(op, "repeat")
            ss, ds = int_attr(op, "src_stride"), int_attr(op, "dst_stride")
            return OpAccess(op, PATH_PIPES[short[len("load_"):]],
                            [self.range_of(op.operands[0], 0, ((rep - 1) * ss + 1) * frac)],
                            [self.range_of(op.operands[1], 0, ((rep - 1) * ds + 1) * frac)])
        if short == "img2col_l1_to_l0a":  # reads within its map operand (f16 or i8), writes fractals
            rep, ds, frac = int_attr(op, "repeat"), max(int_attr(op, "dst_stride"), 1), t.fractal_bytes(2)
            fm = op.operands[0]  # its bytes: numel x 2 (f16) or 1 (i8)
            facts = self.memref_facts(fm.type)
            lo, length = img2col_read_bytes(op, facts.element_bytes, facts.size)  # its windows' rows
            return OpAccess(op, "MTE1", [self.range_of(fm, lo, length)],
                            [self.range_of(op.operands[1], 0, ((rep - 1) * ds + 1) * frac)])
        if short == "mad":
            m, n, k = int_attr(op, "m"), int_attr(op, "n"), int_attr(op, "k")
            a, b, c = op.operands[0], op.operands[1], op.operands[2]
            eb = [self.memref_facts(v.type).element_bytes for v in (a, b, c)]
            c_range = self.range_of(c, 0, m * k * eb[2])
            reads = [self.range_of(a, 0, m * n * eb[0]), self.range_of(b, 0, n * k * eb[1])]
            if bool_attr(op, "accumulate"):
                reads.append(c_range)
            return OpAccess(op, "M", reads, [c_range])
        if short in VECTOR_OPS:
            return self._vector_access(op, short)
        raise AccessError(f"unknown cce op '{name}': its memory accesses are not modelled", op)

    def _bursts(self, operand: ir.Value, length: int, n: int, run: int, gap: int) -> Range:
        """A copy side's range: its `n` bursts where it is in GM at a known start, else their hull."""
        rng = self.range_of(operand, 0, length)
        bursts = n > 1 and gap > 0 and rng.space == "gm" and self.root_of(operand)[1] is not None
        return replace(rng, period=run + gap, run=run) if bursts else rng

    def _vector_access(self, op: ir.Operation, short: str) -> OpAccess:
        t = self.target
        blk = t.vector_block_bytes
        operands = list(op.operands)
        # operand -> element bytes of the memref ones (scalar operands skipped)
        ebytes = []
        for v in operands:
            vt = v.type
            if isinstance(vt, ir.MemRefType):
                ebytes.append(self.memref_facts(vt).element_bytes)
        attrs = op.attributes
        rep = ir.IntegerAttr(attrs["repeat"]).value
        if short == "vnchwconv":
            dst, src = operands[0], operands[1]

            def rows(offsets_attr: str, stride_attr: str) -> tuple[int, int]:
                offs = int_array_attr(op, offsets_attr)
                lo = min(offs) * blk
                hi = (max(offs) + 1) * blk + (rep - 1) * int_attr(op, stride_attr) * blk
                return lo, hi - lo
            dlo, dlen = rows("dst_offsets", "dst_rep_stride")
            slo, slen = rows("src_offsets", "src_rep_stride")
            return OpAccess(op, "V", [self.range_of(src, slo, slen)], [self.range_of(dst, dlo, dlen)])
        lanes = t.lanes(max(ebytes))
        mask = ir.IntegerAttr(attrs["mask"]).value if "mask" in attrs else lanes

        def extent(s: int, blk_stride: int, rep_stride: int) -> int:
            active = mask * s
            nblocks = -(-active // blk)
            last = 0
            for b in range(nblocks):
                last = max(last, b * blk_stride * blk + min(blk, active - b * blk))
            return (rep - 1) * rep_stride * blk + last

        def attr(name: str, default: int = 1) -> int:
            return ir.IntegerAttr(attrs[name]).value if name in attrs else default

        dst = operands[0]
        writes = []
        reads = []
        if short in ("vcadd", "vcmax", "vcmin"):
            s = ebytes[0]
            writes.append(self.range_of(dst, 0, (rep - 1) * attr("dst_rep_stride", 1) * s + s))
        else:
            writes.append(self.range_of(dst, 0, extent(ebytes[0], attr("dst_blk_stride"),
                                                       attr("dst_rep_stride", 8))))
        srcs = operands[1:]
        prefixes = {0: [], 1: ["src"], 2: ["src0", "src1"], 3: ["cond", "src0", "src1"]}[len(srcs)]
        for v, p, s in zip(srcs, prefixes, ebytes[1:]):
            reads.append(self.range_of(v, 0, extent(s, attr(f"{p}_blk_stride"),
                                                    attr(f"{p}_rep_stride", 8))))
        if short in READS_DST:
            reads += writes
        return OpAccess(op, "V", reads, writes)


def is_access_op(op: ir.Operation) -> bool:
    return is_access_name(op.name)


def is_access_name(name: str) -> bool:
    """`is_access_op` by the op's name (an op's name is a binding call: a walk
    that tests it for more than this reads it once)."""
    return name.startswith("cce.") and name not in SYNC_OPS


def function_accesses(func_op: ir.Operation, target: Target) -> tuple[AccessAnalysis, list[OpAccess]]:
    """All cce accesses of a function in program order."""
    analysis = AccessAnalysis(target)
    return analysis, [analysis.access(op) for op in walk(func_op) if is_access_op(op)]


def _converts(op: ir.Operation) -> bool:
    """Is `op` a `copy_l0c_to_ub` that rounds f32 to f16 (half-size bursts out)?"""
    return (op.name.endswith("copy_l0c_to_ub") and "convert" in op.attributes
            and str_attr(op, "convert") in L0C_HALVING)

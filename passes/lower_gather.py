"""npu-lower-gather: ascend.gather (the embedding lookup) and
ascend.gather_elements -> cce, driven by the scalar unit.

`out[o, k, i] = table[o, ids[k], i]` (o over the dims before `axis`, k over
the indices, i over the dims after it). Each index is read by the scalar
unit from GM (`memref.load`, through its data cache), normalised as ONNX
says (a negative index counts from the end) and checked (`cf.assert`: an
index outside [-size, size) stops the kernel with a located error instead
of reading another row); its row is then one `copy_gm_to_ub` at a
data-dependent GM offset. The rows of a chunk land next to each other in UB
and leave with one `copy_ub_to_gm` (the output's rows are contiguous: row
o * count + k for outer index o and id k). The chunks go round `slots` UB
buffers that share `ub-fraction` of UB, so a buffer is loaded again only
after `slots - 1` other chunks: its store's GM latency hides behind their
loads.

The access analysis sees the row copy's offset as data-dependent and takes
the whole table as read (conservative). Rows that are not whole 32-byte
blocks (a burst's unit) are realigned in UB (`gather_unaligned`; real
embeddings' hidden sizes are multiples of 8 f32 / 16 f16 elements and take
the direct path). The indices must be kernel inputs: the scalar unit reads
them as the kernel starts. `ascend.gather_elements` is a gather of
one-element rows, each at its own data offset (`gather_unaligned.ElementsIndex`).
"""

from __future__ import annotations

import numpy as np
from mlir import ir

from npu import ir as nir
from npu.dialects.ascend import normalize_axis
from npu.dialects.hivm import config_field
from npu.kernels.cce_build import Index, copy, delinearize, for_range, lin, sub
from npu.passes.base import Option, Pass, PassError, ub_fraction_option
from npu.passes.applies import OnOps
from npu.passes.gather_unaligned import ElementsIndex, UnalignedGather, checked_id, range_message


class LowerGather(Pass):
    name = "npu-lower-gather"
    summary = ("Lower ascend.gather / gather_elements: the scalar unit loads each index and "
               "copies its row GM -> UB (realigned in UB when not whole blocks); chunks of rows "
               "are stored UB -> GM")
    handles = ("ascend.gather", "ascend.gather_elements")
    acts_on = OnOps("gather", handles)  # every option: the program has one
    options = (
        ub_fraction_option(0.9, "fraction of UB the chunks' buffers share (the gather is a "
                           "kernel of its own)"),
        Option("max-rows", int, 0, "cap on the rows of a chunk (0: as many as UB allows); "
               "for tests", low=0),
        Option("slots", int, 2, "UB buffers the chunks go round (each ub-fraction / slots)",
               low=1),
    )

    def run(self, module: ir.Operation) -> None:
        self.lower_each(module, erase=True)

    def lower(self, op: ir.Operation) -> None:
        table, indices, out = op.operands
        shape = nir.memref_shape(table)
        axis = normalize_axis(nir.int_attr(op, "axis"), len(shape))
        elem = nir.memref_element(table)
        for v in (table, indices, out):
            if not nir.is_contiguous(v):
                raise PassError(f"operand of type {v.type} is not contiguous (row-major, dense)", op)
        _check_kernel_input(indices, op)
        if op.name == "ascend.gather_elements":
            ids_shape = nir.memref_shape(indices)
            index = ElementsIndex(nir.flatten_memref(table), nir.flatten_memref(indices),
                                  nir.flatten_memref(out), elem, shape, ids_shape, axis)
            total = int(np.prod(ids_shape, dtype=np.int64))
            UnalignedGather(self, op, index, total, int(np.prod(shape, dtype=np.int64))).emit()
            return
        outer = int(np.prod(shape[:axis], dtype=np.int64))
        size = shape[axis]
        inner = int(np.prod(shape[axis + 1:], dtype=np.int64))
        count = int(np.prod(nir.memref_shape(indices), dtype=np.int64))
        granule = self.target.granule("ub")
        row_bytes = inner * nir.element_bytes(elem)
        blocks = max(1, row_bytes // granule)
        max_burst = config_field("copy", "burst_len").max
        total = outer * count  # output rows: out[o, k] is row o * count + k
        budget = int(self.target.capacity("ub") * self.ub_fraction)
        rows = min(total, budget // (self.slots * row_bytes), max_burst // blocks,
                   self.best_rows(total, row_bytes))
        if self.max_rows:
            rows = min(rows, self.max_rows)
        if rows < 1:
            rows = min(total, budget // row_bytes, max_burst // blocks)  # fewer slots
        if rows < 1 and row_bytes % granule == 0:
            raise PassError(f"one gathered row ({row_bytes} bytes) does not fit the UB budget "
                            f"({self.ub_fraction:g} of UB) or one copy burst", op)
        kernel = _Kernel(nir.flatten_memref(table), nir.flatten_memref(indices),
                         nir.flatten_memref(out), elem, outer, size, inner, count, blocks)
        if row_bytes % granule:
            UnalignedGather(self, op, kernel, total, outer * size * inner).emit()
            return
        kernel.emit(total, rows, max(1, min(self.slots, budget // (rows * row_bytes))))


    def best_rows(self, total: int, row_bytes: int) -> int:
        """Rows per chunk that minimise the modelled time. Every chunk pays
        the GM latency once on each mover (its store's set_flag, its loads'
        set_flag wait for completion), and the store of the last chunk and
        the loads of the first do not overlap: about (K + 1) * (T / K + L)
        for K chunks of a transfer of T cycles per mover, least at
        K = sqrt(T / L)."""
        path = self.target.path("gm_to_ub")
        data = total * row_bytes / path.bytes_per_cycle
        chunks = max(1, round((data / max(path.latency, 1)) ** 0.5))
        return -(-total // chunks)


class _Kernel:
    """Emits the chunks of one gather: chunks of `rows` output rows go round
    `slots` UB buffers, so a buffer is loaded again only `slots` chunks
    after its store started (its store's GM latency hides behind the other
    buffers' loads)."""

    def __init__(self, table: ir.Value, ids: ir.Value, out: ir.Value, elem: str, outer: int,
                 size: int, inner: int, count: int, blocks: int):
        self.table, self.ids, self.out, self.elem, self.outer = table, ids, out, elem, outer
        self.size, self.inner, self.count, self.blocks = size, inner, count, blocks
        self.message = range_message("ascend.gather", size)

    def emit(self, total: int, rows: int, slots: int) -> None:
        full, tail = divmod(total, rows)
        slots = max(1, min(slots, full + (tail > 0)))
        bufs = [nir.alloc([rows * self.inner], self.elem, "ub") for _ in range(slots)]
        groups, left = divmod(full, slots)
        if groups:
            for_range(groups, lambda g: [self.chunk(lin((g, slots * rows), (s, rows)), rows, bufs[s])
                                         for s in range(slots)])
        for j in range(left):
            self.chunk((groups * slots + j) * rows, rows, bufs[j])
        if tail:
            buf = bufs[left % slots]
            self.chunk(full * rows, tail, sub(buf, 0, tail * self.inner))

    def chunk(self, r0: Index, n: int, buf: ir.Value) -> None:
        for_range(n, lambda k: self.row(lin((r0, 1), (k, 1)), buf, k))
        copy("cce.copy_ub_to_gm", buf, sub(self.out, lin((r0, self.inner)), n * self.inner), 1,
             n * self.blocks)

    def row(self, r: Index, buf: ir.Value, k: Index) -> None:
        src = sub(self.table, self.row_index(r), self.inner)
        copy("cce.copy_gm_to_ub", src, sub(buf, lin((k, self.inner)), self.inner), 1, self.blocks)

    def row_index(self, r: Index) -> ir.Value:
        """The table element where output row r's row starts: the scalar
        unit loads its id, wraps a negative one and checks the range."""
        if self.outer == 1:
            o, position = 0, r
        elif isinstance(r, int):
            o, position = divmod(r, self.count)
        else:  # the outer index and the id's position: r // count, r % count
            o, position = delinearize(r, [self.outer, self.count])
        index = checked_id(self.ids, position, self.size, self.message)
        start = lin((o, self.size * self.inner), (index, self.inner))
        return start if isinstance(start, ir.Value) else nir.index_const(start)


def _check_kernel_input(value: ir.Value, op: ir.Operation) -> None:
    """The indices must be (a view of) a kernel argument that is not the GM
    workspace: the scalar unit reads them before any instruction has run."""
    while True:
        owner = nir.defining_op(value)
        if owner is None:
            break
        if owner.name not in ("memref.collapse_shape", "memref.expand_shape", "memref.cast",
                              "memref.subview", "memref.reinterpret_cast"):
            what = "a GM temporary" if owner.name == "memref.alloc" else f"'{owner.name}'"
            raise PassError(f"the indices are computed on the device ({what}); the scalar unit "
                            "reads a gather's indices from kernel inputs only", op)
        value = owner.operands[0]
    func = nir.enclosing_function(op)
    arg = ir.BlockArgument(value)
    if func is not None and arg.arg_number in nir.workspace_args(func):
        raise PassError("the indices are computed on the device (a GM workspace tensor); the "
                        "scalar unit reads a gather's indices from kernel inputs only", op)

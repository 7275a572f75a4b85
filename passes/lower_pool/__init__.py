"""npu-lower-pool: `ascend.pool2d` -> cce on the vector unit.

NCHW puts a plane's pixels next to each other, but a strided window needs
every `sw`-th pixel, which vector lanes (contiguous inside a 32-byte block)
cannot pick. So 16 planes at a time are transposed in UB (`vnchwconv`) to
pixel-major order, each pixel one block holding that pixel of 16 (f16) or 8
(f32) planes: the hardware's NC1HWC0 layout in miniature, built on chip.
There a window is block-strided: one vector instruction per kernel point
covers 8 output pixels a repeat (block stride `sw`) and walks the output
rows (repeat stride `sh` rows), whatever the stride, dilation or pads
(pads: the band is copied into an image filled with the identity). The
result is transposed back and stored. This is how the vendor's TBE pools
(img2col to UB, vector max/add), without a layout change in GM.

Tiling (`plan.py`): tiles of 16 planes x `ob` output rows, `ob` as large as
UB allows for two ping-ponged tiles at `ub-fraction` (then one tile in all
of UB before giving up), bands of interior rows in one loop that npu-double-buffer
ping-pongs, so a large map is cut into bands and never refused for its
height. Maps too wide for one output row of a tile are cut into column
slices through GM temporaries (`columns.py`). Code in `kernel.py`. Maps
under one block per plane are widened by the conversion
(`linalg_to_ascend/pooling.py`).
"""

from __future__ import annotations

from mlir import ir

from npu import ir as nir
from npu.dialects.ascend_conv import NC1HWC0, layout
from npu.dialects.ascend_pool import Pool2d
from npu.kernels.cce_build import Index, by_run, core_part, delinearize, for_range, lin
from npu.passes.base import Option, Pass, PassError, say_ub_share_exceeded, ub_fraction_option
from npu.passes.applies import POOLS
from npu.passes.lower_pool.columns import column_slices, emit_columns, narrowed
from npu.passes.lower_pool.kernel import PoolTile
from npu.passes.lower_slices import LowerSlices
from npu.passes.lower_pool.plan import GROUP, PoolGeometry


def geometry(op: ir.Operation, block_bytes: int = 32) -> PoolGeometry:
    src, dst = op.operands
    shape = nir.memref_shape(src)
    pixel_major = layout(op) == NC1HWC0
    n, c, h, w = (shape[0], shape[1] * shape[4], *shape[2:4]) if pixel_major else shape
    es = nir.element_bytes(nir.memref_element(src))
    ho, wo = nir.memref_shape(dst)[2:4]
    return PoolGeometry(Pool2d.of(op), n * c, h, w, ho, wo, es, block_bytes // es, pixel_major)


class LowerPool(Pass):
    name = "npu-lower-pool"
    summary = "Lower ascend.pool2d: planes transposed to pixel blocks in UB, block-strided windows"
    handles = POOLS.ops
    acts_on = POOLS  # every option: the program has one
    options = (
        ub_fraction_option(1.0, "fraction of UB two ping-ponged tiles may use (their mover "
                           "buffers twice, the vector-only images once); one tile in all of "
                           "UB (with a remark) is tried before a map is refused"),
        Option("max-rows", int, 0, "cap on the output rows of a tile (0: as UB allows); for tests",
               low=0),
        Option("max-cols", int, 0, "cap on the output columns of a tile, wider maps in column "
               "slices (0: the whole width where UB allows); for tests", low=0),
    )

    def run(self, module: ir.Operation) -> None:
        self.lower_each(module, erase=True)

    def lower(self, op: ir.Operation) -> None:
        src, dst = op.operands
        elem = nir.memref_element(src)
        if elem not in ("f16", "f32"):
            raise PassError(f"pooling of {elem} is not supported (f16, f32)", op)
        for v in (src, dst):
            if not nir.is_contiguous(v):
                raise PassError(f"operand of type {v.type} is not contiguous (row-major, dense)", op)
        geo = geometry(op, self.target.granule("ub"))
        if not geo.pixel_major and (geo.h * geo.w < geo.block or geo.ho * geo.wo < geo.block):
            raise PassError(f"maps under one 32-byte block per plane ({geo.h}x{geo.w} -> "
                            f"{geo.ho}x{geo.wo} {elem}) are widened by npu-linalg-to-ascend "
                            "before pooling", op)
        capacity = self.target.capacity("ub")
        rate = self.target.path("gm_to_ub").bytes_per_cycle
        share = int(capacity * self.ub_fraction)
        geo, ob = geo.choose_form(share, rate, self.max_rows)
        ob = ob or geo.choose_band(capacity, self.max_rows, slots=1)
        if geo.pixel_major and ob is None:
            raise PassError(f"no band of this NC1HWC0 pool fits UB ({geo.ub_bytes(1, 1)} bytes "
                            f"for one output row of {geo.w} columns; UB {capacity}); "
                            "npu-linalg-to-ascend pools such maps in NCHW", op)
        if not geo.pixel_major and (ob is None or (self.max_cols and
                                                   geo.wo > max(self.max_cols, geo.block))):
            # too wide: column slices through GM (columns.py)
            wc = column_slices(geo, lambda sub: sub.choose_band(capacity, self.max_rows, slots=1))
            if wc is not None and self.max_cols:
                wc = min(wc, max(self.max_cols, geo.block))
            if wc is None:
                raise PassError(f"no column slice of this pool fits UB ({geo.ub_bytes(1, 1)} "
                                f"bytes for 16 planes of {geo.w} columns; UB {capacity})", op)
            sub = narrowed(geo, 0, wc)[0]
            sub_ob = sub.choose_band(capacity, self.max_rows, slots=1)
            if sub_ob is not None:
                self.share_exceeded(op, share, sub.ub_bytes(sub_ob, 1))
            emit_columns(self, LowerSlices(self.target), op, geo, wc)
            return
        self.share_exceeded(op, share, geo.ub_bytes(ob, 2 if geo.ub_bytes(ob) <= share else 1))
        rows = core_part(op)
        if rows is not None:
            self.row_runs(op, geo, elem, rows)
            return
        tile = PoolTile(self, geo, elem, nir.flatten_memref(src), nir.flatten_memref(dst), ob)
        self.tiles(tile, ob, geo.bands(ob))

    def share_exceeded(self, op: ir.Operation, share: int, used: int) -> None:
        """`say_ub_share_exceeded` when the pool's tiles took `used` bytes,
        more than its `share` of UB."""
        if used > share:
            say_ub_share_exceeded(self, op, f"one tile of {used} bytes")

    def row_runs(self, op: ir.Operation, geo: PoolGeometry, elem: str,
                 rows: tuple[int, ir.Value]) -> None:
        """This core's run of output rows of a pool that npu-split-cores cut
        into equal runs over the cores (`nir.CORE_PART_ATTR`): the first and
        last runs' bands as they are, an inner run's at a run-time offset
        (they must read no padding, so that one plan serves them all)."""
        parts, part = rows
        run = geo.ho // parts
        geo, ob = geo.choose_form(int(self.target.capacity("ub") * self.ub_fraction),
                                  self.target.path("gm_to_ub").bytes_per_cycle,
                                  min(self.max_rows or run, run)) if geo.pixel_major else (geo, None)
        if geo.ho % parts or ob is None or ob > run:
            raise PassError(f"{nir.CORE_PART_ATTR}: cuts the output rows of an NC1HWC0 pool into "
                            f"{parts} equal runs of whole bands; this one has {geo.ho} rows", op)
        inner = geo.bands(ob, run, 2 * run) if parts > 2 else []
        if not all(b.interior for b in inner):
            raise PassError(f"{nir.CORE_PART_ATTR}: the inner runs of {run} output rows read "
                            "padding rows", op)
        src, dst = (nir.flatten_memref(v) for v in op.operands)

        def emit(bands: list, shift: Index = 0) -> None:
            self.tiles(PoolTile(self, geo, elem, src, dst, ob), ob, bands, shift)

        with op.location, ir.InsertionPoint(op):
            by_run(parts, part, lambda: emit(geo.bands(ob, 0, run)),
                   lambda: emit(geo.bands(ob, geo.ho - run)),
                   lambda: emit(inner, lin((part, run), (1, -run))))

    def tiles(self, tile: PoolTile, ob: int, bands: list, shift: Index = 0) -> None:
        """Every (group, band) of `bands` (output rows moved by `shift`): the
        interior bands on the grid of every full group in one loop, each
        other band in a loop over the full groups (loops are what
        npu-double-buffer ping-pongs); the last partial group the same way."""
        geo = tile.geo
        grid = [k for k, b in enumerate(bands)
                if b.interior and b.out_rows == ob and b.o0 == bands[0].o0 + k * ob]
        lo, hi = (grid[0], grid[0] + 1) if grid else (0, 0)
        while hi < len(bands) and hi in grid:
            hi += 1
        sh, pt = geo.pool.strides[0], geo.pool.pads[0]
        full, rest = divmod(geo.planes, GROUP)
        groups = [(full, GROUP, 0)] if full else []
        if rest:
            groups.append((1, rest, full * GROUP))
        for k, band in enumerate(bands):
            if lo <= k < hi and k != lo:
                continue
            for count, gp, first in groups:
                if k == lo and hi > lo:  # the interior run
                    def body(i, band=band, gp=gp, first=first) -> None:
                        g, kk = delinearize(i, [count, hi - lo]) if count > 1 else (0, i)
                        p0 = lin((g, GROUP), (1, first))
                        o0 = lin((kk, ob), (1, band.o0), (shift, 1))
                        tile.emit(p0, gp, o0, band,
                                  lin((kk, ob * sh), (1, band.o0 * sh - pt), (shift, sh)))
                    for_range(count * (hi - lo), body)
                else:
                    for_range(count, lambda g, band=band, gp=gp, first=first: tile.emit(
                        lin((g, GROUP), (1, first)), gp, lin((1, band.o0), (shift, 1)), band,
                        lin((1, band.in_start), (shift, sh))))

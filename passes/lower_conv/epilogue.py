"""A conv's `npu.conv_epilogue` group (from `npu-fuse`) on each drained tile.

The drained tile is `n1` Cout blocks of a band's pixels, each block a run
of `m1` fractals in UB ([n1][m1 * 16][16], the real `rows * Wo` pixels
first). A member's other operands are NC1HWC0 tensors of the result's
shape: their tile is loaded the way the result's is stored (a burst per
Cout block), so every member is one flat vector run over the tile
(`npu.kernels.vector_compute.emit_flat_run` of its recipe). Only the last
member's result is stored; the conv's own result and the members' in
between never reach GM.
"""

from __future__ import annotations

from mlir import ir

from npu import ir as nir
from npu.costmodel.conv import epilogue
from npu.costmodel.vector.recipes import compute_of
from npu.kernels.cce_build import copy_bursts
from npu.kernels.vector_compute import constant_blocks, emit_flat_run
from npu.target import Target

FRAC = 256


def group_of(conv: ir.Operation) -> ir.Operation | None:
    """The `npu.conv_epilogue` region holding the conv, if any."""
    return nir.enclosing_group(conv, epilogue.CONV_EPILOGUE_ATTR)


class ConvEpilogue:
    def __init__(self, target: Target, region: ir.Operation, conv: ir.Operation) -> None:
        self.target, self.region, self.conv = target, region, conv
        self.members = self.members_of(region, conv)
        self.result = self.members[-1].operands[-1]
        self.result_type = nir.memref_element(self.result)
        self.tiles = epilogue.tile_buffers(self.members, conv.operands[-1])
        self.consts = {}
        for k, m in enumerate(self.members):
            consts = constant_blocks(self.compute(m), target)
            if consts is not None:
                self.consts[k] = consts

    @staticmethod
    def members_of(region: ir.Operation, conv: ir.Operation) -> list[ir.Operation]:
        return [o.operation for o in region.regions[0].blocks[0].operations
                if o.operation.name.startswith("ascend.") and o.operation != conv]

    @staticmethod
    def compute(m: ir.Operation):
        values = [v for v in m.operands if nir.is_memref(v.type)]
        return compute_of(m, [nir.memref_element(v) for v in values[:-1]],
                          nir.memref_element(values[-1]))

    def apply(self, tile: ir.Value, n: int, co0: int, n1: int, ho0, rows: int, m1: int,
              ho: int, wo: int) -> ir.Value:
        """The members over the drained `tile`; the UB buffer of the result."""
        count = n1 * m1 * FRAC
        # value -> its tile in UB: what the group made (the very values, as
        # `npu-fuse` grouped them), then what it loaded
        tiles: list[tuple[ir.Value, ir.Value]] = [(self.conv.operands[-1], tile)]
        for k, m in enumerate(self.members):
            values = [v for v in m.operands if nir.is_memref(v.type)]
            srcs = []
            for v in values[:-1]:
                buf = next((b for w, b in tiles if w == v), None)
                if buf is None:
                    buf = self.load(v, count, n, co0, n1, ho0, rows, m1, ho, wo)
                    tiles.append((v, buf))
                srcs.append((buf, nir.memref_element(v)))
            compute = self.compute(m)
            out_type = nir.memref_element(values[-1])
            dst = nir.alloc([count], out_type, "ub")
            temps = [nir.alloc([count], t, "ub") for t in compute.temps]
            # over the real pixels only (loaded tiles hold nothing past them):
            # one run when the band fills its fractals, else one per Cout block
            valid = rows * wo * 16
            runs = [(0, count)] if valid == m1 * FRAC else [(j * m1 * FRAC, valid) for j in range(n1)]
            for at, size in runs:
                part = lambda buf: nir.subview(buf, [at], [size])  # noqa: E731
                emit_flat_run(compute, self.target, size, (part(dst), out_type),
                              [(part(b), e) for b, e in srcs], [part(t) for t in temps],
                              self.consts.get(k))
            tiles.insert(0, (values[-1], dst))
        return tiles[0][1]

    def load(self, v: ir.Value, count: int, n: int, co0: int, n1: int, ho0, rows: int, m1: int,
             ho: int, wo: int) -> ir.Value:
        """The tile of NC1HWC0 operand `v` at the drained tile's place."""
        t = self.target
        elem = nir.memref_element(v)
        eb = nir.element_bytes(elem)
        buf = nir.alloc([count], elem, "ub")
        valid = rows * wo
        src = nir.subview(v, [n, co0, ho0, 0, 0], [1, n1, rows, wo, 16])
        copy_bursts("cce.copy_gm_to_ub", src, buf, n1, t.blocks(valid * 16 * eb),
                    src_gap=t.blocks((ho - rows) * wo * 16 * eb),
                    dst_gap=t.blocks((m1 * 16 - valid) * 16 * eb))
        return buf

    def finish(self) -> None:
        """After the conv is lowered inside the region: drop the members and
        what only they used, and put the rest where the region is."""
        nir.dissolve_group(self.region, self.members)

"""A conv's residual Add (and the ReLU after it) in the cube, not on its drain.

A 1x1 stride-1 conv whose epilogue is the drain's rounding cast, an f16 Add
of a residual tensor of the result's shape and optionally a ReLU of the sum
(ResNet's bottleneck conv3) spends most of its vector unit on that drain:
the L0C -> UB move, then a vadd and a vmaxs over every output (ResNet-50's
layer1 conv3: V 37.7k cycles against the cube's 15.7k). Here the sum is
made in L0C instead: before a super tile's K chunks, each of its Cout
blocks gets one mad of the residual's block (img2col'd from an L1 copy of
the tile, a 1x1 map whose C1 block is the Cout block) against a 16x16
identity, which the K chunks then accumulate onto; the drain's move
applies the ReLU (`f32_to_f16_relu`) and nothing runs on V. The bias must
be in the cube too (`cube_bias`), or absent.

Numerics: conv + bias + residual summed in f32 and rounded to f16 once,
where the vector recipe rounded the conv to f16, then the sum. The identity
is one more K row of the host's weights (not read by the K chunks), copied
GM -> L1 once per conv; each residual chunk loads it into its L0B half.
(Made in UB by vector ops instead, it queued on V behind the previous
conv's drains and held the first mads: 1x1 64->256 56 with its residual,
the cube idle for its first 6k cycles.)
"""

from __future__ import annotations

import numpy as np
from mlir import ir

from npu import ir as nir
from npu.costmodel.conv import residual as model
from npu.costmodel.conv.epilogue import loaded_operands
from npu.costmodel.conv.stem_fold import is_relu
from npu.dialects.ascend_conv import geometry, layout
from npu.kernels.cce_build import copy, copy_bursts
from npu.passes.lower_conv.compact_weights import constant_chain

FRAC = 256
# Taken where its estimate is below this share of the vector recipe's: the
# conv estimates are within ~15% of the simulation, and a conv whose MTE2
# the residual already paces gains little (ResNet-50's layer2 conv3, 128 ->
# 512 at 28: estimated 27.3k against 27.7k, simulated 24.4k against 23.3k)
MARGIN = 0.9


def applies(op: ir.Operation, epi, shape) -> tuple[ir.Operation, ir.Value, ir.Operation | None] | None:
    """(the Add, the residual it reads, the ReLU of its sum or None) where
    the conv's epilogue (`ConvEpilogue` `epi`) can run in the cube: its
    drain rounds to f16 and its members are an f16 Add of the drained tile
    and a loaded tensor, then optionally a ReLU of that sum; a 1x1,
    stride-1, unpadded f16 conv in layout "nc1hwc0" whose weights are a
    host constant only it reads (the identity joins them: `with_identity`)."""
    g = geometry(op)
    if (epi is None or epi.cast is None or epi.pool is not None or epi.also is not None
            or epi.relu is not None or layout(op) != "nc1hwc0" or (g.kh, g.kw) != (1, 1)
            or tuple(g.strides) != (1, 1) or any(g.pads) or shape.small or shape.diagonal
            or shape.int8 or shape.row_skip or shape.fold or len(epi.members) not in (1, 2)):
        return None
    add, rest = epi.members[0], epi.members[1:]
    values = [v for v in add.operands if nir.is_memref(v.type)]
    loaded = loaded_operands(epi.members, epi.source)
    if add.name != "ascend.add" or len(values) != 3 or len(loaded) != 1:
        return None
    found = constant_chain(op.operands[1])  # the identity joins the host's weights
    if found is None or found[1] or nir.memref_element(op.operands[1]) != "f16":
        return None
    res = loaded[0]
    if not any(v == epi.source for v in values[:2]) or not any(v == res for v in values[:2]) \
            or any(nir.memref_element(v) != "f16" for v in values) \
            or nir.memref_shape(res) != nir.memref_shape(values[-1]):
        return None
    relu = rest[0] if rest else None
    if relu is not None and not (is_relu(relu) and relu.operands[0] == values[-1]
                                 and nir.memref_element(relu.operands[-1]) == "f16"):
        return None
    return add, res, relu


def with_identity(wz: ir.Value) -> None:
    """The host constant behind `wz` ([K1, Co1, 16, 16], resident in L1)
    with one more K row: a 16x16 identity in every Cout block."""
    root = constant_chain(wz)[0]
    w = nir.constant_argument(root)
    eye = np.broadcast_to(np.eye(16, dtype=w.dtype), (1, w.shape[1], 16, 16))
    with wz.context:
        nir.retype_constant(root, np.concatenate([w, eye]))


def take(epi, found) -> None:
    """The epilogue drained as none (`drains_as_none`): the Add in the cube,
    the ReLU on the move; `finish` drops both."""
    add, res, relu = found
    epi.as_none = True
    epi.members, epi.relu, epi.residual = [], relu, res
    epi.folded = [add]
    epi.result = (relu or add).operands[-1]


class CubeResidual:
    """Mixin of `ConvKernel` (its `target`, `s`, `t`, `g`, `l0a`, `l0b`,
    `load`, `load3d`, `supers` and `split_map`)."""

    residual: ir.Value | None = None
    res_turn = 0  # bands emitted: their residual buffers in turn

    def setup_residual(self, rows_of_bands: set[int]) -> None:
        """The identity GM -> L1 (the last K row of the weights, `with_identity`)
        and the residual's band buffers: SETS per band height, taken by bands
        in turn."""
        self.identity = nir.alloc([FRAC], "f16", "l1")
        src = nir.subview(self.wz, [self.s.k1, 0, 0, 0], [1, 1, 16, 16])
        copy("cce.copy_gm_to_l1", src, self.identity, 1, self.target.blocks(FRAC * 2))
        self.res_bufs = {r: [nir.alloc([self.s.co1, r, self.s.wo, 16], "f16", "l1")
                             for _ in range(model.SETS)] for r in sorted(rows_of_bands)}
        self.res_turn = 0

    def residual_band(self, rows: int) -> ir.Value:
        """The residual buffer of the band being emitted."""
        return self.res_bufs[rows][self.res_turn % model.SETS]

    def load_residual(self, n: int, ho0, rows: int) -> None:
        """The band's residual rows, every Cout block, GM -> L1, right after
        the band's map copies: one run (one flag, one GM latency held on
        MTE2) carries both. (Per super tile, each at its start, the runs'
        latencies paced MTE2: 1x1 64->256 56 with its residual, bands of 8
        rows, its span 41.1k -> 46.3k cycles; the first band's alone that
        way, so that its first mads waited for their own blocks only, 48.1k.)"""
        t, s = self.target, self.s
        src = nir.subview(self.residual, [n, 0, ho0, 0, 0], [1, s.co1, rows, s.wo, 16])
        copy_bursts("cce.copy_gm_to_l1", src, self.residual_band(rows), s.co1,
                    t.blocks(rows * s.wo * 32), src_gap=t.blocks((s.ho - rows) * s.wo * 32))

    def residual_mads(self, band, tiles, l0c, s0: int, m1: int, chunk: int) -> int:
        """The residual of the accumulators' blocks (`tiles` of the super
        tile from Cout block s0, at `l0c`) into them, the first mads of the
        super tile, in chunks of up to kc blocks through the L0A/L0B halves.
        Returns the chunk count."""
        kc = min(self.t.kc, self.s.k1)
        fm = self.residual_band(band.rows)
        blocks = [(s0 + t0 + j, nir.subview(c, [j * m1 * FRAC], [m1 * FRAC]))
                  for (t0, n1), c in zip(tiles, l0c) for j in range(n1)]
        split, self.split_map = self.split_map, False
        for b0 in range(0, len(blocks), kc):
            part = blocks[b0:b0 + kc]
            a, b = self.l0a[chunk % 2], self.l0b[chunk % 2]
            chunk += 1
            for k, (block, _) in enumerate(part):
                self.load3d(fm, nir.subview(a, [k * m1 * FRAC], [m1 * FRAC]), band, block, 0, 0,
                            0, 1, 1, m1)
            self.load(self.identity, b, 0, 0, 1, 1, 1)
            for k, (_, c) in enumerate(part):
                nir.create_op("cce.mad", [nir.subview(a, [k * m1 * FRAC], [m1 * FRAC]),
                                          nir.subview(b, [0], [FRAC]), c],
                              m=m1 * 16, n=16, k=16, accumulate=False)
        self.split_map = split
        return chunk

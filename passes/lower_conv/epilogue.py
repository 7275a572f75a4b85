"""A conv's `npu.conv_epilogue` group (from `npu-fuse`) on each drained tile.

The drained tile is `n1` Cout blocks of a band's pixels, each block a run
of `m1` fractals in UB ([n1][m1 * 16][16], the real `rows * Wo` pixels
first). A member's other operands are NC1HWC0 tensors of the result's
shape: their tile is loaded the way the result's is stored (a burst per
Cout block), so every member is one flat vector run over the tile
(`npu.kernels.vector_compute.emit_flat_run` of its recipe). A binary
member's per-channel operand ([1, Cout1, 1, 1, 16]) is staged once per
conv as a repeating pattern (`channel_pattern`, like the bias) and the
member runs block by block, the block's repeat read with repeat stride 0
as its src1 (src0 when it is the left operand). Only the last member's
result is stored; the conv's own result and the members' in between never
reach GM, but for a group whose last member is an f16 copy of the value
before it (`epilogue.also_stored`: an f32 model's residual sum, which the
next convs read in f16 and the next residual Add in f32): that value's
tile is stored too.
"""

from __future__ import annotations

from mlir import ir

from npu import ir as nir
from npu.costmodel.conv import epilogue, stem_pool
from npu.costmodel.conv.stem_fold import drain_relu
from npu.kernels.cce_build import copy_bursts, lin
from npu.kernels.vector_compute import constant_blocks, emit_flat_run
from npu.passes.lower_conv.channel_pattern import Later, block_view, channel_pattern, rows_of
from npu.target import Target

FRAC = 256
SETS = epilogue.SETS  # drains take their UB tiles in turn (`epilogue.epilogue_sets`)


def group_of(conv: ir.Operation) -> ir.Operation | None:
    """The `npu.conv_epilogue` region holding the conv, if any."""
    return nir.enclosing_group(conv, epilogue.CONV_EPILOGUE_ATTR)


class ConvEpilogue:
    """One conv's group: its members, their tiles in UB, and its result."""

    def __init__(self, target: Target, region: ir.Operation, conv: ir.Operation,
                 consts: bool = True) -> None:
        """`consts`: make the recipes' constant blocks at the insertion point
        (False: a plan only, nothing emitted: `conv_chain.chain_plan`)."""
        self.target, self.region, self.conv = target, region, conv
        self.members = epilogue.group_members(region, conv)
        # a max pool that ends the group runs on the drain (`drain_pool.py`)
        self.pool = stem_pool.drain_pool(region, conv)
        if self.pool is not None:
            self.members = self.members[:-1]
        self.as_none = False  # drained as a conv of no epilogue (`drains_as_none`)
        self.residual: ir.Value | None = None  # an Add's operand in the cube (`cube_residual`)
        self.folded: list[ir.Operation] = []  # members the cube computes (the Add)
        # a leading f32 -> f16 cast is the drain's own conversion (drain_cast.py):
        # the drained tile is then the cast's result
        self.cast = epilogue.drain_cast(region, conv)
        if self.cast is not None:
            self.members = self.members[1:]
        self.source = conv.operands[-1] if self.cast is None else self.cast.operands[-1]
        # a ReLU the drain applies on its way out of L0C (`stem_fold.drain_relu`)
        self.relu = drain_relu(conv)
        if self.relu is not None:
            self.members = [m for m in self.members if m != self.relu]
            self.source = self.relu.operands[-1]
        self.result = (self.members or [self.pool or self.relu or self.cast])[-1].operands[-1]
        # an f32 value stored beside the last member's f16 copy of it (`epilogue.f16_copy`)
        self.also = epilogue.also_stored(region, conv)
        self.also_tile: ir.Value | None = None  # its tile in UB, the latest `apply`'s
        self.work = epilogue.work(self.members, self.source, target, self.also) if self.members else \
            epilogue.EpilogueWork(set_bytes=0, vector=0.0, loaded_bytes=0, loads=0, out_bytes=2)
        self.patterns: list[tuple[ir.Value, ir.Value]] = []  # per-channel operand, its pattern
        self.consts = {}
        for k, m in enumerate(self.members if consts else []):
            consts = constant_blocks(self.compute(m), target)
            if consts is not None:
                self.consts[k] = consts

    compute = staticmethod(epilogue.member_compute)

    def stage_patterns(self, co1: int, later: Later | None = None) -> None:
        """Each per-channel operand in UB as a pattern of one vector repeat
        per Cout block, in its member's type (binary members compute in
        their operands' type), before the conv's loops (its vector work in
        `later`, if given: `channel_pattern`)."""
        self.patterns = [(v, channel_pattern(v, co1, rows_of(nir.memref_element(v),
                                                               self.target.vector_bytes), later))
                         for v in epilogue.channel_operands(self.members, self.source)]

    def allocate(self, size: int, paired: bool = False, sets: int = SETS) -> None:
        """`sets` sets (`epilogue.epilogue_sets`) of the tiles a drain needs (`size` elements each), live
        for the whole conv and taken by drains in turn: a drain's operand
        loads (MTE2) never wait for the vector work of the drain just before,
        nor its vector work for that drain's store. (Loading the operands a
        super tile ahead, in four sets, measured slower on ResNet-18: the
        extra tiles cost the conv's tiling more than the loads' waits.)
        `paired`: each set's loaded tiles hold a whole super tile (both
        halves, `load_super`), taken by super tiles in turn."""
        self.loaded = epilogue.loaded_operands(self.members, self.source)
        self.in_place = epilogue.in_place_sources(self.members, self.source)
        self.paired = paired and bool(self.loaded)
        loaded_size = 2 * size if self.paired else size
        self.sets = [([nir.alloc([size], nir.memref_element(m.operands[-1]), "ub") if v is None else None
                       for m, v in zip(self.members, self.in_place)],
                      [[nir.alloc([size], t, "ub") for t in self.compute(m).temps] for m in self.members],
                      [nir.alloc([loaded_size], nir.memref_element(v), "ub") for v in self.loaded])
                     for _ in range(sets)]

    def load_super(self, n: int, s0: int, ns: int, ho0, rows: int, m1: int, ho: int, wo: int,
                   turn: int) -> None:
        """`paired`: load the operands of the `turn`-th super tile (its ns
        Cout blocks from s0, both halves) into its set in one copy each: one
        flag, so one GM latency on MTE2, where a copy per half paid two
        (each copy's flag holds MTE2 until it lands). 1x1 64->256 56 with
        ResNet's residual + ReLU (bands of 8 rows, super tiles of 4 blocks):
        MTE2 bound at 8 x 800 cycles of residual copies a band, see
        `in_place_sources`. (Loading the next super tile's operands right
        behind these, one flag for both, measured slower: in ResNet-50's
        layer1 the second copy waits for its set's store from three super
        tiles before, 43,386 -> 46,669 cycles, and a fourth set does not fit
        UB beside two drain slots.)"""
        for v, buf in zip(self.loaded, self.sets[turn % len(self.sets)][2]):
            self.load(v, nir.subview(buf, [0], [ns * m1 * FRAC]), n, s0, ns, ho0, rows, m1, ho, wo)

    def prefetch(self, n: int, co0: int, n1: int, ho0, rows: int, m1: int, ho: int, wo: int,
                 drain: int) -> None:
        """Load the operands of the `drain`-th drained tile into its set. The
        kernel issues this beside the super tile's other GM loads, before its
        mads: each load's flag holds MTE2 for the GM latency, which a run of
        loads pays once, and a lone load in the drain paid every time."""
        count = n1 * m1 * FRAC
        for v, buf in zip(self.loaded, self.sets[drain % len(self.sets)][2]):
            self.load(v, nir.subview(buf, [0], [count]), n, co0, n1, ho0, rows, m1, ho, wo)

    def apply(self, tile: ir.Value, co0: int, n1: int, rows: int, m1: int, wo: int,
              drain: int, at: tuple[int, int] | None = None) -> ir.Value:
        """The members over the drained `tile` (the `drain`-th of the conv,
        Cout blocks co0.. of it, its operands loaded by `prefetch`, or when
        `paired` by `load_super` of super tile `at` = (turn, first element
        of the half)); the UB buffer of the result."""
        count = n1 * m1 * FRAC
        made, temps_of, loads = self.sets[drain % len(self.sets)]
        view = lambda buf: nir.subview(buf, [0], [count])  # noqa: E731
        if at is not None:
            loads = [nir.subview(b, [at[1]], [count]) for b in self.sets[at[0] % len(self.sets)][2]]
        # value -> its tile in UB: the drained one, the operands loaded, and
        # what the members make (the very values, as `npu-fuse` grouped them)
        tiles = [(self.source, tile)]
        tiles += [(v, b if at is not None else view(b)) for v, b in zip(self.loaded, loads)]
        per_block = self.target.vector_bytes  # bytes of a pattern's block
        for k, m in enumerate(self.members):
            values = [v for v in m.operands if nir.is_memref(v.type)]
            channel = [next((p for w, p in self.patterns if w == v), None) for v in values[:-1]]
            srcs = [None if p is not None else (next(b for w, b in tiles if w == v),
                                                nir.memref_element(v))
                    for v, p in zip(values[:-1], channel)]
            compute = self.compute(m)
            out_type = nir.memref_element(values[-1])
            over = self.in_place[k]  # the input tile this member writes over, if any
            dst = next(b for w, b in tiles if w == over) if over is not None else view(made[k])
            temps = [view(t) for t in temps_of[k]]
            # over the real pixels only (loaded tiles hold nothing past them):
            # one run when the band fills its fractals and no operand is per
            # channel, else one per Cout block
            valid = rows * wo * 16
            by_block = valid != m1 * FRAC or any(p is not None for p in channel)
            runs = [(j * m1 * FRAC, valid, lin((co0, 1), (j, 1))) for j in range(n1)] if by_block else \
                [(0, count, None)]
            for at, size, block in runs:
                part = lambda buf: nir.subview(buf, [at], [size])  # noqa: E731
                ins = [(part(src[0]), src[1]) if src is not None else
                       block_view(p, block, per_block // nir.element_bytes(nir.memref_element(p)))
                       for src, p in zip(srcs, channel)]
                emit_flat_run(compute, self.target, size, (part(dst), out_type), ins,
                              [part(t) for t in temps], self.consts.get(k))
            tiles.insert(0, (values[-1], dst))
        if self.also is not None:
            self.also_tile = next(b for w, b in tiles if w == self.also)
        return tiles[0][1]

    def load(self, v: ir.Value, buf: ir.Value, n: int, co0: int, n1: int, ho0, rows: int,
             m1: int, ho: int, wo: int) -> None:
        """The tile of NC1HWC0 operand `v` at the drained tile's place -> `buf`."""
        t = self.target
        eb = nir.element_bytes(nir.memref_element(v))
        valid = rows * wo
        src = nir.subview(v, [n, co0, ho0, 0, 0], [1, n1, rows, wo, 16])
        copy_bursts("cce.copy_gm_to_ub", src, buf, n1, t.blocks(valid * 16 * eb),
                    src_gap=t.blocks((ho - rows) * wo * 16 * eb),
                    dst_gap=t.blocks((m1 * 16 - valid) * 16 * eb))

    def finish(self) -> None:
        """After the conv is lowered inside the region: drop the members and
        what only they used, and put the rest where the region is."""
        nir.dissolve_group(self.region, [m for m in (self.cast, self.relu) if m is not None]
                           + self.members + self.folded + ([self.pool] if self.pool is not None else []))


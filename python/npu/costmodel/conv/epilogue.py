"""What may join a conv's drain (`npu.conv_epilogue` groups, formed by
`npu-fuse`, lowered by `npu-lower-conv`).

A conv's result in NC1HWC0 is, tile by tile, the implicit matmul's C in the
order it drains (each Cout block's run of output pixels), so an elementwise
op over whole NC1HWC0 tensors of the result's shape (the ReLU or ReLU6
after a conv, a residual Add, the cast to f16 for the next conv) is one
more vector pass over the tile in UB: its other operands' tiles are loaded
like the result's own store, and only the last member's result goes to GM.

A binary member may also take a per-channel operand, [1, Cout1, 1, 1, 16]
broadcast over the images and pixels (a quantised conv's dequantising
scale and bias, an unfolded BatchNorm's scale and shift): it is staged once
per conv into UB as one vector repeat of each Cout block's 16 values (like
the conv's bias) and read with repeat stride 0, block by block of the tile,
so it costs UB for the whole conv but no loads per tile.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir

from npu import ir as nir
from npu.costmodel.vector.recipes import Compute, compute_of, repeat_cycles
from npu.diagnostics import PassError
from npu.target import Target

CONV_EPILOGUE_ATTR = "npu.conv_epilogue"
# The group's figure saying its last member is an f16 copy (`f16_copy`) of
# a value the drain stores too (`also_stored`)
F16_COPY = "f16_copy"
SETS = 2  # sets of a drain's epilogue tiles, taken in turn (`epilogue_sets`)
THIRD_SET_SLOTS = 2  # drain slots a third set must leave room for


def channel_shape(shape: list[int]) -> list[int]:
    """The shape of a per-channel operand of a conv result of `shape`
    (NC1HWC0): [1, C1, 1, 1, C0]."""
    return [1, shape[1], 1, 1, shape[-1]]


def is_per_channel(v: ir.Value, shape: list[int]) -> bool:
    """Whether memref `v` is a per-channel operand of a conv result of
    `shape` (and not a tensor of that very shape)."""
    return len(shape) == 5 and nir.memref_shape(v) == channel_shape(shape) != shape


def joins(op: ir.Operation, shape: list[int]) -> bool:
    """Whether elementwise `op` can run on a drained tile: every memref it
    takes or writes is a contiguous GM tensor of the conv result's `shape`,
    or, for a binary op, an input per channel (`is_per_channel`), and the
    vector unit has a recipe for its types."""
    values = [v for v in op.operands if nir.is_memref(v.type)]
    full = [nir.memref_shape(v) == shape for v in values]
    if len(values) < 2 or not full[-1] or any(
            nir.memory_space(v) != "gm" or not nir.is_contiguous(v)
            or not (f or is_per_channel(v, shape)) for f, v in zip(full, values)):
        return False
    try:
        compute = compute_of(op, [nir.memref_element(v) for v in values[:-1]],
                             nir.memref_element(values[-1]))
    except PassError:
        return False
    # a binary op may take one input per channel (the other is the tile)
    return all(full) or (compute.kind == "binary" and any(full[:-1]))


def _inputs_from_gm(members: list[ir.Operation], conv_out: ir.Value) -> list[ir.Value]:
    """The tensors the members read from GM (not made in the group), in
    first-use order."""
    made = [conv_out] + [m.operands[-1] for m in members]
    loads: list[ir.Value] = []
    for m in members:
        for v in m.operands[:-1]:
            if nir.is_memref(v.type) and not any(v == w for w in made + loads):
                loads.append(v)
    return loads


def loaded_operands(members: list[ir.Operation], conv_out: ir.Value) -> list[ir.Value]:
    """The full tensors the members read from GM, loaded tile by tile."""
    shape = nir.memref_shape(conv_out)
    return [v for v in _inputs_from_gm(members, conv_out) if not is_per_channel(v, shape)]


def channel_operands(members: list[ir.Operation], conv_out: ir.Value) -> list[ir.Value]:
    """The per-channel operands the members read, each staged once per conv."""
    shape = nir.memref_shape(conv_out)
    return [v for v in _inputs_from_gm(members, conv_out) if is_per_channel(v, shape)]


def leading_cast(members: list[ir.Operation], conv_out: ir.Value) -> ir.Operation | None:
    """The group's first member when it is the rounding f32 -> f16 cast of
    the conv's result and nothing else in the group reads that result: the
    drain can round as it leaves L0C instead (`compute = "f16"`)."""
    if not members or members[0].name != "ascend.cast":
        return None
    cast = members[0]
    if cast.operands[0] != conv_out or nir.str_attr(cast, "round_mode") != "rint":
        return None
    if (nir.memref_element(conv_out), nir.memref_element(cast.operands[-1])) != ("f32", "f16"):
        return None
    if any(v == conv_out for m in members[1:] for v in m.operands):
        return None
    return cast


def f16_copy(op: ir.Operation, value: ir.Value) -> bool:
    """Whether `op` is the rounding f32 -> f16 cast of all of `value`: an
    f32 model's one f16 copy of a tensor for the convs that read it, which
    a conv's drain may store beside the f32 value a residual Add reads
    (`also_stored`): the tile is in UB already, so the copy costs a vector
    pass and a store of half the bytes, where the cast as its own op read
    the f32 tensor back from GM."""
    return (op.name == "ascend.cast" and op.operands[0] == value
            and nir.str_attr(op, "round_mode") == "rint"
            and nir.memref_shape(op.operands[-1]) == nir.memref_shape(value)
            and (nir.memref_element(value), nir.memref_element(op.operands[-1])) == ("f32", "f16"))


def also_stored(region: ir.Operation, conv: ir.Operation) -> ir.Value | None:
    """The f32 value a group of figure F16_COPY stores beside its last
    member's result (that member's input: the conv's result, or the member
    before's), or None."""
    if F16_COPY not in region.attributes[CONV_EPILOGUE_ATTR]:
        return None
    return group_members(region, conv)[-1].operands[0]


def group_members(region: ir.Operation, conv: ir.Operation) -> list[ir.Operation]:
    """The ascend ops of the conv's epilogue group other than the conv."""
    return [o.operation for o in region.regions[0].blocks[0].operations
            if o.operation.name.startswith("ascend.") and o.operation != conv]


def drain_cast(region: ir.Operation, conv: ir.Operation) -> ir.Operation | None:
    """The group's rounding cast that the conv's drain performs as it leaves
    L0C (the group was formed with `compute = "f16"`), or None."""
    figures = region.attributes[CONV_EPILOGUE_ATTR]
    if "compute" not in figures or ir.StringAttr(figures["compute"]).value != "f16":
        return None
    return leading_cast(group_members(region, conv), conv.operands[-1])


def member_compute(m: ir.Operation) -> Compute:
    """The vector recipe of member `m` over its operands' and result's types."""
    values = [v for v in m.operands if nir.is_memref(v.type)]
    return compute_of(m, [nir.memref_element(v) for v in values[:-1]],
                      nir.memref_element(values[-1]))


# Member kinds whose vector code may write over one of its inputs: one
# instruction per element (binary, scalar), or a recipe that reads "x" only
# before writing "y" (`npu.costmodel.vector.recipes.Step`).
IN_PLACE_KINDS = ("binary", "scalar", "unary")


def in_place_sources(members: list[ir.Operation], conv_out: ir.Value) -> list[ir.Value | None]:
    """Per member, the tile its result overwrites in UB, or None (a tile of
    its own): a loaded operand's tile (or a member's result written over
    one) that no later member reads, else the drained tile or an earlier
    member's result of the result's type that no later member reads.
    ResNet's residual Add runs over the loaded residual's tile and its ReLU
    over the Add's, so a drain's UB set holds the loaded residual alone
    (f16: 2 bytes an element), which the store reads. (Written over the
    drained tile, with the ReLU's own tile in the set, 4 bytes: 1x1 64->256
    56 with its residual went from bands of 12 rows and one Cout block per
    L0C tile, 62,401 cycles, to bands of 8 rows and 4 blocks, 55,933; the
    residual's tile too and one copy a super tile (`paired_loads`), bands
    of 4 rows and 8 blocks, 50,608.) Over the drained tile the last member
    keeps a tile of its own, which the store reads: a drain slot held until
    its store lands measured slower (every member in place: ResNet-50
    2,175,366 against 2,171,452, its ReLU-only convs 400-1,100 cycles slower
    each; with two more drain slots for those, 2,192,754)."""
    return _placement(members, conv_out)[0]


def result_on_loaded(members: list[ir.Operation], conv_out: ir.Value) -> bool:
    """Whether the last member's result is written over a loaded operand's
    tile (`in_place_sources`: ResNet's residual Add and its ReLU), so the
    store reads the loaded tile and a set is free once its store lands."""
    return bool(members) and any(members[-1].operands[-1] == v
                                 for v in _placement(members, conv_out)[1])


def _placement(members: list[ir.Operation], conv_out: ir.Value
               ) -> tuple[list[ir.Value | None], list[ir.Value]]:
    """(`in_place_sources`, the values whose tile is a loaded operand's)."""
    chain = [conv_out] + [m.operands[-1] for m in members]
    loaded = loaded_operands(members, conv_out)
    # the values whose tile is a loaded operand's (written over it, in turn)
    on_loaded: list[ir.Value] = list(loaded)
    picks: list[ir.Value | None] = []
    for k, m in enumerate(members):
        pick = None
        if member_compute(m).kind in IN_PLACE_KINDS:
            out_type = nir.memref_element(m.operands[-1])
            later = [v for n in members[k + 1:] for v in n.operands]
            free = [v for v in m.operands[:-1] if nir.is_memref(v.type)
                    and nir.memref_element(v) == out_type and not any(v == w for w in later)]
            # a loaded operand's tile first: the last member may write over it
            # too (the store then reads the loaded tile, no tile of its own)
            pick = next((v for v in free if any(v == w for w in on_loaded)), None)
            if pick is None and k < len(members) - 1:
                pick = next((v for v in free if any(v == c for c in chain[:k + 1])), None)
            if pick is not None and any(pick == w for w in on_loaded):
                on_loaded.append(m.operands[-1])
        picks.append(pick)
    return picks, on_loaded


@dataclass(frozen=True)
class EpilogueWork:
    """What a conv's epilogue adds to each drained tile, per drained element
    (the conv's tiling model weighs it: `npu.costmodel.conv.tiling`)."""

    set_bytes: int      # UB of one drain's tiles: results, temporaries, loaded operands
    vector: float       # vector cycles
    loaded_bytes: int   # GM bytes read (the operands loaded, e.g. a residual)
    loads: int          # operands loaded per drained tile (one copy each)
    out_bytes: int      # of the stored result (the last member's type)
    # Per-channel operands, staged once per conv: how many, and the UB they
    # hold for the whole conv per Cout block (one vector repeat each).
    patterns: int = 0
    pattern_bytes: int = 0
    # the stored result is written over a loaded tile (`result_on_loaded`)
    on_loaded: bool = False
    stores: int = 1  # results stored per drained tile (2: an f16 copy too, `also_stored`)

    def ub_bytes(self, sets: int, paired: bool = False) -> int:
        """UB per drained element of `sets` sets; `paired` (`paired_loads`):
        each set's loaded tiles hold a whole super tile, two drains' worth."""
        return sets * (self.set_bytes + (self.loaded_bytes if paired else 0))


def paired_loads(work: EpilogueWork | None) -> bool:
    """Whether a conv kernel loads its epilogue's operands a super tile at a
    time (`npu.passes.lower_conv.epilogue.ConvEpilogue.load_super`): one
    copy, one flag and one GM latency for both halves, where a copy per
    drain held MTE2 for a latency each."""
    return work is not None and work.loads > 0


def work(members: list[ir.Operation], conv_out: ir.Value, target: Target,
         also: ir.Value | None = None) -> EpilogueWork:
    """The epilogue `members` of the conv writing `conv_out`, per element;
    `also`: a value stored beside the last member's result (`also_stored`)."""
    computes = [member_compute(m) for m in members]
    loaded = loaded_operands(members, conv_out)
    types = [nir.memref_element(m.operands[-1]) for m in members]
    own = [nir.memref_element(m.operands[-1]) for m, v in zip(members, in_place_sources(members, conv_out))
           if v is None]  # the results written over an input take no UB of their own
    own += [t for k in computes for t in k.temps]
    vector = 0.0
    for m, k in zip(members, computes):
        widest = max(nir.element_bytes(nir.memref_element(v)) for v in m.operands
                     if nir.is_memref(v.type))
        vector += repeat_cycles(k, target) / target.lanes(widest)
    loaded_types = [nir.memref_element(v) for v in loaded]
    patterns = len(channel_operands(members, conv_out))
    return EpilogueWork(
        set_bytes=sum(nir.element_bytes(t) for t in own + loaded_types), vector=vector,
        loaded_bytes=sum(nir.element_bytes(t) for t in loaded_types), loads=len(loaded),
        out_bytes=nir.element_bytes(types[len(members) - 1])
        + (nir.element_bytes(nir.memref_element(also)) if also is not None else 0),
        patterns=patterns, pattern_bytes=patterns * target.vector_bytes,
        on_loaded=result_on_loaded(members, conv_out), stores=2 if also is not None else 1)


def epilogue_sets(work: EpilogueWork, paired: bool, room: int, per_set: int, slot: int,
                  supers: int) -> int:
    """The sets of epilogue tiles a conv kernel's drains take in turn
    (`ConvEpilogue.allocate`), given the UB `room` beside the bias and
    patterns, one set's bytes and one drain slot's: SETS, or one more where
    each set holds a super tile's operands and the result is stored from
    them (`on_loaded`) and THIRD_SET_SLOTS drain slots still fit beside
    it. With two sets the operand load of super tile k waits for the store
    of k-2, which waits for k-2's vector work, which waited for its own
    load: GM latencies on both movers in one chain; a third set takes the
    store of k-3. (The drained tile itself is read by the vector unit
    alone, in order, so two slots do.) ResNet-50's conv3s with their
    residual + ReLU, alone: 1x1 64->256 56 50,876 -> 49,586 cycles, 128->512
    28 28,786 -> 28,103; in the model layer3's (256->1024 14) too. Only
    where a band has two `supers` or more: with one (MobileNetV2's
    projections with their residual, 144->24 56 to 960->160 7) it measured
    nothing alone and cost the next conv 730 cycles in the model."""
    if (paired and work.on_loaded and supers >= 2
            and room - (SETS + 1) * per_set >= THIRD_SET_SLOTS * slot):
        return SETS + 1
    return SETS

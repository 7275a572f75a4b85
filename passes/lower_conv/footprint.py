"""What a conv's kernel (`kernel.ConvKernel`) holds on chip, known before it
emits anything: the sizes `ConvKernel.setup` allocates with (one plan, so
the two cannot drift apart) and the bytes per memory they come to.

Why before: a caller that emits two convs band by band, interleaved, with
the first one's result kept in L1 as the second's map (`band_steps`), must
know that both kernels' buffers fit L1, UB and L0 together before it
commits to the pair (it gives each kernel its share of UB, `ub_bytes`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from npu import ir as nir
from npu.costmodel.conv.accumulators import l0c_sets
from npu.costmodel.conv.epilogue import epilogue_sets
from npu.costmodel.conv.stem_pool import BUDGET_ROWS, ub_bytes as pool_ub_bytes
from npu.passes.lower_conv.channel_pattern import rows_of
from npu.passes.lower_conv.epilogue import SETS
from npu.passes.lower_conv.image_map import reads_image
from npu.passes.lower_conv.weights import FRAC

# Drain slots at most (their stores to GM overlap, each slot free again only
# once its store has completed)
UB_SLOTS = 6


@dataclass(frozen=True)
class SetupPlan:
    """The sizes of the buffers live for the whole conv (elements unless named bytes)."""

    m1: int            # M fractals of a full band (its rows x Wo windows)
    half: int          # Cout blocks of one accumulator (half a super tile)
    l0c_sets: int      # accumulator sets (2: one drains while the next accumulates)
    l0c: int           # one set
    slot_blocks: int   # Cout blocks of one drain slot
    slot_bytes: int
    slots: int
    epilogue_sets: int  # the epilogue's sets of tiles (`ConvEpilogue.allocate`)
    per_set: int       # bytes of one of them
    band_pixels: int   # input pixels of a full band
    spare: int         # UB the slots leave (an NCHW image's longer chunks)
    l0a: int           # one of the two L0A halves
    l0b: int           # one of the two L0B halves
    pairs_stores: bool = False  # one_store slots stored two at a time (`ConvDrain.stores_pair`)


def setup_plan(k, whole: bool = False) -> SetupPlan:
    """The sizes `ConvKernel.setup` allocates with (`k`: the kernel, nothing emitted yet).

    Two sets of accumulators (L0C) and drain buffers (UB), alternating band
    by band, live for the whole conv: a band's mads never wait for the
    previous band's drain (one set, twice in `l0c`, for one band of one
    super tile: `l0c_sets`). Drain slots are taken in turn: enough of them
    let the stores overlap (UB_SLOTS at most, within half of UB beside the
    bias; one_store: a slot takes a super tile's both halves, one store).
    `whole`: the conv emitted straight by `ConvKernel.emit` (its stores may
    pair: then the slots take all of UB but the cube bias's ones map)."""
    s, t = k.s, k.t
    m1 = -(-t.rows * s.wo // 16)
    half = t.acc_tiles(min(t.n1, s.co1))[0][1]
    slot_blocks = min(t.n1, s.co1) if t.one_store else half
    slot_bytes = slot_blocks * m1 * FRAC * nir.element_bytes(k.out_type)
    bias = s.co1 * 256 if k.bias is not None else 0
    budget = k.ub_bytes
    if k.epilogue is not None:  # its per-channel operands' patterns, staged once
        budget -= s.co1 * k.epilogue.work.pattern_bytes
    # An NCHW image's conv has its staging out of the budget already and no
    # other UB user: its slots take the rest (stem image 7x7/2 3->64 224:
    # 3 slots 56,616 cycles, 6: 54,072; its stores and the staging share MTE3)
    room = budget - bias if reads_image(k.x5) else budget // 2 - bias
    band_pixels = min(k.g.h, (t.rows - 1) * k.g.strides[0] + k.ext_h) * k.g.w
    pairs = k.stores_pair(whole)
    if pairs:  # nothing else of the conv's in UB: the slots take it all but the ones map
        room = budget - bias - (band_pixels * 16 * 2 if s.ones else 0)
    if k.pool is not None:  # its rows beyond those the budget set aside (`setup_pool`)
        room -= pool_ub_bytes(s.co1, t.rows, s.wo) - pool_ub_bytes(s.co1, BUDGET_ROWS, s.wo)
    sets, per_set = SETS, 0
    if k.epilogue is not None:  # the member results and the loaded tiles in turn
        per_set = k.epilogue.work.ub_bytes(1, k.paired_loads()) * half * m1 * FRAC
        sets = epilogue_sets(k.epilogue.work, k.paired_loads(), budget - bias, per_set,
                             slot_bytes, -(-s.co1 // t.n1))
        room = min(room, budget - bias - sets * per_set)
    slots = max(2, min(UB_SLOTS, room // slot_bytes))
    kc = min(t.kc, s.k1)
    return SetupPlan(
        m1=m1, half=half, l0c_sets=l0c_sets(s, t.rows, t.n1, k.target),
        l0c=min(t.n1, s.co1) * m1 * FRAC, slot_blocks=slot_blocks, slot_bytes=slot_bytes,
        slots=slots, epilogue_sets=sets, per_set=per_set,
        band_pixels=band_pixels, spare=room - slots * slot_bytes, l0a=m1 * kc * k.frac,
        l0b=kc * (1 if s.diagonal else min(t.n1, s.co1)) * k.frac,
        pairs_stores=pairs and slots >= 4)  # two stored while two drain


@dataclass(frozen=True)
class ConvFootprint:
    """Bytes per memory ("l1", "ub", "l0a", "l0b", "l0c") of a conv's kernel:
    `setup` live for the whole conv, `band_map` one band's input map in L1
    (a caller alternating two maps holds twice that). `staged`: the conv
    stages its map through UB (an NCHW image, an int8 map) or pools on its
    drain; those buffers are not counted (no chain reads such a conv's map)."""

    setup: dict[str, int] = field(default_factory=dict)
    band_map: int = 0
    staged: bool = False

    def total(self, maps: int = 2) -> dict[str, int]:
        """The setup's bytes with `maps` band maps in L1."""
        out = dict(self.setup)
        out["l1"] = out.get("l1", 0) + maps * self.band_map
        return out


def footprint(k) -> ConvFootprint:
    """The bytes `k` (a `ConvKernel`, nothing emitted yet) will hold: its
    `setup_plan`, its weights' L1 buffers (`plan_weights`), the bias and
    epilogue patterns (a vector repeat per Cout block; an f32 bias also
    converted to f16 for a rounding drain), the cube bias's
    ones map (`cube_bias.ones_map`), the largest band's map."""
    s, t, p = k.s, k.t, setup_plan(k)
    inb = nir.element_bytes(k.in_type)
    accb = nir.element_bytes(k.acc_type)
    weights = s.k1 * s.co1 * k.frac if t.weights_resident else 2 * s.k1 * min(t.n1, s.co1) * k.frac
    ub = p.slots * p.slot_bytes + (p.epilogue_sets * p.per_set if k.epilogue is not None else 0)
    if k.bias is not None:  # in its own type, rows of the output's repeat (`bias_pattern`)
        bias_type = nir.memref_element(k.bias)
        count = s.co1 * rows_of(k.out_type) * 16
        ub += count * nir.element_bytes(bias_type)
        if bias_type != k.out_type:  # converted for a drain rounding to f16 (`f16_pattern`)
            ub += count * 2
    if k.epilogue is not None:
        ub += s.co1 * k.epilogue.work.pattern_bytes
    l1 = weights * inb
    if s.ones:  # vdup'ed in UB, copied to L1: one block of the band's pixels
        l1 += p.band_pixels * 16 * 2
        ub += p.band_pixels * 16 * 2
    in_rows = max(k.band(h0, min(t.rows, s.ho - h0))[0].in_rows for h0 in range(0, s.ho, t.rows))
    return ConvFootprint(
        setup={"l1": l1, "ub": ub, "l0a": 2 * p.l0a * inb, "l0b": 2 * p.l0b * inb,
               "l0c": p.l0c_sets * p.l0c * accb},
        band_map=s.c1 * in_rows * k.g.w * (k.frac // 16) * inb,
        staged=bool(s.int8 or reads_image(k.x5) or k.pool is not None))

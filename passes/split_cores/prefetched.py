"""The weights `npu-prefetch` will load before a matmul's chip barrier, as
the split's grid ranking counts them (`SplitRules._split_matmul`).

npu-prefetch fills a matmul's first weight slots (the pipelined schedule's
ping-pong B chunks, host constants) in the MTE2 idle tail of the op before
it, ahead of the barrier; only A (the activation) then waits for the
barrier. So a grid with more B and less A per core can be slower alone but
faster in the layer: BERT seq 128's out_proj on 32 cores, 8x4 (all of a
core's 147,456 weight bytes in its slots, loaded in attention's idle MTE2)
against the prefetch-blind choice 16x2: 50,751 -> 50,367 cycles
(bench/chip.py).

A grid's cost (`ranked`) takes off its bytes those of its slots that the
previous unit's tail (`Lookahead.gap`: a matmul's last C tile,
`tail_cycles`; attention's modelled cycles, its loads coming first) can
load, when the slots hold all of its weights; and its rank counts what the
next matmul saves with the slots its own tail loads (BERT seq 128's ffn_in
32x1 -> 16x2: ffn_out gets both its slots early: 50,367 -> 49,151 cycles).
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir

from npu import ir as nir
from npu.costmodel.matmul.fitting import MatmulShape, TilingChoice
from npu.costmodel.fusion import epilogue, precision
from npu.costmodel.fusion import rows as fusion
from npu.costmodel.matmul.pipelined import Drain, best_chunk
from npu.costmodel.matmul.tiling import TilingError, choose_tiling
from npu.target import Target

# B chunks npu-prefetch fills early: the pipelined schedule's two ping-pong slots.
SLOTS = 2


@dataclass(frozen=True)
class Lookahead:
    """What the units around a matmul give its grid ranking."""

    gap: float = 0.0  # MTE2 idle cycles the unit before leaves at its end
    tails: bool = False  # a matmul waits for this one: its tail counts (`tail_cycles`)
    # the next matmul's (when it waits for this one): one weight slot's
    # bytes, its slots, and its cycles saved per byte loaded early
    next_slot: int = 0
    next_slots: int = 0
    next_per_byte: float = 0.0


NONE = Lookahead()


def is_host_constant(value: ir.Value) -> bool:
    """`value` views an `npu.constant` function argument (a weight)."""
    return nir.constant_attr(nir.view_root(value)) is not None


def weight_slot(shape: MatmulShape, choice: TilingChoice, target: Target) -> tuple[int, int]:
    """(bytes, count) of one core's weight slots that npu-prefetch can load
    early: the schedule's first `SLOTS` L1 chunks of B (npu-lower-matmul's
    `plan_pipelined` choice: the cost model's chunk for resident strips,
    else `best_chunk`)."""
    frac, blk = target.fractal, target.fractal_bytes(2)
    m1, n1, k1 = shape.M // frac, shape.N // frac, shape.K // frac
    mb, kb = choice.tiles.m // frac, choice.tiles.k // frac
    if choice.chunk and (choice.col_strips or choice.a_resident):
        chunk = choice.chunk // frac
    else:
        fitting = [d for d in range(n1, 0, -1)
                   if n1 % d == 0 and 2 * (mb + kb) * d * blk <= target.capacity("l1")]
        chunk = best_chunk(fitting, mb, kb, n1, (m1 // mb) * (k1 // kb), True, target) or 1
    slot = kb * chunk * blk
    return slot, min(SLOTS, -(-shape.N * shape.K * shape.in_bytes // slot))


def early_bytes(room: float, slot: int, count: int) -> int:
    """Bytes of `count` slots npu-prefetch places in `room` bytes of idle
    MTE2: the first with at least half of it there (the rest loads in the
    loop), the others only whole."""
    if not slot or room < slot / 2:
        return 0
    return slot * (1 + max(0, min(count - 1, int((room - slot) // slot))))


def epilogue_cycles(group: ir.Operation, matmul: ir.Operation, target: Target) -> float:
    """The vector work of a matmul epilogue group's members over all of C,
    as npu-lower-matmul counts it (`MatmulEpilogue.vector_cycles`: in f16
    when the group says so, a GELU chain as one recipe), 0 if none."""
    cv = matmul.operands[-1]
    c = fusion.Operand(cv, epilogue.tensor_key(cv), "full", nir.memref_element(cv))
    ops = [o.operation for o in group.regions[0].blocks[0].operations]
    members = [epilogue.grouped_member(o, k, target) for k, o in enumerate(ops)
               if o.name in fusion.ELEMENTWISE and o != matmul]
    if not members:
        return 0.0
    stored = {epilogue.tensor_key(o.operands[0]) for o in ops if o.name == "ascend.defractalize"}

    def leaves(root: ir.Value) -> bool:  # a tensor made inside lives in UB only
        op = nir.defining_op(root)
        while op is not None and op != group:
            op = op.parent
        return op is None
    attrs = nir.dict_attr_items(group.attributes[epilogue.EPILOGUE_ATTR])
    in_f16 = attrs.get("compute", "f32") == precision.COMPUTE_F16
    if in_f16:
        c, members = precision.in_f16(c, members, target, precision.HEAD_ATTR in attrs)
    return float(epilogue.vector_cycles(
        epilogue.collapse_gelu(c, members, leaves, stored, in_f16), target))


def tail_cycles(shape: MatmulShape, choice: TilingChoice, target: Target,
                vector: float = 0.0) -> float:
    """MTE2's idle time after the core's last load: the last C tile's mads,
    its drain to UB and its epilogue (`vector`: the core's epilogue work),
    in the C tiles npu-lower-matmul takes with that epilogue (B's column
    strip resident across row tiles shortens it: BERT seq 128's ffn_in on
    32x1, two row tiles, npu-prefetch's estimate 2,208 cycles against 5,376
    on 16x2, one)."""
    frac = target.fractal
    try:
        choice = choose_tiling(shape, target, pipelined=True, epilogue_cycles=vector,
                               resident_a=True, drain=Drain(vector, 0.0, vector > 0),
                               col_strips=True)
    except TilingError:
        pass
    tiles = (shape.M // choice.tiles.m) * (shape.K // choice.tiles.k)
    cube = target.cube_cycles(float(shape.M * shape.N * shape.K // frac ** 3))
    drain = shape.M * shape.K * shape.acc_bytes / target.path("l0c_to_ub").bytes_per_cycle
    return (cube + drain + vector) / max(tiles, 1)


def phase_cost(cube: float, core_bytes: float, parts: int, target: Target) -> float:
    """One core's share: the larger of its cube time, its GM bytes over its
    movers and every core's bytes over the chip's bandwidth."""
    rate = target.path("gm_to_l1").bytes_per_cycle
    return max(cube, core_bytes / rate, parts * core_bytes / target.gm_chip_bytes_per_cycle)


def ranked(cube: float, core_bytes: float, slots: int, whole: bool, tail: float, parts: int,
           look: Lookahead, target: Target) -> tuple[float, float]:
    """(cost, rank) of a grid: its cost with the bytes of its slots that
    the previous unit's gap can load taken off, when they are all of its
    weights (`whole`); the rank less what the next matmul saves with the
    slots this grid's `tail` loads early.

    Only whole weights for its own cost: a grid that streams more of B
    after its barrier gained nothing from its early slots in the
    simulator. BERT seq 512's out_proj on 4x8 (196,608 of its 294,912
    weight bytes in the slots) measured 110,628 cycles against 8x4's
    110,405 (all 147,456 in them), where counting its slots ranked 4x8
    first."""
    rate = target.path("gm_to_l1").bytes_per_cycle
    hidden = min(slots, look.gap * rate) if whole else 0.0
    cost = phase_cost(cube, core_bytes - hidden, parts, target)
    early = early_bytes(tail * rate, look.next_slot, look.next_slots)
    return cost, cost - look.next_per_byte * early

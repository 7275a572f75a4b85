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
load, when the slots hold all of its weights.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir

from npu import ir as nir
from npu.costmodel.matmul.fitting import MatmulShape, TilingChoice
from npu.costmodel.matmul.pipelined import best_chunk
from npu.target import Target

# B chunks npu-prefetch fills early: the pipelined schedule's two ping-pong slots.
SLOTS = 2


@dataclass(frozen=True)
class Lookahead:
    """What the unit before a matmul gives its grid ranking."""

    gap: float = 0.0  # MTE2 idle cycles it leaves at its end, when the matmul waits for it


NONE = Lookahead()


def is_host_constant(value: ir.Value) -> bool:
    """`value` views an `npu.constant` function argument (a weight)."""
    root = nir.view_root(value)
    if not nir.is_block_argument(root):
        return False
    arg = ir.BlockArgument(root)
    func = arg.owner.owner.operation
    return func.name == "func.func" and nir.CONSTANT_ATTR in nir.arg_attrs(func, arg.arg_number)


def weight_slots(shape: MatmulShape, choice: TilingChoice, target: Target) -> int:
    """Bytes of one core's B that npu-prefetch can load early: the
    schedule's first `SLOTS` L1 chunks (npu-lower-matmul's `plan_pipelined`
    choice: the cost model's chunk for resident strips, else `best_chunk`)."""
    frac, blk = target.fractal, target.fractal_bytes(2)
    m1, n1, k1 = shape.M // frac, shape.N // frac, shape.K // frac
    mb, kb = choice.tiles.m // frac, choice.tiles.k // frac
    if choice.chunk and (choice.col_strips or choice.a_resident):
        chunk = choice.chunk // frac
    else:
        fitting = [d for d in range(n1, 0, -1)
                   if n1 % d == 0 and 2 * (mb + kb) * d * blk <= target.capacity("l1")]
        chunk = best_chunk(fitting, mb, kb, n1, (m1 // mb) * (k1 // kb), True, target) or 1
    return min(shape.N * shape.K * shape.in_bytes, SLOTS * kb * chunk * blk)


def tail_cycles(shape: MatmulShape, choice: TilingChoice, target: Target) -> float:
    """MTE2's idle time after the core's last load: the last C tile's mads
    and its drain to UB (one tile of the core's share)."""
    frac = target.fractal
    tiles = (shape.M // choice.tiles.m) * (shape.K // choice.tiles.k)
    cube = target.cube_cycles(float(shape.M * shape.N * shape.K // frac ** 3))
    drain = shape.M * shape.K * shape.acc_bytes / target.path("l0c_to_ub").bytes_per_cycle
    return (cube + drain) / max(tiles, 1)


def phase_cost(cube: float, core_bytes: float, parts: int, target: Target) -> float:
    """One core's share: the larger of its cube time, its GM bytes over its
    movers and every core's bytes over the chip's bandwidth."""
    rate = target.path("gm_to_l1").bytes_per_cycle
    return max(cube, core_bytes / rate, parts * core_bytes / target.gm_chip_bytes_per_cycle)


def ranked(cube: float, core_bytes: float, slots: int, whole: bool, parts: int,
           look: Lookahead, target: Target) -> float:
    """A grid's cost with the bytes of its slots that the previous unit's
    gap can load taken off, when they are all of its weights (`whole`).

    Only whole weights: a grid that streams more of B after its barrier
    gained nothing from its early slots in the simulator. BERT seq 512's
    out_proj on 4x8 (196,608 of its 294,912 weight bytes in the slots)
    measured 110,628 cycles against 8x4's 110,405 (all 147,456 in them),
    where counting its slots ranked 4x8 first."""
    rate = target.path("gm_to_l1").bytes_per_cycle
    hidden = min(slots, look.gap * rate) if whole else 0.0
    return phase_cost(cube, core_bytes - hidden, parts, target)

"""A horizontal group over the cores, each core its columns of every sibling.

`npu-fuse-horizontal` joins sibling matmuls that read one A (BERT's Q, K and
V projections) into one matmul over their weights laid side by side: C's
column blocks are the siblings' runs, one after another, and the group's
row-major stores write each run to its sibling's own tensor. A cut of that
C's columns in equal contiguous parts is no cut of each sibling's (at
seq 128, 144 column blocks in 16 parts put a part across Q's and K's runs),
so the group split over its rows alone, every core reading every weight.

Here the column parts cut each sibling instead: core j of `pk` column parts
takes blocks [j * nb, (j + 1) * nb) of every sibling (nb = the sibling's
blocks / pk), one matmul over one read of its rows of A. For that run to be
one contiguous slice of the weights, the host constants whose columns are
C's (the weights, the bias) are laid out again when the split is applied:
[sibling][part][block] -> [part][sibling][block]. Every tensor of the
group then cuts as an ordinary grid: the combined weights, bias and C
along their column blocks (now the core's run of every sibling), each
sibling's view of C and row-major result along its own column blocks, the
group's byte buffers (C's views' common storage) by both axes, a view's
byte shift with them (`groups.apply_group`).

The grid is the matmul model's (`SplitRules.split_matmul`) with the
column parts dividing one sibling's column blocks. Whether to form the
group at all on several cores is `npu-fuse-horizontal`'s (`cores`), by
`pays`.
"""

from __future__ import annotations

import math
from typing import Callable

import numpy as np
from mlir import ir

from npu import ir as nir
from npu.costmodel.matmul.fitting import MatmulShape
from npu.costmodel.matmul.tiling import TilingError, choose_tiling
from npu.target import Target

from .prefetched import is_host_constant, phase_cost
from .split import JOINT

# On the fused matmul (npu-fuse-horizontal with cores > 1): how many
# siblings' column runs its C holds, each as wide.
SIBLINGS_ATTR = "npu.siblings"
# ... and each one's column blocks (a LLaMA's GQA: Q 32, K and V 8 at hidden 512)
BLOCKS_ATTR = "npu.sibling_blocks"
COLUMNS = "k"  # the matmul grid's axis of C's column blocks (`rules.split_matmul`)


def siblings(matmul: ir.Operation) -> int:
    """The siblings of a horizontal group's matmul (0: not one)."""
    if SIBLINGS_ATTR not in matmul.attributes:
        return 0
    return ir.IntegerAttr(matmul.attributes[SIBLINGS_ATTR]).value


def sibling_blocks(matmul: ir.Operation) -> list[int]:
    """Each sibling's column blocks, in C's order (`BLOCKS_ATTR`; equal runs
    of C's when the group did not record them)."""
    if BLOCKS_ATTR in matmul.attributes:
        return list(ir.DenseI64ArrayAttr(matmul.attributes[BLOCKS_ATTR]))
    count = siblings(matmul)
    return [nir.memref_shape(matmul.operands[2].type)[0] // count] * count


def column_unit(matmul: ir.Operation) -> int:
    """The column blocks every column part count must divide: each sibling's."""
    return math.gcd(*sibling_blocks(matmul))


def said(group: ir.Operation) -> str:
    """What a remark adds for a horizontal group ("" for any other)."""
    count = max((siblings(o.operation) for o in group.regions[0].blocks[0].operations),
                default=0)
    return f" of {count} siblings (each core its columns of every one)" if count else ""


def cut_of(c_shape: list[int], widths: list[int], frac: int, group: ir.Operation
           ) -> Callable[[ir.Value], dict | None]:
    """Each tensor's cut in a horizontal group of siblings of `widths` column
    blocks whose C
    is Nz `c_shape`: Nz tensors along their column blocks (the combined
    ones, or one sibling's) and row blocks, row-major ones along their rows
    and columns, the group's byte buffers by both axes; a tensor from
    outside the group with the combined columns only when it is a host
    constant the group alone reads (its layout changes, `permute`)."""
    k1, m1 = c_shape[0], c_shape[1]
    own = set(widths)

    def cut(v: ir.Value) -> dict | None:
        shape = nir.memref_shape(v.type)
        mine = nir.within(v.owner, group)
        if len(shape) == 1 and nir.memref_element(v.type) == "i8" and mine:
            return {0: COLUMNS + JOINT + "m"}
        if len(shape) == 4 and shape[2:] == [frac, frac] and shape[1] in (m1, 1):
            blocks, rows, dims = shape[0], shape[1] * frac, (1, 0)
        elif len(shape) == 2 and shape[0] in (m1 * frac, 1) and shape[1] % frac == 0:
            blocks, rows, dims = shape[1] // frac, shape[0], (0, 1)
        else:
            return None
        if blocks not in own | {k1, 1}:
            return None
        if blocks == k1 and not mine and not _private_constant(v, group):
            return None
        out = {}
        if rows == m1 * frac:
            out[dims[0]] = "m"
        if blocks in own | {k1}:
            out[dims[1]] = COLUMNS
        return out

    return cut


def _private_constant(v: ir.Value, group: ir.Operation) -> bool:
    """`v` is a host constant argument itself, read only in the group."""
    return (nir.is_block_argument(v) and is_host_constant(v)
            and all(nir.within(u.owner, group) for u in v.uses))


def permute(matmul: ir.Operation, parts: dict[str, int],
            cuts: dict[ir.Value, dict], external: list[ir.Value]) -> None:
    """Lay out the host constants with C's combined columns (`external`
    values cut along them) as [part][sibling][block], so that each core's
    columns of every sibling are one contiguous slice."""
    widths, pk = sibling_blocks(matmul), parts.get(COLUMNS, 1)
    if pk == 1:
        return
    k1 = nir.memref_shape(matmul.operands[2].type)[0]
    for v in external:
        shape = nir.memref_shape(v.type)
        dim = 0 if len(shape) == 4 else 1
        width = shape[dim] if len(shape) == 4 else shape[dim] // 16
        if COLUMNS not in cuts[v].values() or width != k1 or not is_host_constant(v):
            continue
        data = nir.constant_argument(v)
        per_block = data.shape[dim] // k1  # 16 for a row-major bias's columns
        ends = np.cumsum([w * per_block for w in widths])[:-1]
        runs = [np.split(part, pk, axis=dim) for part in np.split(data, ends, axis=dim)]
        laid = [run for j in range(pk) for run in (sib[j] for sib in runs)]
        nir.retype_constant(v, np.ascontiguousarray(np.concatenate(laid, axis=dim)))


def per_core(m: int, n: int, k: int, pk: int, pm: int, target: Target) -> float | None:
    """One core's modelled cycles for its M/pm x N x K/pk share of a matmul
    (N the reduction; `prefetched.phase_cost` of its tiled traffic)."""
    shape = MatmulShape(m // pm, n, k // pk, 1, 2, 4, 2)
    try:
        choice = choose_tiling(shape, target)
    except TilingError:
        return None
    f = target.fractal
    core_bytes = choice.traffic.read_bytes(shape) + choice.traffic.write_bytes(shape)
    cube = target.cube_cycles(float(m // pm // f * (n // f) * (k // pk // f)))
    return phase_cost(cube, core_bytes, pk * pm, target)


def best(m: int, n: int, k: int, cores: int, target: Target, columns_of: int = 0,
         exact: bool = False) -> tuple[float, int, int] | None:
    """(cycles, pk, pm) of the cheapest grid of at most `cores` cores (of
    exactly `cores` with `exact`), the column parts dividing `columns_of`
    blocks (0: C's)."""
    f = target.fractal
    found = None
    for parts in range(cores if exact else 1, cores + 1):
        for pk in range(1, parts + 1):
            pm = parts // pk
            if parts % pk or (k // f) % pk or (m // f) % pm or (columns_of or k // f) % pk:
                continue
            cost = per_core(m, n, k, pk, pm, target)
            if cost is not None and (found is None or cost < found[0]):
                found = (cost, pk, pm)
    return found


def pays(m: int, n: int, widths: list[int], cores: int, target: Target,
         side_by_side: bool = True) -> tuple[bool, str]:
    """Whether one matmul over every sibling's columns on `cores` cores
    (each core its columns of each sibling; npu-split-cores takes a grid of
    all of them) models faster than the siblings apart: one after another
    on all the cores, or side by side on equal shares (`share`; spare cores
    make no share slower), whichever is faster; and a sentence with both.
    Not side by side with `side_by_side` false: ops between the siblings
    that stay there (a LLaMA's head transposes and rotary after each
    projection) put a barrier between the projections."""
    f = target.fractal
    count = len(widths)
    fused = best(m, n, sum(widths), cores, target, math.gcd(*widths) // f, exact=True)
    if fused is None:
        return False, f"the fused matmul has no grid of {cores} cores"
    alone = [best(m, n, w, cores, target) for w in widths]
    serial = math.inf if None in alone else sum(a[0] for a in alone)
    shared = ([best(m, n, w, cores // count, target) for w in widths]
              if side_by_side and cores >= count else [None])
    side = math.inf if None in shared else max(s[0] for s in shared)
    apart = min(serial, side)
    how = (f"the slowest of {count} shares of {cores // count} cores" if side <= serial
           else f"{count} one after another on {cores} cores")
    cost, pk, pm = fused
    said = (f"{pk}x{pm} models {cost:.0f} cycles a core against {apart:.0f} for {how} "
            f"apart")
    return cost < apart, said

"""A fused attention over cores: a grid of head parts and runs of query rows.

Heads alone leave cores idle whenever the heads are fewer than the cores
(BERT's 12 heads on 32 cores: 12 busy, 20 waiting at the next barrier), so
the cores form a grid of `hp` head parts and `qp` runs of query rows:

* a head part takes heads/hp heads: its slices of Q, K, V and the context
  (`groups._head_cut`);
* a query run takes seq/qp query rows of each of its heads against all of
  their keys. The operands stay whole along the rows (the kernel reads its
  rows of Q and writes its rows of the context itself): the group gets
  `npu.core_part` and `npu-lower-attention` walks the core's run of query
  tiles from a row offset computed from the block index. For the barriers,
  Q and the context count as cut along their rows (the `"q"` axis is
  `unsliced`), K and V as read whole by every run.

The grid is the cheapest of every grid of at most the cores asked for, by
the attention cost model on one core's share (`plan.modelled`: its heads,
its query run against all keys, K and V loaded once per head and run,
each head started cold and its last context stored: `core_start`);
among equals the fewest runs (each run reads its heads' K and V again).
Query runs need a sequence of whole 16-row blocks that the runs divide,
and are not taken with the projection fused in (its kernel projects all
query rows of a head).

Beside the grids, flat runs (`npu.costmodel.attention.flat_runs`): the
heads' row blocks in order, an equal run of them a core, a run crossing
from one head into the next (head parts 0: every tensor whole on every
core, as far as the barriers go; the kernel finds its run from the block
index). Weighed by the same model, on the slowest shape of run.
"""

from __future__ import annotations

from mlir import ir

from npu import ir as nir
from npu.costmodel.attention import pattern as att
from npu.costmodel.attention.nz_out import absorb_nz_out
from npu.costmodel.attention import flat_runs as flat
from npu.costmodel.attention import plan as cost
from npu.costmodel.attention.core_start import finished, segment
from npu.costmodel.attention.projection import PROJECTION_ATTR
from npu.target import Target

from .split import Split

QUERIES = "q"  # the grid axis of the query runs
FLAT = "hq"  # of flat runs of (head, query block) units (head parts 0)


def _divisors(n: int, most: int) -> list[int]:
    return [d for d in range(1, min(n, most) + 1) if n % d == 0]


def matched(group: ir.Operation) -> att.Attention | None:
    """The attention an `npu.attention` group holds (as its lowering matches it)."""
    body = [o.operation for o in group.regions[0].blocks[0].operations]
    first = next((o for o in body if o.name == "ascend.batch_matmul"), None)
    if first is None:
        return None
    users = att.users_of(body)
    found = att.match(first, users, any_seq=PROJECTION_ATTR in group.attributes)
    if isinstance(found, str):
        return None
    if any(o.name == "ascend.fractalize" and o not in found.members for o in body):
        absorb_nz_out(found, users)
    return found


def grid(group: ir.Operation, a: att.Attention | None, parts: int, target: Target,
         forced: tuple[int, int] | None = None) -> tuple[int, int, int] | None:
    """(head parts, query runs, modelled cycles of one core) of the cheapest
    grid of at most `parts` cores for the group and its attention `a`
    (`matched`), or None when the heads and rows give no grid of two or more;
    head parts 0: that many flat runs (`flat_runs`); `forced` (head parts,
    query runs): only that grid (npu-split-cores' `grids`)."""
    attrs = nir.dict_attr_items(group.attributes[att.ATTENTION_ATTR])
    heads = attrs["heads"]
    runs_ok = (a is not None and a.seq % 16 == 0 and PROJECTION_ATTR not in group.attributes)
    # at a seq of partial blocks, flat runs when the context leaves as whole
    # Nz blocks (`nz_out`): a run's block that is a head's last stores its
    # padding rows too, as the fractalize would (computed, not zeroed)
    flat_ok = runs_ok or (a is not None and a.nz_out and PROJECTION_ATTR not in group.attributes)
    s1 = a.seq_blocks if a is not None else 1
    best: tuple[int, int, int] | None = None
    for hp in _divisors(heads, parts):
        for qp in _divisors(s1, parts // hp) if runs_ok else [1]:
            if forced is not None and (hp, qp) != forced:
                continue
            if a is None:
                cycles = heads // hp  # no model: the most head parts
            else:
                rows = s1 // qp
                qb = cost.run_tile(attrs["query_rows"] // 16, rows)
                kb = attrs["key_rows"] // 16
                c = cost.modelled(a, qb, kb, target, attrs.get("softmax", "f32"),
                                  heads=heads // hp, query_blocks=rows if qp > 1 else None)
                c = segment(c, a, heads // hp, rows, qb, kb, target,
                            PROJECTION_ATTR in group.attributes)
                cycles = finished(c, a, qb, target).cycles
            if best is None or (cycles, qp, -hp) < (best[2], best[1], -best[0]):
                best = (hp, qp, cycles)
    for runs in range(2, parts + 1) if flat_ok else ():
        if not flat.runs_fit(heads, s1, runs) or (forced is not None and forced != (0, runs)):
            continue
        cycles = flat.modelled(a, heads, attrs["query_rows"] // 16, attrs["key_rows"] // 16,
                               target, attrs.get("softmax", "f32"), runs).cycles
        # (flat runs only when strictly cheaper: a grid's cores read fewer K and V)
        if best is None or cycles < best[2]:
            best = (0, runs, cycles)
    return best if best is not None and (best[0] == 0 or best[0] * best[1] > 1) else None


def split(hp: int, qp: int) -> Split:
    """The grid's `Split` (heads outer, query runs inner; head parts 0: flat
    runs); the cuts are the group's (`groups`)."""
    if hp == 0:
        return Split((), ((FLAT, qp),), unsliced=frozenset({FLAT}))
    axes = (("x", hp),) + (((QUERIES, qp),) if qp > 1 else ())
    return Split((), axes, unsliced=frozenset({QUERIES}))


def rows_dim(v: ir.Value, a: att.Attention) -> int | None:
    """The dim of a query-side tensor that holds the query rows: an Nz
    [.., S/16, 16, 16] by its row blocks, else the first dim of S rows but
    the last (Q [H, S, D], the projections [1, S, H, D], the merged context)."""
    shape = nir.memref_shape(v.type)
    if len(shape) >= 4 and shape[-2:] == [16, 16] and shape[-3] == a.seq_blocks:
        return len(shape) - 3
    return next((d for d, n in enumerate(shape[:-1]) if n == a.seq), None)


def query_side(a: att.Attention) -> set[ir.Value]:
    """The group's tensors a query run touches only its rows of: Q (or the
    source it is made from) and the context."""
    q = a.sources[0] if a.sources is not None else a.q
    return {q, a.out}


def flat_remark(group: ir.Operation, s: Split) -> str | None:
    """The remark's words for flat runs (None for a grid): how many runs
    of how many (head, query) rows."""
    runs = dict(s.grid).get(FLAT)
    a = None if runs is None else matched(group)
    if a is None:
        return None
    heads = nir.dict_attr_items(group.attributes[att.ATTENTION_ATTR])["heads"]
    return f"attention {runs} runs of {heads * a.seq_blocks // runs * 16} (head, query) rows across heads"

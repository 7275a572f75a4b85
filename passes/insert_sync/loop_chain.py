"""`npu-insert-sync` loop chains: a loop's carried pair hands its last set
to the next loop's carried pair of the same pipes, instead of a balancing
wait before that loop.

Two loops in turn over the same ping-ponged buffers (ResNet's stem pool: a
loop over the first band of every channel group, then the interior bands'
loop, both loading into buffers A and B) need the second loop ordered after
the first one's work on them. The balancing wait of the first loop's last
carried pair (V done reading B) before the second loop orders it, but holds
up the second loop's first load, into A, until V has finished B: MTE2
idles for a whole band (1,167 cycles of 34,485). Chained, the second loop's
carried pair for B (its load of B waits for V's reads of B an iteration
before) takes the first loop's last set as its pre-set: its first load of B
waits for V's last reads of B in the first loop, which is the order
needed. What the second loop's body does on the consumer pipe before that
wait is ordered by the balancing wait of an earlier carried pair of the
first loop (V done reading A) before the second loop, which passes at once.

Counts stay balanced: the first loop leaves one set of the event
outstanding (its pre-set plus a set and a wait an iteration), the second
loop's first wait takes it instead of its own pre-set, and its balancing
wait takes the one it leaves. Both loops have constant trip counts of at
least one (`build_block`), so the chained wait runs before anything after
the second loop. Made only where the event stays free from the first
loop's last set to the second loop's first wait (`link_chains`); else the
balancing wait before the second loop stays.
"""

from __future__ import annotations

from dataclasses import dataclass

from npu.passes.insert_sync.events import FlagPair, _meet
from npu.passes.insert_sync.nodes import Node, dependent_pipes


@dataclass(eq=False)
class LoopChain:
    """`first` (the first loop's pair whose producer is its pipe's last node
    of the body, its balancing wait before `second`'s loop) hands its last
    set to `second`; `early` (None: not needed) has its balancing wait
    before that loop for the consumer-pipe nodes ahead of `second`'s wait."""

    first: FlagPair
    second: FlagPair
    early: FlagPair | None
    consumer: Node  # `second`'s consumer when chained (a merge may move it)


def _movable(fp: FlagPair, loop: Node) -> bool:
    """May `fp`'s balancing wait go before `loop`?"""
    return fp.balance_at is loop or (fp.balance_at is None and not fp.balance_fixed)


def find_chain(first_loop: Node, second_loop: Node, offer: FlagPair, carried: dict[int, list[FlagPair]],
               analysis) -> LoopChain | None:
    """The chain for `offer` (a carried (p, q) pair of `first_loop` whose
    balancing wait would go before `second_loop`), or None: the second loop's
    carried (p, q) pair with the latest consumer in its body such that the
    q nodes before that consumer depend on p's work in the first body only
    up to the producer of another carried pair, whose wait then goes before
    the second loop (none needed where they depend on nothing there)."""
    p, q = offer.src, offer.dst
    if first_loop.op.name != "scf.for" or second_loop.op.name != "scf.for":
        return None
    body1, body2 = first_loop.children[0], second_loop.children[0]
    at1 = {id(n): k for k, n in enumerate(body1)}
    at2 = {id(n): k for k, n in enumerate(body2)}
    mine = [fp for fp in carried.get(id(first_loop), []) if (fp.src, fp.dst) == (p, q)
            and fp is not offer and id(fp.producer) in at1 and _movable(fp, second_loop)]
    theirs = sorted((fp for fp in carried.get(id(second_loop), [])
                     if (fp.src, fp.dst) == (p, q) and id(fp.consumer) in at2),
                    key=lambda fp: at2[id(fp.consumer)], reverse=True)
    producers = [k for k, n in enumerate(body1) if p in n.pipes]
    for second in theirs:
        early = [n for n in body2[:at2[id(second.consumer)]] if q in n.pipes]
        last = max((k for k in producers for n in early
                    if (p, q) in dependent_pipes(body1[k], n, analysis)), default=-1)
        if last < 0:
            return LoopChain(offer, second, None, second.consumer)
        ahead = [fp for fp in mine if at1[id(fp.producer)] >= last]
        if ahead:
            early_pair = min(ahead, key=lambda fp: at1[id(fp.producer)])
            return LoopChain(offer, second, early_pair, second.consumer)
    return None


def link_chains(chains: list[LoopChain], pairs: list[FlagPair], pos: dict) -> None:
    """After event allocation: give each chain's second pair its first
    pair's event and mark the first's balancing wait and the second's
    pre-set dropped, where all three pairs kept their own place (none merged
    away or changed) and no other pair of those pipes holds the event from
    the second loop's start to its wait, nor over the second pair's span."""
    kept = {id(fp) for fp in pairs}
    for c in chains:
        first, second, early = c.first, c.second, c.early
        loop = second.loop
        if not (id(first) in kept and id(second) in kept and first.event >= 0 and second.event >= 0
                and first.balance_at is loop and second.consumer is c.consumer
                and (early is None or (id(early) in kept and early.event >= 0
                                       and early.balance_at is loop))):
            continue
        span = [(pos[id(loop)].before, pos[id(second.consumer)].before), second.intervals[-1]]
        if any(fp is not first and fp is not second and fp.event == first.event
               and (fp.src, fp.dst) == (first.src, first.dst) and _meet(fp.intervals, span)
               for fp in pairs):
            continue
        second.event = first.event
        second.intervals = [(first.intervals[-1][0], pos[id(second.consumer)].before),
                            second.intervals[-1]]
        first.chained_wait = second.chained_preset = True

"""`npu-insert-sync` mode=precise: one flag pair per dependency between
pipes, V barriers, syncs implied by others dropped (vector clocks), loop
exits feeding their parent block (see the package's docstring)."""

from __future__ import annotations

from dataclasses import dataclass, field

from mlir import ir

from npu.analysis.access import AccessAnalysis
from npu.ir import constant_int, defining_op, int_attr
from npu.passes.base import LIGHT_DRAIN_ATTR, OWN_TILE_COPIES_ATTR
from npu.passes.insert_sync.builders import _emit, insert_after, insert_before
from npu.passes.insert_sync.events import FlagPair, _EventAllocation
from npu.passes.insert_sync.loop_chain import LoopChain, find_chain, link_chains
from npu.passes.insert_sync.nodes import IN_FLIGHT, Node, needs_order, sharing_pipes
from npu.passes.insert_sync.store_sets import share_store_sets


@dataclass
class _Positions:
    before: int
    after: int
    pre: int = 0
    post: int = 0


_NOTHING: dict[str, int] = {}


class _BlockState:
    """Vector clocks of one walk over a block: what each pipe knows has finished."""

    def __init__(self) -> None:
        self.count: dict[str, int] = {}
        self.known: dict[str, dict[str, int]] = {}
        self.index: dict[tuple[int, int], dict[str, int]] = {}      # (copy, node) -> pipe -> idx
        self.snapshot: dict[tuple[int, int], dict[str, dict[str, int]]] = {}
        self.issued_on: dict[str, list[int]] = {}  # pipe -> node numbers in issue order (copy 0)
        self.fenced: dict[str, int] = {}  # pipe -> its instructions before the last chip barrier

    def unordered(self, y_pipes: frozenset[str]) -> list[int]:
        """Node numbers (copy 0, issue order) that some pipe of y does not
        yet know have finished on a pipe they use, where that pipe pair
        needs an order: only these can call for a sync before y. Found from
        each pipe's issue list and what y's pipes know of it, instead of
        testing every earlier node (that scan was quadratic in a block)."""
        found: set[int] = set()
        known, fenced = self.known, self.fenced
        for p, issued in self.issued_on.items():
            # `knows` inlined (17k calls in BERT-12 on 32 cores): the least
            # any pipe of y knows of p, never below what the fence told all
            n = least = len(issued)
            for q in y_pipes:
                if p != q or p == "V":
                    v = known.get(q, _NOTHING).get(p, 0)
                    if v < least:
                        least = v
            least = max(least, fenced.get(p, 0))
            if least < n:
                found.update(issued[least:])
        return sorted(found)

    def knows(self, q: str, p: str) -> int:
        return max(self.known.get(q, {}).get(p, 0), self.fenced.get(p, 0))

    def learn(self, q: str, p: str, key: tuple[int, int]) -> None:
        """Pipe q waited for a flag set by p right after node `key`."""
        mine = self.known.setdefault(q, {})
        for pipe, v in self.snapshot[key][p].items():
            mine[pipe] = max(mine.get(pipe, 0), v)
        mine[p] = max(mine.get(p, 0), self.index[key][p])

    def fence(self) -> None:
        """A chip barrier: every pipe (even one not used yet) knows every
        earlier instruction has finished, but MTE2's (`IN_FLIGHT`: its loads
        stream on through the barrier) only as far as some other pipe knew
        them finished before it."""
        seen = max([self.knows(q, IN_FLIGHT) for q in {*self.known, *self.count} if q != IN_FLIGHT],
                   default=0)
        self.fenced = {p: n for p, n in self.count.items() if p != IN_FLIGHT}
        self.fenced[IN_FLIGHT] = seen

    def barrier_v(self) -> None:
        self.known.setdefault("V", {})["V"] = self.count.get("V", 0)

    def implies(self, pairs, key: tuple[int, int]) -> None:
        """Node `key` (a compound) leaves pipe q knowing that all of p's work
        in it is done, for each (q, p) in `pairs`: a later q instruction needs
        no flag (or V barrier, q == p == V) for a dependency on it."""
        for q, p in pairs:
            mine = self.known.setdefault(q, {})
            mine[p] = max(mine.get(p, 0), self.index[key][p])

    def implied(self) -> set[tuple[str, str]]:
        """(q, p): q knows p's last instruction so far has finished."""
        return {(q, p) for q in {*self.known, *self.count} for p, n in self.count.items()
                if n and self.knows(q, p) >= n}

    def issue(self, node: Node, key: tuple[int, int]) -> None:
        self.index[key] = {}
        for p in node.pipes:
            self.count[p] = self.count.get(p, 0) + 1
            self.index[key][p] = self.count[p]
            if key[0] == 0:
                self.issued_on.setdefault(p, []).append(key[1])
        self.snapshot[key] = {p: dict(self.known.get(p, {})) for p in node.pipes}


@dataclass
class _Exit:
    """What finishing a block implies (see `_PreciseMode._block`)."""

    implied: set[tuple[str, str]]
    offers: dict[tuple[str, str], FlagPair]
    carried: list[FlagPair] = field(default_factory=list)  # a loop's own (`loop_chain`)


class _PreciseMode(_EventAllocation):
    def __init__(self, analysis: AccessAnalysis, target, sink_sets: bool = False,
                 carried_span: str = "fit"):
        self.analysis = analysis
        self.target = target
        self.sink_sets = sink_sets
        self.carried_span = carried_span
        self.pairs: list[FlagPair] = []
        self.v_barriers: list[Node] = []
        self.all_barriers: list[Node] = []
        self.end_barriers: list[Node] = []  # loops: a barrier at their block's end
        self.pos: dict[int, _Positions] = {}
        self.block_span: dict[int, tuple[int, int]] = {}
        self.block_nodes: dict[int, list[Node]] = {}
        self._block_ticks: dict[int, tuple[list[int], dict[int, int]]] = {}  # see `_block_of`
        self._clock = 0
        self.chains: dict[int, LoopChain] = {}  # id(first pair) -> its chain (`loop_chain`)

    # -- timeline ----------------------------------------------------------------
    def _tick(self) -> int:
        self._clock += 1
        return self._clock

    def _number(self, nodes: list[Node]) -> None:
        start = self._tick()
        for n in nodes:
            p = _Positions(self._tick(), 0)
            if n.is_compound:
                p.pre = self._tick()
                for child in n.children:
                    self._number(child)
                p.post = self._tick()
            p.after = self._tick()
            self.pos[id(n)] = p
        end = self._tick()
        for n in nodes:
            self.block_span[id(n)] = (start, end)
            self.block_nodes[id(n)] = nodes

    # -- analysis --------------------------------------------------------------------
    def run_function(self, nodes: list[Node]) -> None:
        self._number(nodes)
        self._block(nodes, None)
        self._allocate_events()
        link_chains(list(self.chains.values()), self.pairs, self.pos)
        self._emit()

    def _block(self, nodes: list[Node], loop: Node | None) -> "_Exit":
        """Synchronise one block (and, first, the blocks nested in it).
        Returns what the block's exit implies: the (q, p) pipe pairs where q
        has waited for a flag set after p's last instruction of the block,
        and the carried pairs whose balancing wait would imply it."""
        # Nested blocks first: what their exits imply feeds this block's
        # clocks. Their pairs still follow this block's (stable output).
        outer_pairs, outer_vbars = self.pairs, self.v_barriers
        self.pairs, self.v_barriers = [], []
        exits = {id(y): self._exit_of(y) for y in nodes if y.children}
        inner_pairs, inner_vbars = self.pairs, self.v_barriers
        self.pairs, self.v_barriers = outer_pairs, outer_vbars
        first_new = len(self.pairs)
        st = self._walk(nodes, loop, exits)
        if self.sink_sets:  # a store's set after a later staging copy's (`store_sets`)
            share_store_sets(self.pairs[first_new:], nodes, self.pos)
        offers: dict[tuple[str, str], FlagPair] = {}
        for fp in self.pairs[first_new:]:
            if fp.loop is not None and self._last_of(nodes, fp.src) is fp.producer:
                offers[(fp.src, fp.dst)] = fp
        carried = [fp for fp in self.pairs[first_new:] if fp.loop is not None and fp.loop is loop]
        self.pairs += inner_pairs
        self.v_barriers += inner_vbars
        return _Exit(st.implied(), offers, carried)

    @staticmethod
    def _last_of(nodes: list[Node], pipe: str) -> Node | None:
        return next((n for n in reversed(nodes) if pipe in n.pipes), None)

    def _exit_of(self, y: Node) -> "_Exit":
        """What a compound implies once it is done: a loop's body exit (the
        last iteration's), an scf.if's only when both branches imply it."""
        if y.op.name == "scf.for":
            return self._block(y.children[0], y)
        implied = [self._block(child, None).implied for child in y.children]
        return _Exit(set.intersection(*implied) if len(implied) == 2 else set(), {})

    def _walk(self, nodes: list[Node], loop: Node | None,
              exits: dict[int, "_Exit"]) -> "_BlockState":
        st = _BlockState()
        # decisions of the first walk, replayed on the second (carried) walk
        waits_before: dict[int, list[tuple[str, str, int]]] = {}
        # chained (`loop_chain`): q knows p's work in the first loop once the
        # second has run, not at its start
        learn_after: dict[int, list[tuple[str, str, int]]] = {}
        carried_of = {k: e.carried for k, e in exits.items()}
        vbar: set[int] = set()
        copies = 2 if loop is not None and loop.trip_count > 1 else 1
        # Each node's overlap keys, read once: asking the node for them per
        # pair tested was 217k calls on BERT-12 at 32 cores.
        keys = [n.overlap_keys() for n in nodes]
        for copy in range(copies):
            for i, y in enumerate(nodes):
                key = (copy, i)
                if copy == 1:
                    for p, q, j in waits_before.get(i, []):
                        st.learn(q, p, (1, j))
                    if i in vbar:
                        st.barrier_v()
                if y.is_fence:
                    st.fence()
                    continue
                need: dict[tuple[str, str], tuple[int, int]] = {}
                need_vbar = False
                # same-iteration dependencies (first walk only: replayed after)
                # copy 0: the nodes before y; copy 1: the body's nodes in
                # the previous iteration (loop-carried)
                # (nodes without a common overlap key cannot depend: skipped here)
                y_keys = keys[i]
                carried = None if copy == 0 else loop
                candidates = [((0, j), nodes[j]) for j in st.unordered(y.pipes)
                              if not y_keys.isdisjoint(keys[j])]
                for xkey, x in candidates:
                    for p, q in sharing_pipes(x, y, self.analysis, carried):
                        if not needs_order(p, q):
                            continue
                        xidx = st.index[xkey][p]
                        if p == q:  # V -> V
                            if st.knows("V", "V") < xidx:
                                need_vbar = True
                        elif st.knows(q, p) < xidx:
                            best = need.get((p, q))
                            if best is None or st.index[best][p] < xidx:
                                need[(p, q)] = xkey
                # Latest producers first: their flags carry the most knowledge
                # and often imply the others.
                for (p, q), xkey in sorted(need.items(), key=lambda kv: kv[1], reverse=True):
                    if st.knows(q, p) >= st.index[xkey][p]:
                        continue  # implied by a flag added for another pipe pair just now
                    j = xkey[1]
                    offer = exits[id(nodes[j])].offers.get((p, q)) if id(nodes[j]) in exits else None
                    if offer is not None and (copy == 0 or j < i) and (
                            offer.balance_at is y or not (offer.balance_at or offer.balance_fixed)):
                        # The loop's balancing wait, moved before y, orders y
                        # after all of p's work in the loop: no new pair.
                        chain = self.chains.get(id(offer))
                        if copy == 0 and chain is None and offer.balance_at is None:
                            chain = find_chain(nodes[j], y, offer, carried_of, self.analysis)
                            if chain is not None:
                                self.chains[id(offer)] = chain
                                if chain.early is not None:
                                    chain.early.balance_at = y
                        offer.balance_at = y
                        if chain is not None and chain.second.loop is y:
                            if copy == 0:
                                learn_after.setdefault(i, []).append((p, q, j))
                            continue
                        if copy == 0:
                            waits_before.setdefault(i, []).append((p, q, j))
                        st.learn(q, p, xkey if copy == 0 else (1, j))
                        continue
                    if self.sink_sets:
                        carried_store = p == "MTE3" and copy == 1 and j >= i
                        j = self._sink(nodes, j, self._sink_bound(nodes, copy, j, i, p), p,
                                       carried_store)
                        xkey = (xkey[0], j)
                    if copy == 0:
                        waits_before.setdefault(i, []).append((p, q, j))
                        self._pair(p, q, nodes[j], y, None)
                        st.learn(q, p, xkey)
                    elif j < i:
                        # X before Y in the body: order them in every iteration.
                        waits_before.setdefault(i, []).append((p, q, j))
                        self._pair(p, q, nodes[j], y, None)
                        st.learn(q, p, (1, j))
                    else:
                        self._pair(p, q, nodes[j], y, loop)
                        st.learn(q, p, xkey)
                if need_vbar:
                    vbar.add(i)
                    self.v_barriers.append(y)
                    st.barrier_v()
                st.issue(y, key)
                for p, q, j in learn_after.get(i, ()):
                    st.learn(q, p, (copy, j))
                if id(y) in exits:
                    st.implies(exits[id(y)].implied, key)
            # The balancing waits left at the block's end order the loops'
            # work before the next iteration (and the block's exit).
            for j, y in enumerate(nodes):
                for (p, q), offer in (exits[id(y)].offers.items() if id(y) in exits else ()):
                    if offer.balance_at is None:
                        offer.balance_fixed = True
                        st.learn(q, p, (copy, j))
        return st

    @staticmethod
    def _sink(nodes: list[Node], j: int, i: int, p: str, drains: bool = False) -> int:
        """The last node of the run of single instructions of pipe p that
        follows node j and precedes node i. A set_flag holds its pipe until
        every earlier instruction has finished, so a set between two
        transfers of a mover pipe idles it for the first one's latency; set
        after the run instead (one flag then covers the whole run, and the
        consumer starts when the run has landed). With `drains` (a carried
        store's set) the run also takes the scf.ifs of V and MTE3 work that
        npu-lower-matmul marks as light drains (`LIGHT_DRAIN_ATTR`: a
        matmul's C pieces, each drained under its own scf.if): the next
        piece's stores then follow the previous piece's without waiting
        for them to land (BERT seq 512's last C tiles). An MTE2 set also
        passes the copy trees `own_tiles` makes (`OWN_TILE_COPIES_ATTR`: a
        part of A by core, GM -> L1 and UB -> L1), as it passes the one copy
        they replace (GPT-2's c_proj: B's last chunk, then A's part), when
        the set follows a load MTE2 issues there (not one whose guard never
        holds: BERT's ffn_out, B prefetched, its L0B loads then waited for
        A's part)."""
        trees = p == "MTE2" and not _never_runs(nodes[j].op)
        while j + 1 < i and (nodes[j + 1].pipes == {p} if not nodes[j + 1].is_compound else
                             drains and LIGHT_DRAIN_ATTR in nodes[j + 1].op.attributes
                             and nodes[j + 1].pipes <= {p, "V"}
                             or trees and OWN_TILE_COPIES_ATTR in nodes[j + 1].op.attributes
                             and nodes[j + 1].pipes <= {p, "MTE3"}):
            j += 1
        return j

    @staticmethod
    def _sink_bound(nodes: list[Node], copy: int, j: int, i: int, p: str) -> int:
        """How far the set of producer j may sink: up to its consumer i in the
        same iteration; a loop-carried one (its wait in the next iteration)
        of a store, through the rest of its run of stores: the stores that
        leave together (a fused group's results) share one flag, so MTE3
        pays the GM latency once per run, and the buffers they release are
        next written an iteration later. Other carried sets stay: a load run
        behind a set would hold back the consumer that set releases."""
        if copy == 0 or j < i:
            return i
        return len(nodes) if p == "MTE3" else j + 1

    def _pair(self, p: str, q: str, x: Node, y: Node, loop: Node | None) -> None:
        px, py = self.pos[id(x)], self.pos[id(y)]
        # A carried pair's intervals are set when event ids are allocated
        # (`_carried_intervals`), once its balancing wait has found its place.
        intervals = [(px.after, py.before)] if loop is None else []
        self.pairs.append(FlagPair(p, q, x, y, loop, intervals))

    def _emit(self) -> None:
        for fp in self.pairs:
            attrs = dict(src=fp.src, dst=fp.dst, event=fp.event)
            insert_after(fp.producer.op, "cce.set_flag", **attrs)
            insert_before(fp.consumer.op, "cce.wait_flag", **attrs)
            if fp.loop is not None:
                # In the loop's block: the pre-set before the loop, the
                # balancing wait after it (at the block's start and end when
                # no node is named).
                block = fp.loop.op.block
                if fp.chained_preset:
                    pass
                elif fp.preset_before is not None:
                    insert_before(fp.preset_before.op, "cce.set_flag", **attrs)
                else:
                    with ir.InsertionPoint.at_block_begin(block) as start:
                        _emit("cce.set_flag", start.ref_operation.location, **attrs)
                wait_before = fp.balance_at or fp.wait_before
                if fp.chained_wait:
                    pass
                elif wait_before is not None:
                    insert_before(wait_before.op, "cce.wait_flag", **attrs)
                else:
                    with ir.InsertionPoint.at_block_terminator(block) as end:
                        _emit("cce.wait_flag", end.ref_operation.location, **attrs)
        seen = set()
        for node in self.v_barriers:
            if id(node) not in seen:
                seen.add(id(node))
                insert_before(node.op, "cce.pipe_barrier", pipe="V")
        seen = set()
        for node in self.all_barriers:
            if id(node) not in seen:
                seen.add(id(node))
                insert_before(node.op, "cce.pipe_barrier", pipe="ALL")
        for loop in {id(n): n for n in self.end_barriers}.values():
            last = list(loop.op.block.operations)[-1]
            insert_before(last.operation, "cce.pipe_barrier", pipe="ALL")


def _never_runs(op: ir.Operation) -> bool:
    """An `scf.if` with an empty else whose condition is false at compile
    time (npu-prefetch's guard of a copy it moved: `cmpi ne` of one value)."""
    if op.name != "scf.if" or (len(op.regions[1].blocks)
                               and len(op.regions[1].blocks[0].operations) > 1):
        return False
    cond = defining_op(op.operands[0])
    if cond is None:
        return False
    if cond.name == "arith.constant":
        return constant_int(op.operands[0]) == 0
    if cond.name != "arith.cmpi":
        return False
    a, b = cond.operands
    same = a == b or (constant_int(a) is not None and constant_int(a) == constant_int(b))
    # ne, slt, sgt, ult, ugt of a value with itself
    return same and int_attr(cond, "predicate") in (1, 2, 4, 6, 8)

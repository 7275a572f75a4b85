"""`npu-insert-sync`: derive set_flag / wait_flag / pipe_barrier from the real
dependencies between cce instructions, after memory planning.

Why: the pipes run in parallel and only flags and barriers order them; the
lowerings emit none, so this pass is what makes generated code race-free.

Two modes:
* `mode=barrier`: the conservative baseline. A `pipe_barrier(ALL)` goes
  before every instruction (or loop) that depends on something issued since
  the last barrier, loop-carried dependencies included.
* `mode=precise`: RAW/WAR/WAW between two pipes become one flag pair (set
  right after the producer, wait right before the consumer); a vector read
  after a vector write becomes `pipe_barrier(V)` (V's WAR/WAW are safe in
  its in-order pipeline, DESIGN.md section 2); loop-carried dependencies use
  the standard pattern (the "buffer free" event is pre-set at the start of
  the block holding the loop, waited on in the body before the consumer, set
  after the producer, and waited once at the end of that block to balance,
  where it delays nothing); syncs already
  implied by others (tracked with per-pipe vector clocks) are dropped; event
  ids are allocated so that no pipe pair uses more than
  `target.events_per_pipe_pair`. When a function has more loops than ids,
  `carried-span=fit` (the default) moves a loop's pre-set and balancing
  wait in towards the loop, only as far as needed for the ids to go round,
  instead of fencing the loops off with full barriers (`block`). With `sink-sets=true` (npu-lower's
  default) a set_flag goes after the run of same-pipe instructions that
  directly follows its producer: a set holds its pipe until everything
  before it has finished, so one set per run keeps a mover streaming
  instead of paying each transfer's latency.

Control flow is structured: a nested loop (or scf.if) is one compound node of
its parent block, touching the union of its ops' bytes on each of its pipes;
its inner dependencies are handled inside it, first. What its syncs imply
at its exit feeds the parent's clocks: a pipe that waited (in the last
iteration) for a flag set after another pipe's last instruction of the body
needs no new pair for the loop's work, and a carried pair whose set follows
its pipe's last instruction of the body has its balancing wait moved right
before the first later node that needs that order (instead of a new pair);
one left at the end of its block orders the loop's work before the block's
next iteration and exit (no carried pair of an enclosing loop for it).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from mlir import ir

from npu.access_analysis import (AccessAnalysis, AccessError, Affine, IvKey, OpAccess, Range,
                                 SYNC_OPS, is_access_op, may_overlap)
from npu.ir import create_op, walk
from npu.passes.base import Option, Pass, PassError
from npu.target import ON_CHIP_BUFFERS

CONTROL_OPS = ("scf.for", "scf.if")


@dataclass
class Node:
    """One element of a block: a cce instruction or a compound (loop / if)."""

    op: ir.Operation
    accesses: list[OpAccess]
    pipes: frozenset[str]
    children: list[list["Node"]] = field(default_factory=list)  # blocks of a compound
    loop_iv: IvKey | None = None
    trip_count: int = 1
    step: int = 1

    @property
    def is_compound(self) -> bool:
        return self.op.name in CONTROL_OPS

    def ranges_by_pipe(self) -> dict[str, tuple[tuple[Range, ...], tuple[Range, ...]]]:
        """pipe -> (distinct ranges written, distinct ranges read) by the node's
        ops on that pipe: a dependency between two nodes is one between some
        pair of these, and a compound's many ops repeat the same ranges."""
        cached = self.__dict__.get("_by_pipe")
        if cached is None:
            writes: dict[str, dict[Range, None]] = {}
            reads: dict[str, dict[Range, None]] = {}
            for a in self.accesses:
                writes.setdefault(a.pipe, {}).update(dict.fromkeys(a.writes))
                reads.setdefault(a.pipe, {}).update(dict.fromkeys(a.reads))
            cached = self.__dict__["_by_pipe"] = {
                p: (tuple(writes[p]), tuple(reads[p])) for p in writes}
        return cached

    def keys_by_pipe(self) -> dict[str, tuple[frozenset, frozenset]]:
        """pipe -> (`_overlap_key`s written, read): ranges whose keys differ
        never overlap, so most node pairs need no range-by-range test."""
        cached = self.__dict__.get("_keys_by_pipe")
        if cached is None:
            cached = self.__dict__["_keys_by_pipe"] = {
                p: (frozenset(map(_overlap_key, w)), frozenset(map(_overlap_key, r)))
                for p, (w, r) in self.ranges_by_pipe().items()}
        return cached


def _overlap_key(r: Range) -> tuple:
    """Ranges with different keys cannot overlap (`may_overlap`): those of
    different roots, except planned and unplanned buffers of one on-chip
    space, which share the space's key."""
    if r.space in ON_CHIP_BUFFERS and r.root[0] in ("space", "alloc"):
        return ("on-chip", r.space)
    return r.root


def _widen(r: Range, analysis: AccessAnalysis, ivs: set[IvKey]) -> Range:
    """`r` over every value of the ivs in `ivs` (the loops nested in a compound)."""
    if not any(iv in ivs for iv, _ in r.start.terms):
        return r
    keep = [iv for iv, _ in r.start.terms if iv not in ivs]
    b = analysis.bounds(r.start, keep)
    if b is None:
        return Range(r.root, r.space, Affine(0), 1 << 62)
    lo, spread = b
    return Range(r.root, r.space, lo, r.length + spread)


def _inner_ivs(op: ir.Operation, analysis: AccessAnalysis) -> set[IvKey]:
    ivs = set()
    for loop in walk(op, lambda o: o.name == "scf.for"):
        key = analysis.iv_key(loop.regions[0].blocks[0].arguments[0])
        if key is not None:
            ivs.add(key)
    return ivs


def build_block(block: ir.Block, analysis: AccessAnalysis) -> list[Node]:
    """Nodes of `block` in program order (sync ops and scalar ops are skipped)."""
    nodes: list[Node] = []
    for child in block.operations:
        op = child.operation
        if op.name in SYNC_OPS:
            raise PassError("npu-insert-sync expects code without synchronisation; "
                            f"found '{op.name}' (run it once, on unsynchronised cce)", op)
        if is_access_op(op):
            try:
                acc = analysis.access(op)
            except AccessError as e:
                raise PassError(e.message, e.op) from None
            nodes.append(Node(op, [acc], frozenset([acc.pipe])))
        elif op.name in CONTROL_OPS:
            node = _compound(op, analysis)
            if node is not None:
                nodes.append(node)
        elif op.regions and any(is_access_op(o) for o in walk(op) if o is not op):
            raise PassError(f"npu-insert-sync does not handle cce ops nested in '{op.name}'", op)
    return nodes


def _compound(op: ir.Operation, analysis: AccessAnalysis) -> Node | None:
    children = [build_block(region.blocks[0], analysis) for region in op.regions
                if len(region.blocks)]
    iv, trip, step = None, 1, 1
    if op.name == "scf.for":
        iv = analysis.iv_key(op.regions[0].blocks[0].arguments[0])
        if iv is None:
            raise PassError("npu-insert-sync needs scf.for loops with constant bounds", op)
        r = analysis.iv_ranges[iv]
        trip, step = r.trip_count, r.step
        if trip == 0:
            return None
    flat: list[OpAccess] = []
    ivs = _inner_ivs(op, analysis)
    for inner in walk(op):
        if is_access_op(inner):
            try:
                acc = analysis.access(inner)
            except AccessError as e:
                raise PassError(e.message, e.op) from None
            flat.append(OpAccess(inner, acc.pipe, [_widen(r, analysis, ivs) for r in acc.reads],
                                 [_widen(r, analysis, ivs) for r in acc.writes]))
    if not flat:
        return None
    return Node(op, flat, frozenset(a.pipe for a in flat), children, iv, trip, step)


def dependent_pipes(x: Node, y: Node, analysis: AccessAnalysis,
                    carried: Node | None = None) -> list[tuple[str, str]]:
    """(pipe of x, pipe of y) pairs with a RAW/WAR/WAW from x to y, sorted so
    that the syncs inserted do not depend on string hashing.

    With `carried` (the enclosing loop), y is in any later iteration than x.
    """
    found = []
    x_ranges, y_ranges = x.ranges_by_pipe(), y.ranges_by_pipe()
    x_keys, y_keys = x.keys_by_pipe(), y.keys_by_pipe()
    for p, (x_writes, x_reads) in x_ranges.items():
        xw, xr = x_keys[p]
        for q, (y_writes, y_reads) in y_ranges.items():
            yw, yr = y_keys[q]
            if p == q:
                # Inside one in-order pipe only a vector read after a vector
                # write is a hazard (DESIGN.md section 2); other pipes complete
                # in order, and V's WAR/WAW are safe in its in-order pipeline.
                if p == "V" and not xw.isdisjoint(yr) and _any_overlap(x_writes, y_reads, analysis, carried):
                    found.append((p, q))
            elif ((not (xw.isdisjoint(yr) and xw.isdisjoint(yw))
                   and _any_overlap(x_writes, y_reads + y_writes, analysis, carried))
                  or (not xr.isdisjoint(yw) and _any_overlap(x_reads, y_writes, analysis, carried))):
                found.append((p, q))
    return sorted(found)


def _any_overlap(earlier: tuple[Range, ...], later: tuple[Range, ...], analysis: AccessAnalysis,
                 loop: Node | None) -> bool:
    return any(_overlap_later(a, b, analysis, loop) for a in earlier for b in later)


def _overlap_later(a: Range, b: Range, analysis: AccessAnalysis, loop: Node | None) -> bool:
    if loop is None:
        return may_overlap(a, b, analysis)
    coef = b.start.coef(loop.loop_iv)
    if coef == 0 and a.start.coef(loop.loop_iv) == 0:
        return may_overlap(a, b, analysis)
    if a.start.terms != b.start.terms or loop.trip_count > 64:
        # widen both over the loop's iterations
        ivs = {loop.loop_iv}
        return may_overlap(_widen(a, analysis, ivs), _widen(b, analysis, ivs), analysis)
    return any(may_overlap(a, b, analysis, (loop.loop_iv, k * loop.step))
               for k in range(1, loop.trip_count))


def needs_order(p: str, q: str) -> bool:
    """Pipes other than V complete in order, so only cross-pipe and V->V need syncs."""
    return p != q or p == "V"


# ----------------------------------------------------------------------------
# Builders
# ----------------------------------------------------------------------------


def _emit(name: str, loc: ir.Location, **attrs) -> ir.Operation:
    with loc:
        return create_op(name, **attrs)


def insert_before(op: ir.Operation, name: str, **attrs) -> ir.Operation:
    with ir.InsertionPoint(op):
        return _emit(name, op.location, **attrs)


def insert_after(op: ir.Operation, name: str, **attrs) -> ir.Operation:
    """Insert right after `op` (without listing its block: that made the pass
    quadratic in the block's length)."""
    with ir.InsertionPoint.after(op):
        return _emit(name, op.location, **attrs)


# ----------------------------------------------------------------------------
# mode=barrier
# ----------------------------------------------------------------------------


class _BarrierMode:
    """pipe_barrier(ALL) before every node depending on a node since the last barrier."""

    def __init__(self, analysis: AccessAnalysis):
        self.analysis = analysis
        self.count = 0

    def run(self, nodes: list[Node], loop: Node | None = None) -> None:
        barriers: set[int] = set()
        start: list[tuple[Node, bool]] = []
        while True:
            before = len(barriers)
            end = self._pass(nodes, start, barriers, loop)
            # A loop body runs again after itself: iterate to the fixpoint with
            # what the previous iteration left unordered.
            if loop is None or loop.trip_count <= 1 or (
                    len(barriers) == before and {id(x) for x, _ in start} == {id(x) for x, _ in end}):
                break
            unique = {id(x): x for x, _ in end}
            start = [(x, True) for x in unique.values()]
        for i in sorted(barriers):
            insert_before(nodes[i].op, "cce.pipe_barrier", pipe="ALL")
            self.count += 1
        for y in nodes:
            for child in y.children:
                self.run(child, y if y.op.name == "scf.for" else None)

    def _pass(self, nodes: list[Node], dirty: list[tuple[Node, bool]], barriers: set[int],
              loop: Node | None) -> list[tuple[Node, bool]]:
        """One walk over the block; dirty entries are (node, from the previous iteration)."""
        dirty = list(dirty)
        for i, y in enumerate(nodes):
            if i not in barriers and any(
                    needs_order(p, q) for x, prev in dirty
                    for p, q in dependent_pipes(x, y, self.analysis, loop if prev else None)):
                barriers.add(i)
            if i in barriers:
                dirty = []
            dirty.append((y, False))
        return dirty


# ----------------------------------------------------------------------------
# The pass
# ----------------------------------------------------------------------------


class InsertSyncPass(Pass):
    name = "npu-insert-sync"
    summary = "Insert set_flag/wait_flag/pipe_barrier from the dependencies between cce ops"
    options = (
        Option("mode", str, "precise", "precise flags per dependency, or the conservative "
               "full-barrier baseline", choices=("precise", "barrier")),
        Option("sink-sets", bool, False, "precise mode: place a set_flag after the run of "
               "instructions of the producer's pipe that directly follows the producer "
               "(one flag for the run, and the pipe is not held for each one's latency)"),
        Option("carried-span", str, "fit", "precise mode: a loop-carried pair's pre-set and "
               "balancing wait go as far before and after the loop as a free event id allows "
               "(fit), or always at the start and end of the loop's block (block: the old "
               "placement, which runs out of ids in a function of many loops)",
               choices=("fit", "block")),
    )

    def run(self, module: ir.Operation) -> None:
        for func in walk(module, lambda o: o.name == "func.func"):
            if not func.regions[0].blocks:
                continue
            analysis = AccessAnalysis(self.target)
            nodes = build_block(func.regions[0].blocks[0], analysis)
            if self.mode == "barrier":
                _BarrierMode(analysis).run(nodes)
            else:
                _PreciseMode(analysis, self.target, self.sink_sets,
                             self.carried_span).run_function(nodes)


# ----------------------------------------------------------------------------
# mode=precise
# ----------------------------------------------------------------------------


@dataclass
class FlagPair:
    """One set_flag/wait_flag pair; `loop` is set for a loop-carried pair."""

    src: str
    dst: str
    producer: Node
    consumer: Node
    loop: Node | None = None
    intervals: list[tuple[int, int]] = field(default_factory=list)
    event: int = -1
    # A carried pair's balancing wait goes before this node of the loop's
    # block (a consumer of the loop's work it orders) instead of at the end;
    # `balance_fixed`: it stays at the end, where later syncs count on it.
    balance_at: Node | None = None
    balance_fixed: bool = False
    # Where event allocation put a carried pair's pre-set (before this node
    # of the loop's block; None: at the block's start) and, without
    # `balance_at`, its balancing wait (None: at the block's end).
    preset_before: Node | None = None
    wait_before: Node | None = None


@dataclass
class _Positions:
    before: int
    after: int
    pre: int = 0
    post: int = 0


class _BlockState:
    """Vector clocks of one walk over a block: what each pipe knows has finished."""

    def __init__(self) -> None:
        self.count: dict[str, int] = {}
        self.known: dict[str, dict[str, int]] = {}
        self.index: dict[tuple[int, int], dict[str, int]] = {}      # (copy, node) -> pipe -> idx
        self.snapshot: dict[tuple[int, int], dict[str, dict[str, int]]] = {}
        self.issued_on: dict[str, list[int]] = {}  # pipe -> node numbers in issue order (copy 0)

    def first_unordered(self, y_pipes: frozenset[str], limit: int) -> int:
        """A node number before which `orders_all` holds for every node of
        copy 0 against a node on `y_pipes` (at most `limit`): the scans for
        dependencies start there instead of at the block's first node."""
        first = limit
        for p, issued in self.issued_on.items():
            for q in y_pipes:
                if p != q or p == "V":
                    known = self.knows(q, p)  # p's first `known` instructions are ordered
                    if known < len(issued):
                        first = min(first, issued[known])
        return first

    def knows(self, q: str, p: str) -> int:
        return self.known.get(q, {}).get(p, 0)

    def learn(self, q: str, p: str, key: tuple[int, int]) -> None:
        """Pipe q waited for a flag set by p right after node `key`."""
        mine = self.known.setdefault(q, {})
        for pipe, v in self.snapshot[key][p].items():
            mine[pipe] = max(mine.get(pipe, 0), v)
        mine[p] = max(mine.get(p, 0), self.index[key][p])

    def orders_all(self, key: tuple[int, int], x_pipes: frozenset[str],
                   y_pipes: frozenset[str]) -> bool:
        """True when every pipe of y already knows node `key` finished on each
        of x's pipes (or needs no order after it): no dependency from that
        node can call for a sync, so there is nothing to analyse."""
        index = self.index[key]
        for p in x_pipes:
            for q in y_pipes:
                if p == q:
                    if p == "V" and self.knows("V", "V") < index[p]:
                        return False
                elif self.knows(q, p) < index[p]:
                    return False
        return True

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
        return {(q, p) for q in self.known for p, n in self.count.items()
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


class _PreciseMode:
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
        self._clock = 0

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
        offers: dict[tuple[str, str], FlagPair] = {}
        for fp in self.pairs[first_new:]:
            if fp.loop is not None and self._last_of(nodes, fp.src) is fp.producer:
                offers[(fp.src, fp.dst)] = fp
        self.pairs += inner_pairs
        self.v_barriers += inner_vbars
        return _Exit(st.implied(), offers)

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
        vbar: set[int] = set()
        copies = 2 if loop is not None and loop.trip_count > 1 else 1
        for copy in range(copies):
            for i, y in enumerate(nodes):
                key = (copy, i)
                if copy == 1:
                    for p, q, j in waits_before.get(i, []):
                        st.learn(q, p, (1, j))
                    if i in vbar:
                        st.barrier_v()
                need: dict[tuple[str, str], tuple[int, int]] = {}
                need_vbar = False
                # same-iteration dependencies (first walk only: replayed after)
                candidates = [((copy, j), nodes[j], None)
                              for j in range(st.first_unordered(y.pipes, i), i)] if copy == 0 else []
                if copy == 1:
                    candidates = [((0, j), nodes[j], loop)
                                  for j in range(st.first_unordered(y.pipes, len(nodes)), len(nodes))]
                for xkey, x, carried in candidates:
                    if st.orders_all(xkey, x.pipes, y.pipes):
                        continue  # whatever x -> y depends on is ordered already
                    for p, q in dependent_pipes(x, y, self.analysis, carried):
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
                        offer.balance_at = y
                        if copy == 0:
                            waits_before.setdefault(i, []).append((p, q, j))
                        st.learn(q, p, xkey if copy == 0 else (1, j))
                        continue
                    if self.sink_sets and (copy == 0 or j < i):
                        j = self._sink(nodes, j, i, p)
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
    def _sink(nodes: list[Node], j: int, i: int, p: str) -> int:
        """The last node of the run of single instructions of pipe p that
        follows node j and precedes node i. A set_flag holds its pipe until
        every earlier instruction has finished, so a set between two
        transfers of a mover pipe idles it for the first one's latency; set
        after the run instead (one flag then covers the whole run, and the
        consumer starts when the run has landed)."""
        while j + 1 < i and not nodes[j + 1].is_compound and nodes[j + 1].pipes == {p}:
            j += 1
        return j

    def _pair(self, p: str, q: str, x: Node, y: Node, loop: Node | None) -> None:
        px, py = self.pos[id(x)], self.pos[id(y)]
        # A carried pair's intervals are set when event ids are allocated
        # (`_carried_intervals`), once its balancing wait has found its place.
        intervals = [(px.after, py.before)] if loop is None else []
        self.pairs.append(FlagPair(p, q, x, y, loop, intervals))

    def _merge_carried(self, group: list[FlagPair], keep_up_to: int = 0) -> list[FlagPair]:
        """One carried pair per loop: set after the latest producer, wait
        before the earliest consumer. It still orders every producer of one
        iteration before every consumer of the next, with one event id per
        loop instead of one per buffer slot (used only when ids run out)."""
        merged: dict[int, FlagPair] = {}
        kept = []
        per_loop: dict[int, int] = {}
        for fp in group:
            if fp.loop is not None:
                per_loop[id(fp.loop)] = per_loop.get(id(fp.loop), 0) + 1
        for fp in group:
            if fp.loop is None or per_loop[id(fp.loop)] <= keep_up_to:
                kept.append(fp)
                continue
            have = merged.get(id(fp.loop))
            if have is None:
                merged[id(fp.loop)] = fp
                kept.append(fp)
                continue
            if self.pos[id(fp.producer)].after > self.pos[id(have.producer)].after:
                have.producer = fp.producer
            if self.pos[id(fp.consumer)].before < self.pos[id(have.consumer)].before:
                have.consumer = fp.consumer
            if fp.balance_at is not None and (
                    have.balance_at is None
                    or self.pos[id(fp.balance_at)].before < self.pos[id(have.balance_at)].before):
                have.balance_at = fp.balance_at
            have.balance_fixed |= fp.balance_fixed
            self._carried_intervals(have, tight=False)
        return kept

    # -- event ids -------------------------------------------------------------------
    def _color(self, group: list[FlagPair]) -> list[FlagPair]:
        """Greedy interval colouring by first use; returns the pairs left without an id."""
        limit = self.target.events_per_pipe_pair
        group.sort(key=lambda f: min(a for a, _ in f.intervals))
        used: list[list[FlagPair]] = [[] for _ in range(limit)]
        failed = []
        for fp in group:
            fp.event = -1
            for e in range(limit):
                if not any(_intersects(fp, other) for other in used[e]):
                    fp.event = e
                    used[e].append(fp)
                    break
            else:
                failed.append(fp)
        return failed

    # -- carried pairs: where the pre-set and the balancing wait go ----------------
    #
    # A carried pair's pre-set may stand anywhere in the loop's block before
    # the loop, and its balancing wait anywhere after it (before `balance_at`
    # when a later node counts on it): earlier or later only changes how
    # long the other pipe waits, never what is ordered. The farther out, the
    # less they delay (a pre-set right before the loop makes the loop's first
    # consumer wait for all of the producer pipe's earlier work, e.g. the
    # previous op's stores; a balancing wait right after it stalls the
    # consumer pipe's next op), but the longer they hold an event id. With
    # `carried-span=block` they span the whole block, as before: a function
    # of many loops then ran out of ids and fell back to full barriers
    # between ops. With `fit` they start at the loop (ids are allocated on
    # those tight intervals) and are then widened as far as some id stays
    # free (`_widen_carried`).

    def _preset_ticks(self, fp: FlagPair) -> list[tuple[int, Node | None]]:
        """(tick, node the pre-set goes before; None: block start), latest first."""
        nodes = self.block_nodes[id(fp.loop)]
        start, _ = self.block_span[id(fp.loop)]
        k = next(i for i, n in enumerate(nodes) if n is fp.loop)
        return [(self.pos[id(n)].before, n) for n in reversed(nodes[:k + 1])] + [(start, None)]

    def _wait_ticks(self, fp: FlagPair) -> list[tuple[int, Node | None]]:
        """(tick, node the balancing wait goes before; None: block end), earliest first."""
        if fp.balance_at is not None:
            return [(self.pos[id(fp.balance_at)].before, fp.balance_at)]
        nodes = self.block_nodes[id(fp.loop)]
        _, end = self.block_span[id(fp.loop)]
        k = next(i for i, n in enumerate(nodes) if n is fp.loop)
        return [(self.pos[id(n)].before, n) for n in nodes[k + 1:]] + [(end, None)]

    def _carried_intervals(self, fp: FlagPair, tight: bool) -> None:
        """Right around the loop (`tight`) or over the whole block."""
        pre, wait = self._preset_ticks(fp), self._wait_ticks(fp)
        if tight:
            (x, fp.preset_before), (y, fp.wait_before) = pre[0], wait[0]
        else:
            (x, fp.preset_before), y = pre[-1], self.block_span[id(fp.loop)][1]
            fp.wait_before = None
        fp.intervals = [(x, self.pos[id(fp.consumer)].before),
                        (self.pos[id(fp.producer)].after, y)]

    def _widen_carried(self, group: list[FlagPair]) -> None:
        """Move each carried pair's pre-set earlier and balancing wait later,
        on whichever event id lets them go farthest without meeting another
        pair's interval on that id (loops in program order)."""
        by_event: dict[int, list[FlagPair]] = {}
        for fp in group:
            by_event.setdefault(fp.event, []).append(fp)
        carried = sorted((fp for fp in group if fp.loop is not None),
                         key=lambda f: self.pos[id(f.loop)].before)
        for fp in carried:
            by_event[fp.event].remove(fp)
            consumer, producer = self.pos[id(fp.consumer)].before, self.pos[id(fp.producer)].after
            pre, wait = self._preset_ticks(fp), self._wait_ticks(fp)
            tight = [(pre[0][0], consumer), (producer, wait[0][0])]
            best = None
            for event in range(self.target.events_per_pipe_pair):
                others = [iv for o in by_event.get(event, ()) for iv in o.intervals]
                if any(x0 <= y1 and y0 <= x1 for x0, x1 in tight for y0, y1 in others):
                    continue
                # [x, consumer] and [producer, y] must miss every other interval.
                after = max((hi for lo, hi in others if lo <= consumer), default=-1)
                before = min((lo for lo, hi in others if hi >= producer), default=1 << 62)
                x = next(c for c in reversed(pre) if c[0] > after)
                y = next(c for c in reversed(wait) if c[0] < before)
                gain = (pre[0][0] - x[0]) + (y[0] - wait[0][0])
                if best is None or gain > best[0] or (gain == best[0] and event == fp.event):
                    best = (gain, event, x, y)
            _, fp.event, (x, fp.preset_before), (y, fp.wait_before) = best
            fp.intervals = [(x, consumer), (producer, y)]
            by_event.setdefault(fp.event, []).append(fp)

    def _fit(self, group: list[FlagPair]) -> list[FlagPair]:
        """`carried-span=fit` for a pipe pair whose block-wide intervals ran
        out of ids: returns the pairs still without one (`group` is updated
        in place). A loop with more carried pairs than half the ids is
        merged first (its sets would hold the producer pipe once per buffer
        every iteration: the fused 4-op chain of test_pinned_cycles runs 40%
        slower unmerged), the others keep one pair per buffer (merging a
        matmul's 3 or 4 L1/L0 ping-pong pairs costs BERT's ffn_in 20%);
        every loop is merged if ids still run out."""
        merged = self._merge_carried(group, self.target.events_per_pipe_pair // 2)
        for fp in merged:
            if fp.loop is not None:
                self._carried_intervals(fp, tight=True)
        failed = self._color(merged)
        if failed:
            merged = self._merge_carried(merged)
            for fp in merged:
                if fp.loop is not None:
                    self._carried_intervals(fp, tight=True)
            failed = self._color(merged)
        self._widen_carried([fp for fp in merged if fp.event >= 0])
        group[:] = merged
        return failed

    def _allocate_events(self) -> None:
        """Event ids per pipe pair, by interval colouring. Carried pairs first
        span their whole block. When the ids run out, `carried-span=block`
        merges each loop's carried pairs into one; `fit` shrinks them to the
        loop and widens them again as far as ids allow (`_fit`). A pair
        still without an id becomes a full barrier."""
        by_pipes: dict[tuple[str, str], list[FlagPair]] = {}
        for fp in self.pairs:
            if fp.loop is not None:
                self._carried_intervals(fp, tight=False)
            by_pipes.setdefault((fp.src, fp.dst), []).append(fp)
        kept = []
        for group in by_pipes.values():
            if self._color(group):
                if self.carried_span == "fit":
                    failed = self._fit(group)
                else:
                    group = self._merge_carried(group)
                    failed = self._color(group)
                for fp in failed:
                    # Still out of ids: a full barrier right before the
                    # consumer orders the producer too (in any earlier iteration),
                    # and one before the node its balancing wait was to order.
                    self.all_barriers.append(fp.consumer)
                    if fp.balance_at is not None:
                        self.all_barriers.append(fp.balance_at)
                    elif fp.balance_fixed:
                        self.end_barriers.append(fp.loop)
            kept += [fp for fp in group if fp.event >= 0]
        self.pairs = kept

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
                if fp.preset_before is not None:
                    insert_before(fp.preset_before.op, "cce.set_flag", **attrs)
                else:
                    with ir.InsertionPoint.at_block_begin(block) as start:
                        _emit("cce.set_flag", start.ref_operation.location, **attrs)
                wait_before = fp.balance_at or fp.wait_before
                if wait_before is not None:
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


def _intersects(a: FlagPair, b: FlagPair) -> bool:
    return any(x0 <= y1 and y0 <= x1 for x0, x1 in a.intervals for y0, y1 in b.intervals)

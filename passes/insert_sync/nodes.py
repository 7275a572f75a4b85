"""The dependence graph of `npu-insert-sync`: a block's cce instructions and
compound nodes (loops / ifs), and the RAW/WAR/WAW test between two nodes."""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

from mlir import ir

from npu.analysis.access import (SYNC_OPS, AccessAnalysis, AccessError, is_access_name,
                                 is_access_op)
from npu.analysis.affine import Affine, IvKey
from npu.analysis.byte_ranges import OpAccess, Range, may_overlap
from npu.ir import LEAF_OP_NAMES, has_regions, walk_held
from npu.passes.base import PassError
from npu.target import CHIP_BARRIER_IN_FLIGHT, ON_CHIP_BUFFERS

CONTROL_OPS = ("scf.for", "scf.if")
FENCE_OP = "cce.sync_all"
# The pipe a chip barrier does not drain: its loads (GM to on-chip buffers,
# npu-prefetch's constant weights for the op after the barrier) stream on
# through it, so their consumers after it need flags.
IN_FLIGHT = CHIP_BARRIER_IN_FLIGHT


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

    # (cached: an op's name is a binding call, asked per node and pair in the walks)
    @functools.cached_property
    def is_compound(self) -> bool:
        return self.op.name in CONTROL_OPS

    @functools.cached_property
    def is_fence(self) -> bool:
        """A chip barrier (`cce.sync_all`): every pipe of the core but MTE2
        drains before it, so everything before it but MTE2's loads is ordered
        before everything after it (the simulator and the race checker model
        it so)."""
        return self.op.name == FENCE_OP

    def groups_by_pipe(self) -> dict[str, tuple[dict[tuple, tuple[Range, ...]],
                                                dict[tuple, tuple[Range, ...]]]]:
        """pipe -> (ranges written, ranges read) by the node's ops on that
        pipe, grouped by `_overlap_key`: ranges whose keys differ never
        overlap, so only ranges of one key need testing against each other.
        A compound's many ops repeat the same ranges: each is kept once."""
        cached = self.__dict__.get("_groups_by_pipe")
        if cached is None:
            cached = self.__dict__["_groups_by_pipe"] = _grouped(self.accesses)
        return cached

    def overlap_keys(self) -> frozenset[tuple]:
        """Every `_overlap_key` of the node's ranges: two nodes without a
        common one cannot depend on each other (most pairs a block tests)."""
        cached = self.__dict__.get("_overlap_keys")
        if cached is None:
            cached = self.__dict__["_overlap_keys"] = frozenset(
                key for w, r in self.groups_by_pipe().values() for key in (*w, *r))
        return cached


def _grouped(accesses: list[OpAccess]) -> dict[str, tuple[dict[tuple, tuple[Range, ...]],
                                                          dict[tuple, tuple[Range, ...]]]]:
    """`Node.groups_by_pipe` of these accesses, in one pass over their ranges
    (17k nodes in BERT-12 on 32 cores; an instruction's ranges need not be
    told apart: a repeat only tests one pair twice)."""
    lists: dict[str, tuple[dict[tuple, list[Range]], dict[tuple, list[Range]]]] = {}
    for a in accesses:
        pair = lists.get(a.pipe)
        if pair is None:
            pair = lists[a.pipe] = ({}, {})
        for ranges, groups in ((a.writes, pair[0]), (a.reads, pair[1])):
            for r in ranges:
                key = _overlap_key(r)
                group = groups.get(key)
                if group is None:
                    groups[key] = [r]
                else:
                    group.append(r)
    once = tuple if len(accesses) == 1 else (lambda rs: tuple(dict.fromkeys(rs)))
    return {p: ({k: once(rs) for k, rs in w.items()}, {k: once(rs) for k, rs in r.items()})
            for p, (w, r) in lists.items()}


def _overlap_key(r: Range) -> tuple:
    """Ranges with different keys cannot overlap (`may_overlap`): those of
    different roots, except planned and unplanned buffers of one on-chip
    space, which share the space's key."""
    if r.space in ON_CHIP_BUFFERS and r.root[0] in ("space", "alloc"):
        return ("on-chip", r.space)
    return r.root


def _widen(r: Range, analysis: AccessAnalysis, ivs: set[IvKey]) -> Range:
    """`r` over every value of the ivs in `ivs` (the loops nested in a compound)."""
    terms = r.start.terms
    if not terms or not any(iv in ivs for iv, _ in terms):
        return r
    keep = [iv for iv, _ in r.start.terms if iv not in ivs]
    b = analysis.bounds(r.start, keep)
    if b is None:
        return Range(r.root, r.space, Affine(0), 1 << 62)
    lo, spread = b
    return r.widened(lo, spread)


@dataclass
class _Inside:
    """What a block holds at any depth, gathered while its nodes are built:
    its cce instructions (program order) and the ivs of its loops. Each
    enclosing compound widens its instructions' ranges over these; walking
    each compound's ops anew walked a loop nested d deep d times."""

    accesses: list[ir.Operation] = field(default_factory=list)
    ivs: set[IvKey] = field(default_factory=set)


def build_block(block: ir.Block, analysis: AccessAnalysis, inside: _Inside | None = None
                ) -> list[Node]:
    """Nodes of `block` in program order (sync ops and scalar ops are skipped);
    `inside` gathers its instructions and loop ivs, nested ones included."""
    nodes: list[Node] = []
    for child in block.operations:
        op = child.operation
        name = op.name  # read once: each read builds a string (about 0.1 CPU s of BERT-12's)
        if name == FENCE_OP:
            # The chip barrier drains every pipe but MTE2 (IN_FLIGHT): it orders more than any
            # flag, so the walk learns everything before it has finished.
            nodes.append(Node(op, [], frozenset()))
            continue
        if name in SYNC_OPS:
            raise PassError("npu-insert-sync expects code without synchronisation; "
                            f"found '{name}' (run it once, on unsynchronised cce)", op)
        if is_access_name(name):
            try:
                acc = analysis.access(op)
            except AccessError as e:
                raise PassError(e.message, e.op) from None
            nodes.append(Node(op, [acc], frozenset([acc.pipe])))
            if inside is not None:
                inside.accesses.append(op)
        elif name in CONTROL_OPS:
            node = _compound(op, analysis, inside)
            if node is not None:
                nodes.append(node)
        elif (name not in LEAF_OP_NAMES and has_regions(op)
              and any(is_access_op(o) for o in walk_held(op) if o is not op)):
            raise PassError(f"npu-insert-sync does not handle cce ops nested in '{op.name}'", op)
    return nodes


def _compound(op: ir.Operation, analysis: AccessAnalysis, outer: _Inside | None = None
              ) -> Node | None:
    """The node of a loop / if (None when it runs no instruction); its
    instructions and ivs join `outer`'s (a loop that never runs included:
    the enclosing compounds' ranges cover its instructions, as one walk of
    their ops would)."""
    inside = _Inside()
    iv, trip, step = None, 1, 1
    if op.name == "scf.for":
        # (its own iv first: a nested loop without constant bounds fails in
        # its own _compound, below)
        key = analysis.iv_key(op.regions[0].blocks[0].arguments[0])
        if key is not None:
            inside.ivs.add(key)
    children = [build_block(region.blocks[0], analysis, inside) for region in op.regions
                if len(region.blocks)]
    if outer is not None:
        outer.accesses += inside.accesses
        outer.ivs |= inside.ivs
    if op.name == "scf.for":
        iv = analysis.iv_key(op.regions[0].blocks[0].arguments[0])
        if iv is None:
            raise PassError("npu-insert-sync needs scf.for loops with constant bounds", op)
        r = analysis.iv_ranges[iv]
        trip, step = r.trip_count, r.step
        if trip == 0:
            return None
    flat: list[OpAccess] = []
    ivs = inside.ivs
    for inner in inside.accesses:
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
    if x.overlap_keys().isdisjoint(y.overlap_keys()):
        return []
    return sharing_pipes(x, y, analysis, carried)


def sharing_pipes(x: Node, y: Node, analysis: AccessAnalysis,
                  carried: Node | None = None) -> list[tuple[str, str]]:
    """`dependent_pipes` of two nodes with a common overlap key (which its
    callers in a block's walk have tested already: 47k pairs in BERT-12 on
    32 cores)."""
    found: list[tuple[str, str]] = []
    y_groups = y.groups_by_pipe()
    for p, (x_writes, x_reads) in x.groups_by_pipe().items():
        for q, (y_writes, y_reads) in y_groups.items():
            if p == q:
                # Inside one in-order pipe only a vector read after a vector
                # write is a hazard (DESIGN.md section 2); other pipes complete
                # in order, and V's WAR/WAW are safe in its in-order pipeline.
                if p == "V" and x_writes and y_reads and _any_overlap(x_writes, y_reads, analysis,
                                                                      carried):
                    found.append((p, q))
            elif ((x_writes and (_any_overlap(x_writes, y_reads, analysis, carried)
                                 or _any_overlap(x_writes, y_writes, analysis, carried)))
                  or (x_reads and y_writes and _any_overlap(x_reads, y_writes, analysis, carried))):
                found.append((p, q))
    return sorted(found) if len(found) > 1 else found


def _any_overlap(earlier: dict[tuple, tuple[Range, ...]], later: dict[tuple, tuple[Range, ...]],
                 analysis: AccessAnalysis, loop: Node | None) -> bool:
    """May a range of `earlier` share a byte with a later one of `later`
    (both grouped by `_overlap_key`)?"""
    for key, ranges in earlier.items():
        others = later.get(key)
        if not others:
            continue
        for a in ranges:
            for b in others:
                if (may_overlap(a, b, analysis) if loop is None
                        else _overlap_later(a, b, analysis, loop)):
                    return True
    return False


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

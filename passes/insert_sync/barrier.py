"""`npu-insert-sync` mode=barrier: the conservative full-barrier baseline."""

from __future__ import annotations

from npu.analysis.access import AccessAnalysis
from npu.passes.insert_sync.builders import insert_before
from npu.passes.insert_sync.nodes import IN_FLIGHT, Node, dependent_pipes, needs_order



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
            if y.is_fence:  # a chip barrier orders like pipe_barrier(ALL), but MTE2's loads
                dirty = [(x, prev) for x, prev in dirty if IN_FLIGHT in x.pipes]
                continue
            if i not in barriers and any(
                    needs_order(p, q) for x, prev in dirty
                    for p, q in dependent_pipes(x, y, self.analysis, loop if prev else None)):
                barriers.add(i)
            if i in barriers:
                dirty = []
            dirty.append((y, False))
        return dirty

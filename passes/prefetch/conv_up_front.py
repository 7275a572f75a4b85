"""npu-prefetch's conv form for weights that npu-lower-conv loads before
the conv's map (`ConvShape.weights_up_front`: a conv MTE2 bounds, or whose
first band opens a loop), on one core (mixed into `ConvDriver`).

Why: such pieces wait for nothing of their own, so `_first_wait` finds no
wait ahead of them and the conv form leaves them. But they queue on MTE2
behind the conv's setup, whose channel patterns' copies to UB wait for the
previous op's vector work on those bytes, and the map queues behind them.
ResNet-50's layer2 conv1 (1x1 512->128 at 28x28, MTE2-bound) loaded its
128 KB (2k cycles) there, while MTE2 idled 10.7k at the start of conv3 two
ops back (its first residual rows wait for conv2's last store): taken
into conv2's tail, each conv1 is 2,051 cycles shorter.

How: the first sweep leaves them (`_up_front`); a second sweep, once every
other conv is placed, takes the conv's first wait to be its map's first
load after the pieces (`_map_after`). Every other conv's gaps are
estimated with these loads where the lowering put them: in one sweep,
layer2's conv2 counted conv3's tail as idle once conv1's weights had left
it (its map's first rows, which conv3 stored long before, follow at once;
the estimate takes them to wait for conv3's last store) and put 7 pieces
there: ResNet-50 1,725,458 cycles against 1,715,752.
"""

from __future__ import annotations

from mlir import ir

from npu.ir import top_level

from .parts import ConvCandidate


class UpFrontConv:
    """The second sweep's candidates (see the module docstring)."""

    def _up_front(self, c: ConvCandidate, tops: list[ir.Operation], own: int,
                  constants: set) -> bool:
        """Whether `c`'s pieces all load before its map, behind a load of
        the conv's own (`_queued`), and outlast the flag they add to the op
        they join (one GM latency: MobileNetV2's projections, 1-12 KB, made
        its depthwise convs 1.1k cycles slower)."""
        if not self.one_core:
            return False
        last = tops.index(top_level(c.pieces[0][0]))
        if self._first_wait(tops, own, last, constants) is not None:
            return False
        path = self.target.path("gm_to_l1")
        return (self._queued(tops, last) and self._map_after(tops, last, constants) is not None
                and sum(self._bytes(p[0]) for p in c.pieces) >= path.latency * path.bytes_per_cycle)

    def _queued(self, tops: list[ir.Operation], last: int) -> bool:
        """Whether an op of the conv before its first piece (`tops[last]`)
        loads GM (its channel patterns into UB): where the pieces come
        first, they load as soon as the previous op's loads are done
        (ResNet-50's layer2 conv3, whose weights load in conv2's tail:
        taken too, into conv1's, ResNet-50 took 1,716,278 cycles against
        1,708,587)."""
        where = self.facts.location(tops[last])
        for j in range(last - 1, -1, -1):
            if not self.facts.works(tops[j]):
                continue
            if self.facts.location(tops[j]) != where:
                return False
            if self.facts.reads(tops[j]):
                return True
        return False

    def _map_after(self, tops: list[ir.Operation], last: int, constants: set) -> int | None:
        """The conv's first top-level op past its first piece (`tops[last]`)
        that loads GM other than host constants (its map), or None."""
        where = self.facts.location(tops[last])
        for j in range(last + 1, len(tops)):
            if not self.facts.works(tops[j]):
                continue
            if self.facts.location(tops[j]) != where:
                return None
            if any(root not in constants for root, _, _ in self.facts.reads(tops[j])):
                return j
        return None

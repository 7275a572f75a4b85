"""`npu-insert-sync` sink-sets: a store's set_flag shares a later hold.

A set_flag holds its pipe until every earlier instruction on it has
finished: right after a GM store (`cce.copy_ub_to_gm`) that is the store's
GM write latency (~350 cycles on ascend910), MTE3 idle while the transfers
after it could stream. When MTE3 sets a flag anyway after a later UB -> L1
copy (the next staging copy of an image), before the store's consumer, the
store's flag is set there instead: that hold is paid already (the copy's
~30 cycles), and the consumer (in the stem, a drain reusing the store's UB
slot bands later) is ordered all the same, since a set orders everything
of its pipe before it.

Done once a block's walk has placed every pair: a walk places a pair when
it meets the consumer, so the later set a store's pair can share is often
placed after it. Moving a set later on its pipe only adds to what the
consumer's pipe knows at its wait, so the syncs the walk dropped as implied
stay implied.
"""

from __future__ import annotations

import bisect

from npu.passes.insert_sync.events import FlagPair
from npu.passes.insert_sync.nodes import Node

STORE_OP = "cce.copy_ub_to_gm"
STAGING_OP = "cce.copy_ub_to_l1"
PIPE = "MTE3"


def share_store_sets(pairs: list[FlagPair], nodes: list[Node], pos: dict) -> None:
    """Move the set of each pair of `pairs` (one block's, over `nodes`) that
    follows a GM store to the first later node of the block (before its
    consumer) that another set of MTE3 follows; `pos` (id(node) ->
    positions) gives the pairs' new intervals."""
    index = {id(n): i for i, n in enumerate(nodes)}

    def at(fp: FlagPair) -> int:
        return index.get(id(fp.producer), -1)

    # Only a store's UB slot taken again by V (a drain) waits: a consumer on
    # MTE2 reads the store's GM bytes in the next op, and a later op's copy
    # (a conv's ones map, `cube_bias`) delayed it (ResNet-50 +1,475 cycles).
    ours = [fp for fp in pairs if fp.src == PIPE and fp.dst == "V" and fp.loop is None
            and fp.producer.op.name == STORE_OP and at(fp) >= 0 and index.get(id(fp.consumer), -1) >= 0]
    mine = {id(fp) for fp in ours}
    # Sets that stay where they are and pass quickly: those after a UB -> L1
    # copy (a staged image's, ~30 cycles of latency). Any later set of MTE3
    # would order the store, but one after another store releases the
    # consumer a GM latency later (1x1 64->256 56, its drains waiting for
    # later stores' sets: 37,988 -> 52,174 cycles).
    points = sorted({at(fp) for fp in pairs if fp.src == PIPE and id(fp) not in mine and at(fp) >= 0
                     and fp.producer.op.name == STAGING_OP})
    for fp in ours:
        j, i = at(fp), index[id(fp.consumer)]
        k = bisect.bisect_right(points, j)
        # the copy of the store's own op (its location: the same source op)
        if k < len(points) and points[k] < i and \
                nodes[points[k]].op.location == fp.producer.op.location:
            fp.producer = nodes[points[k]]
            fp.intervals = [(pos[id(fp.producer)].after, pos[id(fp.consumer)].before)]

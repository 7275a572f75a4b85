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
  instead of fencing the loops off with full barriers (`block`); where ids
  still run out, a pair of one iteration shares the id of one it meets
  (set after the later producer, waited before the earlier consumer), else
  the loops whose carried pairs meet it get one pair each (only those: the
  others keep one per buffer). With `sink-sets=true` (npu-lower's
  default) a set_flag goes after the run of same-pipe instructions that
  directly follows its producer: a set holds its pipe until everything
  before it has finished, so one set per run keeps a mover streaming
  instead of paying each transfer's latency. A loop-carried set of a store
  (its wait in the next iteration) sinks too, through the rest of its run
  of stores: the stores of one iteration then pay MTE3 one latency. A
  store's set that a later UB -> L1 copy's set follows before its consumer
  goes there instead (`store_sets`: the GM latency is not held twice).

A chip barrier (`cce.sync_all`) drains every pipe of the core but MTE2
before the cores meet: both modes take it as ordering everything before it
before everything after it (no flag pair across it: 614 -> 526 flag
operations in BERT seq 128's kernel on 32 cores, 52,031 -> 51,815 cycles),
but MTE2's loads, which stream on through it (npu-prefetch's weights for
the op after it): their consumers after it get a flag pair across it (a
pipe_barrier(ALL) after it in barrier mode).

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
Where that wait would go right before a second loop over the same
ping-ponged buffers, the second loop's carried pair of the same pipes takes
the first loop's last set instead of its own pre-set, and an earlier
carried pair's wait orders what the second body does before it
(`loop_chain`: ResNet's stem pool 34,485 -> 33,318 cycles).
"""

from __future__ import annotations

from mlir import ir

from npu.analysis.access import AccessAnalysis
from npu.ir import functions
from npu.passes.applies import MANY_CORES
from npu.passes.base import Option, Pass
from npu.passes.buffer_lifetimes import collector_for
from npu.passes.insert_sync.barrier import _BarrierMode
from npu.passes.insert_sync.barrier_sets import sink_barrier_sets
from npu.passes.insert_sync.nodes import build_block
from npu.passes.insert_sync.precise import _PreciseMode
from npu.passes.own_tiles import inline_marked



class InsertSyncPass(Pass):
    name = "npu-insert-sync"
    summary = "Insert set_flag/wait_flag/pipe_barrier from the dependencies between cce ops"
    options = (
        Option("mode", str, "precise", "precise flags per dependency, or the conservative "
               "full-barrier baseline", choices=("precise", "barrier")),
        Option("sink-sets", bool, False, "precise mode: place a set_flag after the run of "
               "instructions of the producer's pipe that directly follows the producer "
               "(one flag for the run, and the pipe is not held for each one's latency)",
               needs=(("mode", "precise"),)),
        Option("carried-span", str, "fit", "precise mode: a loop-carried pair's pre-set and "
               "balancing wait go as far before and after the loop as a free event id allows "
               "(fit), or always at the start and end of the loop's block (block: the old "
               "placement, which runs out of ids in a function of many loops)",
               choices=("fit", "block"), needs=(("mode", "precise"),)),
        Option("barrier-sets", bool, True, "precise mode: MTE2's sets right before a chip "
               "barrier (for consumers after it of loads that stream through it) issued after "
               "the first MTE2 set of the one-trip loop that loads first after the barrier, "
               "so that MTE2 does not idle for the streamed loads' latency "
               "(`barrier_sets.py`)", needs=(("mode", "precise"), MANY_CORES)),
    )

    # func -> a `BufferCollector` that followed it until `npu-plan-memory`
    # placed its buffers, the IR unchanged since but for the offsets (as
    # `npu-lower` runs the passes): its access analyses are adopted instead
    # of analysing every op again.
    collectors: dict = {}

    def run(self, module: ir.Operation) -> None:
        for func in functions(module):
            if not func.regions[0].blocks:
                continue
            inline_marked(func)  # npu-own-tiles' one-trip loops: ordered op by op
            analysis = AccessAnalysis(self.target)
            collector = collector_for(self.collectors, func)
            if collector is not None:
                analysis.adopt(collector.analyses(func))
            nodes = build_block(func.regions[0].blocks[0], analysis)
            if self.mode == "barrier":
                _BarrierMode(analysis).run(nodes)
            else:
                _PreciseMode(analysis, self.target, self.sink_sets,
                             self.carried_span).run_function(nodes)
                if self.barrier_sets:
                    sink_barrier_sets(func.regions[0].blocks[0])

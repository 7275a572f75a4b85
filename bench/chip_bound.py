"""A lower bound on any program for one BERT-base layer on the whole chip.

Every hardware number comes from the target description (`npu.target`); the
layer's shapes from the command line (BERT-base by default). The bound is the
largest of three floors:

  compute   the forced chip barriers (`sync_all_cycles` each: from the last
            core's arrival, its pipes drained, until all go on, so no core
            computes in one) + the first load's GM latency + all cores' cube
            cycles (or vector cycles, the larger) over the cores;
  movers    every byte entering a core comes through its MTE2 (gm_to_l1 /
            gm_to_ub, bytes_per_cycle a core; the target has no core-to-core
            path): the least bytes over all cores for the four projections,
            over all cores' bandwidth. Cores may idle: a core's share of a
            matmul may be as large as the cube can do in the whole bound, and
            the bytes per MAC only fall as a share grows, so every MAC costs
            at least the bytes per MAC of the largest share (solved for T;
            a share's cube cycles and its own bytes over one MTE2 both fit
            in T);
  bus       the model's weights, input and output once over the chip's GM
            bandwidth (re-reads and intermediates may stay in L2).

Assumptions (the program class; summarised in the output):
  A1 A core's share of one matmul is a box of m rows x n columns x k of the
     reduction (Loomis-Whitney: for given footprints of A, B and C no set of
     MACs is larger). It reads its B (weights, f16) always, its A (f16) only
     for the projections fed by a layernorm or the layer input (QKV, ffn_in);
     out_proj's A (attention's output) and ffn_out's (GELU's) may be the
     core's own results and cost nothing (relaxation). A reduction split into
     p pieces passes p - 1 f32 partial sums through GM: 4 (1 - k/K) bytes a
     piece. Residual, bias, K and V reads, and a layernorm row recomputed on
     every core that needs it: free (relaxation).
  A2 Two reductions in a layer cross cores: a row of out_proj's sums needs
     every head's attention, a row of ffn_out's every ffn column. Finishing
     either row on one core needs a whole weight matrix on it (at least
     hidden^2 f16 through one MTE2: checked to exceed the bound), so each
     needs a barrier between the last partial written and its first use:
     2 a layer, 2L for L layers; attention, ln1 and ln2 need none (a core may
     compute its head's K and V, or a layernorm row, itself). The target's
     one cross-core mechanism is the GM-flag barrier (`cce.sync_all`, a GM
     write and a polling read); MTE2 loads stream on through it
     (CHIP_BARRIER_IN_FLIGHT), so the movers' floor adds no barrier time
     (any byte may move in any phase). Point-to-point flags, which this
     target does not have, could overlap that time: the compute floor
     without the barriers is printed too.
  A3 Vector floors: every matmul result leaves L0C through the V pipe
     (l0c_to_ub) in f32; softmax and GELU need one transcendental repeat per
     element (f16), a layernorm one simple repeat (the real ops take several).
  A4 L1 and L0/UB capacity bind no floor: the movers' floor counts bytes,
     wherever they are staged, and 32 cores' L1 hold a layer's weights
     (printed); they bind the program shapes below (weights load early only
     as far as L1 holds them beside the phase's operands, and only in MTE2
     time left idle before).

The second table is not a bound: the best of a few concrete program shapes
(splits, what loads early), each phase at its busiest per-core pipe plus
one GM latency, every pipe at 100%: whether the targets are within reach of
a program the bound does not exclude.

    .venv/bin/python bench/chip_bound.py [--target ascend910] [--seqs 128,512] [--layers 12]
"""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass

# bench/chip.py (2026-11-27): the chip ideal of the layer (cube / cores or the
# model's GM bytes / bus) and the one-core 12-layer cycles the targets use.
IDEAL = {128: 12_486, 512: 31_104}
RATIO = {128: 3.0, 512: 2.0}
ONE_CORE_12 = 4_059_968
SPEEDUP = 16
MEASURED = {128: 45_311, 512: 98_916, "12x128": 528_191}


@dataclass(frozen=True)
class Shape:
    seq: int
    hidden: int = 768
    heads: int = 12
    ffn: int = 3072

    def matmuls(self) -> list[tuple[str, int, int, int, bool]]:
        """(name, M, K, N, A read from GM) of the four projections."""
        s, d, f = self.seq, self.hidden, self.ffn
        return [("qkv", s, d, 3 * d, True), ("out_proj", s, d, d, False),
                ("ffn_in", s, d, f, True), ("ffn_out", s, f, d, False)]

    def weight_bytes(self) -> int:
        return 2 * sum(k * n for _, _, k, n, _ in self.matmuls())


@dataclass(frozen=True)
class Machine:
    """The target's numbers this bound uses."""

    cores: int
    mte2: int          # gm -> L1/UB bytes a cycle, a core
    mte3: int          # UB -> gm bytes a cycle, a core
    gm_latency: int
    drain: int         # l0c -> UB bytes a cycle (V pipe)
    macs: int          # cube MACs a cycle, a core
    vec_bytes: int
    vec_simple: int
    vec_trans: int
    barrier: int
    bus: int
    l1: int

    @classmethod
    def of(cls, t) -> "Machine":
        macs = t.fractal ** 3 * t.cube_blocks_per_cycle // t.cube_cycles_per_block
        return cls(t.cores, t.path("gm_to_l1").bytes_per_cycle, t.path("ub_to_gm").bytes_per_cycle,
                   t.path("gm_to_l1").latency, t.path("l0c_to_ub").bytes_per_cycle, macs,
                   t.vector_bytes, t.vector_cycles("simple"), t.vector_cycles("transcendental"),
                   t.sync_all_cycles, t.gm_chip_bytes_per_cycle, t.capacity("l1"))


def share_bytes(w: float, M: int, K: int, N: int, reads_a: bool) -> tuple[float, tuple]:
    """Least MTE2 bytes of a box share of w MACs (A1), and its m, n, k.

    For each whole k the cost 2w/m + 2mk [A read] + 4(1 - k/K) w/k is convex
    in m, taken at its continuous minimum within m <= M, n = w/(mk) <= N (a
    continuous m and n only lower the cost, so the floor stays valid)."""
    best = (math.inf, ())
    for k in range(1, K + 1):
        lo, hi = max(1.0, w / (k * N)), float(min(M, w / k))
        if lo > hi:
            continue
        m = min(max(math.sqrt(w / k), lo), hi) if reads_a else hi
        cost = 2 * w / m + (2 * m * k if reads_a else 0) + 4 * (1 - k / K) * w / k
        best = min(best, (cost, (round(m, 1), round(w / (m * k), 1), k)))
    return best


def movers_floor(sh: Shape, mc: Machine, layers: int = 1) -> tuple[int, dict]:
    """Smallest T with cores x mte2 x T >= the bytes of all MACs of `layers`
    layers, each MAC at the bytes per MAC of the largest share one core can
    compute and move in T (in a stack a share may grow with the stack's T)."""
    def need(T: float) -> tuple[float, dict]:
        total, shares = 0.0, {}
        for name, M, K, N, ra in sh.matmuls():
            W = M * K * N
            w = min(W, mc.macs * T)
            if share_bytes(w, M, K, N, ra)[0] > mc.mte2 * T:
                lo, hi = 1.0, w          # the share's own bytes must move in T too
                while hi - lo > max(1.0, hi * 1e-6):
                    mid = (lo + hi) / 2
                    lo, hi = (mid, hi) if share_bytes(mid, M, K, N, ra)[0] <= mc.mte2 * T \
                        else (lo, mid)
                w = lo
            cost, box = share_bytes(w, M, K, N, ra)
            total += W * cost / w
            shares[name] = (w, cost, box)
        return total, shares
    lo, hi = 1.0, 1e7
    while hi - lo > 1:
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if layers * need(mid)[0] > mc.cores * mc.mte2 * mid else (lo, mid)
    return math.ceil(hi), need(hi)[1]


def segments(sh: Shape, mc: Machine) -> list[tuple[str, float, float]]:
    """(segment, cube cycles, vector cycles), all cores' work (A2, A3)."""
    s, d, f, h = sh.seq, sh.hidden, sh.ffn, sh.heads
    dh = d // h
    mm = {n: M * K * N for n, M, K, N, _ in sh.matmuls()}
    att = 2 * h * s * s * dh
    drain = lambda elems: 4 * elems / mc.drain  # noqa: E731
    rep = lambda elems, per: elems * 2 / mc.vec_bytes * per  # noqa: E731 (f16 repeats)
    seg1_v = drain(s * 3 * d + h * s * s + s * d + s * d) + rep(h * s * s, mc.vec_trans)
    seg3_v = drain(s * f + s * d) + rep(s * f, mc.vec_trans)
    ln_v = rep(s * d, mc.vec_simple)
    return [("qkv+attention+out_proj", (mm["qkv"] + att + mm["out_proj"]) / mc.macs, seg1_v),
            ("ln1", 0.0, ln_v),
            ("ffn_in+gelu+ffn_out", (mm["ffn_in"] + mm["ffn_out"]) / mc.macs, seg3_v),
            ("ln2", 0.0, ln_v)]


def layer_bound(sh: Shape, mc: Machine, layers: int = 1) -> dict:
    segs = segments(sh, mc)
    work = layers * max(sum(c for _, c, _ in segs), sum(v for _, _, v in segs)) / mc.cores

    def compute(barriers: int) -> float:
        return barriers * mc.barrier + mc.gm_latency + work
    barriers = 2 * layers
    movers, shares = movers_floor(sh, mc, layers)
    d, f = sh.hidden, sh.ffn
    params = sh.weight_bytes() + 4 * (4 * d + f + d + 4 * d)  # biases, LN (f32)
    bus = (layers * params + 2 * 4 * sh.seq * d) / mc.bus
    bound = max(compute(barriers), movers, bus)
    # A2: a program with fewer barriers has a core reading a whole hidden^2
    # matrix; its floor is that core's reads, or the others without barriers.
    no_barrier = 2 * d * d / mc.mte2
    alt = max(no_barrier, compute(0), movers, bus)
    return {"compute": compute(barriers), "flags": compute(0), "movers": movers, "bus": bus, "segs": segs,
            "shares": shares, "barriers": barriers, "no_barrier": no_barrier,
            "bound": min(bound, alt)}


@dataclass
class Phase:
    name: str
    mte2: float = 0.0      # bytes a core
    cube: float = 0.0      # cycles
    vec: float = 0.0       # cycles
    mte3: float = 0.0      # bytes a core
    weights: float = 0.0   # bytes a core, loadable before the phase
    early: float = 0.0     # of which loaded before it

    chip_weights: float = 0.0  # the phase's weights once (first reads miss L2)

    def bus(self, mc: Machine) -> float:
        """The chip bus: weights once (less the early share) and every core's
        stores (the simulator's L2 writes through)."""
        late = 1 - self.early / self.weights if self.weights else 1
        return (self.chip_weights * late + mc.cores * self.mte3) / mc.bus

    def cycles(self, mc: Machine) -> float:
        return mc.gm_latency + max((self.mte2 + self.weights - self.early) / mc.mte2, self.cube,
                                   self.vec, self.mte3 / mc.mte3, self.bus(mc))

    def note(self, mc: Machine) -> str:
        return (f"MTE2 {(self.mte2 + self.weights) / mc.mte2:,.0f} "
                f"({self.early / 1024:,.0f} KB early), "
                f"cube {self.cube:,.0f}, V {self.vec:,.0f}, MTE3 {self.mte3 / mc.mte3:,.0f}, "
                f"bus {self.bus(mc):,.0f}")


def _grid(name: str, M: int, K: int, N: int, mc: Machine, a_bytes: int = 2) -> Phase:
    """A matmul on an even grid R x C of the cores (whole reduction), the grid
    with the fewest bytes a core; its result stored f16."""
    R = min((r for r in range(1, mc.cores + 1) if mc.cores % r == 0),
            key=lambda r: (M / r) * K * a_bytes + K * (N * r / mc.cores) * 2)
    m, n = M / R, N * R / mc.cores
    return Phase(f"{name} {R}x{mc.cores // R} (rows x columns)", mte2=a_bytes * m * K,
                 weights=2 * K * n, cube=m * n * K / mc.macs, vec=4 * m * n / mc.drain,
                 mte3=2 * m * n, chip_weights=2 * K * N)


def _rows(name: str, sh: Shape, mc: Machine, parts: int, part_bytes: int) -> Phase:
    """A row group over all cores: `parts` inputs of a row (partial sums or
    finished values) and the residual read, one f16 row stored."""
    rows, d = sh.seq / mc.cores, sh.hidden
    return Phase(name, mte2=(parts * part_bytes + 2) * rows * d,
                 vec=(parts + 2) * 2 * rows * d / mc.vec_bytes, mte3=2 * rows * d)


def _front(sh: Shape, mc: Machine, qkv_barrier: bool, out_grid: bool) -> list[Phase]:
    """QKV, attention, out_proj and ln1. Attention on heads x (cores // heads)
    cores, head h's query rows over its cores, with K and V of the head
    computed on each core (no barrier) or read after QKV on an even grid; then
    out_proj either as the head's slice of its reduction (f32 partial sums,
    summed by ln1's rows) or on a grid after a barrier."""
    s, d, h = sh.seq, sh.hidden, sh.heads
    dh, per_head = d // h, max(1, mc.cores // h)
    q = s / per_head
    att = Phase(f"attention ({h}x{per_head} cores)", cube=2 * q * s * dh / mc.macs,
                vec=4 * (q * s + q * dh) / mc.drain + 2 * q * s / mc.vec_bytes * mc.vec_trans,
                mte3=2 * q * dh)
    phases = []
    if qkv_barrier:
        phases.append(_grid("qkv", s, d, 3 * d, mc))
        att.mte2 += 2 * (q * dh + 2 * s * dh)
    else:
        att.name = "qkv+" + att.name
        att.mte2 += 2 * s * d
        att.weights += 2 * d * 3 * dh
        att.chip_weights += 2 * d * 3 * d
        att.cube += (s * d * 2 * dh + q * d * dh) / mc.macs
        att.vec += 4 * (s * 2 * dh + q * dh) / mc.drain
    phases.append(att)
    if out_grid:
        return phases + [_grid("out_proj", s, d, d, mc), _rows("ln1 (rows)", sh, mc, 1, 2)]
    att.name += "+out_proj part"
    att.weights += 2 * dh * d
    att.chip_weights += 2 * d * d
    att.cube += q * dh * d / mc.macs
    att.vec += 4 * q * d / mc.drain
    att.mte3 += 4 * q * d - 2 * q * dh
    return phases + [_rows(f"sum {h} partials+ln1 (rows)", sh, mc, h, 4)]


def _ffn(sh: Shape, mc: Machine, R: int | None) -> list[Phase]:
    """The ffn fused on a grid R x C (rows x ffn columns): ffn_in's columns and
    GELU stay on the core, ffn_out reduces them (C > 1: f32 partials summed by
    ln2's rows); or (R None) ffn_in and ffn_out on grids with a barrier."""
    s, d, f = sh.seq, sh.hidden, sh.ffn
    if R is None:
        return [_grid("ffn_in+gelu", s, d, f, mc), _grid("ffn_out", s, f, d, mc),
                _rows("ln2 (rows)", sh, mc, 1, 2)]
    C = mc.cores // R
    r, c = s / R, f / C
    ffn = Phase(f"ffn {R}x{C} (rows x columns)", mte2=2 * r * d, weights=2 * d * c * 2,
                cube=2 * r * d * c / mc.macs,
                vec=4 * (r * c + r * d) / mc.drain + 2 * r * c / mc.vec_bytes * mc.vec_trans,
                mte3=(4 if C > 1 else 2) * r * d, chip_weights=4 * d * f)
    return [ffn, _rows(f"sum {C} partials+ln2 (rows)", sh, mc, C, 4) if C > 1 else
            _rows("ln2 (rows)", sh, mc, 1, 2)]


def _timed(phases: list[Phase], mc: Machine) -> float:
    """Each phase's weights load early in the MTE2 time the phases and
    barriers before it leave idle, as far as L1 holds them beside the
    phase's other operands."""
    idle, total = 0.0, 0.0
    for i, ph in enumerate(phases):
        ph.early = max(0.0, min(ph.weights, idle * mc.mte2, mc.l1 - ph.mte2))
        idle -= ph.early / mc.mte2
        cyc = ph.cycles(mc)
        idle += cyc - (ph.mte2 + ph.weights - ph.early) / mc.mte2 + (mc.barrier if i else 0)
        total += cyc + (mc.barrier if i else 0)
    return total


def shape_estimate(sh: Shape, mc: Machine, layers: int = 1
                   ) -> tuple[list[tuple[str, float, str]], float]:
    """The best of a few program shapes (the options of _front and _ffn, the
    same in every layer), each phase at its busiest per-core pipe plus one GM
    latency: not a bound, and it takes every pipe at 100% and every core as
    busy as the critical one. Returns one layer's phases (the last layer's of
    a stack, whose weights load early in the layer before) and the total."""
    best: tuple[float, list] | None = None
    for qkv_barrier in (False, True):
        for out_grid in (False, True):
            for R in [None] + [r for r in range(1, mc.cores + 1) if mc.cores % r == 0]:
                phases = [ph for _ in range(layers)
                          for ph in _front(sh, mc, qkv_barrier, out_grid) + _ffn(sh, mc, R)]
                total = _timed(phases, mc)
                if best is None or total < best[0]:
                    best = (total, phases[len(phases) - len(phases) // layers:])
    total, phases = best
    out: list[tuple[str, float, str]] = []
    for i, ph in enumerate(phases):
        if i or layers > 1:
            out.append(("barrier", mc.barrier, ""))
        out.append((ph.name, ph.cycles(mc), ph.note(mc)))
    return out, total


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--target", default="ascend910")
    p.add_argument("--seqs", default="128,512")
    p.add_argument("--layers", type=int, default=12, help="layers of the stack row (seq 128)")
    p.add_argument("--hidden", type=int, default=768)
    p.add_argument("--heads", type=int, default=12)
    p.add_argument("--ffn", type=int, default=3072)
    args = p.parse_args()
    from npu.target import CHIP_BARRIER_IN_FLIGHT, get_target

    t = get_target(args.target)
    mc = Machine.of(t)
    print(f"target {t.name}: {mc.cores} cores, MTE2 {mc.mte2} B/cycle a core (latency "
          f"{mc.gm_latency}), MTE3 {mc.mte3}, bus {mc.bus} B/cycle, cube {mc.macs} MAC/cycle, "
          f"barrier {mc.barrier} ({CHIP_BARRIER_IN_FLIGHT} streams through), L1 {mc.l1 // 1024} KiB")
    print("assumptions A1-A4 (this script's docstring): box shares of each matmul; weights and")
    print("  layernorm-fed A read (attention's and GELU's outputs free); f32 partial sums; 2 barriers")
    print("  a layer (two cross-core reductions); one repeat per element of vector work\n")
    seqs = [int(x) for x in args.seqs.split(",") if x]
    rows = [(f"seq {s}", Shape(s, args.hidden, args.heads, args.ffn), 1) for s in seqs]
    if args.layers > 1:
        rows.append((f"{args.layers}x seq {seqs[0]}",
                     Shape(seqs[0], args.hidden, args.heads, args.ffn), args.layers))
    print(f"{'row':<14} {'compute':>9} {'movers':>9} {'bus':>8} {'BOUND':>9} {'target':>9} "
          f"{'11-27':>9}  verdict  (11-27: bench/chip.py on 2026-11-27, not rerun here)")
    for label, sh, layers in rows:
        b = layer_bound(sh, mc, layers)
        target, measured = _target(sh.seq, layers, args)
        verdict = ("out of reach" if target and b["bound"] > target else
                   f"not excluded ({target / b['bound']:.2f}x the bound)" if target else "")
        print(f"{label:<14} {b['compute']:>9,.0f} {b['movers']:>9,.0f} {b['bus']:>8,.0f} "
              f"{b['bound']:>9,.0f} {target or 0:>9,.0f} {measured or 0:>9,}  {verdict}")
    for label, sh, layers in rows:
        b = layer_bound(sh, mc, layers)
        if layers == 1:
            print(f"\n{label}: {b['barriers']} barriers ({b['barriers'] * mc.barrier:,} cycles; "
                  f"compute floor without them {b['flags']:,.0f}); all cores' work / {mc.cores}:")
            for name, c, v in b["segs"]:
                print(f"  {name:<24} cube {c / mc.cores:>8,.0f}  vector {v / mc.cores:>7,.0f}")
            print(f"  movers: largest shares (m x n x k) at T = {b['movers']:,.0f}:")
            for name, (w, cost, box) in b["shares"].items():
                print(f"    {name:<9} {w / 1e6:>7.1f}M MACs {box!s:<22} {cost / 1024:>7,.0f} KB")
            print(f"  L1: the layer's weights {sh.weight_bytes() / 2**20:.1f} MiB against "
                  f"{mc.cores} x {mc.l1 // 1024} KiB; a core finishing a row alone (no barrier) "
                  f"reads a {sh.hidden}^2 matrix: {b['no_barrier']:,.0f} cycles")
        else:
            print(f"\n{label}: {b['barriers']} barriers, bus {b['bus']:,.0f}: the weights once")
        phases, total = shape_estimate(sh, mc, layers)
        what = "its last layer" if layers > 1 else "phases"
        print(f"  a program shape (not a bound; {what} at the busiest per-core pipe):")
        for name, cyc, note in phases:
            print(f"    {name:<44} {cyc:>8,.0f}  {note}")
        print(f"    {'total':<44} {total:>8,.0f}")
    return 0


def _target(seq: int, layers: int, args) -> tuple[float | None, int | None]:
    if layers > 1:
        t = ONE_CORE_12 / SPEEDUP if layers == 12 and seq == 128 else None
        return t, MEASURED.get("12x128") if t else None
    if seq in IDEAL and (args.hidden, args.heads, args.ffn) == (768, 12, 3072):
        return RATIO[seq] * IDEAL[seq], MEASURED[seq]
    return None, None


if __name__ == "__main__":
    raise SystemExit(main())

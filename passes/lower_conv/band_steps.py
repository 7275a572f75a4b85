"""A conv's kernel emitted band by band by its caller: `setup` once, then
`emit(i)` for each band in order, then `finish`.

Why: a conv whose result feeds a 1x1 stride-1 conv can keep that result on
chip, band by band, as the next conv's input map in L1 (UB -> L1 instead of
UB -> GM -> L1). That needs the two kernels' bands interleaved, producer
band i then consumer band i, in one stream of code; `ConvKernel.emit` emits
a whole conv at once. Here each band is straight code of its own (static
rows, no loop, no last chunk shared with the next band: another kernel's
band may come between), with its map given by the caller (`fm`, copied
already when `map_ready`) or the kernel's own two maps in turn, and its
result also copied into the caller's L1 map (`map_out`, see
`ConvDrain.store`). Before emission, `footprint` says what the kernel will
hold on chip, so the caller can fit two of them together.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir

from npu.passes.lower_conv.band_maps import Band
from npu.passes.lower_conv.footprint import ConvFootprint, footprint
from npu.passes.lower_conv.kernel import ConvKernel


@dataclass(frozen=True)
class BandStep:
    """One band: image `n`, output rows [ho0, ho0 + band.rows)."""

    n: int
    band: Band
    ho0: int


class BandSteps:
    """The bands of `kernel` (a whole conv on one core), emitted by the caller."""

    def __init__(self, kernel: ConvKernel) -> None:
        self.kernel = kernel
        s, rows = kernel.s, kernel.t.rows
        self.groups = kernel.band_groups(0, s.ho)
        self.steps = [BandStep(n, band, h0 + k * rows) for n in range(s.batch)
                      for band, h0, count in self.groups for k in range(count)]
        self.next = 0
        self.maps: dict[Band, list[ir.Value]] = {}  # the kernel's own, per band shape
        self.uses: dict[Band, int] = {}
        self.given: dict[int, ir.Value] = {}  # band -> its map
        self.turns = 2  # maps per band shape, taken in turn

    def footprint(self) -> ConvFootprint:
        """What the kernel holds on chip (before `setup`)."""
        return footprint(self.kernel)

    def setup(self, share: BandSteps | None = None, cube: tuple | None = None) -> None:
        """The kernel's buffers and the run's state, at the insertion point;
        with `share` (set up already), that kernel's L0A, L0B and L0C; with
        `cube`, those buffers (two L0A halves, two L0B halves, two L0C sets)."""
        k = self.kernel
        if share is not None:
            o = share.kernel
            cube = (o.l0a, o.l0b, o.l0c[:2])
        k.setup(None, cube)
        k.begin_rows(self.groups, len(self.steps) // k.s.batch)
        # one band at a time, each its own: nothing held for a next band (`tail_pairs`)
        assert not k.pairs_tails(), "a conv whose bands share their last chunk (tail_pairs)"

    def emit(self, i: int, fm: ir.Value | None = None, map_ready: bool = False,
             map_out: ir.Value | None = None) -> None:
        """Band i (in order): its input map `fm` ([C1, in rows, W, C0] in L1; None: the
        kernel's own, two in turn per band shape), already there if `map_ready`; its
        result also copied into `map_out` ([Co1, rows, Wo, 16] in L1), if given."""
        assert i == self.next, f"band {i} emitted after band {self.next - 1}"
        step, k = self.steps[i], self.kernel
        assert map_out is None or k.pool is None, "a conv pooled on its drain keeps no map"
        if fm is None and k.image is None:
            fm = self.map_for(i)
        k.map_out = map_out
        k.emit_band(step.n, step.band, step.ho0, fm, map_ready=map_ready)
        k.map_out = None
        self.next += 1

    def map_for(self, i: int) -> ir.Value:
        """Band i's input map in L1: two per band shape, taken in turn (band
        i+2's copies wait for band i's img2col only). A producer kept on chip
        copies its band i into it (`map_out`) before this kernel's band i."""
        if i not in self.given:
            band = self.steps[i].band
            own = self.maps.setdefault(band, [])
            uses = self.uses.get(band, 0)
            self.uses[band] = uses + 1
            if len(own) < self.turns:
                own.append(self.kernel.map_buffer(band))
            self.given[i] = own[uses % self.turns]
        return self.given[i]

    def finish(self) -> None:
        """After the last band: every band emitted, nothing left pending."""
        k = self.kernel
        assert self.next == len(self.steps), f"{self.next} of {len(self.steps)} bands emitted"
        assert k.held is None and k.final_held is None and not k.loads
        k.fill_patterns()

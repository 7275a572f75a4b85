"""The one place that holds every hardware number.

Passes and the simulator read sizes, granules, bandwidths and latencies from a
`Target`; nothing else in the project may hard-code them. Each number carries
its source in `Target.sources` (key -> citation); "estimate" means no public
measurement was found and the value is a documented guess.

Sources cited below:
  [T]   Vyazovtsev, "MLIR-based NN compiler for a matrix-architecture
        processor", MIPT bachelor thesis (shared/seeds/003_*): buffer sizes of
        the DaVinci Max core, fractal shapes, 255-repeat limit, 64-bit
        configuration words.
  [H]   Liao et al., "DaVinci: A Scalable Architecture for Neural Network
        Computing", Hot Chips 31 (2019): cube 16x16x16 fp16 per cycle,
        4096 MAC/cycle, vector unit 2048-bit wide, 32 cores on Ascend 910.
  [M]   Published micro-benchmarks of Ascend 910 memory paths, as summarised
        in issue 3: GM->L1/UB 32-87 B/cycle with ~350 cycles latency,
        L1->L0A ~512 B/cycle, L1->L0B ~256 B/cycle, L0C->UB and UB traffic
        ~128 B/cycle, vector 256 B/cycle for add/mul/max and ~64 B/cycle for
        exp/ln/div/sqrt at fp16, mad latency ~20 cycles.
  [P]   Huawei product figures as reported (Hot Chips 31 slides, Huawei
        Ascend 910 / 310 launch material, summarised e.g. by AnandTech's Hot
        Chips 31 live blog and the Architects' Tech Alliance write-up of the
        910): Ascend 910: 32 DaVinci Max cores, 256 TFLOPS fp16, 512 TOPS
        int8, four HBM2 stacks with 1.2 TB/s in total; Ascend 310: two cores,
        8 TFLOPS fp16, 16 TOPS int8; Ascend 910B (as sold, 910B3): ~313
        TFLOPS fp16, HBM2e ~1.6 TB/s.
  [C]   CANN "Ascend C" programming guide: 8 event ids per pipe pair,
        32-byte UB/L1 alignment, 512-byte L0 fractal granules, dav-c220
        (Ascend 910B) buffer sizes L1 512 KiB, L0C 128 KiB, UB 192 KiB.
  [V]   The vendor's Ascend C devkit (cannmirror/asc-devkit): the mmad perf
        roofline script and platform files, int8 cube 16x16x32 per cycle.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Mapping

KIB = 1024
MIB = 1024 * KIB

# On-chip buffers in data-flow order; "gm" is external and unbounded here.
ON_CHIP_BUFFERS = ("l1", "l0a", "l0b", "l0c", "ub")
# The pipe a chip barrier (`cce.sync_all`) does not drain: the GM loads still
# queued on it stream on through the barrier (estimate: see the source of
# `sync_all_cycles`). npu-insert-sync and the simulator both read it here.
CHIP_BARRIER_IN_FLIGHT = "MTE2"
MEMORY_SPACES = ("gm",) + ON_CHIP_BUFFERS
PIPES = ("S", "V", "M", "MTE1", "MTE2", "MTE3")

# Hardware data paths, named "<src>_to_<dst>", each served by one pipe.
PATH_PIPES: Mapping[str, str] = {
    "gm_to_l1": "MTE2",
    "gm_to_ub": "MTE2",
    "ub_to_gm": "MTE3",
    "ub_to_l1": "MTE3",
    "l1_to_l0a": "MTE1",
    "l1_to_l0b": "MTE1",
    "l0c_to_ub": "V",
    "ub_to_ub": "V",
}


@dataclass(frozen=True)
class Path:
    """A data mover path: cost = latency + ceil(bytes / bytes_per_cycle)."""

    bytes_per_cycle: int
    latency: int


@dataclass(frozen=True)
class Target:
    name: str
    # Buffer capacities in bytes.
    buffer_bytes: Mapping[str, int]
    # Allocation / transfer granule of each buffer in bytes.
    granule_bytes: Mapping[str, int]
    paths: Mapping[str, Path]
    # Cube: fractal block edge (fp16 16x16, int8 16x32) and throughput.
    fractal: int = 16
    fractal_k_int8: int = 32
    # int8 MACs the cube does in the time of one fp16 MAC: a 16x16x32 int8
    # block takes the cycles of a 16x16x16 fp16 block.
    cube_int8_rate: int = 2
    cube_blocks_per_cycle: int = 1
    # A cube narrower than 16x16x16 per cycle (the 310's) takes this many
    # cycles per fractal block.
    cube_cycles_per_block: int = 1
    mad_latency: int = 20
    # img2col (load3d, L1 -> L0A on MTE1): rate in bytes written per cycle and
    # latency; its bytes count on the l1_to_l0a path.
    img2col_bytes_per_cycle: int = 256
    img2col_latency: int = 50
    # The small-channel mode (4 channels of each pixel): slower per byte.
    img2col_small_bytes_per_cycle: int = 128
    # Vector unit: one repeat covers vector_bytes (8 blocks of 32 B).
    vector_bytes: int = 256
    vector_block_bytes: int = 32
    max_repeat: int = 255
    # Largest block / repeat stride of a vector operand (8-bit fields of the
    # configuration word, see dialects/README.md hivm section).
    vector_max_stride: int = 255
    vector_latency: int = 8
    # Cycles per repeat per op class; transcendental ops are 4x slower.
    vector_cycles_per_repeat: Mapping[str, int] = field(default_factory=dict)
    vnchwconv_cycles_per_repeat: int = 2
    # Scalar unit: cycles to dispatch one instruction / run one scalar op.
    scalar_issue_cycles: int = 1
    # Scalar loads from GM (`memref.load`, `hivm.load_gm_scalar`: a gather's
    # indices) go through the scalar unit's data cache: a hit costs
    # scalar_load_cycles; a miss first fetches its line from GM, at the GM
    # read latency of the gm_to_ub path. Lines are kept until the cache is full.
    scalar_load_cycles: int = 2
    scalar_dcache_line_bytes: int = 64
    scalar_dcache_bytes: int = 16 * 1024
    # Synchronisation.
    events_per_pipe_pair: int = 8
    # Pipes that start their next instruction once the previous one has
    # occupied its unit (bytes / bandwidth, repeats, cube blocks); the fixed
    # latency then only delays completion. DMA engines keep several requests
    # in flight, so the movers overlap their start-up latency too.
    pipelined_pipes: tuple[str, ...] = ("V", "M", "MTE1", "MTE2", "MTE3")
    flag_latency: int = 1
    # `cce.sync_all`, the chip-wide barrier between dependent kernels of one
    # launch: from the last core's arrival (its pipes drained, but MTE2:
    # loads still queued there stream on through the barrier) until every
    # core may go on. A barrier over GM flags (each core writes its arrival,
    # then polls) costs about a GM write plus a read round trip.
    sync_all_cycles: int = 700
    # Every GM kernel argument is allocated rounded up to whole granules of
    # this size (the tail is padding: in bounds, never initialised).
    gm_alloc_granule_bytes: int = 32
    # Every tensor `npu-plan-gm` places in the GM workspace starts on (and is
    # sized in) whole units of this alignment.
    gm_workspace_alignment: int = 512
    # Global memory (HBM / DDR) a model's weights, inputs, outputs and
    # workspace must fit in.
    gm_bytes: int = 32 * 1024 * MIB
    cores: int = 1
    clock_ghz: float = 1.0
    # The chip's memory system, shared by every core (see simulator/README.md
    # "The memory system"): GM (HBM/DDR) bandwidth of the whole chip in bytes
    # per cycle, reads and writes on the same bus; each core's movers are
    # limited by their own paths' bytes_per_cycle (the per-core MTE limit).
    gm_chip_bytes_per_cycle: int = 1200
    # Fixed cost of one burst on the core's mover (request set-up): many
    # short bursts cost more than one long transfer of the same bytes.
    gm_burst_cycles: int = 1
    # L2 cache in front of GM: capacity and line size. A re-read of a line
    # still in L2 costs the core's mover time but no chip GM bandwidth.
    l2_bytes: int = 32 * MIB
    l2_line_bytes: int = 128
    sources: Mapping[str, str] = field(default_factory=dict)

    def capacity(self, space: str) -> int:
        return self.buffer_bytes[space]

    def granule(self, space: str) -> int:
        return self.granule_bytes[space]

    def path(self, name: str) -> Path:
        return self.paths[name]

    def vector_cycles(self, op_class: str) -> int:
        return self.vector_cycles_per_repeat[op_class]

    def cube_cycles(self, blocks: int | float) -> int | float:
        """Cycles the cube needs for `blocks` 16x16x16 fractal products."""
        work = blocks * self.cube_cycles_per_block
        return -(-work // self.cube_blocks_per_cycle) if isinstance(work, int) else \
            work / self.cube_blocks_per_cycle

    def cube_cycles_int8(self, blocks: int | float) -> int | float:
        """Cycles the cube needs for `blocks` 16x16x(fractal_k_int8) int8 products
        (i32 accumulation): each is fractal_k_int8/fractal fp16 blocks of MACs
        at cube_int8_rate times the fp16 rate."""
        per_block = self.fractal_k_int8 // self.fractal
        if isinstance(blocks, int) and per_block % self.cube_int8_rate == 0:
            return self.cube_cycles(blocks * per_block // self.cube_int8_rate)
        return self.cube_cycles(float(blocks) * per_block / self.cube_int8_rate)

    def peak_tops_int8(self) -> float:
        """The chip's int8 peak (TOPS, all cores) this description implies."""
        return self.peak_tflops_fp16() * self.cube_int8_rate

    def peak_tflops_fp16(self) -> float:
        """The chip's fp16 peak this description implies (all cores)."""
        macs = self.fractal ** 3 * self.cube_blocks_per_cycle / self.cube_cycles_per_block
        return 2 * macs * self.clock_ghz * self.cores / 1000

    def gm_chip_gbps(self) -> float:
        return self.gm_chip_bytes_per_cycle * self.clock_ghz

    def lanes(self, elem_bytes: int) -> int:
        """Elements one vector repeat covers (128 fp16, 64 fp32)."""
        return self.vector_bytes // elem_bytes

    def blocks(self, nbytes: int) -> int:
        """`nbytes` as whole 32-byte blocks, the unit of copy lengths and gaps."""
        if nbytes % self.vector_block_bytes:
            raise ValueError(f"{nbytes} bytes is not a whole number of "
                             f"{self.vector_block_bytes}-byte blocks")
        return nbytes // self.vector_block_bytes

    def elements_per_block(self, elem_bytes: int) -> int:
        return self.vector_block_bytes // elem_bytes

    def fractal_bytes(self, elem_bytes: int) -> int:
        """Bytes of one 16x16 (or 16x32 int8) fractal block."""
        if elem_bytes == 1:
            return self.fractal * self.fractal_k_int8
        return self.fractal * self.fractal * elem_bytes

    def summary(self) -> dict:
        """Plain-data view for reports and `npu-run --json`."""
        return {
            "name": self.name,
            "buffer_bytes": dict(self.buffer_bytes),
            "granule_bytes": dict(self.granule_bytes),
            "paths": {k: {"bytes_per_cycle": p.bytes_per_cycle, "latency": p.latency}
                      for k, p in self.paths.items()},
            "cube_blocks_per_cycle": self.cube_blocks_per_cycle,
            "vector_bytes": self.vector_bytes,
            "cores": self.cores,
            "clock_ghz": self.clock_ghz,
            "gm_chip_bytes_per_cycle": self.gm_chip_bytes_per_cycle,
            "gm_burst_cycles": self.gm_burst_cycles,
            "l2_bytes": self.l2_bytes,
            "l2_line_bytes": self.l2_line_bytes,
        }


_GRANULES = {"gm": 1, "l1": 32, "ub": 32, "l0a": 512, "l0b": 512, "l0c": 512}

_DAVINCI_PATHS = {
    # [M]: 32-87 B/cycle measured; 64 is the middle of that range (estimate).
    "gm_to_l1": Path(64, 350),
    "gm_to_ub": Path(64, 350),
    # [M] gives no separate write figure; assumed symmetric with reads (estimate).
    "ub_to_gm": Path(64, 350),
    # [M] "UB traffic about 128 B/cycle"; on-chip latency is an estimate.
    "ub_to_l1": Path(128, 30),
    # [M] L1->L0A 512 B/cycle, L1->L0B 256 B/cycle; latency an estimate.
    "l1_to_l0a": Path(512, 20),
    "l1_to_l0b": Path(256, 20),
    # [M] L0C->UB ~128 B/cycle; latency an estimate.
    "l0c_to_ub": Path(128, 20),
    "ub_to_ub": Path(128, 8),
}

_VECTOR_RATES = {
    # [M] 256 B/cycle = one 256-byte repeat per cycle for simple ops.
    "simple": 1,
    # [M] ~64 B/cycle for exp/ln/div/sqrt at fp16: four cycles per repeat.
    "transcendental": 4,
    # vmadd/vmla/vaxpy (three operands read, one rounding): estimate, the
    # rate of vmul (the CCE intrinsic docs give no throughput; the multiply-
    # add datapath is the one vmul and vadd use).
    "multiply_add": 1,
    # Cast and cross-lane reductions: estimate, same as simple ops.
    "convert": 1,
    "reduce": 1,
}

_COMMON_SOURCES = {
    "buffer_bytes": "[T] section 5.2.1 (DaVinci Max)",
    "granule_bytes": "[C] 32 B for L1/UB, 512 B for L0A/L0B/L0C",
    "paths.gm_to_*": "[M] 32-87 B/cycle, ~350 cycles; 64 B/cycle chosen (estimate)",
    "paths.ub_to_gm": "estimate: symmetric with GM reads",
    "paths.l1_to_l0a": "[M] ~512 B/cycle",
    "paths.l1_to_l0b": "[M] ~256 B/cycle",
    "paths.l0c_to_ub": "[M] ~128 B/cycle",
    "paths.*.latency (on-chip)": "estimate",
    "fractal": "[T][H] 16x16 fp16 blocks, 16x32 int8",
    "fractal_k_int8": "[T][H] int8 fractal blocks are 16x32",
    "cube_blocks_per_cycle": "[H] 16x16x16 fp16 MACs per cycle",
    "cube_int8_rate": "[V] 16x16x32 int8 MACs per cycle against 16x16x16 fp16, i32 accumulation: "
                      "cannmirror/asc-devkit tests/perf/mmad_perf/generate_roofline.py and the "
                      "platform files' DT_INT8=16,32,16 (../shared/CONV.md, int8)",
    "mad_latency": "[M] ~20 cycles",
    "img2col_bytes_per_cycle": "estimate: the top of the 32-256 B/cycle load3d measured by the "
                               "vendor's perf tests (cannmirror/asc-devkit tests/perf/"
                               "load_data_perf, 910B generation; small-channel shapes are slower)",
    "img2col_latency": "estimate: 50 cycles, the same perf tests (910B generation)",
    "img2col_small_bytes_per_cycle": "estimate: half the full rate, within the 32-256 B/cycle the "
                                     "same perf tests measure (their small shapes are the slow ones)",
    "vector_bytes": "[H][T] 2048-bit vector unit, 8 blocks of 32 B per repeat",
    "vector_block_bytes": "[T][C] 32-byte blocks of a vector repeat (the UB granule)",
    "max_repeat": "[T] repeat count field of 8 bits (bits 56..63)",
    "vector_max_stride": "[T] 8-bit stride fields of the vector configuration word",
    "vector_cycles_per_repeat": "[M] 256 B/cycle simple, ~64 B/cycle transcendental; "
                                "multiply_add, convert, reduce: estimates",
    "vector_latency": "estimate",
    "vnchwconv_cycles_per_repeat": "estimate: two 16x16 fp16 tiles = 1 KiB per repeat at ~512 B/cycle",
    "scalar_issue_cycles": "estimate: one dispatch per cycle",
    "scalar_load_cycles": "estimate: a data-cache hit of the scalar unit",
    "scalar_dcache_line_bytes": "estimate: 64-byte lines",
    "scalar_dcache_bytes": "estimate: 16 KiB scalar data cache",
    "events_per_pipe_pair": "[C] 8 event ids",
    "pipelined_pipes": "estimate: in-order queues whose start-up latency overlaps the previous "
                       "instruction's data phase (outstanding DMA requests); completion stays in order",
    "flag_latency": "estimate",
    "sync_all_cycles": "estimate: a barrier over GM flags: the last core's flag write and "
                       "the others' polling read that sees it, each at the GM paths' 350-cycle "
                       "latency (AscendC SyncAll works this way on parts without hardware sync); "
                       "the flag write waits for the core's compute and GM writes, not for its "
                       "queued GM reads (MTE2 -> L1/UB), which stream on through the barrier: "
                       "estimate (a GM-flag barrier needs only the core's stores visible)",
    "gm_alloc_granule_bytes": "[C] Ascend runtime allocations are 32-byte aligned and padded",
    "paths.gm_* (per-core MTE limit)": "[M] 32-87 B/cycle per core; each core's GM movers are "
                                       "limited to their path's bytes_per_cycle",
    "gm_burst_cycles": "estimate: one cycle of request set-up per burst (32-byte bursts then "
                       "reach a third of a long transfer's rate)",
    "l2_line_bytes": "estimate: 128-byte lines",
    "cube_cycles_per_block": "[P] derived from the published fp16 peak",
    "gm_bytes": "[H] 32 GB HBM2 on Ascend 910",
    "gm_workspace_alignment": "estimate: 512 B (the L0 fractal granule, a whole number of GM "
                              "bursts and cache lines) for tensors packed into one workspace",
}

ASCEND910 = Target(
    name="ascend910",
    buffer_bytes={"l1": 1 * MIB, "l0a": 64 * KIB, "l0b": 64 * KIB, "l0c": 256 * KIB, "ub": 256 * KIB},
    granule_bytes=_GRANULES,
    paths=_DAVINCI_PATHS,
    vector_cycles_per_repeat=_VECTOR_RATES,
    cores=32,  # [H] 32 DaVinci Max cores on Ascend 910
    clock_ghz=1.0,  # [H] 1.0 GHz nominal
    # [P] 32 cores x 4096 fp16 MAC x 2 x 1.0 GHz = 262 TFLOPS vs 256 published.
    # [P] 1.2 TB/s HBM at 1.0 GHz = 1200 B/cycle for the whole chip.
    gm_chip_bytes_per_cycle=1200,
    # estimate: 32 MiB on-chip L2 as commonly reported for the 910 (no
    # primary source found).
    l2_bytes=32 * MIB,
    sources={**_COMMON_SOURCES, "cores": "[H]", "clock_ghz": "[H]",
             "gm_chip_bytes_per_cycle": "[P] 1.2 TB/s at 1.0 GHz",
             "l2_bytes": "estimate: 32 MiB as commonly reported",
             "peak": "[P] 256 TFLOPS fp16; this description: 262 TFLOPS"},
)

ASCEND910B = replace(
    ASCEND910,
    name="ascend910b",
    buffer_bytes={"l1": 512 * KIB, "l0a": 64 * KIB, "l0b": 64 * KIB, "l0c": 128 * KIB, "ub": 192 * KIB},
    cores=24,  # estimate: 910B variants ship 20-25 cube cores
    clock_ghz=1.65,  # estimate
    # [P] ~1.6 TB/s HBM2e at 1.65 GHz = ~970 B/cycle.
    gm_chip_bytes_per_cycle=970,
    l2_bytes=192 * MIB,  # estimate: 192 MiB L2 as commonly reported for the 910B
    gm_bytes=64 * 1024 * MIB,  # estimate: 64 GB HBM on 910B boards
    sources={**_COMMON_SOURCES, "buffer_bytes": "[C] dav-c220",
             "cores": "estimate", "clock_ghz": "estimate", "gm_bytes": "estimate",
             "gm_chip_bytes_per_cycle": "[P] ~1.6 TB/s at 1.65 GHz",
             "l2_bytes": "estimate: 192 MiB as commonly reported",
             "peak": "[P] ~313 TFLOPS fp16 (910B3); this description: 24 x 4096 x 2 x 1.65 GHz "
                     "= 324 TFLOPS"},
)

ASCEND310 = replace(
    ASCEND910,
    name="ascend310",
    # Estimate: the 310 uses DaVinci cores of the same family; no public
    # per-buffer sizes were found, so L1 is assumed halved, the rest as 910.
    buffer_bytes={"l1": 512 * KIB, "l0a": 64 * KIB, "l0b": 64 * KIB, "l0c": 256 * KIB, "ub": 256 * KIB},
    # Estimate: LPDDR4X edge part, taken as half the 910's GM bandwidth.
    paths={**_DAVINCI_PATHS, "gm_to_l1": Path(32, 350), "gm_to_ub": Path(32, 350),
           "ub_to_gm": Path(32, 350)},
    cores=2,  # [H] two DaVinci cores on Ascend 310
    # [P] 8 TFLOPS fp16 for the whole two-core chip, i.e. ~4 per core: a
    # full-rate 4096-MAC cube at 0.9 GHz would give 7.4 per core (14.7 per
    # chip, the old preset's error), so the cube takes two cycles per
    # 16x16x16 block: 2 x 2048 x 2 x 1.0 GHz = 8.2 TFLOPS for the chip.
    cube_cycles_per_block=2,
    clock_ghz=1.0,  # estimate, consistent with the published 8 TFLOPS / 16 TOPS
    # estimate: LPDDR4X, 2 x 64-bit at 3733 MT/s = ~60 GB/s for the chip.
    gm_chip_bytes_per_cycle=60,
    l2_bytes=8 * MIB,  # estimate: 8 MiB on-chip buffer as commonly reported
    gm_bytes=8 * 1024 * MIB,  # estimate: 8 GB LPDDR4X on Atlas 200-class boards
    sources={**_COMMON_SOURCES, "buffer_bytes": "estimate", "paths.gm_*": "estimate",
             "cores": "[H]", "clock_ghz": "estimate (fits [P] 8 TFLOPS)", "gm_bytes": "estimate",
             "cube_cycles_per_block": "[P] 8 TFLOPS fp16 per chip = ~4 per core",
             "gm_chip_bytes_per_cycle": "estimate: LPDDR4X ~60 GB/s",
             "l2_bytes": "estimate: 8 MiB",
             "peak": "[P] 8 TFLOPS fp16; this description: 8.2 TFLOPS"},
)

PRESETS: Mapping[str, Target] = {t.name: t for t in (ASCEND910, ASCEND910B, ASCEND310)}
DEFAULT_TARGET = "ascend910"


class UnknownTargetError(ValueError):
    pass


def get_target(name: str | None = None) -> Target:
    name = name or DEFAULT_TARGET
    try:
        return PRESETS[name]
    except KeyError:
        raise UnknownTargetError(
            f"unknown target preset '{name}' (known: {', '.join(PRESETS)})") from None

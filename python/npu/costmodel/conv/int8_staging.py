"""The int8 conv's map staging (`npu.passes.lower_conv.int8_map`) in the conv
cost model.

The int8 conv reads an f16 NC1HWC0 map holding int8 values; each band's
input rows go GM -> UB two 16-channel f16 blocks at a time, are interleaved
into 32-channel pixels (one f16 vector pass per block, destination block
stride 2), narrowed to int8 (one vconv) and copied UB -> L1 as the i8 map
[C1_32, rows, W, 32] img2col reads. Beside what the f16 conv of C1_32
blocks costs (the L1 map, L0 and the cube are the same fractal for
fractal), the staging adds the map's f16 GM bytes (twice the i8 map's),
the vector passes and the UB -> L1 copies, and takes UB.
"""

from __future__ import annotations

from dataclasses import dataclass

from npu.target import Target

# Pixels of one staged chunk (of one 32-channel block): its two f16 blocks
# (64 B a pixel) land in one of 2 * RUN buffers: the GM reads go in runs of
# RUN chunks (each run of loads ends in a flag that holds MTE2 for the GM
# latency, paid once a run) while V works on the previous run. The
# interleaved f16 pixels (64 B) and the int8 ones (32 B) take two sets in
# turn, so V and MTE3 overlap too.
CHUNK = 96
RUN = 4
SRC_SETS = 2 * RUN
PIXELS_PER_REPEAT = 8    # f16 pixels of one 16-channel block in a 256-byte repeat
INT8_PIXELS_PER_REPEAT = 4  # 32-channel pixels a vconv f16 -> i8 repeat narrows


def staging_bytes(target: Target) -> int:
    """UB the staging takes at most: the conv's tiling leaves it out of its budget."""
    del target  # (the sizes are those of the blocks, not of the target)
    return SRC_SETS * CHUNK * 2 * 32 + 2 * CHUNK * (2 * 32 + 32)


@dataclass(frozen=True)
class StagingWork:
    """What staging `pixels` pixels of every 32-channel block adds."""

    gm_bytes: int       # f16 map bytes read GM -> UB
    runs: int           # runs of GM reads (each pays the GM latency)
    l1_bytes: int       # i8 map bytes written UB -> L1
    vector: float       # vector cycles (interleave and narrowing)
    copies: int         # UB -> L1 copies (one per chunk and block)


def staging_work(pixels: int, c1_32: int, t: Target) -> StagingWork:
    """The staging of `pixels` input pixels (one band's rows) of `c1_32` blocks."""
    chunks, last = divmod(pixels, CHUNK)
    sizes = [CHUNK] * chunks + ([last] if last else [])
    per_block = sum(2 * -(-p // PIXELS_PER_REPEAT) * t.vector_cycles("simple")
                    + -(-p // INT8_PIXELS_PER_REPEAT) * t.vector_cycles("convert") for p in sizes)
    return StagingWork(gm_bytes=2 * pixels * c1_32 * 32, runs=-(-len(sizes) * c1_32 // RUN),
                       l1_bytes=pixels * c1_32 * 32,
                       vector=float(per_block * c1_32), copies=len(sizes) * c1_32)

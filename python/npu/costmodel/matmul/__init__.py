"""The matmul's cost models: what a tiling holds and moves (`fitting`: the
shape, tiles, buffer needs and GM traffic the others share), tiles ranked by
GM traffic or time (`tiling`), whether A's strip stays in L1 (`residency`),
and the timed pipelined schedule (`pipelined`). Imports run one way:
fitting, pipelined <- residency <- tiling."""

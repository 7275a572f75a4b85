"""The attention kernel: the pattern `npu-fuse-attention` matches
(`pattern`), the cost of one tile (`cost`), the tile and order chosen
(`plan`), and the Q/K/V projection it may compute itself (`projection`,
chosen by `projection_plan`)."""

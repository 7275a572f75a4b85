"""Fusion's models: which ascend ops form a row group and the GM bytes it
saves (`rows`), matmul epilogues (`epilogue`) and when they run in f16
(`precision`), and the GELU chains that collapse into one recipe (`gelu`)."""

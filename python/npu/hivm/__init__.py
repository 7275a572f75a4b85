"""The binary form of `hivm`: byte addresses and configuration words for the
cce -> hivm lowering (`addresses`), the encoder (`binary`) and the decoder
(`disasm`).

May import: `npu.ir`, `npu.target`, `npu.diagnostics`, `npu.dialects`.
"""

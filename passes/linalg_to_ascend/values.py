"""What a tensor SSA value has become during the conversion.

A tensor is a host constant (`array`), a GM buffer in row-major order
(`nd`), or a matmul result in Nz order (`nz`, f32) that gets its ND copy
only when a non-matmul consumer asks for it (`Layouts.nd`). Tensors are
immutable, so views and buffers may be shared freely between values.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from npu.passes.linalg_to_ascend.emitter import Buf


@dataclass
class Tensor:
    shape: tuple[int, ...]
    dtype: str
    array: np.ndarray | None = None     # host constant
    nd: Buf | None = None
    bcast: Buf | None = None            # same rank, size-1 dims broadcast (not materialised)
    nz: Buf | None = None               # Nz of the last two dims (f32 matmul result)
    nz16: Buf | None = None             # Nz in f16, ready for the cube
    nz_loc: str = ""                    # the producing matmul's location
    nz_nd_shape: tuple = ()             # [batch?, R, C] the Nz buffers hold
    # The padding rows of `nz` (R not whole fractals) hold what an
    # elementwise op made of zeros, not zeros: harmless where the rows are
    # a matmul's M (rows are independent), not where they are its K.
    dirty_rows: bool = False
    c1hwc0: Buf | None = None           # a conv result in NC1HWC0 [N, C1, H, W, 16] (conv_layouts)
    widened: object = None              # the int8 tensor value this one sign-extends (matmul_int8)
    # An int8 tensor only int8 convs read, held as its values in f16:
    # [N, C, H, W] or NC1HWC0 [N, C1, H, W, 16] (conv_int8).
    int8_f16: Buf | None = None
    # The f16 NC1HWC0 copy convs read of a non-f16 tensor, made once for all
    # of them (`ConvLayouts.input_5hd`): a map read by two convs (ResNet's
    # block input: conv1 and the downsample) is cast / transposed once.
    half5: Buf | None = None

    @property
    def is_constant(self) -> bool:
        return self.array is not None

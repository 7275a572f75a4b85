"""The passes and their registry: flag name -> pass class. Adding a pass is
one file (or package) in this folder and one line in `_PASS_MODULES`.

May import: `npu.kernels`, `npu.costmodel`, `npu.analysis`, `npu.hivm`,
`npu.reference`, `npu.memory_planning` and the core (`npu.ir`,
`npu.dialects`, `npu.target`, `npu.diagnostics`); never the simulator or a
driver (`npu.pipeline`, `npu.frontend`, `npu.tune`, `npu.tools`)."""

from __future__ import annotations

import importlib

from npu.passes.base import Option, OptionError, Pass, PassError

# module name -> class name; one line per pass.
_PASS_MODULES: dict[str, str] = {
    "insert_sync": "InsertSyncPass",
    "plan_memory": "PlanMemoryPass",
    "plan_gm": "PlanGmPass",
    "lower": "LowerPass",
    "double_buffer": "DoubleBufferPass",
    "lower_elementwise": "LowerElementwise",
    "lower_transpose": "LowerTranspose",
    "lower_slices": "LowerSlices",
    "lower_reduce": "LowerReduce",
    "lower_gather": "LowerGather",
    "annotate_target": "AnnotateTargetPass",
    "lower_matmul": "LowerMatmul",
    "lower_fractalize": "LowerFractalize",
    "lower_cce_to_hivm": "LowerCCEToHIVM",
    "split_cores": "SplitCoresPass",
    "linalg_to_ascend": "LinalgToAscendPass",
    "fuse": "FusePass",
    "fuse_horizontal": "FuseHorizontalPass",
    "hoist_casts": "HoistCastsPass",
    "lower_fused": "LowerFused",
    "fuse_attention": "FuseAttentionPass",
    "fuse_attention_projection": "FuseAttentionProjectionPass",
    "lower_attention": "LowerAttention",
    "prefetch": "PrefetchPass",
    "canonicalize": "CanonicalizePass",
    "lower_conv": "LowerConv",
    "lower_pool": "LowerPool",
    "own_tiles": "OwnTilesPass",
}


def registry() -> dict[str, type[Pass]]:
    passes: dict[str, type[Pass]] = {}
    for module, cls_name in _PASS_MODULES.items():
        cls = getattr(importlib.import_module(f"npu.passes.{module}"), cls_name)
        passes[cls.name] = cls
    return passes


__all__ = ["Option", "OptionError", "Pass", "PassError", "registry"]

"""npu-canonicalize: every standard spelling of one computation brought to
one form before fusion, so that it reaches the same fused kernels.

Exporters write the same layer in several ways (GELU's `(x*g)*0.5`,
`(x*0.5)*g` or `x*(0.5*g)`; the attention scale on the scores, on Q, or
split over Q and K; K^T by one transpose or two). The fusion recipes match
structure, so each rule here rewrites one family of spellings into the one
the recipes expect, on `ascend` ops (destination-passing GM buffers), and
only through temporaries that one op writes and one other reads:

* `transposes`: consecutive transposes as one, and the insert_slices
  filling a buffer one transpose reads written into its result (`shuffles`:
  ShuffleNet's Concat and channel shuffle);
* `matmul_scales`: scalings of a batch_matmul's operands onto its result;
* `scalings`: consecutive scalings folded, and the factors of a product
  gathered onto its gate operand (an adds) or its result;
* `polynomials`: the tanh GELU's factored cubic x*(1 + k*x*x) expanded;
* `masks`: a constant bias and a mask added to the scores one after the
  other (T5's eager export) as one where(mask, bias, fill), made once.

`Div` by a constant is already a multiplication by its reciprocal when the
frontend converts it (`npu.passes.linalg_to_ascend.elementwise`: exact for
powers of two, within 2 ulps otherwise). Each module says which rounding
its rewrite accepts. The rules run in that order until nothing changes.
"""

from __future__ import annotations

from mlir import ir

from npu import ir as nir
from npu.passes.applies import BATCH_MATMULS, OnOps
from npu.passes.base import Option, Pass
from npu.passes.canonicalize.masks import combine_mask_biases
from npu.passes.canonicalize.matmul_scales import move_matmul_scales
from npu.passes.canonicalize.polynomials import expand_cubics
from npu.passes.canonicalize.scalings import fold_scalings, place_scalings
from npu.passes.canonicalize.shuffles import insert_transposed
from npu.passes.canonicalize.transposes import compose_transposes

# Each rule with its option name and what the remark says it did.
RULES = (
    ("transposes", compose_transposes, "two transposes composed into one"),
    ("transposes", insert_transposed, "the inserts filling a transposed buffer written into "
     "the transpose's result"),
    ("matmul-scales", move_matmul_scales, "operand scalings moved onto the batch_matmul's result"),
    ("scalings", fold_scalings, "consecutive scalings folded into one"),
    ("scalings", place_scalings, "the scalings of a product gathered in one place"),
    ("polynomials", expand_cubics, "x*(1 + k*x*x) expanded to x + k*x^3"),
    ("mask-biases", combine_mask_biases, "a constant bias and a mask added to the scores combined "
     "into one where(mask, bias, fill)"),
)
# Enough for any chain the rules can lengthen; each round that changes
# something removes at least one op, so this bound is never the limit in practice.
MAX_ROUNDS = 8


class CanonicalizePass(Pass):
    name = "npu-canonicalize"
    summary = "One form for each spelling of a computation (scalings, GELU, attention scale, K^T)"
    options = (
        Option("transposes", bool, True, "compose consecutive transposes into one, and write "
               "the inserts filling a buffer one transpose reads into its result",
               needs=(OnOps("transpose", ("ascend.transpose",)),)),
        Option("matmul-scales", bool, True, "move the scalings of a batch_matmul's operands "
               "(attention's Q and K) onto its result, where the fused attention applies them",
               needs=(BATCH_MATMULS,)),
        Option("scalings", bool, True, "fold consecutive scalings and gather the scalar "
               "factors of a product onto its gate operand (an adds) or its result",
               needs=(OnOps("scaling (muls)", ("ascend.muls",)),)),
        Option("polynomials", bool, True, "expand the tanh GELU's factored cubic "
               "x*(1 + k*x*x) (gelu_fast) to x + k*x^3, the form its recipe matches",
               needs=(OnOps("mul", ("ascend.mul",)),)),
        Option("mask-biases", bool, True, "add a constant bias and a mask (where(keep, 0, c)) "
               "to the scores as one where(keep, bias, c), made once for every layer (T5's "
               "position bias, as the sdpa export writes it)",
               needs=(OnOps("select (a mask)", ("ascend.select",)),)),
        Option("remarks", bool, True, "report each rewrite"),
    )

    def run(self, module: ir.Operation) -> None:
        for func in nir.functions(module):
            if not len(func.regions[0].blocks):
                continue
            for _ in range(MAX_ROUNDS):
                if not self.round(func):
                    break

    def round(self, func: ir.Operation) -> bool:
        """One pass of every enabled rule; whether anything changed."""
        any_change = False
        for option, rule, what in RULES:
            if not getattr(self, option.replace("-", "_")):
                continue
            for op in rule(func):
                any_change = True
                if self.remarks:
                    self.remark(op, f"npu-canonicalize: {what}")
        return any_change

"""`npu-lower-conv`: `ascend.conv2d` (layout "nc1hwc0") -> img2col + mad on the cube.

The implicit matmul of each image (M = Ho*Wo, N = Cout, K = C1*Kh*Kw*C0)
runs output-stationary in tiles the conv cost model picks
(`npu.costmodel.conv.tiling`): a band of output rows is one M tile whose
input rows (halo included; with a stride past the kernel's extent, as a
1x1 stride-2 downsample's, only the rows its windows read, one burst per
output row, packed) are copied to L1 once; img2col reads them
(`cce.img2col_l1_to_l0a`, the band's own feature-map register, so a map
too large for L1 is simply more bands); weights in fractal-Z stay in L1
for the whole conv when they fit, else each super tile of Cout blocks
streams its own into one of two L1 buffers in turn (`weights.py`), its
drains' epilogue operands loaded in the same run (each run of loads ends in
a flag that holds MTE2 for the GM latency; the first streamed tile, and
resident weights, in pieces ahead of the chunks needing them); per chunk
of kernel points, L0A and L0B alternate halves (across bands too) so MTE1
fills one while the cube reads the other, and super tiles alternate two
L0C sets so one drains while the next accumulates (a conv of one band and
one super tile may take all of L0C in one set, its accumulators of
ACC_BLOCKS blocks drained each after its last mad, and where MTE2 paces
it, its resident weights' pieces taper to one chunk:
`costmodel/conv/accumulators.py`, `first_band.tapered_pieces`); the drain adds the bias and converts on the way to GM (`kernel.py`;
a super tile's two accumulators in one UB slot and one store where the
estimate picks it, `tiling.one_store`: each store pays MTE3 a GM latency), and runs
the conv's `npu.conv_epilogue` group, if any, on each tile (`epilogue.py`).
A conv that npu-split-cores cut into runs of output rows (`npu.core_part`)
computes its core's run only: tiled for one run, with the band plans of the
first, the inner and the last run under `scf.if` on the block index.

The int8 form (f16 input holding int8 values, i8 weights, i32 result)
runs the same schedule on the int8 cube, the f16 conv of C1_32 blocks of
32 channels fractal for fractal: each band's map is narrowed to an i8 map
[C1_32, rows, W, 32] on its way GM -> UB -> L1 (`int8_map.py`), img2col
pads with the conv's `pad_value`, the mads accumulate in i32, and the drain
adds the i32 bias to the unconverted i32 tiles; a fused epilogue starts
with the cast i32 -> f32 (as after an int8 matmul).

The kernel is built without being emitted (`LowerConv.cube_kernel`), its
buffers sized by one plan known before emission (`footprint.py`), so a
caller can emit it band by band (`band_steps.py`): two convs interleaved,
the first's band results copied UB -> L1 as the next 1x1 conv's band maps
(`ConvDrain.store_to_map`), the second on the first's L0A/L0B/L0C.

A conv in the contract's NCHW form (hand-written IR, weights computed at
run time) is refused at the op with the reason: the frontend makes the
nc1hwc0 form for constant weights, a grouped or depthwise conv's as dense
block-diagonal weights with groups = 1 (docs/grouped_conv.md).
"""

from __future__ import annotations

from dataclasses import replace

from mlir import ir

from npu import ir as nir
from npu.costmodel.conv.stem_fold import FOLD, folded_stem, stem_with_constants
from npu.costmodel.conv.tiling import choose_tiling, conv_shape
from npu.costmodel.conv import epilogue as epilogue_model, int8_staging, stem_pool
from npu.costmodel.conv.depthwise_vector import DwPlan, DwShape, dw_shape, plan as vector_plan
from npu.dialects.ascend_conv import (FORMS_5HD, NC1HWC0_BD, geometry, group_channels, has_bias,
                                      is_int8, layout, pad_value)
from npu.kernels.cce_build import core_part
from npu.target import Target
from npu.passes.base import Option, Pass, PassError, say_ub_share_exceeded, ub_fraction_option
from npu.passes.applies import CONVS
from npu.passes.patterns import CONV_RESIDUALS, CUBE_BIASES, DEPTHWISE
from npu.passes.lower_conv import conv_chain, cube_bias, cube_residual
from npu.passes.lower_conv.epilogue import SETS, ConvEpilogue, group_of
from npu.passes.lower_conv.drain_cast import f32_bias_staging
from npu.passes.lower_conv.image_map import prior_pixels, reads_image, staging_bytes
from npu.passes.lower_conv.stem_fold import StemFold, fold_stem
from npu.passes.lower_conv.compact_weights import (compact_operand, has_constant, streams_tiles,
                                                   tile_major_operand)
from npu.passes.lower_conv.depthwise_vector import DepthwiseKernel
from npu.passes.lower_conv.footprint import footprint
from npu.passes.lower_conv.kernel import ConvKernel


def conv_budget(op: ir.Operation, target: Target, ub_fraction: float, drain_rounds: bool) -> int:
    """The UB the conv's tiles may take: `ub_fraction` of UB less what its
    stagings hold (the NCHW image's, the int8 map's, and the f32 bias a
    rounding drain makes its f16 pattern from)."""
    budget = int(target.capacity("ub") * ub_fraction)
    if reads_image(op.operands[0]):  # staged through UB (with the rows above, folded)
        budget -= staging_bytes(target, prior_pixels(geometry(op).w, folded_stem(op)))
    if conv_shape(op).int8:  # the map narrowed to int8 on its way through UB (int8_map.py)
        budget -= int8_staging.staging_bytes(target)
    pool = stem_pool.drain_pool(group_of(op), op)
    if pool is not None:  # its row buffers (`drain_pool`), for bands of up to BUDGET_ROWS rows
        g = geometry(op)
        budget -= stem_pool.ub_bytes(conv_shape(op).co1, stem_pool.BUDGET_ROWS, g.out_hw[1])
    if drain_rounds and has_bias(op):
        budget -= f32_bias_staging(conv_shape(op).co1)  # the f16 bias pattern is made from it
    return budget


def epilogue_tiles(conv: ir.Operation, members: list[ir.Operation], target: Target,
                   drain_rounds: bool, copy: bool = False) -> bool:
    """Whether some tiling fits the conv with `members` on its drain (asked by
    npu-fuse before it forms a group, so a long epilogue, e.g. a quantised
    CNN's, is cut where the conv still tiles instead of failing the lowering).
    `copy`: the last member is an f16 copy of a value stored too (`also_stored`)."""
    cast = epilogue_model.leading_cast(members, conv.operands[-1]) \
        if drain_rounds and not copy else None
    rest = members[1:] if cast is not None else members
    source = conv.operands[-1] if cast is None else cast.operands[-1]
    also = members[-1].operands[0] if copy else None
    work = epilogue_model.work(rest, source, target, also) if rest else None
    budget = conv_budget(conv, target, 1.0, cast is not None)
    return choose_tiling(conv_shape(conv), target, budget, work, SETS) is not None


def drains_as_none(epi: ConvEpilogue, shape, row_parts, target: Target, budget: int) -> bool:
    """Whether a conv whose epilogue has no members once the drain takes its
    cast (and ReLU) lowers as a conv of no epilogue: tiled for the drain's
    result type, free to take `one_store` and the cube bias. Only where the
    drain bounds it (V or MTE3 the busiest pipe of its estimate), as those
    act on the drain: ResNet-50's layer1 downsample 45,038 -> 36,139 cycles
    in the model; ResNet-18's MTE2-bound 1x1/2 downsamples of layers 3-4 ran
    ~1.5k slower in all."""
    if epi.members:
        return False
    tiling = choose_tiling(shape.row_part(row_parts[0]) if row_parts else shape, target, budget,
                           epi.work, SETS)
    if tiling is None:
        return False
    pipes = dict(tiling.pipes)
    return max(pipes, key=pipes.get) in ("V", "MTE3")


class LowerConv(Pass):
    name = "npu-lower-conv"
    summary = "Lower ascend.conv2d (nc1hwc0) to img2col + mad tiles on the cube"
    handles = CONVS.ops
    acts_on = CONVS  # every option: the program has one
    options = (ub_fraction_option(1.0, "fraction of UB the drain of the conv's tiles may use "
                                       "(two tiles: one drains while the next computes); where no "
                                       "tiling fits it, all of UB, with a remark"),
               Option("depthwise", str, "auto", "a depthwise conv (layout \"nc1hwc0_bd\" with "
                      "group_channels = 1): auto = on the vector unit or as block-diagonal "
                      "fractals on the cube, whichever the conv cost models estimate faster "
                      "(`npu.costmodel.conv.depthwise_vector` against `tiling`); cube; vector "
                      "(where it applies: f16/f32, strides within the vector stride fields)",
                      choices=("auto", "cube", "vector"), needs=(DEPTHWISE,)),
               Option("cube-bias", str, "auto", "a 1x1 conv's constant bias as one more K "
                      "fractal (ones against the bias) instead of a vadd on its drain: auto = "
                      "where V bounds the conv's estimate and the estimate is faster with it "
                      "(`cube_bias`), or where its epilogue is only a ReLU, which the drain's "
                      "move then applies, V or MTE3 bound it and the estimate of that form is "
                      "faster (`cube_bias.move_relu`); always (where it applies: f16, constant "
                      "weights and bias, one core); never", choices=("auto", "always", "never"),
                      needs=(CUBE_BIASES,)),
               Option("cube-residual", str, "auto", "a 1x1 conv's residual Add (and its ReLU) "
                      "in the cube, an identity mad per Cout block, instead of on its drain: "
                      "auto = where the cost model estimates it faster (`cube_residual`); "
                      "always (where it applies: f16, one core, the bias in the cube); never",
                      choices=("auto", "always", "never"), needs=(CONV_RESIDUALS,)),
               Option("remarks", bool, False, "report each conv's tiling and the cost model's "
                      "estimate of it (bench/fusion_estimates.py reads it)"))

    def run(self, module: ir.Operation) -> None:
        self.chain_producers: dict[int, ir.Operation] = {}  # by npu.conv_chain id
        self.lower_each(module)

    def lower(self, op: ir.Operation) -> None:
        figures = conv_chain.chain_attr(op)
        if figures is not None:  # a conv chain (`conv_chain`): both convs at the consumer
            if figures["role"] == "producer":
                self.chain_producers[figures["id"]] = op
                return
            producer = self.chain_producers.pop(figures["id"], None)
            if producer is None:
                raise PassError("npu-lower-conv: npu.conv_chain: the consumer's map is not "
                                "written by a chained conv", op)
            if self.row_parts(op) is not None or self.row_parts(producer) is not None:
                raise PassError("npu-lower-conv: npu.conv_chain: a chained conv cut over cores "
                                "(npu-fuse forms conv chains on one core only)", op)
            why = conv_chain.lower_pair(self, producer, op, figures)
            if why is None:
                return
            self.remark(op, f"npu-lower-conv: conv chain not formed after all: {why}")
            conv_chain.unmark(producer, op)
            self.lower(producer)
        made = self.cube_kernel(op)
        if made is not None:
            kernel, epi, row_parts = made
            self.replace_with(op, epi, row_parts, lambda: kernel)

    def cube_kernel(self, op: ir.Operation, rows: int | None = None, plan_only: bool = False
                    ) -> tuple[ConvKernel, ConvEpilogue | None, tuple | None] | None:
        """(the cube's kernel of `op`, its epilogue, this core's rows) with
        nothing emitted yet (the conv's constant operands rewritten for it),
        so a caller may emit it band by band (`band_steps`); None where the
        vector unit's depthwise kernel lowered `op` instead. `rows`: bands of
        that many output rows (no cube bias then: it would tile anew).
        `plan_only`: the kernel for its sizes (`footprint`) and tiling only:
        no operand rewritten, no remark, nothing emitted (None where the
        vector unit would take it or no tiling fits)."""
        if layout(op) not in FORMS_5HD:
            g = geometry(op)
            why = (f"groups = {g.groups} in the NCHW form (weights computed at run time, or IR "
                   "written by hand): the frontend makes a grouped conv with constant weights "
                   "a dense block-diagonal one in layout \"nc1hwc0\""
                   if g.groups != 1 else "the NCHW form (weights computed at run time, or IR "
                   "written by hand): the frontend makes layout \"nc1hwc0\" with fractal-Z weights")
            raise PassError(f"npu-lower-conv: cannot lower this conv: {why}", op)
        g = geometry(op)
        shape = conv_shape(op)
        region = group_of(op)
        with op.location, ir.InsertionPoint(op):  # (its recipes' constant blocks go here)
            epi = ConvEpilogue(self.target, region, op, consts=not plan_only) \
                if region is not None else None
        staged_cast = epi is not None and epi.cast is not None
        budget = conv_budget(op, self.target, self.ub_fraction, staged_cast)
        row_parts = self.row_parts(op)
        if row_parts is not None and epi is not None and epi.pool is not None:
            raise PassError("npu-lower-conv: a conv with its pool on the drain (npu-fuse "
                            "conv-pool) is lowered for one core only", op)
        work = epi.work if epi is not None else None
        if epi is not None and drains_as_none(epi, shape, row_parts, self.target, budget):
            epi.as_none, work = True, None
            shape = replace(shape, out_bytes=epi.work.out_bytes)
        tiled = shape.row_part(row_parts[0]) if row_parts else shape
        tiling = choose_tiling(tiled, self.target, budget, work, SETS, rows)
        widened = tiling is None and self.ub_fraction < 1 and rows is None and not plan_only
        if widened:
            # a share is room left for others, not a reason to refuse: tiles in all of UB
            # (what the stagings leave) before no tiling fits (ResNet-50's stem at 0.5)
            budget = conv_budget(op, self.target, 1.0, staged_cast)
            tiling = choose_tiling(tiled, self.target, budget, work, SETS, rows)
        out_f16 = self.out_type(op, epi) == "f16"
        ones = None if row_parts or rows or self.cube_bias == "never" else cube_bias.choose(
            op, shape, tiling, out_f16, self.target, budget, work, SETS,
            self.cube_bias == "always")
        if ones is not None:  # the bias in the cube (`cube_bias`)
            shape, tiling = ones
        found = None if row_parts or rows or plan_only or self.cube_residual == "never" else \
            cube_residual.applies(op, epi, shape)
        if found is not None and (not has_bias(op) or shape.ones or (
                self.cube_bias != "never" and cube_bias.applies(op, shape, out_f16))):
            # the residual Add in the cube, the bias too (`cube_residual`)
            res = replace(shape, residual=True, ones=int(has_bias(op)), out_bytes=2)
            res_tiling = choose_tiling(res, self.target, budget, None, SETS)
            if res_tiling is not None and res_tiling.weights_resident and (
                    self.cube_residual == "always" or tiling is None
                    or res_tiling.cycles < cube_residual.MARGIN * tiling.cycles):
                cube_residual.take(epi, found)
                shape, tiling = res, res_tiling
        relu = None if found is not None or row_parts or rows or plan_only \
            or self.cube_bias == "never" else cube_bias.move_relu(op, epi, shape, out_f16)
        if relu is not None:  # the bias in the cube, the ReLU on the move (`cube_bias.move_relu`)
            moved = replace(shape, ones=int(has_bias(op)), out_bytes=2)
            moved_tiling = choose_tiling(moved, self.target, budget, None, SETS)
            if moved_tiling is not None and moved_tiling.weights_resident and (
                    self.cube_bias == "always" or tiling is None
                    or cube_bias.drain_bound(tiling) and moved_tiling.cycles < tiling.cycles):
                cube_bias.take_relu(epi, relu)
                shape, tiling = moved, moved_tiling
        vector = self.depthwise_plan(op, epi, budget, row_parts)
        if plan_only:
            if tiling is None or (vector is not None and (self.depthwise == "vector"
                                                          or vector[0].cycles < tiling.cycles)):
                return None
            bias = op.operands[2] if has_bias(op) else None
            return ConvKernel(self.target, g, shape, tiling, op.operands[0], op.operands[1],
                              None if shape.ones else bias, op.operands[-1], epi, budget,
                              pad_value(op)), epi, row_parts
        if vector is not None and (self.depthwise == "vector" or tiling is None
                                   or vector[0].cycles < tiling.cycles):
            if widened:
                self.share_exceeded(op, budget)
            self.lower_vector(op, vector, epi, row_parts, tiling)
            return None
        if self.depthwise == "vector":  # asked for, not applicable to this conv: say so
            self.remark(op, "npu-lower-conv: depthwise=vector does not apply to this conv (only "
                            "depthwise convs of one channel a group, f16 or f32, whose tiles fit "
                            "UB): it runs on the cube")
        if tiling is None:
            raise PassError(f"npu-lower-conv: no tiling fits: one output row of {g.out_hw[1]} "
                            f"windows and one block of Cout do not fit L0A/L0C/UB", op)
        if shape.diagonal:
            self.remark(op, f"npu-lower-conv: block-diagonal conv on the cube ({shape.co1} Cout blocks, "
                            f"each over its own input block's {shape.k1} kernel points; bands of "
                            f"{tiling.rows} rows, {tiling.n1} blocks per L0C tile, est. "
                            f"{tiling.cycles:.0f} cycles)")
        elif self.remarks:
            self.remark(op, f"npu-lower-conv: bands of {tiling.rows} rows, {tiling.n1} Cout blocks "
                            f"per L0C tile, {tiling.kc} kernel points per chunk, weights "
                            f"{'resident' if tiling.weights_resident else 'streamed'}; "
                            f"est. {tiling.cycles:.0f} cycles")
        bias = op.operands[2] if has_bias(op) else None
        weights = op.operands[1]
        fold = StemFold(False, False)
        # the constant weights reordered, the bias in them (`stem_fold`); a
        # core's inner run of rows (a run-time first row) must have the rows
        # above it in the image
        if stem_with_constants(op):
            rows = bool(shape.fold) and (row_parts is None or shape.ho // row_parts[0]
                                         * g.strides[0] - g.pads[0] >= FOLD - 1)
            fold = fold_stem(g, nir.memref_shape(op.operands[0])[1], weights, bias, rows)
            bias = None if fold.bias else bias
        if shape.ones:
            cube_bias.with_bias_fractal(weights, bias)
            bias = None
        if shape.residual:  # the identity after the K rows (`cube_residual`)
            cube_residual.with_identity(weights)
        if epi is not None and epi.relu is not None and (bias is not None or shape.int8):
            raise PassError("npu-lower-conv: internal: the drain's ReLU needs the bias in the "
                            "cube (stem_fold.drain_relu)", op)
        if not shape.diagonal and streams_tiles(weights, shape.co1, tiling.n1,
                                                tiling.weights_resident):
            weights = tile_major_operand(weights, tiling.n1)  # one burst a super tile
        kernel = ConvKernel(self.target, g, shape, tiling, op.operands[0], weights, bias,
                            op.operands[-1], epi, budget, pad_value(op), fold)
        if widened:
            self.share_exceeded(op, budget, footprint(kernel).setup["ub"])
        return kernel, epi, row_parts

    def share_exceeded(self, op: ir.Operation, budget: int, used: int | None = None) -> None:
        """`say_ub_share_exceeded`: `budget` the tiles' room in all of UB,
        `used` the kernel's UB (None: the vector's plan)."""
        ub = self.target.capacity("ub")
        took = f"the kernel's buffers {used} bytes" if used is not None else \
            f"the vector's tiles within {budget} bytes"
        staged = f", the stagings {ub - budget}" if ub > budget else ""
        say_ub_share_exceeded(self, op, took + staged)

    @staticmethod
    def replace_with(op: ir.Operation, epi: ConvEpilogue | None, row_parts, make_kernel) -> None:
        """The kernel `make_kernel()` builds, emitted before `op` (over this
        core's rows), which it replaces; then the epilogue group's end."""
        with op.location, ir.InsertionPoint(op):
            try:
                make_kernel().emit(row_parts)
            except ValueError as e:
                raise PassError(f"npu-lower-conv: cannot cut the conv's rows over cores: {e}", op)
        op.erase()
        if epi is not None:
            epi.finish()

    def out_type(self, op: ir.Operation, epi: ConvEpilogue | None) -> str:
        """The type of the conv's tiles in UB: f16 when its drain rounds (drain_cast.py)."""
        return "f16" if epi is not None and epi.cast is not None else \
            nir.memref_element(op.operands[-1])

    def depthwise_plan(self, op: ir.Operation, epi: ConvEpilogue | None, budget: int,
                       row_parts) -> tuple[DwPlan, DwShape] | None:
        """The vector unit's plan of a depthwise conv (None: the cube's form
        only: other groups, int8, option depthwise=cube, no plan fits).
        Accumulation is in the tiles' type: f16 accumulation (one rounding
        per kernel point) measured 2.3x the cube's f32 error on 3x3 taps
        (max 0.0017 of the sum of |terms|), well inside f16 results' tolerance."""
        if (self.depthwise == "cube" or layout(op) != NC1HWC0_BD or group_channels(op) != 1
                or is_int8(op)):
            return None
        out_type = self.out_type(op, epi)
        whole = dw_shape(op, out_type, has_bias(op), compact=has_constant(op.operands[1]))
        s = whole.row_part(row_parts[0]) if row_parts is not None else whole
        p = vector_plan(s, self.target, budget, epi.work if epi is not None else None, SETS)
        return (p, whole) if p is not None else None

    def lower_vector(self, op: ir.Operation, vector, epi: ConvEpilogue | None, row_parts,
                     tiling) -> None:
        plan, s = vector
        cube = f"{tiling.cycles:.0f}" if tiling is not None else "no tiling"
        self.remark(op, f"npu-lower-conv: depthwise conv on the vector unit ({s.c1} C1 blocks, "
                        f"{s.kh}x{s.kw} kernel points, {'f16' if s.acc_bytes == 2 else 'f32'} "
                        f"accumulation, {'compact' if s.compact else 'fractal'} weights; tiles "
                        f"of {plan.blocks} blocks x {plan.rows} rows, est. "
                        f"{plan.cycles:.0f} cycles against {cube} on the cube)")
        bias = op.operands[2] if has_bias(op) else None
        weights = compact_operand(op.operands[1]) if s.compact else op.operands[1]
        self.replace_with(op, epi, row_parts, lambda: DepthwiseKernel(
            self.target, s, plan, op.operands[0], weights, bias, op.operands[-1], epi,
            self.out_type(op, epi)))

    @staticmethod
    def row_parts(op: ir.Operation) -> tuple[int, ir.Value] | None:
        """(parts, this core's part) of a conv whose output rows
        npu-split-cores cut into equal runs over the cores."""
        found = core_part(op, "npu-lower-conv")
        ho = geometry(op).out_hw[0]
        if found is not None and ho % found[0]:
            raise PassError(f"npu-lower-conv: {nir.CORE_PART_ATTR}: {ho} output rows do not cut "
                            f"into {found[0]} equal runs", op)
        return found

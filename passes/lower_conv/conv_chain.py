"""Conv chains: a conv's result kept on chip, band by band, as the input map
of the next 1x1 stride-1 conv (`npu-fuse conv-chains`, `npu-lower-conv`).

npu-fuse marks both convs with `npu.conv_chain` (a dictionary: `role`
"producer" or "consumer", the pair's `id` in its function, the band `rows`
both take, the UB share `ub` the producer's tiling gets, in per mille of
the lowering's (the consumer's the rest), and `gm`: 1 when another op reads
the map, so the producer still stores it to GM); with `gm` = 0 the map's GM
alloc carries it too (npu-plan-gm leaves it alone, the lowering erases
it). npu-lower-conv lowers the producer with its consumer, at the
consumer: producer band i (its result also copied UB -> L1 into the
consumer's map of band i), SKEW bands ahead of consumer band i, which
reads that map as it is, both on the same L0A/L0B/L0C (`band_steps`).

`pair_of` finds the pair by the IR's structure, `plan` decides it: the
consumer tiles with the producer's bands, and both kernels' buffers
(`footprint`) fit L1, UB and L0 together.
"""

from __future__ import annotations

from mlir import ir

from npu import ir as nir
from npu.costmodel.conv import epilogue
from npu.dialects.ascend_conv import FORMS_5HD, NC1HWC0_BD, geometry, is_int8, layout
from npu.passes.lower_conv.band_steps import BandSteps
from npu.passes.lower_conv.footprint import footprint, setup_plan

CONV_CHAIN_ATTR = "npu.conv_chain"
# The producer's shares of UB tried (per mille of the lowering's ub-fraction;
# the consumer takes the rest)
UB_SHARES = (500, 600, 700, 800)
# Producer bands emitted ahead of the consumer's band that reads them
SKEW = 2


def chain_attr(op: ir.Operation) -> dict | None:
    """The `npu.conv_chain` figures of a conv (or of its map's GM alloc)."""
    if CONV_CHAIN_ATTR not in op.attributes:
        return None
    return nir.dict_attr_items(op.attributes[CONV_CHAIN_ATTR])


def conv_of_writer(op: ir.Operation) -> ir.Operation | None:
    """The conv whose result `op` stores: the conv itself, or the last member
    of its `npu.conv_epilogue` group."""
    if op.name == "ascend.conv2d":
        return op
    group = nir.enclosing_group(op, epilogue.CONV_EPILOGUE_ATTR)
    if group is None:
        return None
    convs = [o for o in nir.ops_named(group, "ascend.conv2d")]
    if len(convs) != 1 or epilogue.group_members(group, convs[0])[-1] != op:
        return None
    return convs[0]


def takes_map(op: ir.Operation) -> bool:
    """A dense 1x1 stride-1 conv of no pads (nc1hwc0, f16): its bands' input
    rows are its output rows."""
    if op.name != "ascend.conv2d" or layout(op) not in FORMS_5HD or layout(op) == NC1HWC0_BD \
            or is_int8(op):
        return False
    g = geometry(op)
    return (g.kh, g.kw, g.strides, g.pads, g.dilations, g.groups) == \
        (1, 1, (1, 1), (0, 0, 0, 0), (1, 1), 1)


def pair_of(tensor: ir.Value) -> tuple[ir.Operation, ir.Operation, list[ir.Operation]] | None:
    """(producer conv, consumer conv, the map's other readers) when `tensor`
    (a GM tensor) is written only as a conv's result (or its epilogue's) and
    read as the input map of a 1x1 stride-1 conv (the first one, in program
    order, if several); else None."""
    if not nir.is_memref(tensor.type) or nir.memory_space(tensor) != "gm" \
            or nir.memref_element(tensor) != "f16" or len(nir.memref_shape(tensor)) != 5:
        return None
    writers, readers = [], []
    for use in tensor.uses:
        owner = use.owner.operation if hasattr(use.owner, "operation") else use.owner
        if owner.name in nir.VIEW_OPS:  # read through a view (a layout change): another reader
            if not _read_only(owner.results[0]):
                return None
            readers.append(owner)
            continue
        if not owner.name.startswith("ascend."):
            return None  # another use: not a plain tensor
        (writers if use.operand_number == len(owner.operands) - 1 else readers).append(owner)
    if len(writers) != 1:
        return None
    producer = conv_of_writer(writers[0])
    if producer is None or layout(producer) not in FORMS_5HD:
        return None
    body = [o.operation for o in nir.top_level(producer).parent.regions[0].blocks[0].operations]
    consumers = [r for r in readers if takes_map(r) and r.operands[0] == tensor
                 and nir.top_level(r).parent == nir.top_level(producer).parent]
    if not consumers:
        return None
    consumer = min(consumers, key=lambda r: body.index(nir.top_level(r)))
    return producer, consumer, [r for r in readers if r != consumer]


def _read_only(view: ir.Value) -> bool:
    """Whether every use of `view` (and of views of it) reads it (an ascend op's input)."""
    for use in view.uses:
        owner = use.owner.operation if hasattr(use.owner, "operation") else use.owner
        if owner.name in nir.VIEW_OPS:
            if not _read_only(owner.results[0]):
                return False
        elif not owner.name.startswith("ascend.") or use.operand_number == len(owner.operands) - 1:
            return False
    return True


def plan(lower, producer: ir.Operation, consumer: ir.Operation, gm: bool
         ) -> tuple[int, int] | str:
    """(band rows, the producer's UB share per mille) of the pair, or why it
    is not chained: of the shares in UB_SHARES (the consumer takes the
    rest), the one the cost model gains the most with. `lower`: the conv
    lowering (its options) that will emit it; `gm`: the map also stored to
    GM (another op reads it)."""
    if lower.row_parts(producer) is not None or lower.row_parts(consumer) is not None:
        return "the convs are cut over cores"
    best, why = None, "no share of UB fits both"
    free = with_share(lower, 1.0).cube_kernel(producer, plan_only=True)
    if free is None:
        return "the producer has no cube tiling"
    for ub, rows in ((ub, r) for ub in UB_SHARES for r in range(1, free[0].t.rows + 1)):
        made = kernels(lower, producer, consumer, ub, rows)
        if isinstance(made, str):
            why = made
            continue
        pk, ck = made
        need = fits(lower.target, pk, ck)
        if need is not None:
            why = need
            continue
        gain = _gain(lower, producer, consumer, pk, ck, gm)
        if isinstance(gain, str):
            return gain
        if best is None or gain > best[0]:
            best = (gain, pk.t.rows, ub)
    if best is None:
        return why
    gain, rows, ub = best
    if gain <= 0:
        return (f"the cost model estimates the pair {-gain:.0f} cycles slower chained (at best: "
                f"the producer on {ub / 10:g}% of UB, bands of {rows} rows)")
    return rows, ub


def with_share(lower, fraction: float, remarks: bool = False):
    """The lowering with `fraction` of its UB."""
    return type(lower)(lower.target, ub_fraction=lower.ub_fraction * fraction,
                       depthwise=lower.depthwise, cube_bias=lower.cube_bias,
                       cube_residual=lower.cube_residual, remarks=remarks)


def kernels(lower, producer, consumer, ub: int, rows: int):
    """(producer's kernel, consumer's) with the producer on `ub` per mille of
    UB and the consumer on the rest, both on bands of `rows` rows; or why not."""
    made = with_share(lower, ub / 1000).cube_kernel(producer, rows=rows, plan_only=True)
    if made is None:
        return f"the producer has no cube tiling of bands of {rows} rows in its share of UB"
    pk = made[0]
    if footprint(pk).staged:
        return "the producer stages its map through UB or pools on its drain"
    if pk.pairs_tails():
        return "the producer's bands share their last chunk"
    rows = pk.t.rows
    made = with_share(lower, 1 - ub / 1000).cube_kernel(consumer, rows=rows, plan_only=True)
    if made is None or made[0].t.rows != rows:
        return f"the consumer has no tiling of the producer's bands of {rows} rows"
    ck = made[0]
    if ck.s.batch != pk.s.batch or ck.s.ho != pk.s.ho:
        return "the maps' rows differ"
    return pk, ck


def fits(target, pk, ck) -> str | None:
    """Why the two kernels' buffers do not fit L1 and UB together (None: they do)."""
    pf, cf = footprint(pk), footprint(ck)
    # the producer's own maps: two per band shape (`BandSteps.map_for`)
    shapes = len({step.band for step in BandSteps(pk).steps})
    need = {m: pf.setup.get(m, 0) + cf.setup.get(m, 0) for m in ("l1", "ub")}
    need["l1"] += 2 * shapes * pf.band_map + (SKEW + 1) * cf.band_map
    for m, b in need.items():
        if b > target.capacity(m):
            return f"the two kernels need {b} bytes of {m.upper()}, it has {target.capacity(m)}"
    return None


def lower_pair(lower, producer: ir.Operation, consumer: ir.Operation, figures: dict) -> str | None:
    """Both convs emitted at the consumer, bands interleaved; None when done,
    else why not (then nothing was emitted)."""
    decided = plan(lower, producer, consumer, bool(figures["gm"]))
    if isinstance(decided, str):
        return decided
    rows, ub = decided
    if rows != figures["rows"] or ub != figures["ub"]:
        return (f"its bands of {rows} rows (UB share {ub}) differ from npu-fuse's "
                f"({figures['rows']}, {figures['ub']})")
    pk, p_epi, _ = with_share(lower, ub / 1000, lower.remarks).cube_kernel(producer, rows=rows)
    ck, c_epi, _ = with_share(lower, 1 - ub / 1000, lower.remarks).cube_kernel(consumer, rows=rows)
    first, second = BandSteps(pk), BandSteps(ck)
    second.turns = SKEW + 1  # the maps written ahead and the one read
    assert [(s.n, s.ho0, s.band.rows) for s in first.steps] == \
        [(s.n, s.ho0, s.band.rows) for s in second.steps]
    pk.gm_out = bool(figures["gm"])
    with consumer.location, ir.InsertionPoint(consumer):
        cube = shared_cube(pk, ck)
        first.setup(cube=cube)
        second.setup(cube=cube)
        # producer band i+1 ahead of consumer band i: the cube has the next
        # band's mads while band i drains and its copies reach L1 (in order,
        # consumer band i's img2col would hold MTE1, and the cube, until then)
        bands = len(first.steps)
        for i in range(bands + SKEW):
            if i < bands:
                first.emit(i, map_out=second.map_for(i))
            if i >= SKEW:
                second.emit(i - SKEW, fm=second.map_for(i - SKEW), map_ready=True)
        first.finish()
        second.finish()
    tensor = consumer.operands[0]
    producer.erase()
    consumer.erase()
    for epi in (p_epi, c_epi):
        if epi is not None:
            epi.finish()
    root = tensor.owner
    if not figures["gm"] and not list(tensor.uses) and not isinstance(root, ir.Block) \
            and root.name == "memref.alloc":
        root.erase()
    return None


def _gain(lower, producer, consumer, pk, ck, gm: bool) -> float | str:
    """The cost model's cycles saved by the chain: each conv alone (its
    tiling with the lowering's UB) against the pair's tilings, the
    consumer's MTE2 without its map's GM read, the producer's MTE3 with the
    band copies UB -> L1 (and without its GM stores when nothing else reads
    the map). The pair's units are not taken to overlap across the two
    kernels: summing each unit's work over both (the overlap an ideal
    interleaving would give) chained ResNet bottlenecks' conv2 -> conv3 at
    56x56 (64 -> 256 channels) and measured 96,279 cycles for the pair
    against 77,292 alone."""
    alone = [lower.cube_kernel(op, plan_only=True) for op in (producer, consumer)]
    if any(a is None for a in alone):
        return "a conv of the pair has no cube tiling of its own"
    t = lower.target
    rate = {p: t.path(p).bytes_per_cycle for p in ("gm_to_l1", "ub_to_l1", "ub_to_gm")}
    s = ck.s
    size = s.batch * s.c1 * s.h * s.w * 16 * 2  # the map (f16)

    def adjusted(tiling, pipe: str, delta: float) -> float:
        pipes = dict(tiling.pipes)
        if not pipes:
            return tiling.cycles
        before = max(pipes.values())
        pipes[pipe] = max(0.0, pipes[pipe] + delta)
        return tiling.cycles - before + max(pipes.values())

    produced = adjusted(pk.t, "MTE3", size / rate["ub_to_l1"]
                        - (0 if gm else size / rate["ub_to_gm"]))
    consumed = adjusted(ck.t, "MTE2", -size / rate["gm_to_l1"])
    return alone[0][0].t.cycles + alone[1][0].t.cycles - produced - consumed


def shared_cube(pk, ck) -> tuple[list, list, list]:
    """The L0A halves, L0B halves and L0C sets both kernels take in turn,
    each the larger kernel's size (`setup_plan`: what each would allocate
    alone); one L0C set, twice, where two would not fit (a kernel of one set
    takes more than half of L0C: `l0c_sets`)."""
    pp, cp = setup_plan(pk), setup_plan(ck)
    halves = [[nir.alloc([max(a, b)], pk.in_type, space) for _ in range(2)]
              for a, b, space in ((pp.l0a, cp.l0a, "l0a"), (pp.l0b, cp.l0b, "l0b"))]
    size = max(pp.l0c, cp.l0c)
    two = 2 * size * nir.element_bytes(pk.acc_type) <= pk.target.capacity("l0c")
    l0c = [nir.alloc([size], pk.acc_type, "l0c") for _ in range(2)] if two else \
        [nir.alloc([size], pk.acc_type, "l0c")] * 2
    return halves[0], halves[1], l0c


def unmark(producer: ir.Operation, consumer: ir.Operation) -> None:
    """A chain not formed after all: both convs lowered alone, the map's GM
    alloc planned as any other."""
    for op in (producer, consumer):
        if CONV_CHAIN_ATTR in op.attributes:
            del op.attributes[CONV_CHAIN_ATTR]
    root = nir.view_root(consumer.operands[0]).owner
    if not isinstance(root, ir.Block) and CONV_CHAIN_ATTR in root.attributes:
        del root.attributes[CONV_CHAIN_ATTR]


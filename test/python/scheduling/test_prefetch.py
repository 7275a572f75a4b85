"""npu-prefetch on the simulator: matmuls whose first host-constant weight
chunks load during the previous op's idle MTE2 tail give the numpy result,
bit for bit the result without prefetching, with the race detector clean;
the chunks really move out of the loop (top-level copies from the weight),
and where the previous op leaves MTE2 idle the program gets faster."""

from __future__ import annotations

import math

import numpy as np
import pytest

from helpers import assert_outputs_close, compile_and_simulate, compile_program

from npu.ir import (arg_attrs, constant_data, functions, memref_element, memref_shape, view_root,
                    walk)

F = 16
NP = {"f16": np.float16, "f32": np.float32}


def _t(shape, elem: str) -> str:
    return f'memref<{"x".join(map(str, shape))}x{elem}, "gm">'


def _nz_weight(rows: int, cols: int, seed: int) -> str:
    """An `npu.constant` B in Nz (cols/16 x rows/16 fractals) of random f16."""
    data = (np.random.default_rng(seed).standard_normal((cols // F, rows // F, F, F)) * 0.2
            ).astype(np.float16)
    shape = "x".join(map(str, data.shape))
    return f'npu.constant = dense<"0x{data.tobytes().hex().upper()}"> : tensor<{shape}xf16>'


def chain(m: int, n: int, k1: int, k2: int, out: str, lead: str) -> str:
    """y = (gelu or nothing)(A x W1) cast to f16, x W2: two matmuls with
    host-constant weights, the second's A produced by the first; `lead`
    "exp" takes the exp of A first (the first matmul waits for it), "gelu"
    puts a GELU epilogue on the first matmul (BERT's ffn_in -> ffn_out).
    M = m (a multiple of 16 that need not divide the tile), reductions n
    and k1."""
    m1 = m // F
    a_s, w1_s, w2_s = (n // F, m1, F, F), (k1 // F, n // F, F, F), (k2 // F, k1 // F, F, F)
    c1_s, y_s = (k1 // F, m1, F, F), (k2 // F, m1, F, F)
    args = [f"%a: {_t(a_s, 'f16')}",
            f"%w1: {_t(w1_s, 'f16')} {{{_nz_weight(n, k1, 1)}}}",
            f"%w2: {_t(w2_s, 'f16')} {{{_nz_weight(k1, k2, 2)}}}", f"%y: {_t(y_s, out)}"]
    lines = []

    def op(name, ins, dst, shape, elem, attrs=""):
        types = ", ".join(t for _, t in ins) + f", {_t(shape, elem)}"
        names = ", ".join(v for v, _ in ins)
        attr = f" {{{attrs}}}" if attrs else ""
        lines.append(f'  "ascend.{name}"({names}, {dst}){attr} : ({types}) -> ()')
        return dst, _t(shape, elem)

    count = iter(range(100))

    def tmp(shape, elem):
        v = f"%t{next(count)}"
        lines.append(f"  {v} = memref.alloc() : {_t(shape, elem)}")
        return v

    a = ("%a", _t(a_s, "f16"))
    if lead == "exp":
        a = op("exp", [a], tmp(a_s, "f16"), a_s, "f16")
    c1 = op("matmul", [a, ("%w1", _t(w1_s, "f16"))], tmp(c1_s, "f32"), c1_s, "f32")
    v = c1
    if lead == "gelu":
        for name, attrs in (("muls", f"scalar = {1 / math.sqrt(2):.17e} : f64"), ("erf", ""),
                            ("adds", "scalar = 1.0 : f64"), ("muls", "scalar = 5.0e-01 : f64")):
            v = op(name, [v], tmp(c1_s, "f32"), c1_s, "f32", attrs)
        v = op("mul", [c1, v], tmp(c1_s, "f32"), c1_s, "f32")
    h = op("cast", [v], tmp(c1_s, "f16"), c1_s, "f16", 'round_mode = "rint"')
    if out == "f32":
        op("matmul", [h, ("%w2", _t(w2_s, "f16"))], "%y", y_s, "f32")
    else:
        c2 = op("matmul", [h, ("%w2", _t(w2_s, "f16"))], tmp(y_s, "f32"), y_s, "f32")
        op("cast", [c2], "%y", y_s, "f16", 'round_mode = "rint"')
    return (f"func.func @chain({', '.join(args)}) {{\n" + "\n".join(lines)
            + "\n  return\n}\n")


def inputs(text: str) -> list[np.ndarray]:
    """Random inputs; each `npu.constant` argument gets its own data."""
    module = compile_program(text, "")
    func = functions(module)[0]
    rng = np.random.default_rng(0)
    out = []
    for k, arg in enumerate(func.regions[0].blocks[0].arguments):
        attr = arg_attrs(func, k).get("npu.constant")
        shape, elem = memref_shape(arg.type), memref_element(arg.type)
        out.append(constant_data(attr, shape, elem) if attr is not None
                   else rng.standard_normal(shape).astype(NP[elem]))
    return out


def top_level(module) -> list:
    """The function's top-level ops, in order."""
    return [o.operation for o in functions(module)[0].regions[0].blocks[0].operations]


def prefetched_weights(text: str, options: str = "prefetch=true") -> list[int]:
    """Argument numbers of the weights a top-level copy loads into L1."""
    module = compile_program(text, f"npu-lower{{cores=1 {options}}}" if options else "npu-lower{cores=1}")
    func = functions(module)[0]
    args = list(func.regions[0].blocks[0].arguments)
    return sorted({args.index(view_root(op.operation.operands[0]))
                   for op in func.regions[0].blocks[0].operations
                   if op.operation.name == "cce.copy_gm_to_l1"})


@pytest.mark.parametrize("m,n,k1,k2,out,lead", [
    (48, 256, 80, 112, "f32", "exp"),    # M of 3 blocks, reductions of 16 and 5 blocks
    (48, 256, 80, 112, "f16", "gelu"),   # ffn_in -> ffn_out in small, f16 result
    (64, 512, 256, 96, "f32", "gelu"),
])
def test_prefetched_chain_matches_numpy_and_the_unprefetched_result(m, n, k1, k2, out, lead):
    # The intermediate goes through GM (fuse-chains=false): with a matmul
    # chain it stays in L1 and the second matmul waits for no GM round
    # trip (test_matmul_chain.py), which is faster still on these shapes.
    text = chain(m, n, k1, k2, out, lead)
    simulated_with_and_without(text, inputs(text), "fuse-chains=false")
    # W2 (argument 2) is loaded ahead of its matmul's loop; W1 only after
    # the exp (the first op, when there is none, has nothing to overlap).
    on = "prefetch=true fuse-chains=false"
    assert prefetched_weights(text, on) == ([1, 2] if lead == "exp" else [2])
    assert prefetched_weights(text, "prefetch=false fuse-chains=false") == []
    assert prefetched_weights(text, "fuse-chains=false") == prefetched_weights(text, on)


def test_prefetch_saves_the_idle_tail():
    # The exp's last chunk leaves MTE2 idle: the first matmul's weight
    # chunks load there instead of after the matmul's first wait (on the
    # exp's result).
    text = chain(48, 1024, 256, 112, "f32", "exp")
    ins = inputs(text)
    _, _, res = compile_and_simulate(text, "npu-lower{cores=1 prefetch=true}", ins)
    _, _, plain = compile_and_simulate(text, "npu-lower{cores=1 prefetch=false}", ins)
    assert res.cycles < plain.cycles, (res.cycles, plain.cycles)


def test_pipe_work_totals_are_the_programs_traffic_and_issue():
    # npu.analysis.pipe_work, the cost model's view of where each pipe is busy: an
    # exp over 64 x 1024 f32 moves 256 KiB each way and issues 1024 slow
    # vector repeats, however the lowering cuts it into chunks; a 48 x 64 x
    # 80 matmul is 3 * 4 * 5 cube blocks.
    from npu.analysis.pipe_work import pipe_work
    from npu.target import get_target

    target = get_target("ascend910")
    text = chain(48, 64, 80, 16, "f32", "none").replace(
        "func.func @chain(", 'func.func @exp(%x: memref<64x1024xf32, "gm">, '
        '%e: memref<64x1024xf32, "gm">) {\n  "ascend.exp"(%x, %e) : (memref<64x1024xf32, "gm">, '
        'memref<64x1024xf32, "gm">) -> ()\n  return\n}\nfunc.func @chain(')
    module = compile_program(text, "npu-lower-elementwise,npu-lower-matmul{schedule=pipelined},"
                                   "npu-double-buffer")
    exp, matmul = functions(module)
    work = pipe_work([o.operation for o in exp.regions[0].blocks[0].operations], target)
    nbytes = 64 * 1024 * 4
    assert work["MTE2"] == nbytes / 64 and work["MTE3"] == nbytes / 64
    assert work["V"] == 64 * 1024 // 64 * target.vector_cycles("transcendental")
    work = pipe_work([o.operation for o in matmul.regions[0].blocks[0].operations], target)
    assert work["M"] == 3 * 4 * 5 + 3 * 5 * 1
    # npu-prefetch's one-walk facts count each op's work as pipe_work does.
    from npu.passes.prefetch.facts import FactsCache

    facts = FactsCache(target)
    for func in (exp, matmul):
        for child in func.regions[0].blocks[0].operations:
            assert facts(child.operation).work == pipe_work([child.operation], target)


def simulated_with_and_without(text: str, ins: list[np.ndarray], options: str = "fuse=false"):
    """`npu-lower{cores=1 <options>}` with and without npu-prefetch,
    simulated: both give the numpy result, bit for bit the same, race-free.
    Returns both SimResults."""
    pipeline = f"npu-lower{{{{cores=1 {options} prefetch={{}}}}}}"
    got, expected, res = compile_and_simulate(text, pipeline.format("true"), ins)
    plain, _, plain_res = compile_and_simulate(text, pipeline.format("false"), ins)
    assert_outputs_close(got, expected)
    for a, b in zip(got, plain):
        np.testing.assert_array_equal(a, b)
    assert res.hazards == [] and plain_res.hazards == []
    return res, plain_res


STEPS = "npu-plan-gm,npu-lower-elementwise,npu-lower-matmul{schedule=pipelined},npu-double-buffer,"


def split_program(cast_loc: str, chunk: int) -> str:
    """exp, cast (located `cast_loc`), then a matmul (located "mm") with a
    1024 x 1280 host-constant weight in L1 chunks of `chunk` reduction
    elements."""
    w = _nz_weight(1024, 1280, 3)
    return f"""func.func @split(%x: {_t((64, 3, F, F), 'f32')}, %e: {_t((64, 3, F, F), 'f32')},
    %a: {_t((64, 3, F, F), 'f16')}, %w: {_t((80, 64, F, F), 'f16')} {{{w}}}, %c: {_t((80, 3, F, F), 'f32')}) {{
  "ascend.exp"(%x, %e) : ({_t((64, 3, F, F), 'f32')}, {_t((64, 3, F, F), 'f32')}) -> () loc("exp")
  "ascend.cast"(%e, %a) {{round_mode = "rint"}} : ({_t((64, 3, F, F), 'f32')}, {_t((64, 3, F, F), 'f16')}) -> () loc("{cast_loc}")
  "ascend.matmul"(%a, %w, %c) {{npu.options = {{"l1-chunk" = {chunk} : i64}}}} : ({_t((64, 3, F, F), 'f16')}, {_t((80, 64, F, F), 'f16')}, {_t((80, 3, F, F), 'f32')}) -> () loc("mm")
  return
}}
"""


@pytest.mark.parametrize("cast_loc, bursts", [("mm", [32, 48]), ("cast", [16, 64])])
def test_chunk_cut_over_several_gaps_matches_numpy(cast_loc, bursts):
    # The first slot's chunk is cut at its bursts over the exp's tail and
    # the gaps of the cast (this op's preparation when it shares the
    # matmul's location, as in test/Transforms/prefetch-split.mlir; else
    # the previous op, and the exp's tail the op before it), with random
    # weights; planned, synchronised and simulated against numpy and the
    # program without npu-prefetch.
    text = split_program(cast_loc, 64)
    ins = inputs(text)
    ins[0] = (ins[0] * 0.25).astype(np.float32)  # exp stays within f16
    got, expected, res = compile_and_simulate(
        text, STEPS + "npu-prefetch,npu-plan-memory,npu-insert-sync", ins)
    plain, _, plain_res = compile_and_simulate(text, STEPS + "npu-plan-memory,npu-insert-sync", ins)
    assert_outputs_close(got, expected)
    for a, b in zip(got, plain):
        np.testing.assert_array_equal(a, b)
    assert res.hazards == [] and plain_res.hazards == []
    module = compile_program(text, STEPS + "npu-prefetch")
    top = top_level(module)
    assert sorted(int(str(o.attributes["n_burst"]).split(":")[0]) for o in top
                  if o.name == "cce.copy_gm_to_l1") == bursts


@pytest.mark.parametrize("cast_loc", ["mm", "cast"])
def test_part_of_the_first_slot_when_the_gaps_hold_most_of_it(cast_loc):
    # Chunks of 128 reduction elements take 5120 cycles to load, more than
    # the gaps hold but less than twice: the bursts that fit load there,
    # the rest in the loop's first iteration; same result as without
    # npu-prefetch, race-free, faster (with whole slots only, nothing is
    # prefetched: 67,232 cycles both ways).
    text = split_program(cast_loc, 128)
    ins = inputs(text)
    ins[0] = (ins[0] * 0.25).astype(np.float32)
    res, plain_res = simulated_with_and_without(text, ins)
    assert res.cycles < plain_res.cycles, (res.cycles, plain_res.cycles)
    module = compile_program(text, STEPS + "npu-prefetch")
    top = top_level(module)
    ahead = sum(int(str(o.attributes["n_burst"]).split(":")[0]) for o in top
                if o.name == "cce.copy_gm_to_l1")
    assert 40 <= ahead < 80, ahead  # at least half of the 80 bursts, not all


def free_loads_first() -> str:
    """An exp, then a previous op ('prev') whose first loads (the exp of an
    unrelated %y, as a layernorm's gamma and beta) wait for nothing, then
    a matmul with a host-constant weight reading what 'prev' writes."""
    x, y, c = (64, 3, F, F), (8, 3, F, F), (80, 3, F, F)
    return f"""
func.func @free_first(%x: {_t(x, 'f32')}, %e: {_t(x, 'f32')}, %y: {_t(y, 'f32')}, %t: {_t(y, 'f32')}, %s: {_t(x, 'f32')}, %a: {_t(x, 'f16')}, %w: {_t((80, 64, F, F), 'f16')} {{{_nz_weight(1024, 1280, 3)}}}, %c: {_t(c, 'f32')}) {{
  "ascend.exp"(%x, %e) : ({_t(x, 'f32')}, {_t(x, 'f32')}) -> ()
  "ascend.exp"(%y, %t) : ({_t(y, 'f32')}, {_t(y, 'f32')}) -> () loc("prev")
  "ascend.add"(%e, %e, %s) : ({_t(x, 'f32')}, {_t(x, 'f32')}, {_t(x, 'f32')}) -> () loc("prev")
  "ascend.cast"(%s, %a) {{round_mode = "rint"}} : ({_t(x, 'f32')}, {_t(x, 'f16')}) -> () loc("prev")
  "ascend.matmul"(%a, %w, %c) {{npu.options = {{"l1-chunk" = 64 : i64}}}} : ({_t(x, 'f16')}, {_t((80, 64, F, F), 'f16')}, {_t(c, 'f32')}) -> ()
  return
}}
"""


def test_loads_that_wait_for_nothing_leave_the_earlier_gap_to_the_weights():
    # Before 'prev' reads the exp's result, MTE2 only runs the exp of %y:
    # the weight's first slot loads in the rest of that gap, ahead of
    # 'prev' (a top-level weight copy before the exp of %y).
    text = free_loads_first()
    res, plain_res = simulated_with_and_without(text, inputs(text))
    module = compile_program(text, "npu-lower{cores=1 fuse=false prefetch=true}")
    names = [op.name for op in top_level(module)]
    assert "cce.copy_gm_to_l1" in names, "the weight was not prefetched"
    first_weight_copy = names.index("cce.copy_gm_to_l1")
    loops = [k for k, name in enumerate(names) if name == "scf.for"]
    # The exp of %x is the first loop (its two segments); the weight copy
    # comes before the exp of %y's loop.
    assert loops[1] < first_weight_copy < loops[2], names
    assert res.cycles < plain_res.cycles, (res.cycles, plain_res.cycles)


def strip_behind_free_loads() -> str:
    """An exp ('prev'), then a matmul ('mm', A's row strip resident in L1:
    its loop reads only the weight) whose preparation first runs loads
    that wait for nothing (the exp of an unrelated %y, as BERT's
    out-projection loads its bias row) and then casts what 'prev' wrote
    and copies A's strip, which wait for it."""
    x, y, c = (48, 8, F, F), (4, 8, F, F), (48, 8, F, F)
    w = (48, 48, F, F)
    return f"""
func.func @strip_behind(%x: {_t(x, 'f32')}, %e: {_t(x, 'f32')}, %y: {_t(y, 'f32')}, %t: {_t(y, 'f32')}, %a: {_t(x, 'f16')}, %w: {_t(w, 'f16')} {{{_nz_weight(768, 768, 5)}}}, %c: {_t(c, 'f32')}) {{
  "ascend.exp"(%x, %e) : ({_t(x, 'f32')}, {_t(x, 'f32')}) -> () loc("prev")
  "ascend.exp"(%y, %t) : ({_t(y, 'f32')}, {_t(y, 'f32')}) -> () loc("mm")
  "ascend.cast"(%e, %a) {{round_mode = "rint"}} : ({_t(x, 'f32')}, {_t(x, 'f16')}) -> () loc("mm")
  "ascend.matmul"(%a, %w, %c) : ({_t(x, 'f16')}, {_t(w, 'f16')}, {_t(c, 'f32')}) -> () loc("mm")
  return
}}
"""


def test_a_preparation_waiting_behind_free_loads_keeps_the_previous_ops_gap():
    # The exp of %y does not wait, but the cast behind it does: MTE2 idles
    # after 'prev''s last load (less the exp of %y's loads), and the
    # weight's first slot loads there, ahead of the exp of %y.
    text = strip_behind_free_loads()
    res, plain_res = simulated_with_and_without(text, inputs(text))
    module = compile_program(text, "npu-lower{cores=1 fuse=false prefetch=true}")
    names = [op.name for op in top_level(module)]
    loops = [k for k, name in enumerate(names) if name == "scf.for"]
    assert "cce.copy_gm_to_l1" in names, "the weight was not prefetched"
    # 'prev' is the first loop; the weight copy comes before the exp of %y's.
    assert loops[0] < names.index("cce.copy_gm_to_l1") < loops[1], names
    assert res.cycles < plain_res.cycles, (res.cycles, plain_res.cycles)


@pytest.mark.slow  # 11 s; the other prefetch tests cover the L1 room by default
def test_live_l1_room_takes_the_attention_tail():
    """The attention computing its Q/K/V projection (seq 128, hidden 768)
    keeps X, the W chunks and the heads' tiles in one component of L1
    lifetimes up to its last head, where the W chunks are dead. Beside the
    bytes live there (l1-room=live, the default) the out-projection's two
    weight slots load in that tail; beside the component (safe) none
    fits. Both match onnxruntime, bit for bit each other, race-free, and
    the prefetch is faster."""
    import onnxruntime

    import npu
    from npu.frontend.bert import self_attention

    model = self_attention(128, 768, 12, out_projection=True)
    x = np.random.default_rng(1).standard_normal((1, 128, 768)).astype(np.float32)
    runs = {}
    for room in ("live", "safe"):
        pipeline = f"npu-lower{{cores=1 prefetch-l1-room={room}}}"
        (y,), report = npu.compile(model, target="ascend910", pipeline=pipeline)(x)
        assert report["hazards"] == [], report["hazards"]
        runs[room] = (y, report["cycles"])
        cce = npu.compile(model, target="ascend910", pipeline=f"npu-lower{{cores=1 prefetch-l1-room={room} "
                                                                  f"emit=cce}}").module
        tops = top_level(cce)
        where = [str(op.location) for op in tops]
        last_attention = max(k for k, loc in enumerate(where) if loc.startswith('loc(fused["scores"'))
        early = [k for k in range(last_attention) if tops[k].name == "cce.copy_gm_to_l1"
                 and where[k].startswith('loc("out_proj"')]
        assert len(early) == (2 if room == "live" else 0), (room, len(early))
    (want,) = onnxruntime.InferenceSession(model.SerializeToString()).run(None, {"x": x})
    np.testing.assert_allclose(runs["live"][0], want, rtol=2e-2, atol=1e-2 * np.abs(want).max())
    np.testing.assert_array_equal(runs["live"][0], runs["safe"][0])
    assert runs["live"][1] < runs["safe"][1], runs


@pytest.mark.parametrize("bound,why", [
    (1_000_000, "the planner did not pack them"),
    (1_100_000, "more live than npu-prefetch's bound admitted"),
])
def test_an_l1_overflow_after_live_room_lowers_again_with_safe_room(monkeypatch, bound, why,
                                                                     fresh_diagnostics):
    """Should the planner not achieve the live bound, npu-lower lowers the
    program again with npu-prefetch's safe room instead of failing, and says
    so by default (a slower program): with whether the bytes live at once
    already passed L1 (npu-prefetch's estimate was short) or their packing did."""
    from npu.passes.plan_memory import Overflow, PlanMemoryPass
    from npu.passes.prefetch import PrefetchPass

    rooms = []
    plan = PlanMemoryPass.run
    prefetch = PrefetchPass.run

    def spy_prefetch(self, module):
        rooms.append(self.l1_room)
        return prefetch(self, module)

    def overflow_once(self, module):
        if len(rooms) == 1:
            raise Overflow("l1 overflows: forced by the test", module, 1_200_000, bound, 1_048_576)
        return plan(self, module)

    monkeypatch.setattr(PrefetchPass, "run", spy_prefetch)
    monkeypatch.setattr(PlanMemoryPass, "run", overflow_once)
    text = strip_behind_free_loads()
    module = compile_program(text, "npu-lower{cores=1 fuse=false prefetch=true}")
    assert rooms == ["live", "safe"], rooms
    names = [op.name for op in top_level(module)]
    assert "cce.copy_gm_to_l1" in names, "the second lowering did not prefetch"
    said = [d.message for d in fresh_diagnostics if "prefetch-l1-room=safe" in d.message]
    assert said == [f"npu-lower: L1 overflowed with npu-prefetch's slots beside the bytes live "
                    f"at each op (1200000 bytes placed, at least {bound} live at once, 1048576 "
                    f"in L1; {why}); lowered again with prefetch-l1-room=safe"], said


def test_a_resident_strips_first_parts_load_ahead_of_its_loop():
    """The second matmul (256x256x128: one C tile by the search) runs as
    row tiles with B's strip resident (npu-lower-matmul's column strips):
    its first parts' copies are cloned ahead of the loop into the first
    matmul's idle MTE2, the loop's own copies then skip the first
    iteration: the numpy result, bit for bit the unprefetched one, race
    free, and faster."""
    text = chain(256, 512, 256, 128, "f32", "exp")
    on = "prefetch=true fuse-chains=false matmul-col-strips=true"
    assert 2 in prefetched_weights(text, on)
    # the loop's copies of the prefetched parts: under the column start's
    # condition and a later iteration's
    module = compile_program(text, f"npu-lower{{cores=1 {on} emit=cce}}")
    w2 = functions(module)[0].regions[0].blocks[0].arguments[2]
    skipped = [op for op in walk(module.operation) if op.name == "cce.copy_gm_to_l1"
               and view_root(op.operands[0]) == w2 and op.parent.name == "scf.if"
               and op.parent.operands[0].owner.name == "arith.andi"]
    assert skipped
    res, plain_res = simulated_with_and_without(text, inputs(text),
                                                "fuse-chains=false matmul-col-strips=true")
    assert res.cycles < plain_res.cycles, (res.cycles, plain_res.cycles)

"""Every registered pass's option given where it does not apply is refused,
as npu-lower's are, in one line (`npu.passes.applies`): when the pass is built
for what its options and the target decide (npu-split-cores on one core,
npu-fuse's epilogue options without epilogues), when it runs for what the
program decides (npu-prefetch's several-core options on a program not split,
a lowering's option whose need no op's own options meet, npu-double-buffer's
`min-trip-count` with no loop to ping-pong). No output is written; the default
and a value that applies still run. npu-lower's own sub-passes are not checked
again (npu-lower checked its options in its names)."""

from __future__ import annotations

import dataclasses

import pytest

from npu.passes import registry
from npu.passes.applies import is_pair
from npu.passes.base import OptionError
from npu.pipeline import PipelineError, run_pipeline
from npu.ir import make_context, parse_module
from npu.tools import npu_opt, npu_run

MATMUL = """func.func @mm(%a: memref<4x4x16x16xf16, "gm">, %b: memref<4x4x16x16xf16, "gm">,
                  %c: memref<4x4x16x16xf32, "gm">){attrs} {{
  "ascend.matmul"(%a, %b, %c){options} : (memref<4x4x16x16xf16, "gm">,
      memref<4x4x16x16xf16, "gm">, memref<4x4x16x16xf32, "gm">) -> ()
  return
}}
"""
PROGRAM = MATMUL.format(attrs="", options="")
# B a host constant: npu-prefetch's weight slots act on it
WEIGHTS = PROGRAM.replace('%b: memref<4x4x16x16xf16, "gm">', '%b: memref<4x4x16x16xf16, "gm"> '
                          '{npu.constant = dense<0.5> : tensor<4x4x16x16xf16>}')
SPLIT = "npu-split-cores{cores=4 min-bytes=0 estimate=false},npu-lower-matmul,"


def _program(options: str) -> str:
    return MATMUL.format(attrs="", options=f" {{npu.options = {{{options}}}}}")


@pytest.mark.parametrize("flag,options,why", [
    ("npu-split-cores", "cores=1 min-bytes=0", "min-bytes: does not apply: no split over cores "
                                               "(cores=1)"),
    ("npu-split-cores", "cores=1 grids=128x64x64:2x2", "grids: does not apply: no split over "
                                                       "cores (cores=1)"),
    ("npu-split-cores", "cores=1 split-k-model=false", "split-k-model: does not apply: no split "
                                                      "over cores (cores=1)"),
    ("npu-fuse", "epilogues=false conv-f16-copies=false", "conv-f16-copies: does not apply: it "
                                                          "needs epilogues=true"),
    ("npu-fuse", "epilogue-bias-f32=true conv-pool=false", "conv-pool: does not apply: it needs "
                                                           "epilogue-bias-f32=false"),
    ("npu-insert-sync", "mode=barrier carried-span=block", "carried-span: does not apply: it "
                                                           "needs mode=precise"),
])
def test_what_the_options_decide_is_refused_when_the_pass_is_built(flag, options, why, target):
    with pytest.raises(OptionError) as e:
        registry()[flag].from_option_string(options, target)
    assert str(e.value) == f"{flag}: {why}"


def test_a_one_core_target_says_so(target):
    one = dataclasses.replace(target, name="one-core", cores=1)
    with pytest.raises(OptionError, match=r"^npu-split-cores: share: does not apply: no split "
                                          r"over cores \(one-core has one core\)$"):
        registry()["npu-split-cores"].from_option_string("share=false", one)
    registry()["npu-split-cores"].from_option_string("share=false", target)
    registry()["npu-split-cores"].from_option_string("cores=4 share=false", target)


@pytest.mark.parametrize("flag", sorted(registry()))
def test_every_pass_takes_every_option_at_its_default(flag, target):
    """Given explicitly, each at its default: nothing is refused, whatever
    the others' values (`cores=1` for npu-split-cores included)."""
    cls = registry()[flag]
    values = {o.name: o.default for o in cls.options}
    cls(target, **values)
    for option in cls.options:  # and each switch a need names, turned the other way
        for need in option.needs:
            if is_pair(need) and isinstance(need[1], bool):
                cls(target, **{**values, need[0]: not need[1]})


@pytest.mark.parametrize("flag", sorted(registry()))
def test_every_need_names_an_option_of_its_pass(flag):
    cls = registry()[flag]
    by_name = {o.name: o for o in cls.options}
    for option in cls.options:
        for need in option.needs:
            if not is_pair(need):
                continue
            assert need[0] in by_name and need[0] != option.name
            by_name[need[0]].check(need[1])


@pytest.mark.parametrize("program,pipeline,why", [
    (PROGRAM, "npu-lower-matmul,npu-prefetch{rest-phases=1}",
     "npu-prefetch: rest-phases: does not apply: no split over cores (no function runs on "
     "several cores)"),
    (PROGRAM, "npu-lower-matmul,npu-prefetch{strip-phases=1}",
     "npu-prefetch: strip-phases: does not apply: no split over cores (no function runs on "
     "several cores)"),
    # npu-prefetch and npu-double-buffer on a program not lowered yet: nothing to act on
    (PROGRAM, "npu-prefetch{strip-phases=1}",
     "npu-prefetch: strip-phases: does not apply: the program has no copy from GM into L1 or "
     "UB (a lowered op's loads)"),
    (PROGRAM, "npu-lower-matmul,npu-prefetch{chunks=2}",  # B is no host constant
     "npu-prefetch: chunks: does not apply: the program has no host-constant weights staged "
     "into L1 (a lowered matmul's or conv's)"),
    (PROGRAM, "npu-double-buffer{min-trip-count=3}",
     "npu-double-buffer: min-trip-count: does not apply: the program has no loop (scf.for: a "
     "lowered op's)"),
    (PROGRAM, "npu-lower-matmul{schedule=simple c-pieces=2}",
     "npu-lower-matmul: c-pieces: does not apply: it needs schedule=pipelined"),
    # an op's own option that is not the schedule does not meet it
    (_program("m = 64 : i64"), "npu-lower-matmul{resident-a=false}",
     "npu-lower-matmul: resident-a: does not apply: it needs schedule=pipelined"),
    (PROGRAM, "npu-lower-matmul,npu-double-buffer{unmarked=false min-trip-count=3}",
     "npu-double-buffer: min-trip-count: does not apply: it needs unmarked=true"),
    # split, but 4 cores' movers (64 B/cycle each) cannot fill the chip's bus
    (WEIGHTS, SPLIT + "npu-prefetch{tail-bus=false}",
     "npu-prefetch: tail-bus: does not apply: the movers of 4 cores (256 B/cycle) cannot "
     "outrun the chip's GM bus (1200 B/cycle)"),
])
def test_what_the_program_decides_is_refused_when_the_pass_runs(program, pipeline, why,
                                                                 target, tmp_path, capsys):
    src = tmp_path / "in.mlir"
    src.write_text(program)
    out = tmp_path / "out.mlir"
    assert npu_opt.main([str(src), f"--pass-pipeline=builtin.module({pipeline})",
                         "-o", str(out)]) == 1
    err = capsys.readouterr().err  # after the remarks of the passes before it
    assert err.endswith(f"\n{src}: error: {why}\n") or err == f"{src}: error: {why}\n"
    assert err.count("error") == 1 and "Traceback" not in err
    assert not out.exists()


@pytest.mark.parametrize("program,pipeline", [
    (PROGRAM, "npu-prefetch{rest-phases=2 later-slots=true}"),  # at their defaults
    (WEIGHTS, SPLIT + "npu-prefetch{rest-phases=1 remainder-phases=0 later-slots=false}"),
    (WEIGHTS, SPLIT + "npu-prefetch{strip-phases=0}"),
    (PROGRAM, "npu-lower-matmul{schedule=pipelined c-pieces=2 resident-a=false}"),
    # the op asks for the pipelined schedule itself: the pass's options apply to it
    (_program('schedule = "pipelined"'), "npu-lower-matmul{c-pieces=2}"),
    # the op's loops are marked for ping-pong: min-trip-count applies to them
    (_program('"double-buffer" = true'),
     "npu-lower-matmul,npu-double-buffer{unmarked=false min-trip-count=3}"),
    (PROGRAM, "npu-lower-matmul,npu-double-buffer{min-trip-count=3}"),
    (PROGRAM, "npu-split-cores{cores=4 min-bytes=0 share=false}"),
])
def test_the_default_and_a_value_that_applies_run(program, pipeline, target):
    with make_context() as ctx:
        module = parse_module(program, ctx)
        run_pipeline(module, f"builtin.module({pipeline})", target)


@pytest.mark.parametrize("options", ["sync=barrier", "double-buffer=false", "cores=1 fuse=false"])
def test_npu_lowers_sub_passes_are_not_checked_again(options, target):
    """npu-lower forwards its own defaults (sink-sets=true, min-trip-count)
    to passes where they do nothing; it checked what it was given."""
    with make_context() as ctx:
        module = parse_module(PROGRAM, ctx)
        run_pipeline(module, f"builtin.module(npu-lower{{{options}}})", target)


def test_npu_run_refuses_a_sub_pass_option_before_writing(tmp_path, capsys):
    src = tmp_path / "mm.mlir"
    src.write_text(PROGRAM)
    out = tmp_path / "out.json"
    pipeline = "npu-split-cores{cores=1 share=false},npu-lower{cores=1}"
    assert npu_run.main([str(src), "-o", str(out), "--pipeline", pipeline]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.rstrip().endswith("npu-split-cores: share: does not apply: no split over cores "
                                 "(cores=1)")
    assert not out.exists()


def test_the_api_refuses_at_the_pass(target):
    with make_context() as ctx:
        module = parse_module(PROGRAM, ctx)
        with pytest.raises(PipelineError, match=r"npu-prefetch: later-slots: does not apply"):
            run_pipeline(module, "builtin.module(npu-prefetch{later-slots=false})", target)


def test_a_split_npu_lower_does_not_make_is_not_refused(target):
    """npu-lower keeps this matmul on one core (too small to split): its
    several-core options have nothing to do here, which one pipeline for
    every program must not fail on, since whether a program splits depends
    on its size (docs/passes.md)."""
    with make_context() as ctx:
        module = parse_module(PROGRAM, ctx)
        run_pipeline(module, "builtin.module(npu-lower{cores=4 prefetch-rest-phases=1 "
                             "split-cores-share=false})", target)
        assert "npu.block_dim" not in str(module)


@pytest.mark.parametrize("pipeline,why", [
    ("npu-lower{fuse-conv-pool=false}", "npu-lower: fuse-conv-pool: does not apply: the "
                                        "program has no conv"),
    ("npu-lower{cores=1 max-chunk=1024}", "npu-lower: max-chunk: does not apply: the program "
                                          "has no row op (elementwise or reduction) or "
                                          "elementwise op"),
    ("npu-lower-pool{max-rows=8}", "npu-lower-pool: max-rows: does not apply: the program has "
                                   "no pool"),
    ("npu-canonicalize{transposes=false}", "npu-canonicalize: transposes: does not apply: the "
                                           "program has no transpose"),
    ("npu-lower{canonicalize-matmul-scales=false}", "npu-lower: canonicalize-matmul-scales: does "
                                                    "not apply: the program has no batch_matmul "
                                                    "(attention's Q.K^T)"),
    ("npu-hoist-casts{remarks=false}", "npu-hoist-casts: remarks: does not apply: the program "
                                       "has no batch_matmul (attention's Q.K^T)"),
])
def test_an_option_on_ops_the_program_has_none_of_is_refused(pipeline, why, target):
    with make_context() as ctx:
        module = parse_module(PROGRAM, ctx)
        with pytest.raises(PipelineError) as e:
            run_pipeline(module, f"builtin.module({pipeline})", target)
        assert str(e.value) == f"-: error: {why}"


def test_a_split_may_make_the_adds_of_split_k(target):
    """On several cores npu-split-cores may split a matmul's K and add the
    parts (`lower_options.MAKES`): the elementwise lowering's options apply."""
    with make_context() as ctx:
        module = parse_module(PROGRAM, ctx)
        run_pipeline(module, "builtin.module(npu-lower{cores=4 ub-fraction=0.5})", target)


def test_a_tuning_records_pipeline_options_are_not_refused(target, tmp_path):
    """A record's "pipeline" options fill in what the caller did not give:
    npu-tune chose them for the program, and they are not checked again."""
    from npu.passes.tuning_record import TuningRecord

    path = tmp_path / "record.json"
    path.write_text(TuningRecord(target.name, {}, {"cores": 1, "fuse-conv-pool": False,
                                                   "attention-softmax": "f32"}).to_json())
    with make_context() as ctx:
        module = parse_module(PROGRAM, ctx)
        run_pipeline(module, f'builtin.module(npu-lower{{tuning-record="{path}"}})', target)


def test_npu_tune_leaves_out_an_option_on_ops_the_program_has_none_of(target):
    from npu.tune.space import SpaceError
    from npu.passes.patterns import ATTENTIONS
    from npu.tune.whole_program import applicable

    settings = [{"cores": 1, "attention-softmax": s} for s in ("f16", "f32")]
    with pytest.raises(SpaceError, match="attention-softmax: does not apply: the program has "
                                         "no batch_matmul"):
        applicable(settings, target, False, frozenset({"ascend.matmul"}))
    # a batch_matmul that is not attention's Q.K^T (no softmax into another)
    with pytest.raises(SpaceError, match=r"attention-softmax: does not apply: the program has "
                                         r"no attention \(a batch_matmul whose result"):
        applicable(settings, target, False, frozenset({"ascend.batch_matmul"}))
    ops = frozenset({"ascend.batch_matmul", ATTENTIONS.key})  # as `program_ops` lists it
    assert applicable(settings, target, False, ops) == settings

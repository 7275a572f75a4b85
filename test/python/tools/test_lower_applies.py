"""An npu-lower option given where it does not apply is refused, naming the
option and why, in one line (`npu.passes.lower_applies`): through pipeline
text, `npu.compile` (its `cores`) and npu-run (no output written); one left
at its default never is."""

from __future__ import annotations

import dataclasses

import pytest

import npu
from npu.frontend.compile import CompileError
from npu.passes.base import OptionError
from npu.passes.lower import LowerPass
from npu.tools import npu_run

PROGRAM = """func.func @mm(%a: memref<4x4x16x16xf16, "gm">, %b: memref<4x4x16x16xf16, "gm">,
                  %c: memref<4x4x16x16xf32, "gm">) {
  "ascend.matmul"(%a, %b, %c) : (memref<4x4x16x16xf16, "gm">, memref<4x4x16x16xf16, "gm">,
                                 memref<4x4x16x16xf32, "gm">) -> ()
  return
}
"""

# Every switch off: no sub-pass they run runs, one core, the conservative
# sync, the simple matmul schedule.
ALL_OFF = ("cores=1 canonicalize=false fuse=false plan-gm=false prefetch=false sync=barrier "
           "double-buffer=false matmul-schedule=simple")


@pytest.mark.parametrize("options,why", [
    ("cores=1 prefetch-remainder-phases=1", "prefetch-remainder-phases: does not apply: no split "
                                            "over cores (cores=1)"),
    ("cores=1 split-cores-min-bytes=0", "split-cores-min-bytes: does not apply: no split over "
                                        "cores (cores=1)"),
    ("prefetch=false prefetch-convs=false", "prefetch-convs: does not apply: npu-prefetch is not "
                                            "run (prefetch=false)"),
    ("fuse=false hoist-casts=false", "hoist-casts: does not apply: it needs fuse=true"),
    ("fuse=false fuse-resident=false", "fuse-resident: does not apply: npu-fuse is not run "
                                       "(fuse=false)"),
    ("fuse-horizontal=false fuse-horizontal-min-siblings=3",
     "fuse-horizontal-min-siblings: does not apply: npu-fuse-horizontal is not run "
     "(fuse-horizontal=false)"),
    ("fuse=false attention-row-max=vcmax", "attention-row-max: does not apply: "
                                           "npu-lower-attention is not run (fuse=false)"),
    ("fuse-epilogue-f16=false fuse-epilogue-bias-f32=true",
     "fuse-epilogue-bias-f32: does not apply: it needs fuse-epilogue-f16=true"),
    ("fuse-epilogue-bias-f32=true fuse-conv-pool=false",
     "fuse-conv-pool: does not apply: it needs fuse-epilogue-bias-f32=false"),
    ("sync=barrier sink-sets=false", "sink-sets: does not apply: it needs sync=precise"),
    ("cores=1 barrier-sets=false", "barrier-sets: does not apply: no split over cores (cores=1)"),
    ("cores=16 prefetch-tail-bus=false", "prefetch-tail-bus: does not apply: the movers of 16 "
                                         "cores (1024 B/cycle) cannot outrun the chip's GM bus "
                                         "(1200 B/cycle)"),
])
def test_an_option_that_does_not_apply_is_refused(options: str, why: str, target):
    with pytest.raises(OptionError) as e:
        LowerPass.from_option_string(options, target)
    assert str(e.value) == f"npu-lower: {why}"


def test_one_core_target_says_so(target):
    one = dataclasses.replace(target, name="one-core", cores=1)  # cores=0: all of its one
    with pytest.raises(OptionError, match=r"^npu-lower: split-cores-share: does not apply: "
                       r"no split over cores \(one-core has one core\)$"):
        LowerPass.from_option_string("split-cores-share=false", one)
    LowerPass.from_option_string("split-cores-share=false", target)


def test_an_option_at_its_default_is_never_refused(target):
    """Every option given at its default, with every switch off."""
    defaults = " ".join(f"{o.name}={_spelled(o.default)}" for o in LowerPass.options
                        if o.name not in ALL_OFF and o.default != "")
    LowerPass.from_option_string(f"{ALL_OFF} {defaults}", target)


def _spelled(value) -> str:
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


LINALG = """#map = affine_map<(d0, d1) -> (d0, d1)>
func.func @add(%a: tensor<4x8xf32>, %b: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %e = tensor.empty() : tensor<4x8xf32>
  %r = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel"]}
      ins(%a, %b : tensor<4x8xf32>, tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  } -> tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}
"""


MATMUL = """func.func @mm(%a: tensor<32x32xf32>, %b: tensor<32x32xf32>) -> tensor<32x32xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<32x32xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<32x32xf32>) -> tensor<32x32xf32>
  %r = linalg.matmul ins(%a, %b : tensor<32x32xf32>, tensor<32x32xf32>)
      outs(%f : tensor<32x32xf32>) -> tensor<32x32xf32>
  return %r : tensor<32x32xf32>
}
"""


def test_npu_compile_refuses_in_one_line():
    with pytest.raises(CompileError) as e:  # the option is refused for the cores asked for
        npu.compile(LINALG, pipeline="npu-lower{prefetch-rest-phases=1}", cores=1)
    assert str(e.value).endswith("npu-lower: prefetch-rest-phases: does not apply: no split over "
                                 "cores (cores=1)")
    assert "\n" not in str(e.value)
    # a need an op's own options could meet: refused once the ops are seen
    with pytest.raises(CompileError) as e:
        npu.compile(MATMUL, pipeline="npu-lower{double-buffer=false matmul-drain-order=per-piece}")
    assert str(e.value) == ("<module>: error: npu-lower: matmul-drain-order: does not apply: it "
                            "needs matmul-schedule=pipelined (here matmul-schedule=auto is "
                            "simple: double-buffer=false)")
    # and so is an option acting on ops the program has none of
    with pytest.raises(CompileError) as e:
        npu.compile(LINALG, pipeline="npu-lower{matmul-drain-order=per-piece}", cores=1)
    assert str(e.value) == ("<module>: error: npu-lower: matmul-drain-order: does not apply: the "
                            "program has no matmul")
    # where it applies, it is taken
    npu.compile(MATMUL, pipeline="npu-lower{matmul-drain-order=per-piece}", cores=1)


@pytest.mark.parametrize("argv,code", [
    (["--cores", "1", "--pipeline", "npu-lower{split-cores-share=false}"], 2),
    (["--pipeline", "npu-lower{prefetch=false prefetch-l1-room=safe}"], 2),
    (["--pipeline", "npu-lower{double-buffer=false c-pieces=2}"], 1),
])
def test_npu_run_refuses_before_writing(argv, code, tmp_path, capsys):
    src = tmp_path / "mm.mlir"
    src.write_text(PROGRAM)
    out = tmp_path / "out.json"
    assert npu_run.main([str(src), "-o", str(out), *argv]) == code
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert ": does not apply: " in err
    assert not out.exists()

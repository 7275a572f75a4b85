"""npu-opt's instrumentation sees every pass run, npu-lower's stages nested
under it, without changing what is compiled."""

from __future__ import annotations

import io

from npu.ir import make_context, parse_module
from npu.passes.instrument import ALL, Instrumentation, installed, statistics_report, timing_report
from npu.passes.lower_options import SUB_PASSES
from npu.pipeline import run_pipeline
from npu.target import get_target

EXP = """func.func @e(%x: memref<4096xf16, "gm">, %y: memref<4096xf16, "gm">) {
  "ascend.exp"(%x, %y) : (memref<4096xf16, "gm">, memref<4096xf16, "gm">) -> ()
  return
}
"""


def _lowered(text: str, seen: Instrumentation | None) -> str:
    module = parse_module(text, make_context())
    if seen is None:
        run_pipeline(module, "npu-lower{cores=1}", get_target())
    else:
        with installed(seen):
            run_pipeline(module, "npu-lower{cores=1}", get_target())
    return str(module)


def test_stages_nest_under_npu_lower_in_pipeline_order() -> None:
    out = io.StringIO()
    seen = Instrumentation(print_after=frozenset({"npu-insert-sync"}), statistics=True, stream=out)
    text = _lowered(EXP, seen)
    assert text == _lowered(EXP, None)  # seeing the passes changes nothing
    (root,) = seen.roots
    assert root.name == "npu-lower" and root.ops_after > root.ops_before > 0
    names = list(dict.fromkeys(r.name for r in root.children))  # first runs (plan-gm runs twice)
    order = [cls.name for cls, _ in SUB_PASSES]
    assert names == sorted(names, key=order.index)  # in SUB_PASSES order
    assert {"npu-lower-elementwise", "npu-insert-sync", "npu-lower-cce-to-hivm"} <= set(names)
    assert sum(r.seconds for r in root.children) <= root.seconds
    dumps = out.getvalue()
    assert dumps.count("IR Dump") == 1
    assert dumps.startswith("// -----// IR Dump After InsertSyncPass (npu-insert-sync) //----- //\n")
    assert "cce.wait_flag" in dumps and "hivm." not in dumps  # before the hivm encoding


def test_all_prints_only_the_nested_runs_when_upstream_prints_the_top() -> None:
    out = io.StringIO()
    seen = Instrumentation(print_before=frozenset({ALL}), upstream_prints_all=True, stream=out)
    _lowered(EXP, seen)
    headers = [line for line in out.getvalue().splitlines() if "IR Dump" in line]
    assert headers and not any("Before npu-lower (" in h for h in headers)
    assert len(headers) == len(seen.roots[0].children)


def test_reports_list_each_stage_under_its_parent() -> None:
    seen = Instrumentation(statistics=True)
    _lowered(EXP, seen)
    timing = timing_report(seen.roots).splitlines()
    assert any(line.endswith("  npu-lower") for line in timing)
    assert any(line.endswith("    npu-lower-elementwise") for line in timing)
    stats = statistics_report(seen.roots)
    assert "\n  npu-insert-sync\n    (S) 1 runs" in stats

"""The report (text and JSON), the Chrome trace and the `npu-run` tool."""

from __future__ import annotations

import json

import numpy as np
import pytest

from npu.simulator import simulate
from npu.simulator.report import REPORT_KEYS
from npu.target import PIPES, get_target
from npu.tools import npu_run

from sim_kernels import Kernel, f16
from test_sim_vector_unit import roundtrip_kernel
from test_sim_strict import race_kernel

T = get_target()


def test_report_keys_and_consistency():
    res = simulate(roundtrip_kernel(512).parse(), [f16(512), f16(512), f16(512)])
    rep = json.loads(json.dumps(res.report))  # plain JSON data
    for key in REPORT_KEYS:
        assert key in rep
    assert rep["cycles"] == res.cycles
    assert set(rep["pipes"]) == set(PIPES)
    for name, p in rep["pipes"].items():
        assert set(p) == {"busy_cycles", "utilization", "instructions", "sync_instructions",
                          "wait_cycles"}
        assert 0 <= p["busy_cycles"] <= rep["cycles"]
        assert p["utilization"] == round(p["busy_cycles"] / rep["cycles"], 4)
    assert rep["pipes"]["MTE2"]["instructions"] == 2  # two copies ...
    assert rep["pipes"]["MTE2"]["sync_instructions"] == 1  # ... and a set_flag
    assert rep["pipes"]["V"]["instructions"] == 1
    assert rep["pipes"]["S"]["instructions"] == res.instructions
    assert set(rep["bytes"]) == set(T.paths)
    assert rep["bytes"]["gm_to_ub"] == 2 * 1024 and rep["bytes"]["ub_to_gm"] == 1024
    assert rep["peak_bytes"]["ub"] == 3 * 1024 and rep["peak_bytes"]["l1"] == 0
    assert rep["hazards"] == []
    assert rep["bound_cycles"] <= rep["cycles"]
    assert rep["bound_ratio"] == round(rep["cycles"] / rep["bound_cycles"], 4)
    # The two GM reads dominate: 2 KiB over the gm_to_ub bandwidth.
    assert rep["bound_unit"] == "path:gm_to_ub"
    assert rep["bound_cycles"] == 2048 // T.path("gm_to_ub").bytes_per_cycle
    # V waited from its dispatch until MTE2's flag arrived (after both copies).
    (wait_v,) = [i for i, (ins, _, _) in enumerate(res.trace_entries)
                 if ins.name == "cce.wait_flag" and ins.pipe_name == "V"]
    assert rep["pipes"]["V"]["wait_cycles"] == res.timeline.end[wait_v] - res.timeline.start[wait_v] > 0
    spots = rep["hotspots"]
    # Three 1 KiB copies hold their movers longest (ties go to the longer wait).
    copies = [h for h in spots if h["op"].startswith("cce.copy")]
    assert len(copies) == 3 and spots[:3] == copies and spots[3]["op"] == "cce.vadd"
    # Each copy is one burst: its bytes over the path's bandwidth plus the
    # burst's set-up on the mover.
    assert {h["unit_cycles"] for h in copies} == {1024 // T.path("gm_to_ub").bytes_per_cycle
                                                  + T.gm_burst_cycles}
    assert spots[0]["count"] == 1 and len(spots) == 4
    text = res.text_report()
    for needle in ("cycles", "lower bound", "path:gm_to_ub", "MTE2", "gm_to_ub", "peak bytes",
                   "hazards: none", "hotspot", "on unit", "wait cycles"):
        assert needle in text


def validate_trace_events(doc: dict) -> None:
    """The Chrome trace-event format, as Perfetto's JSON importer reads it."""
    assert isinstance(doc["traceEvents"], list)
    slices: dict[tuple, list] = {}
    flows: dict[int, dict] = {}
    for ev in doc["traceEvents"]:
        assert isinstance(ev["name"], str) and isinstance(ev["pid"], int) and isinstance(ev["tid"], int)
        ph = ev["ph"]
        assert ph in ("M", "X", "s", "f")
        if ph == "M":
            assert ev["name"] in ("process_name", "thread_name", "thread_sort_index")
            assert isinstance(ev["args"], dict)
            continue
        assert isinstance(ev["ts"], (int, float)) and ev["ts"] >= 0
        if ph == "X":
            assert isinstance(ev["dur"], (int, float)) and ev["dur"] > 0
            slices.setdefault((ev["pid"], ev["tid"]), []).append((ev["ts"], ev["ts"] + ev["dur"]))
        else:
            assert isinstance(ev["id"], int) and ev["cat"] == "flag"
            assert ev["id"] not in flows or flows[ev["id"]]["ph"] != ph
            if ph == "f":
                assert ev["bp"] == "e"
                start = flows[ev["id"]]
                assert start["ph"] == "s" and start["ts"] <= ev["ts"]
            flows[ev["id"]] = ev
    eps = 1e-9
    for track, spans in slices.items():
        spans.sort()
        for (a0, a1), (b0, b1) in zip(spans, spans[1:]):
            assert b0 >= a1 - eps, f"overlapping slices on {track}: {(a0, a1)} {(b0, b1)}"
    # Every flow end point lies inside a slice of its thread (Perfetto binds it there).
    for ev in doc["traceEvents"]:
        if ev["ph"] in ("s", "f"):
            spans = slices[(ev["pid"], ev["tid"])]
            assert any(a0 - eps <= ev["ts"] <= a1 + eps for a0, a1 in spans)


def test_chrome_trace_is_valid(tmp_path):
    res = simulate(roundtrip_kernel(512).parse(), [f16(512), f16(512), f16(512)])
    doc = json.loads(json.dumps(res.chrome_trace()))
    validate_trace_events(doc)
    names = {ev["args"]["name"] for ev in doc["traceEvents"] if ev["name"] == "thread_name"}
    assert names == set(PIPES)
    xs = [ev for ev in doc["traceEvents"] if ev["ph"] == "X"]
    assert len(xs) == res.instructions
    assert sum(ev["ph"] == "s" for ev in doc["traceEvents"]) == 2  # MTE2->V and V->MTE3
    vadd = next(ev for ev in xs if ev["name"] == "vadd")
    assert vadd["tid"] == PIPES.index("V")
    assert vadd["args"]["cycle"] * 1e-3 / T.clock_ghz == pytest.approx(vadd["ts"])


def write(tmp_path, k: Kernel, name: str = "k.mlir") -> str:
    path = tmp_path / name
    path.write_text(k.text())
    return str(path)


def test_npu_run_json(tmp_path, capsys):
    prog = write(tmp_path, roundtrip_kernel(256))
    trace = tmp_path / "t.json"
    out = tmp_path / "out.npz"
    assert npu_run.main([prog, "--seed", "3", "--json", "--trace", str(trace), "-o", str(out)]) == 0
    rep = json.loads(capsys.readouterr().out)
    for key in REPORT_KEYS + ("check", "wall_seconds"):
        assert key in rep
    assert rep["check"] is None and rep["wall_seconds"] > 0
    validate_trace_events(json.loads(trace.read_text()))
    saved = np.load(out)
    np.testing.assert_array_equal(saved["arg2"], saved["arg0"] + saved["arg1"])


def test_npu_run_inputs_npz(tmp_path, capsys):
    prog = write(tmp_path, roundtrip_kernel(256))
    a, b = f16(256), f16(256)
    np.savez(tmp_path / "in.npz", arg0=a, arg1=b, arg2=np.zeros(256, np.float16))
    assert npu_run.main([prog, "--inputs", str(tmp_path / "in.npz"), "-o", str(tmp_path / "o.npz")]) == 0
    np.testing.assert_array_equal(np.load(tmp_path / "o.npz")["arg2"], a + b)
    assert "cycles" in capsys.readouterr().out
    np.savez(tmp_path / "bad.npz", arg0=a, arg1=b, arg2=np.zeros(256, np.float32))
    assert npu_run.main([prog, "--inputs", str(tmp_path / "bad.npz")]) == 1
    assert capsys.readouterr().err.strip() == (
        f"{prog}: error: input 'arg2' is float32[256]; argument #2 needs float16[256]")


def test_npu_run_fault_exit_code(tmp_path, capsys):
    k = race_kernel(False)
    prog = write(tmp_path, k)
    assert npu_run.main([prog]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err[0].startswith(f"{prog}:{k.tags['vmuls']}:3: error: race: 'cce.vmuls' on pipe V reads")
    # Non-strict: the report lists the hazard, and the exit code is still non-zero.
    assert npu_run.main([prog, "--no-strict", "--json"]) == 1
    captured = capsys.readouterr()
    assert [h["kind"] for h in json.loads(captured.out)["hazards"]] == ["race"]


def test_npu_run_bad_input(tmp_path, capsys):
    path = tmp_path / "bad.mlir"
    path.write_text("func.func @f() {\n  %x = \n}\n")
    assert npu_run.main([str(path)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"{path}:") and "error:" in err and "Traceback" not in err
    k = roundtrip_kernel(256)
    prog = write(tmp_path, k)
    assert npu_run.main([prog, "--check"]) == 1
    assert "--check needs an ascend-level program" in capsys.readouterr().err
    assert npu_run.main([prog, "--entry", "nope"]) == 1
    assert "no function named 'nope'" in capsys.readouterr().err


def test_check_names_the_output_and_element():
    want = [np.zeros((2, 3), np.float16), np.arange(4, dtype=np.int32)]
    got = [want[0].copy(), want[1].copy()]
    assert npu_run.compare(got, want).passed
    got[0][1, 2] = np.float16(0.5)
    r = npu_run.compare(got, want)
    assert not r.passed and r.max_abs_err == 0.5
    assert r.failure.startswith("output #0 (argument #0) differs at element [1, 2]: got 0.5, expected 0.0")
    # Within fp16 tolerance: one ulp at 1.0 passes.
    ok = [np.ones(4, np.float16)]
    assert npu_run.compare([np.nextafter(ok[0], np.float16(2))], ok).passed
    # Integers must match exactly.
    got = [want[0].copy(), want[1] + np.array([0, 0, 1, 0], np.int32)]
    assert npu_run.compare(got, want).failure.startswith("output #1 (argument #1) differs at element [2]")


def test_npu_run_compiles_ascend(tmp_path, capsys):
    """An ascend-level program goes through the lowering pipeline and --check."""
    from npu.passes import registry
    if "npu-lower-elementwise" not in registry():
        pytest.skip("npu-lower-elementwise is not registered")
    path = tmp_path / "add.mlir"
    t = 'memref<4096xf16, "gm">'
    path.write_text(f'func.func @add(%a: {t}, %b: {t}, %c: {t}) {{\n'
                    f'  "ascend.add"(%a, %b, %c) : ({t}, {t}, {t}) -> ()\n  return\n}}\n')
    assert npu_run.main([str(path), "--check", "--json", "--serialize",
                         "--pipeline", "npu-lower-elementwise"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["compiled"] is True and rep["check"]["passed"] is True
    assert rep["check"]["max_abs_err"] == 0.0
    assert rep["bytes"]["gm_to_ub"] == 2 * 4096 * 2


def test_an_empty_program_has_bound_0_and_no_ratio(tmp_path, capsys):
    # A function with no ops used to report "limited by path:gm_to_l1;
    # cycles / bound = None": no unit limits a program that does nothing.
    path = tmp_path / "empty.mlir"
    path.write_text('func.func @f(%a: memref<16xf16, "gm">) {\n  return\n}\n')
    html = tmp_path / "r.html"
    assert npu_run.main([str(path), "--html", str(html)]) == 0
    out = capsys.readouterr().out
    assert "None" not in out
    assert "lower bound       0  (no work to bound" in out
    assert "None" not in html.read_text() and "no work to bound" in html.read_text()
    assert npu_run.main([str(path), "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert (rep["cycles"], rep["bound_cycles"], rep["bound_unit"], rep["bound_ratio"]) == (0, 0, None, None)

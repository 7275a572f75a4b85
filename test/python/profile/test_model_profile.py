"""The model profile: per ONNX node, in model order, exclusive cycles that sum
to the run, executed FLOPs, GM bytes, achieved rates, the fused members;
and the HTML page's roofline and per-op bars drawn from the same rows."""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

import npu
from npu.simulator.roofline import roofs
from npu.target import get_target
from npu.tools import npu_run

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "frontend"))
from onnx_models import mlp  # noqa: E402

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "ffn_block.onnx"
SVG = "{http://www.w3.org/2000/svg}"


@pytest.mark.parametrize("cores", [1, 0], ids=["one core", "all cores"])
def test_exclusive_cycles_sum_to_the_run_in_model_order(cores: int) -> None:
    kernel = npu.compile(str(EXAMPLE), cores=cores)
    _, report = kernel(np.random.default_rng(0).standard_normal((64, 128)).astype(np.float32))
    rows = report["per_op"]
    assert [r["op"] for r in rows] == ["ffn_in (MatMul)", "ffn_out (MatMul)",
                                       "layernorm (LayerNormalization)"]
    assert sum(r["exclusive_cycles"] for r in rows) == pytest.approx(report["cycles"], abs=0.5)
    assert all(0 < r["exclusive_cycles"] for r in rows)
    # ffn_in's epilogue computes the bias and the GELU nodes; layernorm's group the residual
    assert {"ffn_in_bias (Add)", "gelu_erf (Erf)"} <= set(rows[0]["members"])
    assert rows[2]["members"] == ["residual (Add)"]


def test_flops_bytes_and_rates_of_a_matmul() -> None:
    m, k, n = 64, 128, 256  # whole fractals: no padding in the cube's MACs
    kernel = npu.compile(mlp(batch=m, d_in=k, d_hidden=n, d_out=32), cores=1)
    _, report = kernel(np.random.default_rng(1).standard_normal((m, k)).astype(np.float32))
    fc1 = next(r for r in report["per_op"] if r["op"] == "fc1 (Gemm)")
    assert fc1["cube_flops"] == 2 * m * n * k
    assert fc1["flops"] > fc1["cube_flops"]  # its epilogue's bias and ReLU on the vector unit
    assert fc1["gm_bytes"] >= n * k * 2  # its f16 weights read at least once
    clock = get_target("ascend910").clock_ghz * 1e9
    assert fc1["tflops"] == pytest.approx(fc1["flops"] / (fc1["span_cycles"] / clock) / 1e12, rel=1e-3)
    assert fc1["gbps"] == pytest.approx(fc1["gm_bytes"] / (fc1["span_cycles"] / clock) / 1e9, rel=1e-2)


def test_html_page_draws_the_rows_under_the_roofs(tmp_path, capsys) -> None:
    page = tmp_path / "ffn.html"
    assert npu_run.main([str(EXAMPLE), "--html", str(page), "--json"]) == 0
    import json

    report = json.loads(capsys.readouterr().out)
    text = page.read_text()
    svgs = {}
    for chunk in text.split("<svg")[1:]:
        svg = ET.fromstring("<svg" + chunk.split("</svg>")[0] + "</svg>")
        svgs[svg.get("id")] = svg
    assert {"roofline", "op-bars", "utilization"} <= set(svgs)
    rows = report["per_op"]
    bars = [r for r in svgs["op-bars"].iter(f"{SVG}rect") if r.get("class") == "op-bar"]
    assert [b.get("data-op") for b in bars] == [r["op"] for r in rows]
    assert sum(float(b.get("data-exclusive")) for b in bars) == pytest.approx(report["cycles"], abs=0.5)
    points = [c for c in svgs["roofline"].iter(f"{SVG}circle") if c.get("class") == "op"]
    assert len(points) == sum(1 for r in rows if r["flops"] and r["gm_bytes"])
    peak, bandwidth = roofs(get_target("ascend910"), report["block_dim"])
    roof = {line.get("data-kind") for line in svgs["roofline"].iter(f"{SVG}line")
            if line.get("class") == "roof"}
    assert roof == {"compute", "memory"}
    for c in points:  # achieved never above what the roofs allow at its intensity
        intensity, tflops = float(c.get("data-intensity")), float(c.get("data-tflops"))
        assert tflops <= min(peak, intensity * bandwidth / 1e3) * 1.001, c.get("data-op")


def test_roofline_labels_do_not_cover_each_other() -> None:
    """Ops at one spot (BERT's projections) get labels one under the other,
    joined to their points by leader lines."""
    from npu.simulator.roofline import roofline_svg

    rows = [{"op": f"proj{i} (MatMul)", "flops": 2e9, "gm_bytes": 1e8 * (1 + i / 100),
             "tflops": 20.0, "bound_unit": "MTE2"} for i in range(4)]
    svg = ET.fromstring(roofline_svg(rows, get_target("ascend910"), 32))
    labels = [(float(t.get("x")), float(t.get("y"))) for t in svg.iter(f"{SVG}text")
              if t.text and t.text.startswith("proj")]
    assert len(labels) == 4
    ys = sorted(y for _, y in labels)
    assert all(b - a >= 11 for a, b in zip(ys, ys[1:]))  # one text line apart at least
    leaders = [line for line in svg.iter(f"{SVG}line") if line.get("class") == "leader"]
    assert len(leaders) == 3  # the first label stays beside its point

"""Profiler-style outputs of a run: the hotspot columns (never more than the
run), the msprof-style CSVs, the JSON report's version, and the HTML page
with its per-pipe SVG timeline, checked by parsing what a browser would draw."""

from __future__ import annotations

import csv
import io
import json
import xml.etree.ElementTree as ET
from html.parser import HTMLParser

import pytest

from npu.simulator import profile
from npu.simulator.hazards import PIPE_NAMES
from npu.simulator.html_report import LABEL, WIDTH, html_report
from npu.simulator.instruction import OP
from npu.simulator.report import REPORT_VERSION
from npu.tools import npu_run

from helpers import compile_and_simulate, random_inputs

SVG = "{http://www.w3.org/2000/svg}"

# A matmul: many mad instructions from one source line, pipelined on M, whose
# start-to-result spans overlap (the sum of those spans exceeds the run).
MATMUL = """func.func @mm(%a: memref<4x8x16x16xf16, "gm">, %b: memref<16x4x16x16xf16, "gm">,
                 %c: memref<16x8x16x16xf32, "gm">) {
  "ascend.matmul"(%a, %b, %c) : (memref<4x8x16x16xf16, "gm">, memref<16x4x16x16xf16, "gm">, memref<16x8x16x16xf32, "gm">) -> ()
  return
}
"""


@pytest.fixture(scope="module")
def run():
    from npu.target import get_target

    target = get_target()
    _, _, result = compile_and_simulate(MATMUL, "npu-lower{cores=1}", random_inputs(MATMUL, seed=1), target)
    return result


# 512 pipelined vadds from one line: each result lands `latency` cycles after
# its 2 issue cycles, so their start-to-result spans overlap and add up to
# about three times the run.
VADD_LOOP = """func.func @kernel(%a: memref<256xf16, "gm">, %b: memref<256xf16, "gm">, %c: memref<256xf16, "gm">) {
  %ua = memref.alloc() : memref<256xf16, "ub">
  %ub_ = memref.alloc() : memref<256xf16, "ub">
  %uc = memref.alloc() : memref<256xf16, "ub">
  "cce.copy_gm_to_ub"(%a, %ua) {n_burst = 1 : i64, burst_len = 16 : i64, src_gap = 0 : i64, dst_gap = 0 : i64} : (memref<256xf16, "gm">, memref<256xf16, "ub">) -> ()
  "cce.copy_gm_to_ub"(%b, %ub_) {n_burst = 1 : i64, burst_len = 16 : i64, src_gap = 0 : i64, dst_gap = 0 : i64} : (memref<256xf16, "gm">, memref<256xf16, "ub">) -> ()
  "cce.set_flag"() {src = "MTE2", dst = "V", event = 0 : i64} : () -> ()
  "cce.wait_flag"() {src = "MTE2", dst = "V", event = 0 : i64} : () -> ()
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c512 = arith.constant 512 : index
  scf.for %i = %c0 to %c512 step %c1 {
    "cce.vadd"(%uc, %ua, %ub_) {repeat = 2 : i64, mask = 128 : i64, dst_blk_stride = 1 : i64, dst_rep_stride = 8 : i64, src0_blk_stride = 1 : i64, src0_rep_stride = 8 : i64, src1_blk_stride = 1 : i64, src1_rep_stride = 8 : i64} : (memref<256xf16, "ub">, memref<256xf16, "ub">, memref<256xf16, "ub">) -> ()
  }
  "cce.set_flag"() {src = "V", dst = "MTE3", event = 0 : i64} : () -> ()
  "cce.wait_flag"() {src = "V", dst = "MTE3", event = 0 : i64} : () -> ()
  "cce.copy_ub_to_gm"(%uc, %c) {n_burst = 1 : i64, burst_len = 16 : i64, src_gap = 0 : i64, dst_gap = 0 : i64} : (memref<256xf16, "ub">, memref<256xf16, "gm">) -> ()
  return
}
"""


def test_hotspots_separate_unit_and_waiting_and_never_exceed_the_run():
    import numpy as np

    from npu.ir import make_context, parse_module
    from npu.simulator import simulate

    run = simulate(parse_module(VADD_LOOP, make_context()), [np.ones(256, np.float16)] * 3)
    rep = run.report
    cycles = rep["cycles"]
    tl = run.timeline
    # The old column (start to result, summed) overflowed the run here.
    spans: dict[tuple, int] = {}
    for i, (instr, _, _) in enumerate(run.trace_entries):
        if instr.kind == OP:
            key = (instr.where, instr.name)
            spans[key] = spans.get(key, 0) + tl.end[i] - tl.start[i]
    assert max(spans.values()) > 2 * cycles
    for h in rep["hotspots"]:
        assert set(h) == {"location", "op", "pipe", "count", "unit_cycles", "wait_cycles"}
        assert 0 < h["unit_cycles"] <= cycles and 0 <= h["wait_cycles"] <= cycles
    vadd = rep["hotspots"][0]
    assert vadd["op"] == "cce.vadd" and vadd["count"] == 512
    # V is pipelined: the unit is held for the issue cycles only.
    assert vadd["unit_cycles"] == sum(i.occupancy for i, _, _ in run.trace_entries
                                      if i.name == "cce.vadd") == 512 * 2
    text = run.text_report()
    assert "on unit" in text and "waiting" in text


def test_hotspots_of_one_pipe_fit_in_its_busy_time(run):
    rep = run.report
    per_pipe: dict[str, int] = {}
    for h in rep["hotspots"]:
        per_pipe[h["pipe"]] = per_pipe.get(h["pipe"], 0) + h["unit_cycles"]
    for pipe, unit in per_pipe.items():
        assert unit <= rep["pipes"][pipe]["busy_cycles"] <= rep["cycles"]


def test_json_report_has_a_version(run):
    assert run.report["version"] == REPORT_VERSION >= 2
    assert json.loads(json.dumps(run.report))["version"] == REPORT_VERSION


def _rows(text: str) -> list[dict]:
    return list(csv.DictReader(io.StringIO(text)))


def test_pipe_utilization_csv_matches_the_report(run):
    (row,) = _rows(profile.pipe_utilization_csv(run.report, run.target))
    assert int(row["aic_total_cycles"]) == run.report["cycles"]
    assert float(row["aic_time(us)"]) == pytest.approx(run.report["cycles"] / (1000 * run.target.clock_ghz))
    for pipe, unit in profile.MSPROF_UNITS.items():
        assert float(row[f"aic_{unit}_ratio"]) == run.report["pipes"][pipe]["utilization"]
        assert int(row[f"aic_{unit}_wait_cycles"]) == run.report["pipes"][pipe]["wait_cycles"]
    assert float(row["aic_cube_ratio"]) > 0


def test_instruction_types_csv_counts_every_instruction(run):
    rows = _rows(profile.instruction_types_csv(run.trace_entries, run.timeline, run.target))
    assert sum(int(r["count"]) for r in rows) == run.instructions
    mad = next(r for r in rows if r["instr"] == "mad")
    assert mad["pipe"] == "M" and int(mad["count"]) == run.report["pipes"]["M"]["instructions"]
    by_path = sum(int(r["bytes"]) for r in rows)
    assert by_path == sum(run.report["bytes"].values())
    for r in rows:
        assert 0 <= int(r["unit_cycles"]) <= run.report["cycles"]
        assert 0 <= int(r["wait_cycles"]) <= run.report["cycles"]
    units = [int(r["unit_cycles"]) for r in rows]
    assert units == sorted(units, reverse=True)


class _Collect(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.svgs: list[str] = []
        self._depth = 0
        self._buf: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag == "svg":
            self._depth += 1
        if self._depth:
            self._buf.append(self.get_starttag_text())

    def handle_startendtag(self, tag, attrs):
        if self._depth:
            self._buf.append(self.get_starttag_text())

    def handle_endtag(self, tag):
        if self._depth:
            self._buf.append(f"</{tag}>")
        if tag == "svg":
            self._depth -= 1
            if not self._depth:
                self.svgs.append("".join(self._buf))
                self._buf = []

    def handle_data(self, data):
        if self._depth:
            self._buf.append(data.replace("&", "&amp;").replace("<", "&lt;"))


def render(page: str) -> dict[str, ET.Element]:
    """The page's SVG figures, parsed as a browser's SVG parser would (XML)."""
    assert page.startswith("<!DOCTYPE html>") and "<script" not in page and "http" not in \
        page.replace('xmlns="http://www.w3.org/2000/svg"', "")  # self-contained
    collector = _Collect()
    collector.feed(page)
    figures = {}
    for text in collector.svgs:
        root = ET.fromstring(text)
        figures[root.get("id")] = root
    return figures


def test_html_page_draws_each_pipe_busy_where_the_run_was(run, tmp_path):
    figures = render(html_report(run, run.report))
    assert set(figures) == {"timeline", "utilization"}
    util = {g.get("data-pipe"): g for g in figures["utilization"].iter(f"{SVG}g")}
    assert list(util) == list(PIPE_NAMES)
    for pipe, g in util.items():
        bar = next(r for r in g.iter(f"{SVG}rect") if r.get("class") == "util-bar")
        assert float(bar.get("width")) == pytest.approx(400 * run.report["pipes"][pipe]["utilization"], abs=0.01)
    lanes = {g.get("data-pipe"): g for g in figures["timeline"].iter(f"{SVG}g")
             if g.get("class") == "lane"}
    assert list(lanes) == list(PIPE_NAMES)
    cycles = run.report["cycles"]
    for pipe, g in lanes.items():
        bars = [r for r in g.iter(f"{SVG}rect") if r.get("class") == "busy"]
        drawn = sum(int(r.get("data-count")) for r in bars)
        executed = run.report["pipes"][pipe]["instructions"] if pipe != "S" else 0
        assert drawn == executed, pipe
        for r in bars:
            lo, hi = int(r.get("data-start")), int(r.get("data-end"))
            assert 0 <= lo <= hi <= cycles
            assert float(r.get("x")) == pytest.approx(LABEL + WIDTH * lo / cycles, abs=0.01)
            assert r.find(f"{SVG}title").text.startswith(f"{pipe}: ")
    m_bars = [r for r in lanes["M"].iter(f"{SVG}rect") if r.get("class") == "busy"]
    assert {r.get("data-kind") for r in m_bars} == {"mad"}


def test_npu_run_writes_html_and_csvs(tmp_path, capsys):
    src = tmp_path / "mm.mlir"
    src.write_text(MATMUL)
    page, csv_dir = tmp_path / "run.html", tmp_path / "prof"
    assert npu_run.main([str(src), "--html", str(page), "--csv", str(csv_dir), "--json", "--cores", "1"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["version"] == REPORT_VERSION
    assert set(render(page.read_text())) == {"timeline", "utilization"}
    (row,) = _rows((csv_dir / profile.PIPE_UTILIZATION_CSV).read_text())
    assert int(row["aic_total_cycles"]) == rep["cycles"]
    assert any(r["instr"] == "mad" for r in _rows((csv_dir / profile.INSTR_TYPES_CSV).read_text()))


def _decode_png(data: bytes) -> tuple[int, int, list[bytes]]:
    """8-bit RGB/RGBA PNG -> (width, height, rows of RGBA bytes); enough for
    what rsvg-convert writes."""
    import struct
    import zlib

    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, header = 8, b"", None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    width, height, depth, colour = header[:4]
    assert depth == 8 and colour in (2, 6)
    bpp = 4 if colour == 6 else 3
    raw, stride, rows, prev = zlib.decompress(idat), width * bpp, [], bytearray(width * bpp)
    for y in range(height):
        kind, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            left = line[i - bpp] if i >= bpp else 0
            up, up_left = prev[i], prev[i - bpp] if i >= bpp else 0
            if kind == 1:
                line[i] = (line[i] + left) & 255
            elif kind == 2:
                line[i] = (line[i] + up) & 255
            elif kind == 3:
                line[i] = (line[i] + (left + up) // 2) & 255
            elif kind == 4:
                p = left + up - up_left
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - up_left)
                line[i] = (line[i] + (left if pa <= pb and pa <= pc else up if pb <= pc else up_left)) & 255
        rows.append(bytes(line) if bpp == 4 else b"".join(bytes(line[i:i + 3]) + b"\xff"
                                                           for i in range(0, stride, 3)))
        prev = line
    return width, height, rows


@pytest.mark.slow
def test_html_timeline_renders_its_bars(run, tmp_path):
    """Rasterise the timeline (optional: needs rsvg-convert) and look at the
    pixels: a drawn bar has its colour where the SVG put it."""
    import shutil
    import subprocess

    if shutil.which("rsvg-convert") is None:
        pytest.skip("rsvg-convert is not installed")
    figures = render(html_report(run, run.report))
    svg = tmp_path / "timeline.svg"
    svg.write_bytes(ET.tostring(figures["timeline"]))
    png = tmp_path / "timeline.png"
    subprocess.run(["rsvg-convert", "-b", "white", str(svg), "-o", str(png)], check=True, timeout=60)
    width, height, rows = _decode_png(png.read_bytes())
    assert width == int(figures["timeline"].get("width"))
    lane = next(g for g in figures["timeline"].iter(f"{SVG}g") if g.get("data-pipe") == "M")
    bar = max((r for r in lane.iter(f"{SVG}rect") if r.get("class") == "busy"),
              key=lambda r: float(r.get("width")))
    x = int(float(bar.get("x")) + float(bar.get("width")) / 2)
    y = int(float(bar.get("y")) + float(bar.get("height")) / 2)
    fill = bytes.fromhex(bar.get("fill")[1:])
    assert rows[y][4 * x:4 * x + 3] == fill
    assert rows[y][4 * (LABEL + WIDTH + 20):4 * (LABEL + WIDTH + 20) + 3] == b"\xff\xff\xff"

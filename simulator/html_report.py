"""A self-contained HTML page of a run: per-pipe utilisation bars and a
per-pipe timeline, drawn as inline SVG (no script, no external file), so it
opens in any browser straight from disk.

The timeline has one lane per pipe. Each instruction is drawn over the
cycles it holds its unit (as in the report's "on unit" column); neighbours of
one type closer than a pixel are merged into one bar, so a run of millions
of instructions still gives a page of a few thousand elements. Flag waits
are drawn as thin hatched bars under the lane. Every bar has a tooltip.
"""

from __future__ import annotations

import html
from types import SimpleNamespace

from npu.diagnostics import int_ranges
from npu.simulator.hazards import PIPE_NAMES
from npu.simulator.instruction import OP, WAIT
from npu.simulator.pipes import pipelined_pipes
from npu.simulator.report import format_text, unit_cycles

WIDTH = 1000  # px of the time axis
LABEL = 60  # px for the lane labels
LANE = 28  # px per lane
MAX_BARS_PER_LANE = 4000  # merge harder beyond this

# Fixed colours per instruction family, so two pages compare at a glance.
PALETTE = ("#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1",
           "#ff9da7", "#9c755f", "#bab0ac")


def _colour(name: str, colours: dict[str, str]) -> str:
    if name not in colours:
        colours[name] = PALETTE[len(colours) % len(PALETTE)]
    return colours[name]


def _merge(intervals: list[tuple[int, int]], gap: float) -> list[tuple[int, int, int]]:
    """Sorted (start, end) -> (start, end, count), joining those closer than `gap`."""
    merged: list[list[int]] = []
    for lo, hi in sorted(intervals):
        if merged and lo - merged[-1][1] <= gap:
            merged[-1][1] = max(merged[-1][1], hi)
            merged[-1][2] += 1
        else:
            merged.append([lo, hi, 1])
    return [tuple(m) for m in merged]


def lane_bars(result) -> dict[int, list[tuple[str, int, int, int]]]:
    """Per pipe: (kind, start, end, count) bars; kind is an op name or 'wait'."""
    trace, tl = result.trace_entries, result.timeline
    pipelined = pipelined_pipes(result.target)
    total = max(tl.total_cycles, 1)
    per_px = total / WIDTH
    by_lane: dict[int, dict[str, list[tuple[int, int]]]] = {}
    for i, (instr, _, _) in enumerate(trace):
        start, end = tl.start[i], tl.end[i]
        if instr.kind == OP:
            kind = instr.name.split(".", 1)[-1]
            end = start + unit_cycles(instr, start, end, pipelined)
        elif instr.kind == WAIT and end > start:
            kind = "wait"
        else:
            continue
        by_lane.setdefault(instr.pipe, {}).setdefault(kind, []).append((start, end))
    lanes: dict[int, list[tuple[str, int, int, int]]] = {}
    for pipe, kinds in by_lane.items():
        gap = per_px
        while True:
            bars = [(kind, lo, hi, n) for kind, spans in kinds.items()
                    for lo, hi, n in _merge(spans, gap)]
            if len(bars) <= MAX_BARS_PER_LANE:
                break
            gap *= 4
        lanes[pipe] = sorted(bars, key=lambda b: b[1])
    return lanes


def _x(cycle: float, total: int) -> float:
    return LABEL + WIDTH * cycle / max(total, 1)


def timeline_svg(result, total: int | None = None, core: int | None = None) -> str:
    """`total`: the cycles the axis spans (a multi-core launch: the chip's,
    so that every core's lanes line up); `core`: the lanes' core."""
    total = total or result.timeline.total_cycles
    lanes = lane_bars(result)
    height = LANE * len(PIPE_NAMES) + 30
    colours: dict[str, str] = {}
    ident = "timeline" if core is None else f"timeline-core{core}"
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" id="{ident}" width="{LABEL + WIDTH + 40}" '
           f'height="{height}" font-family="sans-serif" font-size="11">',
           '<defs><pattern id="hatch" width="4" height="4" patternUnits="userSpaceOnUse">'
           '<path d="M0,4 L4,0" stroke="#999" stroke-width="1"/></pattern></defs>']
    for p, name in enumerate(PIPE_NAMES):
        y = p * LANE
        out.append(f'<g class="lane" data-pipe="{name}">')
        out.append(f'<text x="4" y="{y + LANE * 0.6:.1f}">{name}</text>')
        out.append(f'<line x1="{LABEL}" y1="{y + LANE - 2}" x2="{LABEL + WIDTH}" '
                   f'y2="{y + LANE - 2}" stroke="#ddd"/>')
        for kind, lo, hi, count in lanes.get(p, []):
            x0, x1 = _x(lo, total), _x(hi, total)
            what = f"{count} x {kind}" if count > 1 else kind
            tip = html.escape(f"{name}: {what}, cycles {lo}-{hi}")
            if kind == "wait":
                out.append(f'<rect class="wait" x="{x0:.2f}" y="{y + LANE - 8}" '
                           f'width="{max(x1 - x0, 0.5):.2f}" height="5" fill="url(#hatch)" '
                           f'data-start="{lo}" data-end="{hi}"><title>{tip}</title></rect>')
            else:
                out.append(f'<rect class="busy" x="{x0:.2f}" y="{y + 3}" '
                           f'width="{max(x1 - x0, 0.5):.2f}" height="{LANE - 12}" '
                           f'fill="{_colour(kind, colours)}" data-kind="{html.escape(kind)}" '
                           f'data-start="{lo}" data-end="{hi}" data-count="{count}">'
                           f'<title>{tip}</title></rect>')
        out.append('</g>')
    axis_y = LANE * len(PIPE_NAMES) + 14
    for k in range(6):
        cycle = total * k / 5
        out.append(f'<text class="tick" x="{_x(cycle, total):.1f}" y="{axis_y}" '
                   f'text-anchor="middle">{int(cycle)}</text>')
    out.append('</svg>')
    legend = " ".join(f'<span style="color:{c}">&#9632;</span> {html.escape(k)}'
                      for k, c in colours.items())
    return "\n".join(out) + f'\n<p class="legend">{legend} &nbsp; hatched: flag waits</p>'


def utilization_svg(report: dict) -> str:
    bar = 400
    rows = []
    for p, name in enumerate(PIPE_NAMES):
        u = report["pipes"][name]["utilization"]
        y = p * 22
        rows.append(f'<g class="util" data-pipe="{name}" data-utilization="{u}">'
                    f'<text x="4" y="{y + 15}">{name}</text>'
                    f'<rect x="{LABEL}" y="{y + 4}" width="{bar}" height="14" fill="#eee"/>'
                    f'<rect class="util-bar" x="{LABEL}" y="{y + 4}" width="{bar * u:.2f}" '
                    f'height="14" fill="#4e79a7"/>'
                    f'<text x="{LABEL + bar + 8}" y="{y + 15}">{100 * u:.1f}%</text></g>')
    return (f'<svg xmlns="http://www.w3.org/2000/svg" id="utilization" width="{LABEL + bar + 70}" '
            f'height="{22 * len(PIPE_NAMES) + 6}" font-family="sans-serif" font-size="11">'
            + "".join(rows) + '</svg>')


def _limit(report: dict) -> str:
    if not report["bound_cycles"]:  # an empty program: nothing limits it
        return "no work to bound"
    return f"limited by {html.escape(str(report['bound_unit']))}, ratio {report['bound_ratio']}"


def timelines(result, report: dict) -> str:
    """One timeline, or on a multi-core launch one per core (lanes grouped
    by core, on the chip's time axis). Cores whose timelines are the same
    bar for bar (the slices of an evenly split program) share one drawing
    under a heading that names them all: 32 copies would bury the cores
    that differ."""
    if not getattr(result, "core_traces", None):
        return timeline_svg(result)
    drawn: dict[str, list[int]] = {}  # the drawing (without its core's id) -> its cores
    for core, (trace, tl) in enumerate(result.core_traces):
        one = SimpleNamespace(trace_entries=trace, timeline=tl, target=result.target)
        svg = timeline_svg(one, report["cycles"], core)
        drawn.setdefault(svg.replace(f'id="timeline-core{core}"', 'id="{id}"', 1), []).append(core)
    parts = []
    for svg, cores in drawn.items():
        anchors = "".join(f'<a id="timeline-core{c}"></a>' for c in cores[1:])
        heading = f"core {cores[0]}" if len(cores) == 1 else \
            f"cores {int_ranges(cores)} (the same timeline)"
        parts.append(f"<h3>{heading}{anchors}</h3>\n"
                     + svg.replace('id="{id}"', f'id="timeline-core{cores[0]}"', 1))
    return "\n".join(parts)


def _ops_section(report: dict) -> str:
    """A model run's ops: the roofline and each op's exclusive cycles."""
    from npu.simulator.roofline import op_bars_svg, roofline_svg
    from npu.target import get_target

    rows = report.get("per_op")
    if not rows:
        return ""
    target = get_target(report["target"])
    cores = report.get("block_dim", 1)
    return (f"<h2>Ops against the roofline</h2>\n{roofline_svg(rows, target, cores)}\n"
            f"<h2>Exclusive cycles per op (model order)</h2>\n"
            f"{op_bars_svg(rows, report['cycles'])}\n")


def html_report(result, report: dict) -> str:
    title = f"npu-run: @{report['entry']} on {report['target']}"
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<style>body{{font-family:sans-serif;margin:1.5em}} pre{{background:#f7f7f7;padding:1em}}</style>
</head><body>
<h1>{html.escape(title)}</h1>
<p id="summary" data-cycles="{report['cycles']}" data-bound="{report['bound_cycles']}">
{report['cycles']} cycles; lower bound {report['bound_cycles']} ({_limit(report)})</p>
<h2>Utilisation per pipe</h2>
{utilization_svg(report)}
{_ops_section(report)}<h2>Timeline (cycles)</h2>
{timelines(result, report)}
<h2>Report</h2>
<pre>{html.escape(format_text(report))}</pre>
</body></html>
"""

"""The per-op charts of the HTML page (a model run's `report["per_op"]`): a
roofline of the ops against the launch's peaks, and the exclusive cycles of
each op as bars (they sum to the run).

Roofs, for the cores the launch used: compute, the cube's fp16 peak
(`Target.peak_tflops_fp16` per core); memory, GM bytes per second, the
smaller of the chip's GM bandwidth and the cores' movers (per core: the
fastest path that reads GM plus the fastest that writes it, MTE2 and MTE3
running side by side). An op sits at its arithmetic intensity (executed
FLOPs per GM byte) and its achieved TFLOP/s over its span; ops without
FLOPs or GM bytes have no place on log axes and are counted under the plot.
"""

from __future__ import annotations

import html
import math

W, H, PAD = 560, 360, 56


def roofs(target, cores: int) -> tuple[float, float]:
    """(peak TFLOP/s, GM bandwidth in GB/s) of a launch on `cores` cores."""
    peak = target.peak_tflops_fp16() / target.cores * cores
    paths = target.paths
    reads = max((p.bytes_per_cycle for name, p in paths.items() if name.startswith("gm_to_")), default=0)
    writes = max((p.bytes_per_cycle for name, p in paths.items() if name.endswith("_to_gm")), default=0)
    per_core = (reads + writes) * target.clock_ghz
    return peak, min(target.gm_chip_gbps(), per_core * cores)


def roofline_svg(rows: list[dict], target, cores: int) -> str:
    peak, bandwidth = roofs(target, cores)
    points = [r for r in rows if r["flops"] > 0 and r["gm_bytes"] > 0 and r["tflops"] > 0]
    ridge = peak * 1e3 / bandwidth  # FLOP per byte where the roofs meet
    xs = [r["flops"] / r["gm_bytes"] for r in points] + [ridge]
    ys = [r["tflops"] for r in points] + [peak]
    x0, x1 = 10 ** math.floor(math.log10(min(xs) / 2)), 10 ** math.ceil(math.log10(max(xs) * 2))
    y0, y1 = 10 ** math.floor(math.log10(min(ys) / 2)), 10 ** math.ceil(math.log10(peak * 2))

    def px(x: float) -> float:
        return PAD + (W - 2 * PAD) * (math.log10(x) - math.log10(x0)) / (math.log10(x1) - math.log10(x0))

    def py(y: float) -> float:
        return H - PAD - (H - 2 * PAD) * (math.log10(y) - math.log10(y0)) / (math.log10(y1) - math.log10(y0))

    axes = [f'<line class="axis" x1="{PAD}" y1="{H - PAD}" x2="{W - PAD}" y2="{H - PAD}" stroke="#000"/>',
            f'<line class="axis" x1="{PAD}" y1="{PAD}" x2="{PAD}" y2="{H - PAD}" stroke="#000"/>']
    for e in range(round(math.log10(x0)), round(math.log10(x1)) + 1):
        axes.append(f'<text x="{px(10.0 ** e):.2f}" y="{H - PAD + 14}" text-anchor="middle">'
                    f'{10.0 ** e:g}</text>')
    for e in range(round(math.log10(y0)), round(math.log10(y1)) + 1):
        axes.append(f'<text x="{PAD - 4}" y="{py(10.0 ** e) + 4:.2f}" text-anchor="end">'
                    f'{10.0 ** e:g}</text>')
    memory_y0 = max(y0, bandwidth * x0 / 1e3)
    parts = axes + [f'<line class="roof" data-kind="memory" data-gbps="{bandwidth:.1f}" '
             f'x1="{px(memory_y0 * 1e3 / bandwidth):.2f}" y1="{py(memory_y0):.2f}" '
             f'x2="{px(ridge):.2f}" y2="{py(peak):.2f}" stroke="#555"/>',
             f'<line class="roof" data-kind="compute" data-tflops="{peak:.2f}" x1="{px(ridge):.2f}" '
             f'y1="{py(peak):.2f}" x2="{px(x1):.2f}" y2="{py(peak):.2f}" stroke="#555"/>']
    placed: list[tuple[float, float, float]] = []  # (x, y, width) of the labels so far
    for r in sorted(points, key=lambda r: -r["tflops"]):
        intensity = r["flops"] / r["gm_bytes"]
        name = r["op"].split(" (")[0][:24]
        lx, ly = px(intensity) + 6, py(r["tflops"]) + 4
        while any(abs(ly - y) < 11 and lx < x + w and x < lx + 6 * len(name)
                  for x, y, w in placed):
            ly += 11  # below the label it would cover, so that each stays readable
        placed.append((lx, ly, 6 * len(name)))
        if ly != py(r["tflops"]) + 4:  # moved: a leader line from the point
            parts.append(f'<line class="leader" x1="{px(intensity):.2f}" y1="{py(r["tflops"]):.2f}" '
                         f'x2="{lx - 1:.2f}" y2="{ly - 4:.2f}" stroke="#aaa"/>')
        parts.append(f'<circle class="op" data-op="{html.escape(r["op"])}" '
                     f'data-intensity="{intensity:.6g}" data-tflops="{r["tflops"]:.6g}" '
                     f'cx="{px(intensity):.2f}" cy="{py(r["tflops"]):.2f}" r="4" fill="#1f77b4">'
                     f'<title>{html.escape(r["op"])}: {intensity:.3g} FLOP/B, '
                     f'{r["tflops"]:.3g} TFLOP/s ({r["bound_unit"]}-bound)</title></circle>'
                     f'<text x="{lx:.2f}" y="{ly:.2f}" font-size="10">{html.escape(name)}</text>')
    left = len(rows) - len(points)
    parts.append(f'<text x="{W / 2}" y="{H - PAD + 30}" text-anchor="middle">FLOP per GM byte</text>'
                 f'<text x="12" y="{PAD - 12}">TFLOP/s</text>'
                 f'<text x="{PAD}" y="{H - 8}">roofs for {cores} core(s): {peak:.1f} TFLOP/s, '
                 f'{bandwidth:.0f} GB/s' + (f'; {left} op(s) without FLOPs or GM bytes not shown'
                                            if left else '') + '</text>')
    return (f'<svg xmlns="http://www.w3.org/2000/svg" id="roofline" width="{W}" height="{H}" '
            f'font-family="sans-serif" font-size="11">' + "".join(parts) + '</svg>')


def op_bars_svg(rows: list[dict], total: int) -> str:
    """Each op's exclusive cycles, in model order, as a share of the run."""
    label, bar, row_h, note = 230, 360, 18, 150
    parts = []
    for i, r in enumerate(rows):
        width = bar * r["exclusive_cycles"] / total if total else 0.0
        share = f" ({100 * r['exclusive_cycles'] / total:.1f}%)" if total else ""
        y = i * row_h + 4
        parts.append(f'<text x="0" y="{y + 12}">{html.escape(r["op"][:34])}</text>'
                     f'<rect class="op-bar" data-op="{html.escape(r["op"])}" '
                     f'data-exclusive="{r["exclusive_cycles"]}" x="{label}" y="{y}" '
                     f'width="{width:.2f}" height="{row_h - 4}" fill="#ff7f0e">'
                     f'<title>{html.escape(r["op"])}: {r["exclusive_cycles"]:.0f} cycles '
                     f'exclusive, span {r["span_cycles"]}</title></rect>'
                     f'<text x="{label + width + 4:.2f}" y="{y + 12}">{r["exclusive_cycles"]:,.0f}'
                     f'{share}</text>')
    return (f'<svg xmlns="http://www.w3.org/2000/svg" id="op-bars" width="{label + bar + note}" '
            f'height="{row_h * len(rows) + 8}" font-family="sans-serif" font-size="11">'
            + "".join(parts) + '</svg>')

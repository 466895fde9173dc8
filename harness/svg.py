"""Inline SVG charts for the HTML report: lines with dispersion bands, steps, bars.

Written as text, with no plotting library: a chart costs milliseconds (a
matplotlib PNG cost ~0.7 CPU s, minutes over a catalogue's cases at the end
of every ``harness run``), stays sharp at any zoom, needs nothing fetched,
and each point carries its value as a tooltip (``<title>``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from html import escape

#: line colours (tab10); past ten series the dash pattern changes too
COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf")
DASHES = ("", "6 3", "2 2", "8 3 2 3")

W, H = 560, 260  # the plot area's box, in SVG units
LEFT, TOP, BOTTOM = 70, 28, 44
LEGEND_W = 300


def _style(i: int) -> tuple[str, str]:
    return COLOURS[i % len(COLOURS)], DASHES[(i // len(COLOURS)) % len(DASHES)]


def _nice_step(span: float, n: int = 6) -> float:
    raw = span / max(n, 1)
    mag = 10 ** math.floor(math.log10(raw)) if raw > 0 else 1
    return next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)


class _Scale:
    """Data → SVG coordinate along one axis (``log``: base 10), with its ticks."""

    # the axis ends: decade exponents (ints) on a log axis, multiples of the step on a linear one
    lo: float
    hi: float

    def __init__(self, values, lo_px: float, hi_px: float, log: bool, integer: bool = False):
        vals = [float(v) for v in values if v is not None and v == v and (not log or v > 0)]
        self.log, self.lo_px, self.hi_px = log, lo_px, hi_px
        if log:
            lo, hi = (min(vals), max(vals)) if vals else (1e-6, 1.0)
            self.lo, self.hi = math.floor(math.log10(lo)), math.ceil(math.log10(hi))
            if self.hi == self.lo:
                self.hi += 1
            self.ticks = [10.0**e for e in range(int(self.lo), int(self.hi) + 1)]
            if self.hi - self.lo <= 2:  # a decade or two: 2× and 5× between them as well
                self.ticks = sorted(t * m for t in self.ticks for m in (1, 2, 5) if t * m <= 10.0**self.hi)
        else:
            lo, hi = (min(vals), max(vals)) if vals else (0.0, 1.0)
            if hi == lo:
                lo, hi = lo - 1, hi + 1
            step = max(1.0, _nice_step(hi - lo)) if integer else _nice_step(hi - lo)
            self.lo, self.hi = math.floor(lo / step) * step, math.ceil(hi / step) * step
            self.ticks = [self.lo + i * step for i in range(round((self.hi - self.lo) / step) + 1)]

    def __call__(self, v: float) -> float:
        x = math.log10(v) if self.log else v
        return self.lo_px + (x - self.lo) / (self.hi - self.lo) * (self.hi_px - self.lo_px)


def _fmt_num(v: float) -> str:
    return f"{v:g}"


def _frame(title: str, xlabel: str, ylabel: str, xs: _Scale, ys: _Scale, xfmt, yfmt, xticks=None, h: float = H) -> list[str]:
    """Axes, grid, tick labels, titles (a plot area ``h`` high)."""
    out = [
        f'<text x="{LEFT + W / 2}" y="16" text-anchor="middle" class="t">{escape(title)}</text>',
        f'<rect x="{LEFT}" y="{TOP}" width="{W}" height="{h}" class="box"/>',
    ]
    for t in ys.ticks:
        y = ys(t)
        out.append(
            f'<line x1="{LEFT}" x2="{LEFT + W}" y1="{y:.1f}" y2="{y:.1f}" class="g"/>'
            f'<text x="{LEFT - 4}" y="{y + 3:.1f}" text-anchor="end">{escape(yfmt(t))}</text>'
        )
    for t, label in xticks or [(t, xfmt(t)) for t in xs.ticks]:
        x = xs(t)
        out.append(
            f'<line y1="{TOP}" y2="{TOP + h}" x1="{x:.1f}" x2="{x:.1f}" class="g"/>'
            f'<text x="{x:.1f}" y="{TOP + h + 14}" text-anchor="middle">{escape(label)}</text>'
        )
    out.append(f'<text x="{LEFT + W / 2}" y="{TOP + h + 34}" text-anchor="middle">{escape(xlabel)}</text>')
    out.append(f'<text transform="translate(14 {TOP + h / 2}) rotate(-90)" text-anchor="middle">{escape(ylabel)}</text>')
    return out


def _legend(labels: list[str]) -> tuple[list[str], int]:
    """The legend right of the plot, one row per series; and the height it needs."""
    out, x0 = [], LEFT + W + 12
    for i, label in enumerate(labels):
        colour, dash = _style(i)
        y = TOP + 6 + 13 * i
        out.append(
            f'<line x1="{x0}" x2="{x0 + 18}" y1="{y}" y2="{y}" stroke="{colour}" stroke-width="2" '
            f'stroke-dasharray="{dash}"/><text x="{x0 + 22}" y="{y + 3}">{escape(label)}</text>'
        )
    return out, TOP + 6 + 13 * len(labels)


def _svg(body: list[str], height: float, alt: str) -> str:
    return (
        f'<svg class="chart" viewBox="0 0 {LEFT + W + LEGEND_W} {height:.0f}" role="img" '
        f'aria-label="{escape(alt, quote=True)}" xmlns="http://www.w3.org/2000/svg">'
        f"<title>{escape(alt)}</title>" + "".join(body) + "</svg>"
    )


def lines(
    series: list[dict],
    *,
    title: str,
    xlabel: str,
    ylabel: str,
    alt: str,
    logy: bool = True,
    step: bool = False,
    integer_x: bool = False,
    integer_y: bool = False,
    yfmt: Callable[[float], str] = _fmt_num,
    xfmt: Callable[[float], str] = _fmt_num,
    xticks=None,
) -> str:
    """A line per series (``label``, ``x``, ``y``; optional ``lo``/``hi``: a band
    drawn under the line where it has width; ``step``: a staircase, as
    cumulative counts rise; ``integer_x``/``integer_y``: ticks on whole numbers).
    Each point's tooltip says its series and value."""
    pts = [(x, y) for s in series for x, y in zip(s["x"], s["y"], strict=False) if y is not None and y == y]
    band = [v for s in series for k in ("lo", "hi") for v in s.get(k) or [] if v is not None and v == v]
    h = max(H, 13 * len(series) + 8)  # as tall as the legend beside it
    xs = _Scale([p[0] for p in pts], LEFT, LEFT + W, False, integer_x)
    ys = _Scale([p[1] for p in pts] + band, TOP + h, TOP, logy, integer_y)
    body = _frame(title, xlabel, ylabel, xs, ys, xfmt, yfmt, xticks, h)
    for i, s in enumerate(series):
        colour, dash = _style(i)
        xy = [(x, y) for x, y in zip(s["x"], s["y"], strict=False) if y is not None and y == y and (not logy or y > 0)]
        lo, hi = s.get("lo"), s.get("hi")
        if lo and hi:
            edge = [
                (x, a, b)
                for x, a, b in zip(s["x"], lo, hi, strict=False)
                if a is not None and b is not None and a == a and b == b and (not logy or a > 0)
            ]
            if any(b > a for _, a, b in edge):
                ring = [(xs(x), ys(b)) for x, _, b in edge] + [(xs(x), ys(a)) for x, a, _ in reversed(edge)]
                body.append(
                    f'<polygon points="{" ".join(f"{px:.1f},{py:.1f}" for px, py in ring)}" '
                    f'fill="{colour}" fill-opacity="{0.18 if len(series) < 8 else 0.08}"/>'
                )
        coords = []
        for j, (x, y) in enumerate(xy):
            if step and j:
                coords.append((xs(x), ys(xy[j - 1][1])))
            coords.append((xs(x), ys(y)))
        if coords:
            body.append(
                f'<polyline points="{" ".join(f"{px:.1f},{py:.1f}" for px, py in coords)}" fill="none" '
                f'stroke="{colour}" stroke-width="1.6" stroke-dasharray="{dash}"/>'
            )
        for x, y in xy:
            body.append(
                f'<circle cx="{xs(x):.1f}" cy="{ys(y):.1f}" r="2.6" fill="{colour}">'
                f"<title>{escape(s['label'])}: {escape(xfmt(x))} → {escape(yfmt(y))}</title></circle>"
            )
    legend, _ = _legend([s["label"] for s in series])
    return _svg(body + legend, TOP + h + BOTTOM, alt)


def bars(
    labels: list[str],
    values: list[float],
    *,
    title: str,
    xlabel: str,
    alt: str,
    ref: float = 1.0,
    fmt: Callable[[float], str] = _fmt_num,
) -> str:
    """Horizontal bars on a log axis from ``ref`` (a bar right of the line: above
    it, e.g. slower than the baseline), one row per label."""
    row = 16
    height = len(labels) * row
    xs = _Scale([*values, ref], 210, 210 + W - 140, True)
    body = [f'<text x="{210 + (W - 140) / 2}" y="16" text-anchor="middle" class="t">{escape(title)}</text>']
    for t in xs.ticks:
        x = xs(t)
        body.append(
            f'<line y1="{TOP}" y2="{TOP + height}" x1="{x:.1f}" x2="{x:.1f}" class="g"/>'
            f'<text x="{x:.1f}" y="{TOP + height + 14}" text-anchor="middle">{escape(fmt(t))}</text>'
        )
    x0 = xs(ref)
    for i, (label, v) in enumerate(zip(labels, values, strict=False)):
        y = TOP + i * row
        x = xs(v)
        body.append(
            f'<text x="204" y="{y + 11}" text-anchor="end">{escape(label)}</text>'
            f'<rect x="{min(x, x0):.1f}" y="{y + 2}" width="{max(abs(x - x0), 1):.1f}" height="{row - 4}" '
            f'fill="#64b5f6"><title>{escape(label)}: {escape(fmt(v))}</title></rect>'
        )
    body.append(f'<line y1="{TOP}" y2="{TOP + height}" x1="{x0:.1f}" x2="{x0:.1f}" stroke="#000"/>')
    body.append(f'<text x="{210 + (W - 140) / 2}" y="{TOP + height + 32}" text-anchor="middle">{escape(xlabel)}</text>')
    return _svg(body, TOP + height + BOTTOM, alt)


#: the charts' CSS, for the page's ``<style>``
STYLE = """
svg.chart{width:100%;max-width:930px;display:block;margin:0.6em 0;font:10px sans-serif}
svg.chart .t{font-size:12px;font-weight:bold}
svg.chart .box{fill:none;stroke:#888}
svg.chart .g{stroke:#ddd;stroke-width:0.7}
svg.chart circle:hover{r:4}
"""

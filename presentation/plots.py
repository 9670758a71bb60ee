"""Server-side SVG plots for the analysis pages: line chart, histogram, scatter.

Drawn as plain SVG text so pages need no JavaScript library and no CDN. Each
plot carries a ``<title>`` and a ``<desc>`` (read by screen readers, referenced
by ``aria-labelledby``), labelled axes and tick values; every text is escaped.
Colours come from a small palette that stays distinguishable for the common
colour-vision deficiencies, and series also differ by dash pattern.

Every drawn part carries a class (``plot-bg``, ``plot-axis``, ``plot-grid``,
``plot-tick``, ``plot-label``, ``plot-diagonal``, ``series-N``) besides its
colour attributes: the attributes are the light look (and what a saved SVG
shows), and ``static/css/analysis.css`` recolours the classes for the dark
scheme. Presentation attributes and classes only, no ``style=""``: the site's
Content-Security-Policy (``style-src 'self'``) would block inline styles.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

from django.utils.safestring import SafeString, mark_safe

WIDTH = 560
HEIGHT = 320
MARGIN_LEFT = 58
MARGIN_RIGHT = 26  # room for half of the last x tick ("1,000")
MARGIN_TOP = 16
MARGIN_BOTTOM = 52

#: Okabe–Ito colours (readable with red-green colour blindness).
PALETTE = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9"]
DASHES = ["", "6 3", "2 3", "8 3 2 3", "4 4", "1 2"]

_ids = itertools.count(1)


@dataclass(frozen=True)
class Series:
    """One line of a line chart: a label and its (x, y) points."""

    label: str
    points: Sequence[tuple[float, float]]


def _num(value: float) -> str:
    return f"{value:.2f}".rstrip("0").rstrip(".") if value != int(value) else str(int(value))


def _tick_label(value: float) -> str:
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    return _num(round(value, 3))


def _frame(title: str, desc: str, body: list[str], *, x_label: str, y_label: str, css_class: str) -> SafeString:
    uid = f"plot{next(_ids)}"
    mid_y = MARGIN_TOP + (HEIGHT - MARGIN_TOP - MARGIN_BOTTOM) / 2
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="plot {escape(css_class)}" role="img" '
        f'viewBox="0 0 {WIDTH} {HEIGHT}" width="100%" preserveAspectRatio="xMidYMid meet" '
        f'aria-labelledby="{uid}-title {uid}-desc">',
        f'<title id="{uid}-title">{escape(title)}</title>',
        f'<desc id="{uid}-desc">{escape(desc)}</desc>',
        f'<rect class="plot-bg" x="0" y="0" width="{WIDTH}" height="{HEIGHT}" fill="#ffffff"/>',
        *body,
        f'<text x="{MARGIN_LEFT + (WIDTH - MARGIN_LEFT - MARGIN_RIGHT) / 2:.1f}" y="{HEIGHT - 8}" '
        f'text-anchor="middle" font-size="13" fill="#222" class="plot-label">{escape(x_label)}</text>',
        f'<text x="14" y="{mid_y:.1f}" text-anchor="middle" '
        f'font-size="13" fill="#222" class="plot-label" transform="rotate(-90 14 {mid_y:.1f})">'
        f"{escape(y_label)}</text>",
        "</svg>",
    ]
    return mark_safe("".join(parts))


class _Axes:
    """Maps data coordinates to the plot area (optionally log10 on x)."""

    def __init__(self, x_range: tuple[float, float], y_range: tuple[float, float], *, log_x: bool = False):
        self.log_x = log_x
        x0, x1 = x_range
        if log_x:
            x0, x1 = math.log10(max(x0, 1e-12)), math.log10(max(x1, 1e-12))
        if x1 == x0:
            x1 = x0 + 1
        y0, y1 = y_range
        if y1 == y0:
            y1 = y0 + 1
        self.x0, self.x1, self.y0, self.y1 = x0, x1, y0, y1
        self.left, self.right = MARGIN_LEFT, WIDTH - MARGIN_RIGHT
        self.top, self.bottom = MARGIN_TOP, HEIGHT - MARGIN_BOTTOM

    def x(self, value: float) -> float:
        v = math.log10(max(value, 1e-12)) if self.log_x else value
        return self.left + (v - self.x0) / (self.x1 - self.x0) * (self.right - self.left)

    def y(self, value: float) -> float:
        return self.bottom - (value - self.y0) / (self.y1 - self.y0) * (self.bottom - self.top)

    def grid(self, x_ticks: Sequence[float], y_ticks: Sequence[float], *, x_format=None) -> list[str]:
        out = [
            f'<line class="plot-axis" x1="{self.left}" y1="{self.bottom}" x2="{self.right}" y2="{self.bottom}" '
            'stroke="#444"/>',
            f'<line class="plot-axis" x1="{self.left}" y1="{self.top}" x2="{self.left}" y2="{self.bottom}" '
            'stroke="#444"/>',
        ]
        for t in y_ticks:
            y = self.y(t)
            out.append(f'<line class="plot-grid" x1="{self.left}" y1="{y:.1f}" x2="{self.right}" y2="{y:.1f}" '
                       'stroke="#e3e3e3"/>')
            out.append(f'<text class="plot-tick" x="{self.left - 6}" y="{y + 4:.1f}" text-anchor="end" '
                       f'font-size="11" fill="#444">{escape(_tick_label(t))}</text>')
        for t in x_ticks:
            x = self.x(t)
            out.append(f'<line class="plot-axis" x1="{x:.1f}" y1="{self.bottom}" x2="{x:.1f}" y2="{self.bottom + 4}" '
                       'stroke="#444"/>')
            out.append(f'<text class="plot-tick" x="{x:.1f}" y="{self.bottom + 17}" text-anchor="middle" '
                       f'font-size="11" fill="#444">{escape((x_format or _tick_label)(t))}</text>')
        return out


def _linear_ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    if hi <= lo:
        return [lo]
    step = (hi - lo) / n
    magnitude = 10 ** math.floor(math.log10(step))
    for nice in (1, 2, 2.5, 5, 10):
        if nice * magnitude >= step:
            step = nice * magnitude
            break
    start = math.ceil(lo / step) * step
    ticks = []
    t = start
    while t <= hi + 1e-9:
        ticks.append(round(t, 10))
        t += step
    return ticks


def _log_ticks(lo: float, hi: float) -> list[float]:
    ticks = []
    p = 10 ** math.floor(math.log10(max(lo, 1)))
    while p <= hi:
        if p >= lo:
            ticks.append(p)
        p *= 10
    if hi not in ticks:
        ticks.append(hi)
    return ticks


def line_chart(series: Sequence[Series], *, title: str, desc: str, x_label: str, y_label: str,
               log_x: bool = False, y_range: tuple[float, float] = (0.0, 1.0)) -> SafeString:
    """Lines (e.g. mean R@k against k), one per series, with a legend when there are several."""
    xs = [x for s in series for x, _ in s.points]
    x_lo, x_hi = (min(xs), max(xs)) if xs else (1.0, 10.0)
    axes = _Axes((x_lo, x_hi), y_range, log_x=log_x)
    x_ticks = _log_ticks(x_lo, x_hi) if log_x else _linear_ticks(x_lo, x_hi)
    body = axes.grid(x_ticks, _linear_ticks(*y_range))
    for i, s in enumerate(series):
        if not s.points:
            continue
        colour, dash = PALETTE[i % len(PALETTE)], DASHES[i % len(DASHES)]
        path = " ".join(f"{'M' if j == 0 else 'L'}{axes.x(x):.1f},{axes.y(y):.1f}" for j, (x, y) in enumerate(s.points))
        dash_attr = f' stroke-dasharray="{dash}"' if dash else ""
        body.append(f'<path class="series-{i % len(PALETTE)}" d="{path}" fill="none" stroke="{colour}" '
                    f'stroke-width="2"{dash_attr}><title>{escape(s.label)}</title></path>')
    if len(series) > 1:
        for i, s in enumerate(series):
            y = axes.top + 8 + 16 * i
            x = axes.left + 12
            colour, dash = PALETTE[i % len(PALETTE)], DASHES[i % len(DASHES)]
            dash_attr = f' stroke-dasharray="{dash}"' if dash else ""
            body.append(f'<line class="series-{i % len(PALETTE)}" x1="{x}" y1="{y}" x2="{x + 22}" y2="{y}" '
                        f'stroke="{colour}" stroke-width="2"{dash_attr}/>')
            body.append(f'<text class="plot-label" x="{x + 28}" y="{y + 4}" font-size="11" fill="#222">'
                        f"{escape(s.label[:60])}</text>")
    return _frame(title, desc, body, x_label=x_label, y_label=y_label, css_class="plot-line")


def histogram(counts: Sequence[int], edges: Sequence[float], *, title: str, desc: str, x_label: str,
              y_label: str = "queries") -> SafeString:
    """Bars of ``counts`` over the bins ``edges[i]..edges[i+1]`` (one more edge than counts)."""
    top = max(list(counts) + [1])
    axes = _Axes((edges[0], edges[-1]), (0, top))
    y_ticks = [t for t in _linear_ticks(0, top) if float(t).is_integer()] or [0, top]
    x_ticks = list(edges) if len(edges) <= 11 else _linear_ticks(edges[0], edges[-1])
    body = axes.grid(x_ticks, y_ticks)
    for i, c in enumerate(counts):
        x0, x1 = axes.x(edges[i]), axes.x(edges[i + 1])
        y = axes.y(c)
        body.append(
            f'<rect class="series-0" x="{x0 + 1:.1f}" y="{y:.1f}" width="{max(0.5, x1 - x0 - 2):.1f}" '
            f'height="{axes.bottom - y:.1f}" '
            f'fill="{PALETTE[0]}"><title>{escape(_num(edges[i]))}–{escape(_num(edges[i + 1]))}: {int(c)} '
            f"{escape(y_label)}</title></rect>"
        )
    return _frame(title, desc, body, x_label=x_label, y_label=y_label, css_class="plot-histogram")


def scatter(points: Sequence[tuple[float, float]], *, title: str, desc: str, x_label: str, y_label: str,
            labels: Sequence[str] | None = None, diagonal: bool = True,
            x_range: tuple[float, float] = (0.0, 1.0), y_range: tuple[float, float] = (0.0, 1.0),
            decimals: int = 4) -> SafeString:
    """One dot per item (e.g. per query: system A's value against B's), with the y = x diagonal; each dot's
    ``<title>`` gives its two values to ``decimals`` places (2 for percent, as the tables print them)."""
    axes = _Axes(x_range, y_range)
    body = axes.grid(_linear_ticks(*x_range), _linear_ticks(*y_range))
    if diagonal:
        body.append(f'<line class="plot-diagonal" x1="{axes.x(x_range[0]):.1f}" y1="{axes.y(y_range[0]):.1f}" '
                    f'x2="{axes.x(x_range[1]):.1f}" y2="{axes.y(y_range[1]):.1f}" stroke="#999" '
                    'stroke-dasharray="4 3"/>')
    for i, (x, y) in enumerate(points):
        tip = f"{labels[i]}: " if labels is not None and i < len(labels) else ""
        body.append(f'<circle class="series-0" cx="{axes.x(x):.1f}" cy="{axes.y(y):.1f}" r="3.5" fill="{PALETTE[0]}" '
                    f'fill-opacity="0.55" stroke="{PALETTE[0]}"><title>{escape(tip)}{x:.{decimals}f}, {y:.{decimals}f}</title></circle>')
    return _frame(title, desc, body, x_label=x_label, y_label=y_label, css_class="plot-scatter")


def progress_chart(points: Sequence[tuple[float, float, str]], *, title: str, desc: str, x_label: str,
                   y_label: str, y_range: tuple[float, float] = (0.0, 100.0),
                   texts: Sequence[str] | None = None) -> SafeString:
    """The state of the art over time: a step line through the record-setting points, one dot each.

    ``points`` are (x, y, label) with x a fractional year, sorted by x and rising in y; each dot's
    ``<title>`` names the system (its label) and value: ``texts[i]`` as the page prints it (a hidden split's
    grid), else ``y`` to two decimals. Year ticks on x.
    """
    xs = [x for x, _, _ in points]
    x_lo, x_hi = (math.floor(min(xs)), math.floor(max(xs)) + 1) if xs else (2020, 2021)
    axes = _Axes((x_lo, x_hi), y_range)
    step = max(1, math.ceil((x_hi - x_lo) / 8))
    body = axes.grid(list(range(x_lo, x_hi + 1, step)), _linear_ticks(*y_range), x_format=lambda t: str(int(t)))
    if points:
        path = []
        for j, (x, y, _) in enumerate(points):
            if j:
                path.append(f"L{axes.x(x):.1f},{axes.y(points[j - 1][1]):.1f}")
            path.append(f"{'M' if j == 0 else 'L'}{axes.x(x):.1f},{axes.y(y):.1f}")
        # The record holds until today's edge of the plot.
        path.append(f"L{axes.right:.1f},{axes.y(points[-1][1]):.1f}")
        body.append(f'<path class="series-0" d="{" ".join(path)}" fill="none" stroke="{PALETTE[0]}" '
                    'stroke-width="2"/>')
        for i, (x, y, label) in enumerate(points):
            text = texts[i] if texts is not None and i < len(texts) else f"{y:.2f}"
            body.append(f'<circle class="series-1" cx="{axes.x(x):.1f}" cy="{axes.y(y):.1f}" r="4" '
                        f'fill="{PALETTE[1]}" stroke="{PALETTE[1]}"><title>{escape(label)}: {escape(text)}</title>'
                        '</circle>')
    return _frame(title, desc, body, x_label=x_label, y_label=y_label, css_class="plot-progress")

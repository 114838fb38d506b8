"""Inline SVG charts for the HTML report: latency distributions and the size × accuracy × latency Pareto chart."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from edge_tool.core.textsafe import html_text

PALETTE = ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7", "#9c755f"]


@dataclass(frozen=True)
class LatencySeries:
    """One row of the latency plot: a label and its timed calls in ms."""

    label: str
    samples_ms: tuple[float, ...]


@dataclass(frozen=True)
class ParetoPoint:
    """One model in the Pareto chart."""

    label: str
    latency_ms: float
    quality: float
    size_bytes: int


_esc = html_text


def _ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    if hi <= lo:
        hi = lo + 1.0
    raw = (hi - lo) / n
    mag = 10 ** math.floor(math.log10(raw))
    step = min((m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw), default=raw)
    start = math.floor(lo / step) * step
    return [start + i * step for i in range(int((hi - start) / step) + 2) if start + i * step <= hi + 1e-12]


@dataclass(frozen=True)
class Axis:
    """A value → pixel mapping on [lo, hi] → [a, b], logarithmic when the values span more than 20×."""

    lo: float
    hi: float
    a: float
    b: float
    log: bool

    @classmethod
    def fit(cls, values: list[float], a: float, b: float, pad: float = 1.15) -> Axis:
        """An axis covering ``values`` (positive), log when max/min > 20."""
        pos = [v for v in values if v > 0] or [1.0]
        lo, hi = min(pos), max(pos)
        if hi / lo > 20:
            return cls(lo / pad, hi * pad, a, b, True)
        return cls(0.0, hi * pad, a, b, False)

    def __call__(self, v: float) -> float:
        v = min(max(v, self.lo), self.hi)
        if self.log:
            f = (math.log10(v) - math.log10(self.lo)) / (math.log10(self.hi) - math.log10(self.lo))
        else:
            f = (v - self.lo) / ((self.hi - self.lo) or 1.0)
        return self.a + f * (self.b - self.a)

    def ticks(self) -> list[float]:
        """Round tick values inside the axis (1-2-5 per decade on a log axis)."""
        if not self.log:
            return _ticks(self.lo, self.hi)
        out = []
        for k in range(math.floor(math.log10(self.lo)), math.ceil(math.log10(self.hi)) + 1):
            out += [m * 10.0**k for m in (1, 2, 5) if self.lo <= m * 10.0**k <= self.hi]
        return out

    @property
    def note(self) -> str:
        """' (log scale)' when logarithmic."""
        return " (log scale)" if self.log else ""


def latency_plot(series: list[LatencySeries], width: int = 760) -> str:
    """Horizontal box plot (p5–p95 whiskers, quartile box, median line) with a jittered strip of the raw calls."""
    series = [s for s in series if s.samples_ms]
    if not series:
        return "<p>No latency samples.</p>"
    left, right, row_h, top = 190, 20, 46, 20
    height = top + row_h * len(series) + 40
    spread = [float(np.percentile(s.samples_ms, q)) for s in series for q in (0.5, 99.5)]
    x = Axis.fit(spread, left, width - right, pad=1.05)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" width="{width}" '
        f'height="{height}" role="img" aria-label="latency distribution per artefact" class="chart">'
    ]
    for t in x.ticks():
        parts.append(
            f'<line x1="{x(t):.1f}" y1="{top - 6}" x2="{x(t):.1f}" y2="{height - 34}" class="grid"/>'
            f'<text x="{x(t):.1f}" y="{height - 18}" text-anchor="middle" class="tick">{t:g}</text>'
        )
    parts.append(
        f'<text x="{(left + width - right) / 2:.0f}" y="{height - 2}" text-anchor="middle" class="axis">'
        f"milliseconds per inference (batch 1){x.note}</text>"
    )
    rng = np.random.default_rng(0)
    for i, s in enumerate(series):
        color = PALETTE[i % len(PALETTE)]
        cy = top + row_h * i + row_h / 2
        v = np.asarray(s.samples_ms)
        p5, q1, med, q3, p95 = np.percentile(v, [5, 25, 50, 75, 95])
        parts.append(f'<text x="{left - 8}" y="{cy + 4:.1f}" text-anchor="end" class="label">{_esc(s.label)}</text>')
        pts = v if len(v) <= 400 else v[np.linspace(0, len(v) - 1, 400).astype(int)]
        jitter = rng.uniform(-row_h * 0.3, row_h * 0.3, len(pts))
        parts += [
            f'<circle cx="{x(p):.1f}" cy="{cy + j:.1f}" r="1.6" fill="{color}" fill-opacity="0.35"/>'
            for p, j in zip(pts, jitter)
        ]
        parts.append(
            f'<line x1="{x(p5):.1f}" y1="{cy:.1f}" x2="{x(p95):.1f}" y2="{cy:.1f}" stroke="#333"/>'
            f'<rect x="{x(q1):.1f}" y="{cy - 9:.1f}" width="{max(x(q3) - x(q1), 1):.1f}" height="18" '
            f'fill="{color}" fill-opacity="0.55" stroke="#333"/>'
            f'<line x1="{x(med):.1f}" y1="{cy - 11:.1f}" x2="{x(med):.1f}" y2="{cy + 11:.1f}" '
            f'stroke="#000" stroke-width="2"><title>p50 {med:.3f} ms</title></line>'
        )
    parts.append("</svg>")
    return "\n".join(parts)


def pareto_front(points: list[ParetoPoint]) -> set[str]:
    """Labels of points no other point beats on all of latency (lower), quality (higher) and size (smaller)."""
    front = set()
    for p in points:
        dominated = any(
            q is not p
            and q.latency_ms <= p.latency_ms
            and q.quality >= p.quality
            and q.size_bytes <= p.size_bytes
            and (q.latency_ms < p.latency_ms or q.quality > p.quality or q.size_bytes < p.size_bytes)
            for q in points
        )
        if not dominated:
            front.add(p.label)
    return front


def pareto_chart(points: list[ParetoPoint], quality_label: str, width: int = 760, height: int = 420) -> str:
    """Scatter of p50 latency (x) against quality (y), bubble area ∝ size; Pareto-optimal models ringed."""
    if not points:
        return "<p>No models to plot.</p>"
    left, right, top, bottom = 70, 30, 20, 50
    xs = [p.latency_ms for p in points]
    ys = [p.quality for p in points]
    x = Axis.fit(xs, left, width - right, pad=1.4)
    y_lo, y_hi = min(ys), max(ys)
    pad = max((y_hi - y_lo) * 0.15, 0.005)
    y_lo, y_hi = y_lo - pad, min(y_hi + pad, 1.0 + pad)
    max_size = max(p.size_bytes for p in points) or 1
    y = lambda v: top + (y_hi - v) / (y_hi - y_lo) * (height - top - bottom)  # noqa: E731
    front = pareto_front(points)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" width="{width}" '
        f'height="{height}" role="img" aria-label="size, accuracy and latency trade-off" class="chart">'
    ]
    for t in x.ticks():
        parts.append(
            f'<line x1="{x(t):.1f}" y1="{top}" x2="{x(t):.1f}" y2="{height - bottom}" class="grid"/>'
            f'<text x="{x(t):.1f}" y="{height - bottom + 16}" text-anchor="middle" class="tick">{t:g}</text>'
        )
    for t in _ticks(y_lo, y_hi):
        if t < y_lo:
            continue
        parts.append(
            f'<line x1="{left}" y1="{y(t):.1f}" x2="{width - right}" y2="{y(t):.1f}" class="grid"/>'
            f'<text x="{left - 6}" y="{y(t) + 4:.1f}" text-anchor="end" class="tick">{100 * t:.4g}%</text>'
        )
    parts.append(
        f'<text x="{(left + width - right) / 2:.0f}" y="{height - 10}" text-anchor="middle" class="axis">'
        f"p50 latency, ms{x.note} (lower is better)</text>"
        f'<text x="14" y="{(top + height - bottom) / 2:.0f}" text-anchor="middle" class="axis" '
        f'transform="rotate(-90 14 {(top + height - bottom) / 2:.0f})">{_esc(quality_label)} (higher is better)</text>'
    )
    placed: list[tuple[float, float]] = []
    for i, p in enumerate(points):
        r = 5 + 22 * math.sqrt(p.size_bytes / max_size)
        lx, ly = x(p.latency_ms) + r + 3, y(p.quality) + 4
        while any(abs(ly - py) < 13 and abs(lx - px) < 110 for px, py in placed):
            ly += 14  # keep labels of nearby points readable
        placed.append((lx, ly))
        color = PALETTE[i % len(PALETTE)]
        ring = ' stroke="#000" stroke-width="2.5"' if p.label in front else ' stroke="#666"'
        parts.append(
            f'<circle cx="{x(p.latency_ms):.1f}" cy="{y(p.quality):.1f}" r="{r:.1f}" fill="{color}" '
            f'fill-opacity="0.6"{ring}><title>{_esc(p.label)}: {p.latency_ms:.3f} ms, '
            f"{100 * p.quality:.2f}%, {p.size_bytes} bytes</title></circle>"
            f'<text x="{lx:.1f}" y="{ly:.1f}" class="label">'
            f"{_esc(p.label)}</text>"
        )
    parts.append("</svg>")
    return "\n".join(parts)

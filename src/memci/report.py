"""The HTML report of a replay: one self-contained file with charts drawn as inline SVG.

:func:`render_report` turns a :class:`~memci.replay.ReplayResult` into HTML;
:func:`write_report` writes it atomically. The page shows a summary, tokens per request
(memci against the full history, with the budget), the cumulative tokens saved, the share
of every request that repeats the previous one (what a provider's prompt cache reuses),
the cost per request with prompt caching (both sides cached alike, see
:mod:`memci.replay`), archive / recall / eviction events on the same request axis, a
table of the events, the evidence each question's request holds (for files that label
it), and the session the replay stored into with the tokenizer that counted (a stand-in
for the model's own is flagged).

Invariants: the file loads nothing from anywhere (no scripts, styles, fonts or images from
elsewhere), so it works offline and can be mailed; every figure drawn can also be read as
text (the summary, the tables, tooltips); the charts stay legible from one request to
thousands (lines thin out to two points per pixel, bars turn into an area).
"""

from __future__ import annotations

import html
import json
import math
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from memci._dataclasses import dataclass
from memci.replay import ReplayResult, Request

__all__ = ["COLORS", "nice_ticks", "render_report", "write_report"]

#: Colours of the chart series (tests look for them in a screenshot).
COLORS: Mapping[str, str] = {
    "memci": "#2563eb",
    "full": "#f97316",
    "budget": "#6b7280",
    "saved": "#86efac",
    "saved_line": "#16a34a",
    "lost": "#fca5a5",
    "prefix": "#a78bfa",
    "prefix_mean": "#6d28d9",
    "archive": "#0891b2",
    "recall": "#db2777",
    "evict": "#dc2626",
    "other": "#6b7280",
}
_KINDS = ("archive", "recall", "evict")
_EVENT_ROWS = 500  # rows of the events table; the rest is counted


def nice_ticks(
    lo: float, hi: float, count: int = 5, *, cover: bool = False, integer: bool = True,
) -> list[float]:
    """Round tick values (steps of 1, 2, 2.5 or 5 × 10ⁿ) within ``lo`` … ``hi``.

    With ``cover`` the last tick is at or above ``hi`` (for the top of a value axis);
    with ``integer`` (tokens, requests) the step is never below 1.
    """
    if not hi > lo:
        hi = lo + 1
    raw = (hi - lo) / max(count, 1)
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if raw <= m * magnitude)
    if integer:
        step = max(1, step) if step != 2.5 else 2.0
    first = math.ceil(lo / step - 1e-9)
    last = (math.ceil if cover else math.floor)(hi / step + (-1e-9 if cover else 1e-9))
    return [round(i * step, 10) for i in range(first, last + 1)]


def _short(value: float) -> str:
    """A compact number for an axis: 950, 1.5k, 12k, 1.25M."""
    v = abs(value)
    if v >= 1e6:
        text = f"{value / 1e6:.2f}".rstrip("0").rstrip(".") + "M"
    elif v >= 1e4:
        text = f"{value / 1e3:.0f}k"
    elif v >= 1e3:
        text = f"{value / 1e3:.1f}".rstrip("0").rstrip(".") + "k"
    else:
        text = f"{value:g}"
    return text


@dataclass(frozen=True, slots=True)
class _Event:
    request: int
    seq: int
    kind: str
    page: int | None
    text: str
    reason: str


def _events(result: ReplayResult, reasons: Sequence[Mapping[str, Any]]) -> list[_Event]:
    """The events of every request, each with its reason when the session recorded one."""
    queue: dict[tuple[str, int | None], deque[str]] = {}
    for e in reasons:
        page = e.get("page")
        key = (str(e.get("kind")), page if isinstance(page, int) else None)
        queue.setdefault(key, deque()).append(str(e.get("reason") or ""))
    out: list[_Event] = []
    for r in result.requests:
        for text in r.events:
            words = text.split()
            kind = words[0] if words else "event"
            page = int(words[-1]) if len(words) == 3 and words[-1].isdigit() else None
            pending = queue.get((kind, page))
            reason = pending.popleft() if pending else ""
            out.append(_Event(r.number, r.seq, kind, page, text, reason))
    return out


# -- charts ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Frame:
    """A chart's geometry: the plot area in SVG units and the domains it maps."""

    width: int
    height: int
    left: int
    right: int
    top: int
    bottom: int  # the plot's lower edge (y)
    n: int
    y_max: float
    y_min: float = 0.0

    def x(self, request: float) -> float:
        """The x of request ``request`` (requests sit at the middle of their slot)."""
        span = self.width - self.right - self.left
        return self.left + (request - 0.5) * span / self.n

    def y(self, value: float) -> float:
        """The y of ``value`` (``y_min``, 0 unless values go below, at the plot's bottom)."""
        return self.bottom - (value - self.y_min) * (self.bottom - self.top) / (
            (self.y_max - self.y_min) or 1)

    @property
    def slot(self) -> float:
        """The width of one request on the x axis."""
        return (self.width - self.right - self.left) / self.n


def _f(value: float) -> str:
    return f"{value:.1f}".rstrip("0").rstrip(".")


def _axes(frame: _Frame, y_ticks: Sequence[float], y_label: str,
          y_format: Callable[[float], str], x_label_y: float) -> list[str]:
    """Grid lines, ticks and labels of both axes."""
    f = frame
    out: list[str] = []
    for t in y_ticks:
        y = _f(f.y(t))
        out.append(f'<line class="grid" x1="{f.left}" x2="{f.width - f.right}" '
                   f'y1="{y}" y2="{y}"/>')
        out.append(f'<text class="tick" x="{f.left - 8}" y="{y}" text-anchor="end" '
                   f'dominant-baseline="middle">{html.escape(y_format(t))}</text>')
    mid = (f.top + f.bottom) / 2
    out.append(f'<text class="axis-label" transform="translate(14 {_f(mid)}) rotate(-90)" '
               f'text-anchor="middle">{html.escape(y_label)}</text>')
    x_ticks = [t for t in nice_ticks(1, f.n, min(10, f.n)) if 1 <= t <= f.n]
    for t in x_ticks:
        x = _f(f.x(t))
        out.append(f'<line class="tick-mark" x1="{x}" x2="{x}" y1="{f.bottom}" '
                   f'y2="{f.bottom + 5}"/>')
        out.append(f'<text class="tick" x="{x}" y="{_f(x_label_y)}" '
                   f'text-anchor="middle">{int(t):,}</text>')
    out.append(f'<line class="axis" x1="{f.left}" x2="{f.width - f.right}" '
               f'y1="{f.bottom}" y2="{f.bottom}"/>')
    out.append(f'<text class="axis-label" x="{_f((f.left + f.width - f.right) / 2)}" '
               f'y="{f.height - 4}" text-anchor="middle">request</text>')
    return out


def _points(frame: _Frame, values: Sequence[float]) -> str:
    """Polyline points of one value per request, at most ~2 points per pixel column."""
    n = len(values)
    columns = int(frame.width - frame.left - frame.right)
    if n <= 2 * columns:
        pairs = [(frame.x(i + 1), frame.y(v)) for i, v in enumerate(values)]
    else:  # keep each column's extremes, in order, so spikes survive
        pairs = []
        per = n / columns
        for c in range(columns):
            lo, hi = int(c * per), max(int((c + 1) * per), int(c * per) + 1)
            chunk = range(lo, min(hi, n))
            a = min(chunk, key=lambda i: values[i])
            b = max(chunk, key=lambda i: values[i])
            for i in sorted({a, b}):
                pairs.append((frame.x(i + 1), frame.y(values[i])))
    return " ".join(f"{_f(x)},{_f(y)}" for x, y in pairs)


def _hover(frame: _Frame, chart: str) -> str:
    f = frame
    return (f'<line class="hover-line" x1="0" x2="0" y1="{f.top}" y2="{f.bottom}" '
            f'visibility="hidden"/>'
            f'<rect class="hover-area" data-chart="{chart}" x="{f.left}" y="{f.top}" '
            f'width="{f.width - f.left - f.right}" height="{f.bottom - f.top}" '
            f'fill="transparent"/>')


def _svg(frame: _Frame, chart: str, body: Sequence[str], label: str) -> str:
    f = frame
    return (f'<svg id="chart-{chart}" class="chart" viewBox="0 0 {f.width} {f.height}" '
            f'role="img" aria-label="{html.escape(label)}" data-left="{f.left}" '
            f'data-right="{f.width - f.right}" data-n="{f.n}">' + "".join(body) + "</svg>")


def _tokens_chart(result: ReplayResult, events: Sequence[_Event], budget: int | None) -> str:
    """Tokens per request: memci and the full history; the budget; an events strip."""
    reqs = result.requests
    n = len(reqs)
    top_value = max([r.full_tokens for r in reqs] + [r.memci_tokens for r in reqs]
                    + [budget or 0, 1])
    y_ticks = nice_ticks(0, top_value, 5, cover=True)
    lanes = [*_KINDS, *sorted({e.kind for e in events} - set(_KINDS))]
    lane_h = 14
    plot_bottom = 214
    f = _Frame(1160, plot_bottom + 12 + lane_h * len(lanes) + 40, 80, 24, 14, plot_bottom, n,
               y_ticks[-1])
    body = _axes(f, y_ticks, "tokens per request", _short, f.height - 22)
    by_request: dict[int, list[_Event]] = {}
    for e in events:
        by_request.setdefault(e.request, []).append(e)
    if 0 < len(by_request) <= 60:  # faint guides where the context changed
        for req in by_request:
            x = _f(f.x(req))
            body.append(f'<line class="event-guide" x1="{x}" x2="{x}" y1="{f.top}" '
                        f'y2="{f.bottom}"/>')
    if budget:
        y = _f(f.y(budget))
        body.append(f'<line class="budget" x1="{f.left}" x2="{f.width - f.right}" y1="{y}" '
                    f'y2="{y}" stroke="{COLORS["budget"]}"/>')
        label_y = f.y(budget) - 6 if f.y(budget) - 6 > f.top + 10 else f.y(budget) + 15
        body.append(f'<text class="budget-label" x="{f.width - f.right - 4}" '
                    f'y="{_f(label_y)}" text-anchor="end">budget {budget:,}</text>')
    for key, values in (("full", [r.full_tokens for r in reqs]),
                        ("memci", [r.memci_tokens for r in reqs])):
        body.append(f'<polyline class="series line-{key}" fill="none" stroke="{COLORS[key]}" '
                    f'points="{_points(f, values)}"/>')
    if not result.saved_tokens and n:
        body.append(f'<text class="empty-note" x="{f.left + 12}" y="{f.top + 14}">memci sent '
                    "the full history every time: it fit in the budget</text>")
    if n <= 30:
        for r in reqs:
            body.append(f'<circle class="dot" cx="{_f(f.x(r.number))}" '
                        f'cy="{_f(f.y(r.memci_tokens))}" r="3" fill="{COLORS["memci"]}"/>')
    # The events strip: one lane per kind, one marker per pixel column.
    lane_top = f.bottom + 10
    width = max(2.0, min(10.0, f.slot * 0.6))
    for i, kind in enumerate(lanes):
        lane_y = lane_top + i * lane_h
        body.append(f'<text class="lane-label" x="{f.left - 8}" y="{_f(lane_y + lane_h / 2)}" '
                    f'text-anchor="end" dominant-baseline="middle">{html.escape(kind)}</text>')
        body.append(f'<line class="lane" x1="{f.left}" x2="{f.width - f.right}" '
                    f'y1="{_f(lane_y + lane_h / 2)}" y2="{_f(lane_y + lane_h / 2)}"/>')
        columns: dict[int, list[_Event]] = {}
        for e in events:
            if e.kind == kind:
                columns.setdefault(round(f.x(e.request)), []).append(e)
        color = COLORS.get(kind, COLORS["other"])
        for column, group in sorted(columns.items()):
            lines = [f"request {e.request} (message {e.seq}): {e.text}"
                     + (f" ({e.reason})" if e.reason else "") for e in group[:12]]
            if len(group) > 12:
                lines.append(f"… {len(group) - 12} more")
            body.append(
                f'<rect class="marker marker-{html.escape(kind)}" x="{_f(column - width / 2)}" '
                f'y="{_f(lane_y + 2)}" width="{_f(width)}" height="{lane_h - 4}" rx="1.5" '
                f'fill="{color}"><title>{html.escape(chr(10).join(lines))}</title></rect>')
    body.append(_hover(f, "tokens"))
    return _svg(f, "tokens", body, "tokens per request, memci against the full history")


def _side(frame: _Frame, values: Sequence[float], sign: int) -> str:
    """Polyline points of the part of ``values`` on one side of zero (the rest at zero).

    Where the line crosses zero a point is added at the crossing, so the areas of the two
    sides meet there; past ~2 points per pixel the crossings are below a pixel and the
    thinned line is clipped instead.
    """
    clipped = [max(0.0, v * sign) * sign for v in values]
    if len(values) > 2 * (frame.width - frame.left - frame.right):
        return _points(frame, clipped)
    pairs: list[tuple[float, float]] = []
    for i, v in enumerate(values):
        if i and (values[i - 1] < 0 < v or v < 0 < values[i - 1]):
            t = values[i - 1] / (values[i - 1] - v)  # where the segment meets zero
            pairs.append((frame.x(i + t), frame.y(0)))
        pairs.append((frame.x(i + 1), frame.y(clipped[i])))
    return " ".join(f"{_f(x)},{_f(y)}" for x, y in pairs)


def _saved_chart(result: ReplayResult) -> str:
    """The cumulative tokens saved against sending the full history every time.

    Below zero (memci sent more than the full history: its own tools and sections
    outweigh a short conversation) the area is drawn in red, under the zero line.
    """
    reqs = result.requests
    running, cumulative = 0, []
    for r in reqs:
        running += r.full_tokens - r.memci_tokens
        cumulative.append(running)
    top, bottom = max([*cumulative, 0]), min([*cumulative, 0])
    y_ticks = nice_ticks(bottom, top, 4, cover=True) if top > bottom else [0.0, 1.0]
    if y_ticks[0] > bottom:  # cover the lowest value too, one step down
        y_ticks.insert(0, 2 * y_ticks[0] - y_ticks[1])
    f = _Frame(570, 236, 64, 16, 22, 192, len(reqs), y_ticks[-1], y_ticks[0])
    body = _axes(f, y_ticks, "tokens saved", _short, f.height - 22)
    zero = _f(f.y(0))
    first, last = _f(f.x(1)), _f(f.x(len(reqs)))
    for key, sign in (("saved", 1), ("lost", -1)):
        if any(v * sign > 0 for v in cumulative):
            body.append(f'<polygon class="area-{key}" fill="{COLORS[key]}" '
                        f'points="{first},{zero} {_side(f, cumulative, sign)} {last},{zero}"/>')
    if bottom < 0:
        body.append(f'<line class="zero-line" x1="{f.left}" x2="{f.width - f.right}" '
                    f'y1="{zero}" y2="{zero}"/>')
    body.append(f'<polyline class="series line-saved" fill="none" '
                f'stroke="{COLORS["saved_line"]}" points="{_points(f, cumulative)}"/>')
    end_y = f.y(running) - 8 if running >= 0 else f.y(running) + 16
    if running > 0:
        body.append(f'<text class="end-label" x="{_f(f.x(len(reqs)) - 4)}" '
                    f'y="{_f(end_y)}" text-anchor="end">{running:,} saved</text>')
    elif running < 0:
        body.append(f'<text class="end-label" x="{_f(f.x(len(reqs)) - 4)}" '
                    f'y="{_f(min(end_y, f.bottom - 4))}" text-anchor="end">{-running:,} more '
                    "than the full history</text>")
    else:
        body.append(f'<text class="empty-note" x="{_f((f.left + f.width - f.right) / 2)}" '
                    f'y="{_f((f.top + f.bottom) / 2)}" text-anchor="middle">nothing saved: '
                    f'the whole history fit in every request</text>')
    body.append(_hover(f, "saved"))
    return _svg(f, "saved", body, "cumulative tokens saved")


def _prefix_chart(shares: Sequence[float]) -> str:
    """The share of every request that repeats the previous request (0–100%)."""
    n = len(shares)
    f = _Frame(570, 236, 64, 16, 22, 192, n, 100.0)
    body = _axes(f, [0, 25, 50, 75, 100], "reusable prefix", lambda t: f"{t:g}%",
                 f.height - 22)
    if f.slot >= 2.5:
        width = f.slot * (0.7 if f.slot > 4 else 0.9)
        for i, s in enumerate(shares, start=1):
            y = f.y(100 * s)
            body.append(f'<rect class="bar-prefix" x="{_f(f.x(i) - width / 2)}" y="{_f(y)}" '
                        f'width="{_f(width)}" height="{_f(f.bottom - y)}" '
                        f'fill="{COLORS["prefix"]}"/>')
    else:
        line = _points(f, [100 * s for s in shares])
        body.append(f'<polygon class="area-prefix" fill="{COLORS["prefix"]}" points="'
                    f'{_f(f.x(1))},{f.bottom} {line} {_f(f.x(n))},{f.bottom}"/>')
    window = max(1, n // 40)
    if window > 1:  # a moving mean reads better than thousands of bars
        sums = [0.0]
        for s in shares:
            sums.append(sums[-1] + s)
        means = [100 * (sums[i + 1] - sums[max(0, i + 1 - window)]) / min(i + 1, window)
                 for i in range(n)]
        body.append(f'<polyline class="series line-prefix-mean" fill="none" '
                    f'stroke="{COLORS["prefix_mean"]}" points="{_points(f, means)}"/>')
    mean = 100 * sum(shares) / n
    mean_y = _f(f.y(mean))
    body.append(f'<line class="mean-line" x1="{f.left}" x2="{f.width - f.right}" '
                f'y1="{mean_y}" y2="{mean_y}"/>')
    body.append(f'<text class="end-label" x="{f.width - f.right - 4}" y="{_f(f.y(mean) - 6)}" '
                f'text-anchor="end">mean {mean:.0f}%</text>')
    body.append(_hover(f, "prefix"))
    return _svg(f, "prefix", body, "reusable prefix share per request")


def _cost_chart(result: ReplayResult) -> str:
    """Each request's cost with prompt caching: memci against the full history."""
    reqs = result.requests
    memci = [result.memci_cost(r) for r in reqs]
    full = [result.full_cost(r) for r in reqs]
    y_ticks = nice_ticks(0, max([*memci, *full, 1.0]), 4, cover=True)
    f = _Frame(1160, 236, 80, 24, 14, 192, len(reqs), y_ticks[-1])
    body = _axes(f, y_ticks, "token equivalents", _short, f.height - 22)
    for key, values in (("full", full), ("memci", memci)):
        body.append(f'<polyline class="series line-{key}-cached" fill="none" '
                    f'stroke="{COLORS[key]}" points="{_points(f, values)}"/>')
    body.append(_hover(f, "cost"))
    return _svg(f, "cost", body, "cost per request with prompt caching, memci against the "
                "full history")


def _cost_table(result: ReplayResult) -> str:
    """Totals with and without prompt caching, as text (the cost chart's numbers)."""
    rows: list[tuple[str, str, float, float, bool]] = [
        ("tokens", "input tokens, no cache", result.memci_tokens, result.full_tokens, True),
        ("cached", "of which cached", result.memci_cached_tokens, result.full_cached_tokens,
         False),
        ("cost-cached", "cost with cache (token equivalents)", result.memci_cached_cost,
         result.full_cached_cost, True),
    ]
    if result.price is not None:
        rows += [("usd", "USD, no cache", result.dollars(result.memci_tokens) or 0.0,
                  result.dollars(result.full_tokens) or 0.0, True),
                 ("usd-cached", "USD with cache", result.dollars(result.memci_cached_cost)
                  or 0.0, result.dollars(result.full_cached_cost) or 0.0, True)]
    body = []
    for ident, label, memci, full, saved in rows:
        def fmt(value: float, usd: bool = ident.startswith("usd")) -> str:
            return f"${value:,.4f}" if usd else f"{value:,.0f}"

        body.append(f'<tr id="row-{ident}"><td>{html.escape(label)}</td>'
                    f'<td class="num" id="{ident}-memci">{fmt(memci)}</td>'
                    f'<td class="num" id="{ident}-full">{fmt(full)}</td>'
                    f'<td class="num" id="{ident}-ratio">{_pct(memci, full)}</td>'
                    f'<td class="num">{fmt(full - memci) if saved else ""}</td></tr>')
    return ('<table class="totals"><thead><tr><th></th><th class="num">memci</th>'
            '<th class="num">full history</th><th class="num">memci / full</th>'
            f'<th class="num">saved</th></tr></thead><tbody>{"".join(body)}</tbody></table>')


# -- the page ----------------------------------------------------------------------------


def render_report(
    result: ReplayResult, *, source: str, budget: int | None = None,
    strategy: str | None = None, model: str | None = None,
    events: Sequence[Mapping[str, Any]] = (),
) -> str:
    """The report as one HTML document (no external resources).

    ``events`` are the session's recorded events (``session.events()``); their reasons
    are shown next to the events of the replay. The page is its sections, top to bottom:
    the summary, the charts, the tables, the data the page's script reads.
    """
    from memci import __version__

    found = _events(result, events)
    shares = [min(1.0, max(0.0, r.prefix_tokens / r.memci_tokens)) if r.memci_tokens else 0.0
              for r in result.requests]
    parts = [
        _HEAD.replace("$TITLE", html.escape(f"memci replay · {source}")),
        *_summary(result, found, shares, source, _subtitle(result, budget, strategy, model)),
        *_charts(result, found, shares, budget),
        _segments_table(result), _evidence_table(result), _events_table(found),
        _requests_table(result, shares),
        *_skipped(result),
        f'<footer>memci {html.escape(__version__)} · one self-contained file: it loads '
        "nothing and works offline</footer></main>",
        _page_data(result, shares),
        f"<script>{_SCRIPT}</script></body></html>",
    ]
    return "\n".join(parts)


def _discount(result: ReplayResult) -> str:
    return f"{100 * result.cached_discount:g}%"


def _saved_pct(result: ReplayResult) -> float:
    return 100 * result.saved_tokens / result.full_tokens if result.full_tokens else 0.0


def _counts(events: Sequence[_Event]) -> dict[str, int]:
    return {k: sum(1 for e in events if e.kind == k) for k in _KINDS}


def _subtitle(result: ReplayResult, budget: int | None, strategy: str | None,
              model: str | None) -> str:
    """The line under the title: what was replayed how, and when the page was made."""
    settings = [f"format {result.format}" if result.format else "",
                f"budget {budget:,} tokens" if budget else "",
                f"strategy {strategy}" if strategy else "", f"model {model}" if model else "",
                f"cached input {_discount(result)} off",
                time.strftime("generated %Y-%m-%d %H:%M UTC", time.gmtime())]
    return " · ".join(s for s in settings if s)


def _cards(result: ReplayResult, shares: Sequence[float]) -> list[tuple[str, str, str, str]]:
    """The summary's figures: ``(label, value, note, id)``."""
    full, sent, saved = result.full_tokens, result.memci_tokens, result.saved_tokens
    cached_full, cached_memci = result.full_cached_cost, result.memci_cached_cost
    cached_pct = 100 * (cached_full - cached_memci) / cached_full if cached_full else 0.0
    mean_share = sum(shares) / len(shares) if shares else 0.0
    return [
        ("messages", f"{result.messages:,}", "replayed", "messages"),
        ("requests", f"{len(result.requests):,}", "context builds", "requests"),
        ("memci sent", f"{sent:,}", f"tokens · {_pct(sent, full)} of full", "memci-tokens"),
        ("full history", f"{full:,}", "tokens: its own messages and tools", "full-tokens"),
        ("saved", f"{saved:,}", f"tokens · {_saved_pct(result):.1f}%", "saved-tokens"),
        ("saved with cache", f"{cached_full - cached_memci:,.0f}",
         f"token equivalents · {cached_pct:.1f}%", "saved-cached"),
        ("reusable prefix", f"{100 * mean_share:.0f}%", "mean per request", "mean-prefix"),
    ]


def _summary(result: ReplayResult, found: Sequence[_Event], shares: Sequence[float],
             source: str, subtitle: str) -> list[str]:
    """The header: the title, the file, the subtitle, the cards and the event counts."""
    e = html.escape
    parts = ['<main><header><h1>memci replay report</h1>',
             f'<p class="file"><code id="source">{e(source)}</code></p>',
             f'<p class="sub">{e(subtitle)}</p>',
             f'<p class="sub{" warn" * bool(result.tokenizer_note)}" id="provenance">'
             f"{e(result.provenance)}</p>"]
    if (own := result.own_summary()) is not None:
        parts.append(f'<p class="sub warn" id="own-note">{e(own)}</p>')
    parts.append('<section class="cards">')
    for label, value, note, ident in _cards(result, shares):
        parts.append(f'<div class="stat"><div class="label">{e(label)}</div>'
                     f'<div class="value{" negative" * value.startswith("-")}" '
                     f'id="{ident}">{e(value)}</div>'
                     f'<div class="note">{e(note)}</div></div>')
    counts = _counts(found)
    numbers = " · ".join(f'<span style="color:{COLORS[k]}">{counts[k]:,}</span>' for k in _KINDS)
    parts.append(f'<div class="stat"><div class="label">events</div><div class="value" '
                 f'id="event-counts">{numbers}</div><div class="note">archive · recall · '
                 "evict</div></div></section></header>")
    return parts


def _charts(result: ReplayResult, found: Sequence[_Event], shares: Sequence[float],
            budget: int | None) -> list[str]:
    """The chart cards: tokens, saved and prefix side by side, cost (a note without requests)."""
    reqs = result.requests
    if not reqs:
        return ['<section class="card"><p class="empty-note">No requests: the file has '
                "no assistant message after the first message.</p></section>"]
    counts = _counts(found)
    running, behind = 0, False
    for r in reqs:
        running += r.full_tokens - r.memci_tokens
        behind = behind or running < 0
    cached_full, cached_memci = result.full_cached_cost, result.memci_cached_cost
    return [
        _card("tokens", "Tokens per request", [
            ("memci", "line", f"memci ({result.memci_tokens:,} in all)"),
            ("full", "thick", f"full history ({result.full_tokens:,})"),
            *([("budget", "dash", "budget")] if budget else []),
            *[(k, "box", f"{k} ({counts[k]})") for k in _KINDS],
        ], _tokens_chart(result, found, budget)),
        '<div class="row">',
        _card("saved", "Cumulative tokens saved", [
            ("saved", "box", f"saved vs the full history ({_saved_pct(result):.1f}%)"),
            *([("lost", "box", "memci sent more")] if behind else [])],
            _saved_chart(result)),
        _card("prefix", "Reusable prefix per request", [
            ("prefix", "box", "share of the request"),
            *([("prefix_mean", "line", "moving mean")] if len(reqs) >= 80 else [])],
            _prefix_chart(shares)),
        "</div>",
        _card("cost", f"Cost per request with prompt caching (cached input "
              f"{_discount(result)} off)", [
            ("memci", "line", f"memci ({cached_memci:,.0f} in all)"),
            ("full", "line", f"full history ({cached_full:,.0f})")],
            _cost_chart(result) + _cost_table(result)),
    ]


def _skipped(result: ReplayResult) -> list[str]:
    """What the replay left out of the file, when anything."""
    if not result.skipped:
        return []
    return ['<section class="card" id="skipped"><h2>Skipped</h2><ul>'
            + "".join(f"<li>{html.escape(s)}</li>" for s in result.skipped)
            + "</ul></section>"]


def _page_data(result: ReplayResult, shares: Sequence[float]) -> str:
    """The figures the page's script draws its tooltips from, as inline JSON."""
    reqs = result.requests
    data = {"memci": [r.memci_tokens for r in reqs], "full": [r.full_tokens for r in reqs],
            "memci_cost": [round(result.memci_cost(r), 1) for r in reqs],
            "full_cost": [round(result.full_cost(r), 1) for r in reqs],
            "prefix": [round(100 * s, 1) for s in shares], "seq": [r.seq for r in reqs],
            "events": [list(r.events) for r in reqs]}
    return ('<script id="replay-data" type="application/json">'
            + json.dumps(data, separators=(",", ":")).replace("</", "<\\/") + "</script>")


def write_report(path: Path, result: ReplayResult, **options: Any) -> Path:
    """Write :func:`render_report` to ``path`` (atomically) and return the path."""
    text = render_report(result, **options)
    tmp = path.with_name(path.name + ".partial")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)
    return path


def _pct(part: float, whole: float) -> str:
    return f"{100 * part / whole:.1f}%" if whole else "-"


def _card(ident: str, title: str, legend: Sequence[tuple[str, str, str]], svg: str) -> str:
    keys = "".join(f'<span class="key"><i class="swatch {shape}" '
                   f'style="--c:{COLORS.get(color, COLORS["other"])}"></i>'
                   f"{html.escape(label)}</span>" for color, shape, label in legend)
    return (f'<section class="card" id="{ident}"><div class="card-head"><h2>{html.escape(title)}'
            f'</h2><div class="legend">{keys}</div></div>{svg}</section>')


_SEGMENT_NOTES = {
    "tools": "tool schemas: memci's and the agent's",
    "system": "the system prompt and memci's tool contract",
    "state": "working state: fastmemo, context pool, pins, plan, notebook",
    "contents": "the contents page of archived pages (or a rolling summary)",
    "recent": "recent pages in full",
    "retrieval": "memory gathered for the current page",
}


def _segments_table(result: ReplayResult) -> str:
    """Where memci's tokens go: mean tokens per request of each segment, and its share."""
    reqs = [r for r in result.requests if r.segments]
    if not reqs:
        return ""
    total = sum(sum(r.segments.values()) for r in reqs) or 1
    rows = []
    for name, note in _SEGMENT_NOTES.items():
        tokens = sum(r.segments.get(name, 0) for r in reqs)
        if tokens:
            rows.append(f"<tr><td>{name}</td><td>{html.escape(note)}</td>"
                        f"<td>{tokens / len(reqs):,.0f}</td><td>{_pct(tokens, total)}</td></tr>")
    return ('<section class="card" id="segments"><h2>Where the tokens go</h2><table>'
            "<thead><tr><th>segment</th><th>what it holds</th><th>mean tokens per request"
            "</th><th>share</th></tr></thead><tbody>" + "".join(rows) + "</tbody></table>"
            "</section>")


def _evidence_table(result: ReplayResult) -> str:
    """Per question: the evidence turns the request that answers it holds, with totals."""
    totals = result.evidence_totals()
    if totals is None:
        return ""
    e = html.escape
    rows = []
    for r in result.answered:
        held = r.evidence
        assert held is not None
        missing = ", ".join(o for o in held.evidence if o not in held.verbatim)
        rows.append(f'<tr><td class="num">{r.number:,}</td><td>{e(held.question)}</td>'
                    f'<td class="num">{len(held.evidence)}</td>'
                    f'<td class="num">{len(held.verbatim)}</td>'
                    f'<td class="num">{len(held.close)}</td>'
                    f'<td class="num">{100 * held.share:.0f}%</td><td>{e(missing)}</td></tr>')
    summary = (f"{totals['questions']:,} questions, {totals['turns']:,} evidence turns: "
               f"{totals['verbatim']:,} ({_pct(totals['verbatim'], totals['turns'])}) "
               f"verbatim in the request that answers, {totals['close']:,} at least close; "
               f"{totals['whole']:,} questions with all of theirs verbatim")
    return ('<section class="card" id="evidence"><h2>Evidence in the request that answers '
            f'each question</h2><p class="note" id="evidence-summary">{e(summary)} '
            "(verbatim: the turn whole inside one message; close: 60% of its words "
            'together in one message)</p><div class="scroll"><table><thead><tr>'
            '<th class="num">request</th><th>question</th><th class="num">evidence</th>'
            '<th class="num">verbatim</th><th class="num">close</th>'
            '<th class="num">share</th><th>missing</th></tr></thead>'
            f'<tbody>{"".join(rows)}</tbody></table></div></section>')


def _events_table(events: Sequence[_Event]) -> str:
    e = html.escape
    if not events:
        return ('<section class="card" id="events-table"><h2>Events</h2><p class="empty-note">'
                "No archive, recall or eviction during this replay.</p></section>")
    rows = "".join(
        f'<tr><td class="num">{x.request:,}</td><td class="num">{x.seq:,}</td>'
        f'<td class="ev"><i class="dot-key" style="--c:{COLORS.get(x.kind, COLORS["other"])}"></i>'
        f'{e(x.kind)}</td><td class="num">{"" if x.page is None else x.page}</td>'
        f"<td>{e(x.reason)}</td></tr>" for x in events[:_EVENT_ROWS])
    more = (f'<p class="note">… and {len(events) - _EVENT_ROWS:,} more events.</p>'
            if len(events) > _EVENT_ROWS else "")
    return (f'<section class="card" id="events-table"><h2>Events ({len(events):,})</h2>'
            '<div class="scroll"><table><thead><tr><th class="num">request</th>'
            '<th class="num">at message</th><th class="ev">event</th><th class="num">page</th>'
            f"<th>reason</th></tr></thead><tbody>{rows}</tbody>"
            f"</table></div>{more}</section>")


def _requests_table(result: ReplayResult, shares: Sequence[float]) -> str:
    # One row per request, thousands of them: the numeric cells take their alignment from
    # the table's class (table.nums), not one class attribute each.
    rows = "".join(
        f"<tr><td>{r.number:,}</td><td>{r.seq:,}</td><td>{r.memci_tokens:,}</td>"
        f"<td>{r.full_tokens:,}</td><td>{r.full_tokens - r.memci_tokens:,}</td>"
        f"<td>{100 * s:.0f}%</td>"
        f"<td{_own_title(r)}>{r.own_tokens:,}{' !' * bool(r.own_note)}</td>"
        f"<td>{r.build_ms:.2f}</td><td>{html.escape(', '.join(r.events))}</td></tr>"
        for r, s in zip(result.requests, shares, strict=True))
    return ('<details class="card"><summary>Every request '
            f"({len(result.requests):,})</summary><div class=\"scroll\"><table class=\"nums\">"
            "<thead><tr>"
            '<th class="num">request</th><th class="num">at message</th>'
            '<th class="num">memci tokens</th><th class="num">full history</th>'
            '<th class="num">saved</th><th class="num">prefix reused</th>'
            '<th class="num">memci\'s own</th><th class="num">build ms</th><th>events</th>'
            '</tr></thead>'
            f"<tbody>{rows}</tbody></table></div></details>")


def _own_title(request: Request) -> str:
    """A marked cell's tooltip: the request's note."""
    note = request.own_note
    return f' title="{html.escape(note)}"' if note else ""


_HEAD = """<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>$TITLE</title>
<style>
:root { color-scheme: light; --ink: #111827; --muted: #6b7280; --line: #e5e7eb;
  --card: #ffffff; --bg: #f6f7f9; }
* { box-sizing: border-box; }
body { margin: 0; background: var(--bg); color: var(--ink);
  font: 14px/1.4 system-ui, -apple-system, "Segoe UI", Roboto, "Liberation Sans",
  "DejaVu Sans", Arial, sans-serif; }
main { max-width: 1200px; margin: 0 auto; padding: 12px 20px 32px; }
header h1 { font-size: 20px; margin: 0; display: inline-block; }
header .file { display: inline-block; margin: 0 0 0 12px; }
code { font: 13px ui-monospace, "DejaVu Sans Mono", monospace; background: #eef0f3;
  padding: 1px 6px; border-radius: 4px; }
header .sub { color: var(--muted); margin: 2px 0 10px; font-size: 12px; }
header .sub.warn { color: #b45309; }
.cards { display: grid; grid-template-columns: repeat(8, 1fr); gap: 10px; }
.stat { background: var(--card); border: 1px solid var(--line); border-radius: 8px;
  padding: 6px 12px; }
.stat .label { color: var(--muted); font-size: 11px; text-transform: uppercase;
  letter-spacing: .04em; }
.stat .value { font-size: 20px; font-weight: 650; font-variant-numeric: tabular-nums;
  white-space: nowrap; }
#event-counts { font-size: 18px; }
.stat .note { color: var(--muted); font-size: 11px; }
#saved-tokens, #saved-cached { color: #15803d; }
.stat .value.negative { color: #b91c1c; }
table.totals { width: auto; min-width: 60%; margin: 4px 0 10px; }
.card { background: var(--card); border: 1px solid var(--line); border-radius: 8px;
  padding: 8px 12px 2px; margin-top: 10px; }
.card h2 { font-size: 15px; margin: 0; }
.card-head { display: flex; align-items: baseline; justify-content: space-between;
  flex-wrap: wrap; gap: 4px 16px; }
.legend { display: flex; flex-wrap: wrap; gap: 4px 14px; color: #374151; font-size: 12px; }
.key { display: inline-flex; align-items: center; gap: 6px; }
.swatch { display: inline-block; width: 18px; background: var(--c); }
.swatch.line { height: 3px; border-radius: 2px; }
.swatch.thick { height: 5px; border-radius: 2px; }
.swatch.dash { height: 0; border-top: 2px dashed var(--c); background: none; }
.swatch.box { height: 10px; width: 10px; border-radius: 2px; }
.row { display: grid; grid-template-columns: 1fr 1fr; gap: 12px; }
.row .card { margin-top: 10px; }
svg.chart { display: block; width: 100%; height: auto; }
svg text { font-family: inherit; fill: #4b5563; font-size: 12px; }
svg .axis-label { fill: #374151; font-size: 12px; }
svg .grid { stroke: #eceef1; stroke-width: 1; }
svg .axis { stroke: #9ca3af; stroke-width: 1; }
svg .tick-mark { stroke: #9ca3af; }
svg .series { stroke-width: 2.5; stroke-linejoin: round; stroke-linecap: round; }
svg .line-full { stroke-width: 4; }
svg .line-prefix-mean { stroke-width: 2; }
svg .budget { stroke-dasharray: 6 4; stroke-width: 1.5; }
svg .budget-label, svg .end-label { font-size: 12px; fill: #374151; font-weight: 600;
  paint-order: stroke; stroke: #fff; stroke-width: 4px; stroke-linejoin: round; }
svg .zero-line { stroke: #6b7280; stroke-width: 1; }
svg .mean-line { stroke: #4c1d95; stroke-dasharray: 4 3; stroke-width: 1.2; }
svg .event-guide { stroke: #67e8f9; stroke-width: 1; stroke-dasharray: 2 3; }
svg .lane { stroke: #eceef1; }
svg .lane-label { font-size: 11px; }
svg .empty-note { fill: var(--muted); font-size: 13px; }
svg .hover-line { stroke: #111827; stroke-width: 1; stroke-dasharray: 3 3; }
svg .marker:hover { stroke: #111827; stroke-width: 1; }
.empty-note, .note { color: var(--muted); }
.scroll { max-height: 360px; overflow: auto; margin: 6px 0 8px; }
table { border-collapse: collapse; width: 100%; font-size: 12.5px; }
th { position: sticky; top: 0; background: #f9fafb; text-align: left; font-weight: 600;
  color: #374151; border-bottom: 1px solid var(--line); padding: 4px 8px; }
td { border-bottom: 1px solid #f1f2f4; padding: 3px 8px; }
td.ev, th.ev { width: 1%; white-space: nowrap; }
td.num, th.num, table.nums td:not(:last-child) { text-align: right;
  font-variant-numeric: tabular-nums; width: 1%; white-space: nowrap; }
.dot-key { display: inline-block; width: 8px; height: 8px; border-radius: 50%;
  background: var(--c); margin-right: 6px; }
details summary { cursor: pointer; font-weight: 600; font-size: 15px; padding: 2px 0 6px; }
#skipped ul { color: var(--muted); margin: 6px 0; }
footer { color: var(--muted); font-size: 12px; margin-top: 16px; text-align: center; }
#tip { position: fixed; pointer-events: none; background: #111827; color: #f9fafb;
  font: 12px/1.45 ui-monospace, "DejaVu Sans Mono", monospace; padding: 6px 9px;
  border-radius: 6px; white-space: pre; display: none;
  box-shadow: 0 2px 8px rgba(0,0,0,.2); font-variant-numeric: tabular-nums; z-index: 5; }
@media (max-width: 900px) { .cards { grid-template-columns: repeat(3, 1fr); }
  .row { grid-template-columns: 1fr; } }
</style></head><body><div id="tip"></div>"""

# Hover: one crosshair across the three charts (they share the request axis) and a tip.
_SCRIPT = """
(function () {
  var data = JSON.parse(document.getElementById('replay-data').textContent);
  var tip = document.getElementById('tip');
  var charts = Array.prototype.slice.call(document.querySelectorAll('svg.chart'));
  var fmt = function (v) { return v.toLocaleString('en-US'); };
  var saved = [], run = 0;
  for (var i = 0; i < data.memci.length; i++) {
    run += data.full[i] - data.memci[i]; saved.push(run);
  }
  function geometry(svg) {
    return { left: +svg.dataset.left, right: +svg.dataset.right, n: +svg.dataset.n };
  }
  function show(request, ev) {
    charts.forEach(function (svg) {
      var g = geometry(svg), line = svg.querySelector('.hover-line');
      var x = g.left + (request - 0.5) * (g.right - g.left) / g.n;
      line.setAttribute('x1', x); line.setAttribute('x2', x);
      line.setAttribute('visibility', 'visible');
    });
    var i = request - 1;
    var lines = ['request ' + fmt(request) + ' (message ' + fmt(data.seq[i]) + ')',
      'memci         ' + fmt(data.memci[i]) + ' tokens',
      'full history  ' + fmt(data.full[i]) + ' tokens',
      'saved so far  ' + fmt(saved[i]) + ' tokens',
      'prefix reused ' + data.prefix[i] + '%',
      'with cache    memci ' + fmt(data.memci_cost[i]) + ' · full ' + fmt(data.full_cost[i])];
    if (data.events[i].length) { lines.push(data.events[i].join(', ')); }
    tip.textContent = lines.join('\\n');
    tip.style.display = 'block';
    var x = ev.clientX + 14, y = ev.clientY + 14;
    if (x + tip.offsetWidth > window.innerWidth - 8) { x = ev.clientX - tip.offsetWidth - 14; }
    if (y + tip.offsetHeight > window.innerHeight - 8) { y = ev.clientY - tip.offsetHeight - 14; }
    tip.style.left = x + 'px'; tip.style.top = y + 'px';
  }
  function hide() {
    tip.style.display = 'none';
    charts.forEach(function (svg) {
      svg.querySelector('.hover-line').setAttribute('visibility', 'hidden');
    });
  }
  charts.forEach(function (svg) {
    var area = svg.querySelector('.hover-area');
    area.addEventListener('mousemove', function (ev) {
      var p = svg.createSVGPoint(); p.x = ev.clientX; p.y = ev.clientY;
      var q = p.matrixTransform(svg.getScreenCTM().inverse()), g = geometry(svg);
      var r = Math.floor((q.x - g.left) / (g.right - g.left) * g.n) + 1;
      show(Math.max(1, Math.min(g.n, r)), ev);
    });
    area.addEventListener('mouseleave', hide);
  });
})();
"""

"""The replay report: one offline HTML file, checked as Chromium renders it.

The Chromium tests open the report in headless Chromium, take a screenshot and dump the
DOM in one run. A probe script (added to a copy of the report) records where each chart
is on the screen and what the hover tip says, so the screenshot's colours are checked
inside the right chart, and the DOM's numbers against the replay's JSON.
"""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from memci.cli import main
from memci.replay import ReplayResult, Request
from memci.report import COLORS, nice_ticks, render_report, write_report

from .conftest import EXAMPLE_TRACE, SHARED_DATA

APT = "apt-get install -y chromium chromium-driver"
WIDTH, HEIGHT = 1280, 900

_PROBE = """<script>(function () {
  var out = {dpr: window.devicePixelRatio, width: window.innerWidth, charts: {}};
  ['tokens', 'saved', 'prefix', 'cost'].forEach(function (id) {
    var el = document.getElementById('chart-' + id);
    if (el) { var r = el.getBoundingClientRect();
      out.charts[id] = [r.left, r.top, r.right, r.bottom]; }
  });
  var area = document.querySelector('#chart-tokens .hover-area');
  if (area) {
    var r = area.getBoundingClientRect(), tip = document.getElementById('tip');
    var n = +document.getElementById('chart-tokens').dataset.n, k = Math.floor(n / 2) + 1;
    area.dispatchEvent(new MouseEvent('mousemove', {clientX: r.left + (k - 0.5) * r.width / n,
      clientY: r.top + r.height / 2, bubbles: true}));
    out.tip = tip.textContent;
    out.tipShown = getComputedStyle(tip).display;
    out.hoverLines = Array.prototype.map.call(document.querySelectorAll('.hover-line'),
      function (l) { return l.getAttribute('visibility'); });
    area.dispatchEvent(new MouseEvent('mouseleave'));
    out.tipAfter = getComputedStyle(tip).display;
  }
  var pre = document.createElement('pre');
  pre.id = 'probe'; pre.style.display = 'none'; pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();</script>"""


# -- helpers -----------------------------------------------------------------------------


def _chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    pytest.skip(f"headless Chromium is not installed (Debian: {APT})")


class _Dom(HTMLParser):
    """Elements' attributes, and the text of elements with an id."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.elements: list[tuple[str, dict[str, str]]] = []
        self.text: dict[str, str] = {}
        self._open: list[str | None] = []
        self.feed(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = {k: v or "" for k, v in attrs}
        self.elements.append((tag, attributes))
        if tag not in ("circle", "line", "rect", "polyline", "polygon", "meta", "br"):
            self._open.append(attributes.get("id"))
            if attributes.get("id"):
                self.text[attributes["id"]] = ""

    def handle_endtag(self, tag: str) -> None:
        if tag not in ("circle", "line", "rect", "polyline", "polygon", "meta", "br") and (
                self._open):
            self._open.pop()

    def handle_data(self, data: str) -> None:
        for ident in self._open:
            if ident:
                self.text[ident] += data

    def having(self, tag: str, cls: str) -> list[dict[str, str]]:
        return [a for t, a in self.elements if t == tag and cls in a.get("class", "").split()]


def _open_in_chromium(report: Path, out: Path) -> tuple[Path, _Dom, dict[str, Any]]:
    """Screenshot and DOM of ``report`` in headless Chromium, with the probe's findings."""
    chromium = _chromium()
    probed = out / "probed.html"
    probed.write_text(report.read_text(encoding="utf-8").replace("</body>", _PROBE + "</body>"),
                      encoding="utf-8")
    png = out / f"{report.stem}.png"
    run = subprocess.run(
        [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
         "--no-first-run", "--disable-background-networking", "--disable-component-update",
         "--disable-sync", "--hide-scrollbars", f"--user-data-dir={out / 'profile'}",
         "--enable-logging=stderr", "--v=0", f"--screenshot={png}", "--dump-dom",
         f"--window-size={WIDTH},{HEIGHT}", probed.as_uri()],
        capture_output=True, text=True, timeout=120, check=False)
    assert run.returncode == 0 and png.exists(), run.stderr[-2000:]
    assert "Uncaught" not in run.stderr, run.stderr[-2000:]  # no script error
    if os.environ.get("MEMCI_SCREENSHOTS"):  # keep them, to look at
        shutil.copy(png, Path(os.environ["MEMCI_SCREENSHOTS"]) / png.name)
    dom = _Dom(run.stdout)
    probe = json.loads(dom.text["probe"])
    assert probe["dpr"] == 1 and probe["width"] == WIDTH
    return png, dom, probe


class _Shot:
    """A screenshot, and counts of pixels near a colour inside a box."""

    def __init__(self, png: Path) -> None:
        image_module = pytest.importorskip("PIL.Image", reason="pip install Pillow")
        self.image = image_module.open(png).convert("RGB")
        assert self.image.size == (WIDTH, HEIGHT)

    def count(self, color: str, box: list[float] | None = None, tolerance: int = 24) -> int:
        r, g, b = (int(color[i:i + 2], 16) for i in (1, 3, 5))
        region = self.image.crop(tuple(round(v) for v in box)) if box else self.image
        colors = region.getcolors(maxcolors=WIDTH * HEIGHT) or []
        return sum(n for n, (cr, cg, cb) in colors
                   if abs(cr - r) <= tolerance and abs(cg - g) <= tolerance
                   and abs(cb - b) <= tolerance)

    def distinct(self) -> int:
        return len(self.image.getcolors(maxcolors=WIDTH * HEIGHT) or [])


def _replay_report(tmp_path: Path, trace: Path, budget: int) -> tuple[Path, dict[str, Any]]:
    report = tmp_path / f"{trace.name.split('.')[0]}-{budget}.html"
    result = CliRunner().invoke(main, ["replay", str(trace), "--budget", str(budget), "--json",
                                       "--report", str(report)])
    assert result.exit_code == 0, result.output
    assert f"report written to {report}" in result.stderr
    return report, json.loads(result.stdout)


def _check_dom(dom: _Dom, data: dict[str, Any], probe: dict[str, Any]) -> None:
    """The numbers and shapes in the DOM are the replay's."""
    totals, requests = data["totals"], data["requests"]
    assert dom.text["saved-tokens"] == f"{totals['saved_tokens']:,}"
    assert dom.text["memci-tokens"] == f"{totals['memci_tokens']:,}"
    assert dom.text["full-tokens"] == f"{totals['full_tokens']:,}"
    assert dom.text["requests"] == f"{totals['requests']:,}"
    assert len([a for t, a in dom.elements if t == "svg" and "chart" in a.get("class", "")]) == 4
    for key in ("memci", "full"):
        (line,) = dom.having("polyline", f"line-{key}")
        assert len(line["points"].split()) == len(requests)
        ys = [float(p.split(",")[1]) for p in line["points"].split()]
        # Higher values are drawn higher (smaller y), request by request.
        values = [r[f"{key}_tokens"] for r in requests]
        for i in range(1, len(values)):
            if values[i] > values[i - 1]:
                assert ys[i] <= ys[i - 1]
    # Cost with prompt caching, both sides: the table's text is the replay's figures.
    cost = data.get("cost")
    if cost is not None:
        for side in ("memci", "full"):
            shown = float(dom.text[f"cost-cached-{side}"].replace(",", ""))
            assert abs(shown - cost[side]["cost_cached"]) <= 1
            assert dom.text[f"tokens-{side}"] == f"{cost[side]['tokens']:,}"
            assert dom.text[f"cached-{side}"] == f"{cost[side]['cached_tokens']:,}"
        assert len(dom.having("polyline", "line-memci-cached")) == 1
        assert len(dom.having("polyline", "line-full-cached")) == 1
        assert "with cache    memci" in probe["tip"]
    embedded = json.loads(dom.text["replay-data"])
    assert embedded["memci"] == [r["memci_tokens"] for r in requests]
    assert embedded["full"] == [r["full_tokens"] for r in requests]
    events = [e for r in requests for e in r["events"]]
    table = dom.text.get("events-table", "")
    assert f"Events ({len(events)})" in table if events else "No archive" in table
    for kind in ("archive", "recall", "evict"):
        markers = dom.having("rect", f"marker-{kind}")
        assert bool(markers) == any(e.startswith(kind) for e in events)
    # The hover tip shows the request under the pointer, and hides again.
    assert probe["tipShown"] == "block" and probe["tipAfter"] == "none"
    found = re.match(r"request ([\d,]+) \(message ([\d,]+)\)", probe["tip"])
    assert found, probe["tip"]
    shown = int(found.group(1).replace(",", ""))
    # The pointer was put in the middle slot; events round it to a whole pixel.
    assert abs(shown - (len(requests) // 2 + 1)) <= 1
    row = requests[shown - 1]
    assert found.group(2) == f"{row['seq']:,}"
    assert f"memci         {row['memci_tokens']:,} tokens" in probe["tip"]
    assert f"full history  {row['full_tokens']:,} tokens" in probe["tip"]
    assert probe["hoverLines"] == ["visible"] * 4


def _check_not_blank(shot: _Shot) -> None:
    assert shot.distinct() > 200
    background = shot.count("#f6f7f9", tolerance=2) + shot.count("#ffffff", tolerance=2)
    assert background < 0.95 * WIDTH * HEIGHT


# -- in Chromium -------------------------------------------------------------------------


def test_example_trace_report_in_chromium(tmp_path: Path) -> None:
    report, data = _replay_report(tmp_path, EXAMPLE_TRACE, 4000)
    png, dom, probe = _open_in_chromium(report, tmp_path)
    _check_dom(dom, data, probe)
    shot = _Shot(png)
    _check_not_blank(shot)
    charts = probe["charts"]
    assert shot.count(COLORS["memci"], charts["tokens"]) > 400
    assert shot.count(COLORS["prefix"], charts["prefix"]) > 2000
    requests = data["requests"]
    if all(r["memci_tokens"] == r["full_tokens"] for r in requests):
        # memci sent the full history: its line covers the (wider) full-history line and
        # only the full line's edges show; nothing is saved.
        assert shot.count(COLORS["full"], charts["tokens"], tolerance=60) > 100
        assert "nothing saved" in dom.text["chart-saved"]
        assert shot.count(COLORS["saved"], charts["saved"]) == 0
    elif all(r["memci_tokens"] >= r["full_tokens"] for r in requests):
        # memci sent more (its tools and working state cost more than its views saved, as
        # the report's note says): the cumulative saving is all below zero
        assert "own_note" in data["totals"] and data["totals"]["own_note"]
        assert shot.count(COLORS["full"], charts["tokens"]) > 400
        assert shot.count(COLORS["lost"], charts["saved"]) > 1000
        assert shot.count(COLORS["saved"], charts["saved"]) < 100  # its legend's swatch
    else:
        assert shot.count(COLORS["full"], charts["tokens"]) > 400
        assert shot.count(COLORS["saved"], charts["saved"]) > 1000


def test_example_trace_report_with_events_in_chromium(tmp_path: Path) -> None:
    report, data = _replay_report(tmp_path, EXAMPLE_TRACE, 600)
    png, dom, probe = _open_in_chromium(report, tmp_path)
    _check_dom(dom, data, probe)
    assert "active chapter over its budget" in dom.text["events-table"]  # reasons are shown
    shot = _Shot(png)
    _check_not_blank(shot)
    charts = probe["charts"]
    tokens = charts["tokens"]
    assert shot.count(COLORS["memci"], tokens) > 400
    assert shot.count(COLORS["full"], tokens) > 400
    assert shot.count(COLORS["archive"], tokens, tolerance=8) >= 3 * 40  # three markers
    evicted = sum(1 for r in data["requests"] for e in r.get("events", ())
                  if str(e).startswith("evict"))
    if evicted:  # pages archived by a build are never evicted by it; later builds may
        assert shot.count(COLORS["evict"], tokens, tolerance=8) >= 40
    assert shot.count(COLORS["saved"], charts["saved"]) > 5000
    assert shot.count(COLORS["prefix"], charts["prefix"]) > 2000
    # Each colour is where its chart is, not elsewhere.
    assert shot.count(COLORS["saved"], charts["prefix"]) == 0
    assert shot.count(COLORS["prefix"], charts["saved"]) == 0


def test_real_trace_report_in_chromium(tmp_path: Path) -> None:
    trace = SHARED_DATA / "traces" / "django__django-11815.traj.json"
    if not trace.exists():
        pytest.skip(f"shared data not present: {trace}")
    report, data = _replay_report(tmp_path, trace, 4000)
    assert data["totals"]["saved_tokens"] > 0
    png, dom, probe = _open_in_chromium(report, tmp_path)
    _check_dom(dom, data, probe)
    assert "role 'exit' is not a chat role" in dom.text["skipped"]
    shot = _Shot(png)
    _check_not_blank(shot)
    charts = probe["charts"]
    assert shot.count(COLORS["memci"], charts["tokens"]) > 800
    assert shot.count(COLORS["full"], charts["tokens"]) > 800
    # The full history climbs above memci: its colour fills the chart's upper half.
    left, top, right, bottom = charts["tokens"]
    assert shot.count(COLORS["full"], [left, top, right, (top + bottom) / 2]) > 200
    assert shot.count(COLORS["memci"], [left, top, right, top + (bottom - top) / 3]) == 0
    assert shot.count(COLORS["saved"], charts["saved"]) > 10000
    assert shot.count(COLORS["prefix"], charts["prefix"]) > 1500


def _synthetic(n: int, seed: int = 7) -> ReplayResult:
    rng = random.Random(seed)
    result = ReplayResult(messages=2 * n + 1)
    full = sent = 1500
    page = 0
    for i in range(1, n + 1):
        step = rng.randint(50, 400)
        full += step
        sent += step
        prefix, events = sent - step, ()
        if sent > 7600:
            sent, prefix = rng.randint(3000, 4000), 1500
            events = (f"archive page {page + 1}", f"archive page {page + 2}",
                      f"evict page {page + 1}")
            page += 2
        if i % 97 == 0:
            events += (f"recall page {page}",)
        result.requests.append(Request(i, 2 * i + 1, sent, full, 0.4, prefix, events))
    return result


def test_two_thousand_requests_in_chromium(tmp_path: Path) -> None:
    result = _synthetic(2000)
    report = write_report(tmp_path / "big.html", result, source="big.json", budget=8000)
    assert report.stat().st_size < 1_500_000
    png, dom, probe = _open_in_chromium(report, tmp_path)
    data = result.to_json()
    _check_dom(dom, data, probe)
    shot = _Shot(png)
    _check_not_blank(shot)
    charts = probe["charts"]
    for color, chart in (("memci", "tokens"), ("full", "tokens"), ("archive", "tokens"),
                         ("evict", "tokens"), ("recall", "tokens"), ("saved", "saved"),
                         ("prefix", "prefix"), ("prefix_mean", "prefix")):
        assert shot.count(COLORS[color], charts[chart], tolerance=30) > 100, color


# -- without a browser -------------------------------------------------------------------


def test_report_is_self_contained(tmp_path: Path) -> None:
    text = render_report(_synthetic(50), source="x.json", budget=8000)
    assert "http" not in text and "//" not in re.sub(r"<script>.*?</script>", "", text, flags=re.S)
    assert not re.search(r"""(?i)\b(src|href)\s*=|url\(|@import|<link|<img|<iframe""", text)
    assert text.count("<svg") == 4 and "<script>" in text


def test_report_escapes_what_it_shows() -> None:
    result = _synthetic(5)
    text = render_report(result, source="<script>alert(1)</script>.json")
    assert "<script>alert(1)" not in text and "&lt;script&gt;alert(1)" in text
    odd = ReplayResult(requests=[Request(1, 2, 10, 10, 0.1, 0, ("x</script><b>",))],
                       messages=2)
    assert "x</script><b>" not in render_report(odd, source="f")


def test_report_without_requests_and_with_reasons(tmp_path: Path) -> None:
    empty = render_report(ReplayResult(messages=1), source="one.json")
    assert "No requests" in empty and "<svg" not in empty
    result = ReplayResult(requests=[
        Request(1, 3, 100, 100, 0.1, 0, ()),
        Request(2, 5, 80, 200, 0.1, 40, ("archive page 1", "evict page 1")),
    ], messages=6, skipped=["message 7: role 'exit' is not a chat role, skipped"])
    reasons = [{"kind": "archive", "page": 1, "reason": "active chapter over its budget"},
               {"kind": "evict", "page": 1, "reason": "lru: contents page over its limit"}]
    path = write_report(tmp_path / "r.html", result, source="t.json", events=reasons)
    text = path.read_text()
    assert "active chapter over its budget" in text and "lru: contents page" in text
    assert "role &#x27;exit&#x27;" in text
    assert not list(tmp_path.glob("*.partial"))


def test_report_shows_cost_with_caching_and_losses() -> None:
    # A short conversation: memci's own tools cost more than the history saves.
    result = ReplayResult(requests=[
        Request(1, 3, 400, 80, 0.1, 0, (), 0),
        Request(2, 5, 500, 300, 0.1, 380, (), 77),
        Request(3, 7, 600, 700, 0.1, 480, (), 297),
        Request(4, 9, 650, 1200, 0.1, 590, (), 697),
    ], messages=9, format="sharegpt", cached_discount=0.9, price=3.0)
    text = render_report(result, source="chat.json")
    dom = _Dom(text)
    assert dom.text["cost-cached-memci"] == f"{result.memci_cached_cost:,.0f}"
    assert dom.text["cost-cached-full"] == f"{result.full_cached_cost:,.0f}"
    assert dom.text["cost-cached-ratio"] == (
        f"{100 * result.memci_cached_cost / result.full_cached_cost:.1f}%")
    assert dom.text["usd-cached-memci"] == f"${result.memci_cached_cost * 3 / 1e6:,.4f}"
    assert "cached input 90% off" in text and "format sharegpt" in text
    # Saved goes below zero before it climbs: a red area under the zero line, not hidden.
    assert dom.having("polygon", "area-lost") and dom.having("polygon", "area-saved")
    assert dom.having("line", "zero-line")
    assert result.saved_tokens == 130 and "130 saved" in dom.text["chart-saved"]
    # Ending below zero: said in words, and the saved figure is not shown as a gain.
    behind = ReplayResult(requests=result.requests[:2], messages=5)
    dom = _Dom(render_report(behind, source="chat.json"))
    assert "520 more than the full history" in dom.text["chart-saved"]
    assert dom.text["saved-tokens"] == "-520"
    assert "negative" in next(a for t, a in dom.elements if a.get("id") == "saved-tokens")[
        "class"]


def test_long_replays_are_thinned_to_the_pixels() -> None:
    text = render_report(_synthetic(20_000), source="huge.json")
    (points,) = re.findall(r'<polyline class="series line-memci"[^>]* points="([^"]*)"', text)
    assert 1000 < len(points.split()) <= 2 * 1160
    assert len(text) < 6_000_000


def test_nice_ticks() -> None:
    assert nice_ticks(0, 2450, 5, cover=True) == [0, 500, 1000, 1500, 2000, 2500]
    assert nice_ticks(1, 13, 10) == [2, 4, 6, 8, 10, 12]
    assert nice_ticks(1, 2000, 10)[-1] == 2000
    assert nice_ticks(0, 1, 4, cover=True) == [0, 1]  # whole tokens only
    assert nice_ticks(0, 7, 4, cover=True) == [0, 2, 4, 6, 8]


def test_replay_report_to_a_missing_directory_is_one_line(tmp_path: Path) -> None:
    target = tmp_path / "no" / "such" / "report.html"
    result = CliRunner(env={"COLUMNS": "200"}).invoke(
        main, ["replay", str(EXAMPLE_TRACE), "--report", str(target)])
    assert result.exit_code == 2
    assert result.output.strip().splitlines() == [
        f"error: InvalidFileError: cannot write the report to {target}: no such directory"]


def test_report_shows_where_the_tokens_go(tmp_path: Path) -> None:
    # The replay labels each request's tokens by the build's segments; the report sums them.
    out = tmp_path / "report.html"
    trace = SHARED_DATA / "traces" / "django__django-11815.traj.json"
    if not trace.exists():
        pytest.skip("shared data not present")
    run = CliRunner().invoke(main, ["replay", str(trace), "--budget", "8000", "--json"])
    assert run.exit_code == 0, run.output
    data = json.loads(run.stdout)
    run = CliRunner().invoke(main, ["replay", str(trace), "--budget", "8000", "--report",
                                    str(out)])
    assert run.exit_code == 0, run.output
    for row in data["requests"]:
        assert sum(row["segments"].values()) + 3 == row["memci_tokens"]  # + reply priming
    # One long tool loop: one page, whose hidden steps the notebook (state) carries.
    assert any(row["segments"].get("state") for row in data["requests"])
    dom = _Dom(out.read_text(encoding="utf-8"))
    table = dom.text["segments"]
    assert "recent" in table and "state" in table and "tools" in table

"""The inspector in a real browser: headless Chromium, driven by Selenium, against `memci serve`.

One real `memci serve` subprocess (API keys on) over a SQLite store filled beforehand:
tenant A has a tool-loop session whose early pages are archived and whose tool outputs are
artifacts, a session whose messages hold markup meant to run, and a 2,000-page session;
tenant B has a session of its own. The tests sign in with A's key and look.

Marked ``browser`` (``pytest -m browser`` runs them alone). They skip, saying why, where
Chromium, its driver or Selenium is missing; CI installs all three (.ci/run).
``MEMCI_UI_SCREENSHOTS=1`` saves a PNG of each view into docs/inspector/.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

pytest.importorskip("fastapi", reason="needs memci[server]")
pytest.importorskip("selenium", reason="pip install selenium (in the dev extra)")

import httpx
from selenium import webdriver
from selenium.common.exceptions import TimeoutException
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.remote.webelement import WebElement
from selenium.webdriver.support.ui import WebDriverWait

import memci
from memci.server import KeyStore
from tests.test_server import ServeProcess, subprocess_env

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[1]
SHOTS = ROOT / "docs" / "inspector"
APT = "apt-get install -y chromium chromium-driver"
WAIT = 60  # seconds: generous, for a busy 2-core machine
HOSTILE = [
    '<script>window.__pwned = "script"; fetch("/v1/erasures")</script>',
    '<img src="x" onerror="window.__pwned = \'img\'">',
    '<img src="http://198.51.100.7/track.png"> and <a href="javascript:alert(1)">link</a>',
]


def _binary(*names: str) -> str:
    for name in names:
        path = shutil.which(name)
        if path:
            return path
    pytest.skip(f"{names[0]} is not installed (Debian: {APT})")


def _tool_loop(turns: int, first: int = 0) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for i in range(first, first + turns):
        out += [{"role": "user", "content": f"question {i}: check the quarterly report totals"},
                {"role": "assistant", "content": None, "tool_calls": [{
                    "id": f"call{i}", "type": "function",
                    "function": {"name": "run_sql", "arguments": '{"query": "select *"}'}}]},
                {"role": "tool", "tool_call_id": f"call{i}",
                 "content": "\n".join(f"row {j} total {j * (i + 1)}" for j in range(400))},
                {"role": "assistant", "content": f"answer {i}: the totals of quarter {i} match "
                 "because " + "the ledger and the report agree on every line " * 8}]
    return out


@dataclass
class Site:
    url: str
    key_a: str
    key_b: str

    def api(self, path: str, key: str | None = None, method: str = "GET",
            **kwargs: Any) -> httpx.Response:
        headers = {"Authorization": f"Bearer {key or self.key_a}"}
        return httpx.request(method, self.url + path, headers=headers, timeout=60, **kwargs)


def _fill(db: Path) -> tuple[str, str]:
    with memci.Engine.open(db, workers=0) as engine:
        keys = KeyStore(engine.store)
        key_a, key_b = keys.create("tenant-a")[1], keys.create("tenant-b")[1]
        run = engine.session("agent-run", tenant="tenant-a", user="alice",
                             context_window=6000)
        run.add({"role": "system", "content": "You are a careful analyst."})
        for turn in range(30):  # builds as an agent would: pages are archived on the way
            run.add_many(_tool_loop(1, first=turn))
            run.build()
        engine.session("hostile", tenant="tenant-a", user="mallory").add_many(
            [{"role": "user", "content": HOSTILE[0]},
             {"role": "assistant", "content": HOSTILE[1], "tool_calls": [{
                 "id": "x1", "type": "function",
                 "function": {"name": "<img src=x onerror=window.__pwned='call'>",
                              "arguments": "{}"}}]},
             {"role": "tool", "tool_call_id": "x1", "content": HOSTILE[2]}])
        long = engine.session("two-thousand-pages", tenant="tenant-a", user="bulk")
        long.add_many([m for i in range(2000) for m in (
            {"role": "user", "content": f"page {i} question"},
            {"role": "assistant", "content": f"page {i} answer"})])
        engine.session("b-private", tenant="tenant-b").add(
            {"role": "user", "content": "tenant B's secret"})
    return key_a, key_b


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    db = tmp_path_factory.mktemp("ui") / "m.db"
    key_a, key_b = _fill(db)
    with ServeProcess(db) as server:
        yield Site(server.url, key_a, key_b)


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WebDriver]:
    chromium = _binary("chromium", "chromium-browser", "google-chrome")
    driver_path = _binary("chromedriver")
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--window-size=1280,900", "--no-first-run", "--disable-background-networking",
                "--disable-component-update", "--disable-sync",
                f"--user-data-dir={tmp_path_factory.mktemp('profile')}"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"performance": "ALL", "browser": "ALL"})
    driver = webdriver.Chrome(options=options, service=webdriver.ChromeService(driver_path))
    driver.set_page_load_timeout(WAIT)
    try:
        yield driver
    finally:
        driver.quit()


# -- helpers ------------------------------------------------------------------------------


def wait_for(driver: WebDriver, check: Callable[[WebDriver], Any], what: str) -> Any:
    try:
        return WebDriverWait(driver, WAIT, poll_frequency=0.1).until(check)
    except TimeoutException:
        raise AssertionError(f"waited {WAIT}s for {what}") from None


def shown(driver: WebDriver, css: str) -> WebElement:
    def find(d: WebDriver) -> WebElement | bool:
        found = [e for e in d.find_elements(By.CSS_SELECTOR, css) if e.is_displayed()]
        return found[0] if found else False
    element: WebElement = wait_for(driver, find, css)
    return element


def shot(driver: WebDriver, name: str) -> None:
    if os.environ.get("MEMCI_UI_SCREENSHOTS") == "1":
        SHOTS.mkdir(exist_ok=True)
        driver.save_screenshot(str(SHOTS / f"{name}.png"))


def sign_in(driver: WebDriver, site: Site, key: str) -> None:
    driver.get(site.url + "/ui")
    driver.execute_script("sessionStorage.clear()")
    driver.get(site.url + "/ui#/")
    field = shown(driver, "#key")
    shot(driver, "signin")
    field.send_keys(key)
    driver.find_element(By.ID, "signin-button").click()
    shown(driver, "#sessions tr")


def open_session(driver: WebDriver, site: Site, name: str) -> None:
    driver.get(f"{site.url}/ui#/s/{name}")
    driver.refresh()  # a fresh page: nothing of the previous session's view is left


def network(driver: WebDriver) -> tuple[list[str], set[str]]:
    """URLs the browser asked for since the last call, and those its CSP blocked.

    From the performance log: a request the policy blocks is logged as asked for, then
    as failed with ``blockedReason: csp`` (it never reached the network).
    """
    asked: dict[str, str] = {}
    blocked: set[str] = set()
    for entry in driver.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        params = message.get("params", {})
        if message["method"] == "Network.requestWillBeSent":
            asked[params["requestId"]] = params["request"]["url"]
        elif (message["method"] == "Network.loadingFailed"
              and params.get("blockedReason") == "csp"):
            blocked.add(params["requestId"])
    return list(asked.values()), {asked[r] for r in blocked if r in asked}


# -- the tests -----------------------------------------------------------------------------


def test_sign_in_keeps_the_key_in_the_tab_and_lists_only_its_tenant(
    browser: WebDriver, site: Site
) -> None:
    network(browser)
    browser.get(site.url + "/ui")
    browser.execute_script("sessionStorage.clear()")
    browser.refresh()
    shown(browser, "#key")
    assert not browser.find_elements(By.CSS_SELECTOR, "#sessions tr")
    browser.find_element(By.ID, "key").send_keys("mk_not-a-key")
    browser.find_element(By.ID, "signin-button").click()
    wait_for(browser, lambda d: "unknown or revoked" in d.find_element(
        By.ID, "signin-error").text, "the refusal")
    sign_in(browser, site, site.key_a)
    shot(browser, "sessions")
    rows = {r.find_element(By.CSS_SELECTOR, "a").text: r.text
            for r in browser.find_elements(By.CSS_SELECTOR, "#sessions tr")}
    assert set(rows) == {"agent-run", "hostile", "two-thousand-pages"}
    assert "alice" in rows["agent-run"] and " 121 " in f" {rows['agent-run']} "
    assert "4,000" in rows["two-thousand-pages"]
    assert browser.execute_script("return sessionStorage.getItem('memci.key')") == site.key_a
    assert browser.execute_script("return localStorage.length") == 0
    assert browser.get_cookies() == []
    sent, _ = network(browser)
    assert sent and not [u for u in sent if site.key_a in u or "mk_" in u]
    # the sessions' search
    search = browser.find_element(By.ID, "session-q")
    search.send_keys("ALICE\n")
    wait_for(browser, lambda d: [a.text for a in d.find_elements(
        By.CSS_SELECTOR, "#sessions a")] == ["agent-run"], "the search's one session")


def test_the_next_request_by_segment_matches_the_api(browser: WebDriver, site: Site) -> None:
    sign_in(browser, site, site.key_a)
    open_session(browser, site, "agent-run")
    shown(browser, "#segment-legend")
    shot(browser, "request")
    legend = {li.get_attribute("data-segment"): int(li.get_attribute("data-tokens") or -1)
              for li in browser.find_elements(By.CSS_SELECTOR, "#segment-legend li")}
    peek = site.api("/v1/sessions/agent-run/peek").json()
    for segment in peek["segments"]:
        assert legend[segment["name"]] == segment["tokens"], segment["name"]
    sections = peek["stats"]["sections"]
    assert legend["tools"] == sections["tools"] + sections["agent_tools"]
    bars = browser.find_elements(By.CSS_SELECTOR, "#segment-bar span")
    assert {b.get_attribute("data-segment") for b in bars} == {
        name for name, tokens in legend.items() if tokens}
    widths = {b.get_attribute("data-segment"): b.size["width"] for b in bars}
    assert widths["recent"] > widths["system"]  # drawn to scale
    prefix = browser.find_element(By.ID, "prefix")
    assert prefix.get_attribute("data-prefix") == str(peek["stats"]["prefix_tokens"])
    assert "Contents page" in browser.find_element(By.ID, "contents-page").text
    # another budget: the figures follow, and the page says what changed
    budget = browser.find_element(By.ID, "budget")
    budget.send_keys("2500")
    browser.find_element(By.ID, "peek-button").click()
    wait_for(browser, lambda d: "of 2,500 tokens" in d.find_element(By.ID, "peek-summary").text,
             "the peek at 2,500")
    assert "Against the previous build" in shown(browser, "#changes").text
    small = site.api("/v1/sessions/agent-run/peek", params={"budget": 2500}).json()
    total = browser.find_element(By.ID, "peek-summary").text
    assert f"{small['stats']['total_tokens']:,} of 2,500" in total
    shot(browser, "changes")


def test_pages_timeline_artifact_and_search(browser: WebDriver, site: Site) -> None:
    sign_in(browser, site, site.key_a)
    open_session(browser, site, "agent-run")
    shown(browser, "#segment-legend")
    # an artifact a tool result's view points to opens as text
    recent = browser.find_element(By.CSS_SELECTOR, "details[data-segment='recent']")
    recent.find_element(By.TAG_NAME, "summary").click()
    button = shown(browser, "details[data-segment='recent'] .open-artifact")
    button.click()
    text = shown(browser, "pre.artifact").text
    assert "row 0 total" in text and "row 399 total" in text
    # pages and their place
    browser.find_element(By.CSS_SELECTOR, "[data-tab='pages']").click()
    shown(browser, "#pages tr")
    shot(browser, "pages")
    places = [r.get_attribute("data-place") for r in browser.find_elements(
        By.CSS_SELECTOR, "#pages tr")]
    api = site.api("/v1/sessions/agent-run/pages").json()["pages"]
    assert places == [p["place"] for p in api]
    assert "window" in places and {"contents", "evicted"} & set(places)
    # the timeline: a tool call is paired with its result
    browser.find_element(By.CSS_SELECTOR, "[data-tab='timeline']").click()
    call = shown(browser, "#timeline .call[data-call='call3']")
    assert "run_sql" in call.text and "its result, #" in call.text
    shot(browser, "timeline")
    # working state
    browser.find_element(By.CSS_SELECTOR, "[data-tab='state']").click()
    assert "pins" in shown(browser, "[data-state='pins']").text
    shot(browser, "state")
    # search over the session, then the tenant
    browser.find_element(By.CSS_SELECTOR, "[data-tab='search']").click()
    shown(browser, "#search-q").send_keys("quarter 7")
    browser.find_element(By.ID, "search-button").click()
    hit = shown(browser, "#hits li.hit")
    assert "quarter 7" in hit.text
    shot(browser, "search")
    # replay: memci replay's figures, drawn
    browser.find_element(By.CSS_SELECTOR, "[data-tab='replay']").click()
    shown(browser, "#replay-button").click()
    summary = shown(browser, "#replay-summary").text
    figures = site.api("/v1/sessions/agent-run/replay").json()["totals"]
    assert f"{figures['requests']} requests" in summary
    assert f"memci sent {figures['memci_tokens']:,} tokens" in summary
    lines = browser.find_elements(By.CSS_SELECTOR, "#replay-tokens polyline")
    assert {line.get_attribute("data-series") for line in lines} == {"full", "memci"}
    bars = browser.find_elements(By.CSS_SELECTOR, "#replay-prefix rect")
    assert len(bars) == figures["requests"]
    shot(browser, "replay")


def test_stored_markup_runs_nothing_and_nothing_leaves_the_server(
    browser: WebDriver, site: Site
) -> None:
    sign_in(browser, site, site.key_a)
    network(browser)
    open_session(browser, site, "hostile")
    shown(browser, "[data-tab='timeline']").click()
    shown(browser, "#timeline .msg")
    wait_for(browser, lambda d: len(d.find_elements(By.CSS_SELECTOR, "#timeline .msg")) == 3,
             "the three messages")
    timeline = browser.find_element(By.ID, "timeline").text
    for text in HOSTILE:
        assert text in timeline  # shown as text, whole
    browser.find_element(By.CSS_SELECTOR, "[data-tab='request']").click()
    shown(browser, "#segment-legend")
    for details in browser.find_elements(By.CSS_SELECTOR, "#peek details"):
        details.find_element(By.TAG_NAME, "summary").click()
    browser.find_element(By.CSS_SELECTOR, "[data-tab='search']").click()
    shown(browser, "#search-q").send_keys("script\n")
    shown(browser, "#hits li")
    time.sleep(0.5)  # an onerror would have fired by now
    assert browser.execute_script("return window.__pwned === undefined")
    assert not browser.find_elements(By.CSS_SELECTOR, "#view img, #view script, #view a[href^=j]")
    # The policy is in force: markup put in the page by hand does not run or load either.
    browser.execute_script("""
        const s = document.createElement('script'); s.textContent = 'window.__inline = 1';
        document.body.append(s);
        const i = document.createElement('img'); i.src = 'http://198.51.100.7/p.png';
        document.body.append(i);""")
    time.sleep(0.5)
    assert browser.execute_script("return window.__inline === undefined")
    sent, blocked = network(browser)
    assert blocked == {"http://198.51.100.7/p.png"}  # the policy stopped it
    here = urlsplit(site.url).netloc
    outside = [u for u in sent if urlsplit(u).netloc != here and u not in blocked]
    assert not outside, outside
    assert "/v1/erasures" not in " ".join(sent)  # the stored script's fetch never ran
    resources = browser.execute_script(
        "return performance.getEntriesByType('resource').map(e => e.name)")
    assert resources and all(urlsplit(u).netloc == here for u in resources if u not in blocked)


def test_another_tenants_session_is_not_reachable_by_url(browser: WebDriver,
                                                          site: Site) -> None:
    sign_in(browser, site, site.key_a)
    open_session(browser, site, "b-private")
    assert shown(browser, "#not-found").text == "Session not found"
    assert "secret" not in browser.find_element(By.ID, "view").text
    assert site.api("/v1/sessions/b-private/peek").status_code == 404
    assert site.api("/v1/sessions/b-private/peek", key=site.key_b).status_code == 200


def test_a_two_thousand_page_session_opens_a_page_at_a_time(browser: WebDriver,
                                                            site: Site) -> None:
    sign_in(browser, site, site.key_a)
    open_session(browser, site, "two-thousand-pages")
    shown(browser, "#segment-legend")
    browser.find_element(By.CSS_SELECTOR, "[data-tab='pages']").click()
    shown(browser, "#pages tr")
    assert len(browser.find_elements(By.CSS_SELECTOR, "#pages tr")) == 200
    shown(browser, "#pages-more").click()
    wait_for(browser, lambda d: len(d.find_elements(By.CSS_SELECTOR, "#pages tr")) == 400,
             "the second page of pages")
    browser.find_element(By.CSS_SELECTOR, "[data-tab='timeline']").click()
    wait_for(browser, lambda d: len(d.find_elements(By.CSS_SELECTOR, "#timeline .msg")) == 200,
             "the first 200 messages")
    assert shown(browser, "#timeline-more").is_displayed()
    # the page answers scripts at once: nothing holds its main thread
    assert browser.execute_script("return 1 + 1") == 2


def test_deleting_asks_first_and_uses_the_api(browser: WebDriver, site: Site) -> None:
    site.api("/v1/sessions/doomed/messages", method="POST",
             json={"messages": [{"role": "user", "content": "delete me"}], "user": "dora"})
    sign_in(browser, site, site.key_a)
    open_session(browser, site, "doomed")
    shown(browser, "#delete-session").click()
    wait_for(browser, lambda d: d.switch_to.alert, "the confirmation").dismiss()
    assert site.api("/v1/sessions/doomed").status_code == 200  # nothing happened
    shown(browser, "#delete-session").click()
    alert = wait_for(browser, lambda d: d.switch_to.alert, "the confirmation")
    assert "doomed" in alert.text
    alert.accept()
    shown(browser, "#sessions tr")
    assert site.api("/v1/sessions/doomed").status_code == 404
    assert "doomed" not in browser.find_element(By.ID, "sessions").text


def test_memci_ui_needs_no_key_on_a_local_store(browser: WebDriver, tmp_path: Path) -> None:
    db = tmp_path / "local.db"
    with memci.Engine.open(db, workers=0) as engine:
        engine.session("my-chat", user="me").add({"role": "user", "content": "hello there"})
    with subprocess.Popen([sys.executable, "-m", "memci", "ui", "--db", str(db),
                           "--no-browser"], env=subprocess_env(), stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, text=True) as proc:
        try:
            assert proc.stderr is not None
            url = ""
            while not url:
                line = proc.stderr.readline()
                assert line, "memci ui exited before it answered"
                found = re.search(r"inspector is at (http://\S+)", line)
                url = found.group(1) if found else ""
            browser.get(url)
            browser.execute_script("sessionStorage.clear()")
            browser.refresh()
            link = shown(browser, "#sessions a")
            assert link.text == "my-chat"
            assert not browser.find_element(By.ID, "key").is_displayed()
            assert "no key needed" in browser.find_element(By.ID, "who").text
            link.click()
            shown(browser, "#segment-legend")
        finally:
            proc.terminate()
            proc.wait(timeout=30)

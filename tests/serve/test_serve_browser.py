"""The service's pages in headless Chromium (Playwright driving the Debian package, as the report's
browser tests do): the leaderboard sorts by a clicked header, a submission page shows a REWARD_HACK
with the evaluator's reason, a problem page shows its roofline; no page logs an error or loads
anything from elsewhere. Skipped with the reason where Chromium or playwright is absent."""

from __future__ import annotations

import io
import os
import shutil
from pathlib import Path

import pytest

from serve_testkit import ALIASING, PASSING, start_service

CHROMIUM = os.environ.get("SOLBENCH_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
playwright_api = pytest.importorskip("playwright.sync_api", reason="the Python package playwright is not installed (pip install playwright)")
pytestmark = pytest.mark.skipif(not Path(CHROMIUM).is_file(), reason=f"no Chromium at {CHROMIUM} (apt-get install chromium)")


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """A service with three users' evaluated submissions: two passing (alice twice as good a board
    standing as carol, who also sent a hack) and one REWARD_HACK (bob)."""
    service = start_service(tmp_path_factory.mktemp("browser"))
    tokens = {name: service.user(name) for name in ("alice", "bob", "carol")}
    sent = {"alice": [service.submit(tokens["alice"], PASSING, name="alice-dps")],
            "bob": [service.submit(tokens["bob"], ALIASING, name="bob-alias")],
            "carol": [service.submit(tokens["carol"], ALIASING, name="carol-alias")]}
    ids = {name: [reply.body["id"] for reply in replies] for name, replies in sent.items()}
    for name, found in ids.items():
        service.wait(tokens[name], found)
    yield service, tokens, ids
    service.stop()


@pytest.fixture(scope="module")
def browser():
    with playwright_api.sync_playwright() as driver:
        launched = driver.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield launched
        launched.close()


@pytest.fixture
def page(browser, site):
    """A fresh page that records console errors and refuses every request off the service."""
    service = site[0]
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    opened = context.new_page()
    opened.errors, opened.foreign = [], []
    opened.on("console", lambda message: opened.errors.append(message.text) if message.type == "error" else None)
    opened.on("pageerror", lambda error: opened.errors.append(str(error)))

    def route(request_route):
        if request_route.request.url.startswith(service.url):
            request_route.continue_()
        else:
            opened.foreign.append(request_route.request.url)
            request_route.abort()

    opened.route("**/*", route)
    yield opened
    context.close()


def _login(page, service, token: str) -> None:
    page.goto(service.url + "/login")
    page.fill("input[name=token]", token)
    page.click("button[type=submit]")
    page.wait_for_url(service.url + "/me")


def _column(page, index: int) -> list[str | None]:
    return page.eval_on_selector_all("#leaderboard tbody tr", f"rows => rows.map(r => {{ const c = r.cells[{index}]; const v = c.getAttribute('data-sort'); "
                                                              f"return v === null ? c.textContent.trim() : v; }})")


def test_the_leaderboard_sorts(page, site):
    service = site[0]
    page.goto(service.url + "/")
    page.click("#boards tbody tr a")
    assert "baselines" in page.inner_text("dl") and "measured" in page.inner_text("#baselines-measured")
    users = _column(page, 1)
    assert users[0] == "alice" and set(users) == {"alice", "bob", "carol"}
    header = page.locator("#leaderboard thead th", has_text="user")
    header.click()
    assert header.get_attribute("aria-sort") == "ascending" and _column(page, 1) == ["alice", "bob", "carol"]
    header.click()
    assert _column(page, 1) == ["carol", "bob", "alice"]
    score = page.locator("#leaderboard thead th", has_text="suite score")
    score.click()
    values = [float(v) for v in _column(page, 2)]
    assert score.get_attribute("aria-sort") == "descending" and values == sorted(values, reverse=True) and values[0] > values[-1]
    score.click()
    assert [float(v) for v in _column(page, 2)] == sorted(values)
    assert page.errors == [] and page.foreign == []


def test_a_submission_page_shows_the_reward_hack_and_its_reason(page, site):
    service, tokens, ids = site
    _login(page, service, tokens["bob"])
    page.click("#mine tbody tr a")
    assert page.inner_text("#workloads tbody td.status-REWARD_HACK") == "REWARD_HACK"
    log = page.inner_text("pre.log")
    assert "REWARD_HACK" in log and "shares memory with input" in log
    assert "return x.mul_(alpha)" in page.inner_text("table.source")
    page.goto(service.url + f"/submissions/{ids['alice'][0]}")  # another user's private submission
    assert "no submission" in page.inner_text("#error") and "alice-dps" not in page.content()
    assert page.errors == [] or all("404" in error for error in page.errors)
    assert page.foreign == []


def test_a_problem_page_shows_its_roofline(page, site):
    from PIL import Image

    service = site[0]
    page.goto(service.url + "/")
    page.click("a[href^='/problems/']")
    figure = page.locator("[data-plot=roofline] svg")
    box = figure.bounding_box()
    assert box is not None and box["width"] > 200 and box["height"] > 100
    image = Image.open(io.BytesIO(figure.screenshot())).convert("RGB")
    colours = image.getcolors(maxcolors=1 << 20) or []
    assert len(colours) > 20
    legend = page.inner_text("p.legend")
    assert "T_SOL" in legend and "alice-dps" in legend
    assert page.locator("#sol-table tbody tr").count() == 1 and "#" in page.inner_text("#best")
    assert page.errors == [] and page.foreign == []

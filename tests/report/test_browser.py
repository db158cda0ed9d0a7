"""The HTML report in a real browser (headless Chromium driven by Playwright): the plots render, the
page logs no error and fetches nothing, and the leaderboard sorts when a header is clicked.

Needs the Debian package `chromium` (/usr/bin/chromium) and the Python package `playwright` (its
own browser download is not used); skipped with the reason when either is absent."""

from __future__ import annotations

import io
import os
import shutil
from pathlib import Path

import pytest

from solbench.report.render import write_report
from solbench.report.sample import sample_summary

CHROMIUM = os.environ.get("SOLBENCH_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
playwright_api = pytest.importorskip("playwright.sync_api", reason="the Python package playwright is not installed (pip install playwright)")
pytestmark = pytest.mark.skipif(not Path(CHROMIUM).is_file(), reason=f"no Chromium at {CHROMIUM} (apt-get install chromium)")


@pytest.fixture(scope="module")
def report_page(tmp_path_factory):
    """The report of a 10-problem run open in Chromium, with every console error, page error and
    network request recorded (requests other than the file itself are refused)."""
    folder = tmp_path_factory.mktemp("run")
    (folder / "summary.json").write_text(sample_summary(10, seed=2).to_json(), encoding="utf-8")
    html = write_report(folder)[1]
    errors: list[str] = []
    requests: list[str] = []
    with playwright_api.sync_playwright() as driver:
        browser = driver.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.on("console", lambda message: errors.append(f"console {message.type}: {message.text}") if message.type == "error" else None)
        page.on("pageerror", lambda error: errors.append(f"page error: {error}"))

        def route(request_route):
            if request_route.request.url != html.as_uri():
                requests.append(request_route.request.url)
                request_route.abort()
            else:
                request_route.continue_()

        page.route("**/*", route)
        page.goto(html.as_uri())
        page.wait_for_load_state("load")
        yield page, errors, requests
        browser.close()


def _column(page, table: str, index: int) -> list[str | None]:
    """The data-sort values (or texts) of one column of a table, in the order shown."""
    return page.eval_on_selector_all(f"#{table} tbody tr",
                                     f"rows => rows.map(r => {{ const c = r.cells[{index}]; const v = c.getAttribute('data-sort'); "
                                     f"return v === null ? c.textContent.trim() : (v === '' ? null : v); }})")


def _non_blank(png: bytes) -> tuple[int, float]:
    """(distinct colours, share of pixels that are not white) of a screenshot."""
    from PIL import Image

    image = Image.open(io.BytesIO(png)).convert("RGB")
    colours = image.getcolors(maxcolors=1 << 20) or []
    white = sum(count for count, colour in colours if colour == (255, 255, 255))
    return len(colours), 1 - white / (image.width * image.height)


def test_plots_render(report_page):
    page, errors, requests = report_page
    page.click("#expand-all")
    figures = page.query_selector_all(".figure svg")
    assert len(figures) >= 10 + 1  # rooflines (copy problems excepted) and the suite plots
    for figure in figures:
        box = figure.bounding_box()
        assert box is not None and box["width"] > 200 and box["height"] > 100
    for selector in ('[data-plot="speedup-vs-sol"]', '[data-plot="roofline"]'):
        colours, inked = _non_blank(page.query_selector(selector).screenshot())
        assert colours > 20 and inked > 0.05, (selector, colours, inked)
    assert errors == [] and requests == []


def test_leaderboard_sorts_by_a_clicked_header(report_page):
    page, errors, _ = report_page
    header = page.locator("#leaderboard thead th", has_text="score")
    header.click()
    assert header.get_attribute("aria-sort") == "descending"
    scores = _column(page, "leaderboard", 2)
    known = [float(v) for v in scores if v is not None]
    assert known == sorted(known, reverse=True) and len(known) > 5
    assert scores[: len(known)] == [v for v in scores if v is not None]  # blanks last
    header.click()
    ascending = [float(v) for v in _column(page, "leaderboard", 2) if v is not None]
    assert ascending == sorted(known) and _column(page, "leaderboard", 2)[-1] is None
    problem = page.locator("#leaderboard thead th", has_text="problem")
    problem.click()
    names = _column(page, "leaderboard", 0)
    assert names == sorted(names, key=str.lower) and problem.get_attribute("aria-sort") == "ascending"
    assert errors == []


def test_a_leaderboard_link_opens_its_problem(report_page):
    page, _, _ = report_page
    page.click("#collapse-all")
    link = page.locator("#leaderboard tbody tr a").first
    target = link.get_attribute("href")[1:]
    link.click()
    page.wait_for_function(f"document.getElementById({target!r}).open")
    assert page.locator(f"[id='{target}'] [data-plot='roofline'], [id='{target}'] table").first.is_visible()

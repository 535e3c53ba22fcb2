"""The web app in Debian's Chromium (Playwright, executable_path=$SILICA_TEST_CHROMIUM): fill the compare
form, read the ranked table and the chart, upload examples/inventory.yaml, open the report; every page
passes axe-core with no violations, at 1400 px and at 400 px without sideways scrolling.

Screenshots go to tmp_path; with SILICA_SCREENSHOTS=docs/img they refresh the ones docs/serve.md shows.
Without Chromium these tests skip, except under CI=true, where they fail.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.serve.conftest import EXAMPLES, ROOT, running

from silica.serve import ServeSettings

CHROMIUM = os.environ.get("SILICA_TEST_CHROMIUM", "")
WIDTHS = {"desktop": 1400, "phone": 400}


COST_CHART = 'svg.chart-wide[aria-labelledby="chart-title-w"]'  # the chart of the ranking cost


def _need_browser() -> Any:
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        sync_playwright = None
    missing = sync_playwright is None or not (CHROMIUM and Path(CHROMIUM).exists())
    if missing:
        why = "playwright or SILICA_TEST_CHROMIUM (Debian chromium) is missing"
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true but {why}")
        pytest.skip(why)
    return sync_playwright


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    db = tmp_path_factory.mktemp("browser") / "store.db"
    with running(ServeSettings(store_url=f"sqlite:///{db}")) as url:
        yield url


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    sync_playwright = _need_browser()
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield b
        b.close()


@pytest.fixture
def shots(tmp_path: Path) -> Path:
    out = Path(os.environ.get("SILICA_SCREENSHOTS") or tmp_path)
    if not out.is_absolute():
        out = ROOT / out
    out.mkdir(parents=True, exist_ok=True)
    return out


def _check(page: Any, name: str, shots: Path) -> None:
    """axe-core finds nothing; at each width nothing scrolls sideways; a screenshot of each."""
    from axe_playwright_python.sync_playwright import Axe

    for label, width in WIDTHS.items():
        page.set_viewport_size({"width": width, "height": 900})
        results = Axe().run(page)
        violations = results.response["violations"]
        assert not violations, f"{name} at {width}px: " + "; ".join(
            f"{v['id']}: {v['help']} ({len(v['nodes'])} nodes, e.g. {v['nodes'][0]['html'][:120]})"
            for v in violations
        )
        overflow = page.evaluate(
            "document.documentElement.scrollWidth - document.documentElement.clientWidth"
        )
        assert overflow <= 0, f"{name} scrolls sideways by {overflow}px at {width}px"
        page.screenshot(path=str(shots / f"{name}-{label}.png"), full_page=True)


def test_compare_form_table_and_chart(browser: Any, site: str, shots: Path) -> None:
    page = browser.new_page()
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.goto(f"{site}/compare")
    page.select_option("#f-model", "llama-3.1-70b")
    page.fill("#f-input_len", "2048")
    page.fill("#f-output_len", "512")
    page.fill("#f-tpot_slo_ms", "60")
    page.fill("#f-rate_req_per_s", "20")
    page.fill("#f-prices", "trn2.48xlarge=30")
    page.click("button[type=submit]")
    page.wait_for_selector("table tbody tr")
    rows = page.locator("table tbody tr")
    assert rows.count() > 10
    first = rows.nth(0).locator("td")
    assert first.nth(0).inner_text() == "1"
    import httpx

    ranked = httpx.post(
        f"{site}/api/v1/compare",
        json={"model": "llama-3.1-70b", "input_len": 2048, "output_len": 512, "tpot_slo_ms": 60,
              "rate_req_per_s": 20, "prices": {"trn2.48xlarge": 30}},
        timeout=60,
    ).json()["results"]  # fmt: skip
    shown = [rows.nth(i).locator("td").nth(1).inner_text() for i in range(rows.count())]
    assert shown == [r["instance"] for r in ranked], "the table keeps the library's ranking"
    head = page.locator("table thead").inner_text()
    assert "instances" in head and "$/month" in head  # a load was given
    bars = page.locator(f"{COST_CHART} rect.bar")
    assert 1 <= bars.count() <= 12
    assert page.locator(f"{COST_CHART} path.band").count() >= 1
    # The chart plots the cost that ranks the table, in the table's order, and marks the ties.
    labels = page.eval_on_selector_all(f"{COST_CHART} text", "els => els.map(e => e.textContent)")
    charted = [t.split(" ")[-1] for t in labels if t.startswith("#")]
    assert charted == shown[: len(charted)], "bars follow the table's rank order"
    lead = httpx.post(
        f"{site}/api/v1/compare",
        json={"model": "llama-3.1-70b", "input_len": 2048, "output_len": 512, "tpot_slo_ms": 60,
              "rate_req_per_s": 20, "prices": {"trn2.48xlarge": 30}},
        timeout=60,
    ).json()["ranked"]  # fmt: skip
    ties = [r["instance"] for r in lead[: len(charted)] if r["tie"]]
    assert page.locator(f"{COST_CHART} rect.bar.tie").count() == len(ties)
    assert sum(t.startswith("$") and t.endswith("tie with #1") for t in labels) == len(ties)
    mw_bars = page.locator('svg.chart-wide[aria-labelledby="mw-title-w"] rect.bar')  # tokens per MW
    assert 1 <= mw_bars.count() <= 12 and "J/out tok" in head and "out tok/s/MW" in head
    assert "trn2.48xlarge" in page.content()
    assert not errors, errors
    _check(page, "compare", shots)
    page.goto(f"{site}/compare?model=llama-3.1-8b&input_len=abc")
    assert "not a whole number" in page.locator("[role=alert]").inner_text()
    page.close()


def test_advise_upload_and_report(browser: Any, site: str, shots: Path) -> None:
    page = browser.new_page()
    page.goto(f"{site}/advise")
    _check(page, "advise-form", shots)
    page.set_input_files("#f-inventory", str(EXAMPLES / "inventory.yaml"))
    page.wait_for_function("document.getElementById('f-text').value.includes('support-bot')")
    page.set_input_files("#f-scans", str(EXAMPLES / "scans" / "ranker.scan.json"))
    page.click("button[type=submit]")
    page.wait_for_selector("table tbody tr")
    text = page.locator("table").inner_text()
    for name in ("support-bot", "doc-summaries", "pretrain-70b", "reranker"):
        assert name in text
    assert "Stored" in page.locator("[role=status]").inner_text()
    _check(page, "advise", shots)
    with page.expect_navigation():
        page.click("text=Open the full report (HTML)")
    assert page.locator("h1").first.inner_text().startswith("Silica")
    assert page.locator("svg").count() >= 1
    page.set_viewport_size({"width": 1400, "height": 900})
    page.screenshot(path=str(shots / "report-desktop.png"))
    page.close()


def test_claims_and_history(browser: Any, site: str, shots: Path) -> None:
    page = browser.new_page()
    page.goto(f"{site}/claims")
    assert page.locator("table tbody tr").count() >= 5
    _check(page, "claims", shots)
    page.goto(f"{site}/history")
    _check(page, "history", shots)
    page.goto(f"{site}/")
    _check(page, "home", shots)
    page.close()


def test_simulate_page_draws_latency_against_rate(browser: Any, site: str, shots: Path) -> None:
    page = browser.new_page()
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.goto(f"{site}/simulate")
    page.select_option("#f-model", "llama-3.1-8b")
    page.select_option("#f-on", "g6e.xlarge")
    page.fill("#f-rate", "2")
    page.fill("#f-requests", "500")
    page.click("button[type=submit]")
    page.wait_for_selector(".latency-vs-rate svg")
    cells = page.locator("table tbody tr").first.locator("td")
    assert cells.nth(0).inner_text() == "TTFT"
    for label, width in WIDTHS.items():
        page.set_viewport_size({"width": width, "height": 900})
        shown = page.locator(f".latency-vs-rate {'.fig-narrow' if width < 600 else '.fig-wide'} svg")
        assert shown.count() == 2, label  # TTFT and time between tokens against the rate
        for k in range(2):
            assert shown.nth(k).is_visible()
            assert shown.nth(k).locator("polyline").count() >= 3  # p50, p90, p99 (and the band's ends)
    assert "Time to first token vs request rate" in page.content()
    assert not errors, errors
    _check(page, "simulate", shots)
    page.goto(f"{site}/simulate?model=llama-3.1-8b&on=g6e.xlarge&requests=abc")
    assert "not a whole number" in page.locator("[role=alert]").inner_text()
    page.goto(f"{site}/simulate?model=llama-3.1-8b&on=g6e.xlarge&requests=900000")
    assert "requests" in page.locator("[role=alert]").inner_text()
    page.close()

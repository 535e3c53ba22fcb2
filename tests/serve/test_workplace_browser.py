"""The workplace pages in Chromium (estimate, catalog, jobs, history search and diff) at 1400 and 400 px:
no sideways scroll and no axe-core violations; a reloaded advice page stores nothing twice; a 1.9 MiB
inventory uploads through the advise page; sortable tables sort; errors are HTML pages and say the
field's label next to the field. Same browser and server fixtures as test_browser.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.serve import test_browser as _shared
from tests.serve.conftest import EXAMPLES

WIDTHS = _shared.WIDTHS
browser, shots, site = _shared.browser, _shared.shots, _shared.site  # the same fixtures

pytestmark = pytest.mark.e2e


def _check(page: Any, name: str, shots: Path) -> None:
    from axe_playwright_python.sync_playwright import Axe

    for label, width in WIDTHS.items():
        page.set_viewport_size({"width": width, "height": 900})
        violations = Axe().run(page).response["violations"]
        assert not violations, f"{name} at {width}px: " + "; ".join(
            f"{v['id']}: {v['help']} ({v['nodes'][0]['html'][:120]})" for v in violations
        )
        wide = page.evaluate("document.scrollingElement.scrollWidth - window.innerWidth")
        assert wide <= 0, f"{name} scrolls sideways by {wide}px at {width}px"
        page.screenshot(path=str(shots / f"{name}-{label}.png"), full_page=True)


def test_estimate_breakdown_errors_and_csv(browser: Any, site: str, shots: Path) -> None:
    page = browser.new_page()
    page.goto(f"{site}/estimate")
    page.select_option("#f-model", "llama-3.1-8b")
    page.fill("#f-on", "trn1.32xlarge")
    page.click("button[type=submit]")
    page.wait_for_selector("text=Time per phase")
    text = page.locator("main").inner_text()
    expected = httpx.post(
        f"{site}/api/v1/estimate", json={"model": "llama-3.1-8b", "on": "trn1.32xlarge"}, timeout=60
    ).json()
    for phase in expected["time"]:
        assert phase["phase"] in text
        for part in phase["parts_ms"]:
            assert part.replace("_", "-") + " ms" in text
    assert f"{expected['ttft_ms']:,.1f}" in text
    assert "Memory per unit" in text and "Assumptions" in text
    _check(page, "estimate", shots)
    csv = httpx.get(f"{site}{page.locator('text=Download CSV').get_attribute('href')}", timeout=60)
    assert csv.headers["content-type"].startswith("text/csv") and "ttft_ms" in csv.text.splitlines()[0]
    page.goto(f"{site}/estimate?model=llama-3.1-8b&on=&tp=abc&batch=0")
    errors = page.locator(".field-error").all_inner_texts()
    assert any(e.startswith("Instance") for e in errors) and any(
        e.startswith("Tensor parallel") for e in errors
    )
    assert any(e.startswith("Batch") for e in errors)
    assert page.get_attribute("#f-tp", "aria-invalid") == "true"
    _check(page, "estimate-errors", shots)
    response = page.goto(f"{site}/estimate?model=llama-3.1-8b&on=nosuch.box")
    assert (
        response is not None
        and response.status == 404
        and "nosuch" in page.locator("[role=alert]").inner_text()
    )
    page.close()


def test_catalog_filter_sort_and_csv(browser: Any, site: str, shots: Path) -> None:
    page = browser.new_page()
    page.goto(f"{site}/catalog?family=nvidia&region=us-east-1&option=on_demand")
    rows = page.locator("table").nth(1).locator("tbody tr")
    assert rows.count() > 5
    regions = {rows.nth(i).locator("td").nth(3).inner_text() for i in range(rows.count())}
    assert regions == {"us-east-1"}
    # sort the prices by $/hour with the header button: ascending numbers, unpriced last
    page.locator("table").nth(1).locator("th button", has_text="$/hour").click()
    cells = page.locator("table").nth(1).locator("tbody tr td:nth-child(6)").all_inner_texts()
    values = [float(c.replace(",", "")) for c in cells if c[0].isdigit()]
    assert values == sorted(values) and len(values) > 3
    assert page.get_attribute("table.sortable >> nth=1 >> th:nth-child(6)", "aria-sort") == "ascending"
    _check(page, "catalog", shots)
    csv = httpx.get(f"{site}/catalog?family=nvidia&region=us-east-1&option=on_demand&format=csv", timeout=60)
    head, *lines = csv.text.splitlines()
    assert "usd_per_hour" in head and "source" in head and len(lines) == rows.count()
    page.close()


def test_jobs_page_progress_and_cancel(browser: Any, shots: Path, tmp_path: Path) -> None:
    """A job reporting progress shows it; its Cancel button stops it at its next report; a queued
    job behind it is cancelled before it starts. The jobs are submitted to the server's own job
    table (a real calibration takes minutes), through the same `Jobs.submit` the endpoints use."""
    import threading
    import time

    import uvicorn
    from tests.serve.conftest import free_port

    from silica.serve import ServeSettings, create_app

    app = create_app(ServeSettings(store_url=f"sqlite:///{tmp_path / 'jobs.db'}"))
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="error"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.05)
    url = f"http://127.0.0.1:{port}"
    try:
        page = browser.new_page()
        page.goto(f"{url}/jobs")
        _check(page, "jobs-empty", shots)

        def slow(control: Any) -> Any:
            for step in range(600):
                control.report(step / 600, f"step {step} of 600")
                time.sleep(0.05)
            return {"steps": 600}

        running = app.state.jobs.submit("demo", "slow.csv", slow, lambda: None, 600)
        queued = app.state.jobs.submit("demo", "later.csv", slow, lambda: None, 600)
        while running.progress is None or running.progress < 0.02:
            time.sleep(0.05)
        page.goto(f"{url}/jobs")
        text = page.locator("table").inner_text()
        assert "running" in text and "queued" in text and "step " in text
        assert page.locator("progress").count() == 1
        _check(page, "jobs", shots)
        page.click(f"button[aria-label='Cancel job {queued.id}']")
        page.wait_for_url(f"{url}/jobs")
        assert queued.status == "cancelled"
        page.click(f"button[aria-label='Cancel job {running.id}']")
        for _ in range(100):
            if running.status != "running":
                break
            time.sleep(0.05)
        assert running.status == "cancelled" and running.progress is not None and running.progress < 1
        page.goto(f"{url}/jobs")
        assert page.locator("button[aria-label^='Cancel job']").count() == 0
        assert "cancelled by a user" in page.locator("table").inner_text()
        page.close()
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def test_advise_reload_stores_nothing_twice_and_big_upload(
    browser: Any,
    site: str,
    shots: Path,
    tmp_path: Path,
) -> None:
    page = browser.new_page()
    page.goto(f"{site}/advise")
    base = (EXAMPLES / "inventory.yaml").read_text()
    pad = "# " + "x" * 98 + "\n"
    big = tmp_path / "big-inventory.yaml"
    big.write_text(base + pad * ((int(1.9 * 1024 * 1024) - len(base)) // len(pad)))
    assert 1.85 * 2**20 < big.stat().st_size < 2 * 2**20
    page.set_input_files("#f-inventory", str(big))
    page.wait_for_function("document.getElementById('f-text').value.length > 1900000")
    page.set_input_files("#f-scans", str(EXAMPLES / "scans" / "ranker.scan.json"))
    before = len(httpx.get(f"{site}/api/v1/history?limit=1000").json()["records"])
    page.click("button[type=submit]")
    page.wait_for_selector("[role=status]")
    assert "/advise/result/" in page.url
    assert "big-inventory.yaml" in page.locator("[role=status]").inner_text()
    after = len(httpx.get(f"{site}/api/v1/history?limit=1000").json()["records"])
    assert after > before
    page.reload()
    page.wait_for_selector("[role=status]")
    assert len(httpx.get(f"{site}/api/v1/history?limit=1000").json()["records"]) == after
    page.close()


def test_history_search_record_and_diff(browser: Any, site: str, shots: Path) -> None:
    inv = (EXAMPLES / "inventory.yaml").read_bytes()
    scan = (EXAMPLES / "scans" / "ranker.scan.json").read_bytes()
    httpx.post(f"{site}/api/v1/advise", files=[("inventory", ("inventory.yaml", inv)),
               ("scans", ("ranker.scan.json", scan))], timeout=120)  # fmt: skip
    page = browser.new_page()
    page.goto(f"{site}/history?kind=recommendation&q=support-bot")
    names = page.locator("table tbody tr td:nth-child(5)").all_inner_texts()
    assert names and all("support-bot" in n for n in names)
    _check(page, "history-search", shots)
    boxes = page.locator("input[name=pick]")
    boxes.nth(0).check()
    boxes.nth(1).check()
    page.click("text=Compare the two ticked records")
    page.wait_for_selector("text=keys differ")
    assert "/history/diff?a=" in page.url
    assert page.locator(".changed-mark").count() >= 1
    _check(page, "history-diff", shots)
    first = page.url.split("a=")[1].split("&")[0]
    page.goto(f"{site}/history/{first}")
    assert page.locator("pre.json").count() == 1
    _check(page, "history-record", shots)
    response = page.goto(f"{site}/history/987654321")
    assert response is not None and response.status == 404
    assert response.headers["content-type"].startswith("text/html")
    assert "No record" in page.locator("[role=alert]").inner_text()
    response = page.goto(f"{site}/advise/result/expired-key")
    assert response is not None and response.status == 404
    assert "no longer kept" in page.locator("[role=alert]").inner_text()
    page.close()

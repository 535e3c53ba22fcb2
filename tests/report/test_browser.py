"""Every report in a real headless Chromium: no sideways scrolling at 400 px, and axe-core finds no
colour-contrast violation at 400 px or 1400 px.

The reports are rendered by `scripts/screenshots.py` (the real CLI on the repository's examples), so
this also checks that the screenshot script works. Chromium is $SILICA_TEST_CHROMIUM or `chromium`;
without one the test skips, except under CI=true, where it fails.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("screenshots", ROOT / "scripts" / "screenshots.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _chromium() -> str:
    found = os.environ.get("SILICA_TEST_CHROMIUM") or shutil.which("chromium")
    if not found:
        if os.environ.get("CI") == "true":
            pytest.fail("CI=true and no Chromium: set SILICA_TEST_CHROMIUM (see .ci/)")
        pytest.skip("no Chromium (set SILICA_TEST_CHROMIUM)")
    return found


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    out: dict[str, Path] = _script().render_reports(tmp_path_factory.mktemp("reports"))
    return out


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    playwright = pytest.importorskip("playwright.sync_api")
    path = _chromium()
    with playwright.sync_playwright() as p:
        b = p.chromium.launch(executable_path=path)
        yield b
        b.close()


def test_every_report_is_rendered(reports: dict[str, Path]) -> None:
    assert set(reports) == {"advice", "claims", "fleet", "monitor", "simulate"}
    for path in reports.values():
        assert path.stat().st_size > 5_000


@pytest.mark.parametrize("width", [400, 1400])
def test_no_sideways_scroll_and_no_contrast_violation(
    reports: dict[str, Path], browser: Any, width: int
) -> None:
    from axe_playwright_python.sync_playwright import Axe

    axe = Axe()
    page = browser.new_page(viewport={"width": width, "height": 900})
    problems = []
    for name, path in reports.items():
        page.goto(path.as_uri())
        scroll = page.evaluate("document.documentElement.scrollWidth")
        if scroll > width:
            problems.append(f"{name} at {width} px scrolls sideways: {scroll} px wide")
        result = axe.run(page, options={"runOnly": ["color-contrast"]})
        assert result.response["passes"], f"axe checked nothing on {name}"  # the rule really ran
        for v in result.response["violations"]:
            nodes = [n["target"] for n in v["nodes"]][:3]
            problems.append(f"{name} at {width} px: {v['id']} on {len(v['nodes'])} nodes, e.g. {nodes}")
        # Every chart on the page has a caption under it.
        figures = page.evaluate("document.querySelectorAll('figure').length")
        captions = page.evaluate("document.querySelectorAll('figure > figcaption').length")
        if figures != captions or figures == 0:
            problems.append(f"{name}: {figures} figures, {captions} captions")
    page.close()
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("width", [400, 1400])
def test_simulate_report_shows_latency_against_rate(
    reports: dict[str, Path], browser: Any, width: int
) -> None:
    """The simulate report's two latency-vs-rate charts are drawn, the one for the page's width
    visible, each with p50, p90 and p99 lines and the band's p99 ends."""
    page = browser.new_page(viewport={"width": width, "height": 900})
    page.goto(reports["simulate"].as_uri())
    which = ".fig-narrow" if width < 600 else ".fig-wide"
    charts = page.locator(f"{which} svg")
    assert charts.count() == 2
    for k, title in enumerate(("Time to first token vs request rate", "Time between tokens vs request rate")):
        chart = charts.nth(k)
        assert chart.is_visible()
        assert title in (chart.text_content() or "")
        # p50, p90, p99 and the band's ends (an end equal to the central p99 is not drawn twice)
        assert chart.locator("polyline").count() in (4, 5)
    page.close()

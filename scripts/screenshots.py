"""Render every Silica report and photograph it in headless Chromium at 1400 px and 400 px.

    python scripts/screenshots.py            # writes docs/img/<report>-<width>.png
    python scripts/screenshots.py --out DIR  # somewhere else (the browser test uses a temporary one)

The reports are made by the real CLI from the repository's examples (advise: examples/inventory.yaml,
claims: the bundled claims, fleet: examples/fleet.yaml, simulate: Llama 3.1 8B on a g6e.xlarge at 2 req/s,
monitor: the synthetic replay the monitor tests
use), into a temporary folder, with the store pointed there too, so nothing is left in the checkout but
the PNGs. Chromium is $SILICA_TEST_CHROMIUM, else `chromium` on PATH. Pages taller than MAX_HEIGHT are
cut there (the top of a report is what a reader sees first; the rest repeats the same components).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WIDTHS = (1400, 400)
MAX_HEIGHT = 4200


def _silica(tmp: Path, *args: str) -> str:
    env = dict(
        os.environ,
        PYTHONPATH=f"{ROOT / 'src'}{os.pathsep}{ROOT}",
        SILICA_DB_URL=f"sqlite:///{tmp / 'store.db'}",
        SILICA_LOG_DIR=str(tmp),
        XDG_CACHE_HOME=str(tmp / "cache"),
    )
    done = subprocess.run(
        [sys.executable, "-m", "silica.cli", *args], capture_output=True, text=True, env=env, cwd=ROOT
    )
    if done.returncode != 0:
        raise SystemExit(f"silica {' '.join(args)} failed: {done.stderr.strip()}")
    return done.stdout


def _monitor(tmp: Path) -> Path:
    """The monitor report over the synthetic replay of tests/monitor (a fixed start, so it is stable)."""
    sys.path.insert(0, str(ROOT))
    from tests.monitor import scenario

    plans = {}
    for instance in ("g6e.xlarge", "inf2.xlarge"):
        out = _silica(
            tmp,
            "estimate",
            "llama-3.1-8b",
            "--on",
            instance,
            "--input-len",
            "1024",
            "--output-len",
            "256",
            "--json",
        )
        (tmp / f"plan-{instance}.json").write_text(out)
        plans[instance] = json.loads(out)
    since = scenario.hour_aligned_start(1_790_000_000.0)
    gpu, neuron = plans["g6e.xlarge"], plans["inf2.xlarge"]
    om = tmp / "scrapes.om"
    om.write_text(
        scenario.openmetrics(
            since,
            scenario.Plan(gpu["tpot_ms"] / 1000, gpu["ttft_ms"] / 1000),
            scenario.Plan(neuron["tpot_ms"] / 1000, neuron["ttft_ms"] / 1000),
        )
    )
    until = since + scenario.STEP * scenario.SCRAPES
    html = tmp / "monitor.html"
    _silica(
        tmp,
        "monitor",
        "report",
        "--plan",
        f"chat-gpu={tmp / 'plan-g6e.xlarge.json'}",
        "--plan",
        f"chat-neuron={tmp / 'plan-inf2.xlarge.json'}",
        "--from",
        str(om),
        "--since",
        str(since),
        "--until",
        str(until),
        "--no-store",
        "--html",
        str(html),
    )
    return html


def render_reports(tmp: Path) -> dict[str, Path]:
    """Every report as an HTML file under `tmp`, by name."""
    out = {name: tmp / f"{name}.html" for name in ("advice", "claims", "fleet")}
    _silica(tmp, "advise", "examples/inventory.yaml", "--no-store", "--html", str(out["advice"]))
    _silica(tmp, "claims", "--no-store", "--html", str(out["claims"]))
    _silica(tmp, "fleet", "simulate", "examples/fleet.yaml", "--html", str(out["fleet"]))
    out["simulate"] = tmp / "simulate.html"
    _silica(tmp, "simulate", "llama-3.1-8b", "--on", "g6e.xlarge", "--rate", "2", "--requests", "1000",
            "--html", str(out["simulate"]))  # fmt: skip
    out["monitor"] = _monitor(tmp)
    return out


def chromium() -> str:
    found = (
        os.environ.get("SILICA_TEST_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    )
    if not found:
        raise SystemExit("No Chromium: set SILICA_TEST_CHROMIUM or put chromium on PATH.")
    return found


def screenshot(reports: dict[str, Path], out: Path) -> list[Path]:
    from playwright.sync_api import sync_playwright

    out.mkdir(parents=True, exist_ok=True)
    shots = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium())
        for width in WIDTHS:
            page = browser.new_page(viewport={"width": width, "height": 900})
            for name, path in reports.items():
                page.goto(path.as_uri())
                height = min(page.evaluate("document.documentElement.scrollHeight"), MAX_HEIGHT)
                target = out / f"{name}-{width}.png"
                page.screenshot(
                    path=str(target), full_page=True, clip={"x": 0, "y": 0, "width": width, "height": height}
                )
                shots.append(target)
            page.close()
        browser.close()
    return shots


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "img")
    parser.add_argument("--keep-html", type=Path, help="Also copy the rendered HTML here.")
    args = parser.parse_args()
    started = time.time()
    with tempfile.TemporaryDirectory() as name:
        reports = render_reports(Path(name))
        if args.keep_html:
            args.keep_html.mkdir(parents=True, exist_ok=True)
            for path in reports.values():
                shutil.copy(path, args.keep_html / path.name)
        for shot in screenshot(reports, args.out):
            print(shot.relative_to(ROOT) if shot.is_relative_to(ROOT) else shot)
    print(f"done in {time.time() - started:.0f} s")


if __name__ == "__main__":
    main()

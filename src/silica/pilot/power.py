"""GPU power during a pilot step, scraped from a DCGM exporter (`silica pilot run --dcgm-url URL`).

The runner wraps each step in `DcgmMeter.step()`: it scrapes the exporter's /metrics once as the step
starts, every `interval_s` while it runs (a background thread; the load generator is not touched), and
once as it ends. Board power is `DCGM_FI_DEV_POWER_USAGE` (W) summed over every GPU the exporter
reports; where the exporter also serves `DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION` (mJ since boot, a
counter), the step's energy is that counter's difference, else the mean power x the step's duration.
Measured J per output token is that energy over the step's output tokens: board power of the GPUs
only, like ML.ENERGY's figures and the plan's chip-only figure, never host or facility power.

Counter names: github.com/NVIDIA/dcgm-exporter etc/default-counters.csv (both are in the default set).
"""

from __future__ import annotations

import math
import re
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from silica.errors import InputError

__all__ = ["DcgmMeter", "PowerReading", "parse_dcgm", "scrape_dcgm"]

POWER = "DCGM_FI_DEV_POWER_USAGE"  # W, per GPU
ENERGY = "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"  # mJ since the driver loaded, per GPU (counter)
_SAMPLE = re.compile(r"^([A-Za-z_:][A-Za-z0-9_:]*)(\{[^}]*\})?\s+(\S+)(?:\s+\S+)?\s*$")
_GPU = re.compile(r'(?:^|[{,])\s*(?:gpu|UUID)="([^"]*)"')
MAX_BYTES = 8 * 1024 * 1024  # an exporter page is tens of KiB; anything near this is not one


def parse_dcgm(text: str) -> tuple[dict[str, float], dict[str, float]]:
    """(watts per GPU, millijoules per GPU) from exposition text; a GPU is its gpu/UUID labels."""
    power: dict[str, float] = {}
    energy: dict[str, float] = {}
    for line in text.splitlines():
        if not line.startswith(("DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION")):
            continue
        m = _SAMPLE.match(line.strip())
        if m is None:
            continue
        try:
            value = float(m.group(3))
        except ValueError:
            continue
        if not math.isfinite(value) or value < 0:
            continue
        gpu = "/".join(_GPU.findall(m.group(2) or "")) or "gpu"
        if m.group(1) == POWER:
            power[gpu] = value
        elif m.group(1) == ENERGY:
            energy[gpu] = value
    return power, energy


def scrape_dcgm(url: str, timeout_s: float = 2.0) -> tuple[dict[str, float], dict[str, float]]:
    """One scrape of the exporter; an unreachable exporter or a page without GPU power is an InputError."""
    if not url.startswith(("http://", "https://")):
        raise InputError(
            f"--dcgm-url must be an http(s) URL, got {url!r}.", "e.g. --dcgm-url http://HOST:9400/metrics."
        )
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as reply:
            text = reply.read(MAX_BYTES).decode("utf-8", errors="replace")
    except (urllib.error.URLError, OSError, ValueError) as err:
        reason = getattr(err, "reason", err)
        raise InputError(
            f"the DCGM exporter at {url} did not answer: {reason}.",
            "give its /metrics URL, e.g. --dcgm-url http://HOST:9400/metrics, or drop --dcgm-url.",
        ) from None
    power, energy = parse_dcgm(text)
    if not power:
        raise InputError(
            f"{url} serves no {POWER} samples, so GPU power cannot be read.",
            "point --dcgm-url at a DCGM exporter's /metrics (default counters include it).",
        )
    return power, energy


@dataclass(slots=True)
class PowerReading:
    """What the meter saw during one step."""

    samples: list[float] = field(default_factory=list)  # summed GPU watts, one per scrape
    gpus: int = 0
    energy_mj: tuple[float, float] | None = None  # the energy counter's sum at start and end
    failed_scrapes: int = 0

    def summary(self, duration_s: float, output_tokens: int, use_counter: bool = True) -> dict[str, Any]:
        """Mean GPU power, the step's energy and measured J per output token (None where unknown).

        `use_counter` False: the energy counter spans more than the `duration_s` whose `output_tokens`
        are counted (a timed step's warm-up and cool-down), so energy is mean power x duration."""
        mean_w = sum(self.samples) / len(self.samples) if self.samples else None
        if use_counter and self.energy_mj is not None and self.energy_mj[1] >= self.energy_mj[0]:
            joules, basis = (self.energy_mj[1] - self.energy_mj[0]) / 1e3, f"{ENERGY} difference"
        elif mean_w is not None:
            joules, basis = mean_w * duration_s, f"mean {POWER} x step duration"
        else:
            joules, basis = None, "no power sample"
        return {
            "source": "DCGM exporter (GPU board power only; no host or facility power)",
            "gpus": self.gpus,
            "samples": len(self.samples),
            "failed_scrapes": self.failed_scrapes,
            "mean_gpu_power_w": mean_w,
            "max_gpu_power_w": max(self.samples) if self.samples else None,
            "energy_j": joules,
            "energy_basis": basis,
            "j_per_output_token": joules / output_tokens if joules is not None and output_tokens else None,
        }


class DcgmMeter:
    """Scrapes a DCGM exporter around and during each step; `check` first refuses a bad URL in one line."""

    def __init__(self, url: str, interval_s: float = 1.0, timeout_s: float = 2.0) -> None:
        self.url, self.interval_s, self.timeout_s = url, interval_s, timeout_s

    def check(self) -> None:
        scrape_dcgm(self.url, self.timeout_s)

    def _take(self, reading: PowerReading) -> dict[str, float] | None:
        try:
            power, energy = scrape_dcgm(self.url, self.timeout_s)
        except InputError:
            reading.failed_scrapes += 1  # one lost scrape mid-run does not stop the load test
            return None
        reading.samples.append(sum(power.values()))
        reading.gpus = max(reading.gpus, len(power))
        return energy

    @contextmanager
    def step(self) -> Iterator[PowerReading]:
        """Sample while the body runs; the reading is complete when the block exits."""
        reading = PowerReading()
        first = self._take(reading)
        done = threading.Event()

        def loop() -> None:
            while not done.wait(self.interval_s):
                self._take(reading)

        thread = threading.Thread(target=loop, name="silica-dcgm", daemon=True)
        thread.start()
        started = time.monotonic()
        try:
            yield reading
        finally:
            done.set()
            thread.join(timeout=self.timeout_s + 1.0)
            last = self._take(reading)
            if first and last and set(first) == set(last) and time.monotonic() > started:
                reading.energy_mj = (sum(first.values()), sum(last.values()))

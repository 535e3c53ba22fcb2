"""One declared, finite range per kind of quantity a user can give, each with its physical reason.

Why one module: a price of 1e308 printed 300-digit dollars, `--set max_payback_months=0` divided by
zero, `--until inf` reached the Prometheus client, and two `--price` flags for one instance silently
kept the last. Each entry point (flag, YAML, CSV, JSON, HTTP) now checks a value with `check(kind,
value, field)`, naming the user's field (`--price p5.48xlarge`, `--set max_payback_months`), never an
internal variable, and refuses a repeated single-value field with `no_repeats`.

The bounds are deliberately wide: they exist to refuse nonsense (zero, negative, infinite, absurdly
large), not to second-guess a real plan.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

from silica.errors import InputError

__all__ = [
    "MAX_BATCH",
    "MAX_GLOBAL_BATCH",
    "MAX_INSTANCES",
    "MAX_PARALLEL",
    "MAX_RATE",
    "MAX_TOKENS",
    "MAX_TOKENS_PER_MONTH",
    "MAX_VIRTUAL_STAGES",
    "QUANTITIES",
    "Quantity",
    "check",
    "no_repeats",
]

# Upper bounds on what a user can ask for. Each is far above any real workload or fleet, so reaching
# one means a typo (an extra digit, 1e308); without them such values ran into overflow, pp of 10^11
# for a 32-layer model, or "no configuration meets the SLOs" when no SLO was given.
MAX_TOKENS = 100_000_000  # per request: 10x the longest published context (Llama 4 Scout, 10M)
MAX_BATCH = 1_000_000  # concurrent sequences on one deployment
# Sequences per optimizer step: published BERT-style pretraining runs use 2^20 (1,048,576) at seq 128.
MAX_GLOBAL_BATCH = 100_000_000
MAX_RATE = 1e9  # requests/s: three orders above the largest public API's reported traffic
MAX_TOKENS_PER_MONTH = 1e18
MAX_INSTANCES = 100_000  # instances in one deployment (the largest GPU clusters are ~10^5 chips)
MAX_PARALLEL = 65_536  # tp or pp degree
# Model chunks per pipeline stage: one layer per chunk at most, and no model here has 1,024 layers.
MAX_VIRTUAL_STAGES = 1024


@dataclass(frozen=True)
class Quantity:
    """A closed range [low, high] (or open at low when `low_open`), its unit and why those bounds."""

    low: float
    high: float
    unit: str
    reason: str
    low_open: bool = False
    example: str = ""
    bounds: str = ""  # the range as a person reads it, when numbers would not say it (dates)
    # A likely mistake of unit: (factor, what it means) when value / factor would be in range.
    unit_slip: tuple[float, str] | None = None

    def contains(self, value: float) -> bool:
        above = value > self.low if self.low_open else value >= self.low
        return math.isfinite(value) and above and value <= self.high


QUANTITIES: dict[str, Quantity] = {
    "price_usd_per_hour": Quantity(
        0.0,
        10_000.0,
        "USD per instance-hour",
        "the dearest EC2 instance lists under $200/h; $10,000/h leaves room for any quote",
        low_open=True,
        example="40.5",
    ),
    "months": Quantity(
        0.0,
        1200.0,
        "months",
        "a period is positive (it divides savings) and a plan does not reach past a century",
        low_open=True,
        example="12",
    ),
    "timestamp_s": Quantity(
        946_684_800.0,  # 2000-01-01T00:00:00Z
        4_102_444_800.0,  # 2100-01-01T00:00:00Z
        "epoch seconds (UTC)",
        "telemetry of this hardware lies in this century; a millisecond timestamp is 1000x too large",
        example="2026-11-30T08:00:00Z",
        bounds="from 2000-01-01 to 2100-01-01 UTC",
        unit_slip=(1000.0, "a timestamp in milliseconds; give seconds (divide by 1000)"),
    ),
    "window_s": Quantity(
        1.0,
        366 * 86_400.0,
        "seconds",
        "a monitored window is at least one second and at most a year",
        example="6h",
    ),
    # Calibration parameters (`silica calibrate` writes them; a user may edit one). The fit keeps
    # tighter bounds (perf.calibration.PARAM_BOUNDS); these are what a file may hold at all.
    "efficiency": Quantity(
        0.0,
        1.0,
        "fraction of a datasheet peak",
        "an efficiency is above 0 and at most all of the peak",
        low_open=True,
        example="0.8",
    ),
    "overhead_us": Quantity(
        0.0,
        1_000_000.0,
        "microseconds",
        "a fixed time per layer, collective or sequence step; a second per step is beyond any engine",
        example="20",
    ),
    "half_tokens": Quantity(
        0.0,
        1_000_000.0,
        "tokens",
        "the tokens at which a matmul reaches half its peak efficiency: positive, far below a million",
        low_open=True,
        example="64",
    ),
    "chips": Quantity(
        1.0,
        1_000_000.0,
        "chips",
        "one chip to a million (the largest named cluster, Project Rainier, holds about 500,000)",
        example="8",
    ),
    "layers": Quantity(
        1.0,
        1000.0,
        "layers",
        "a scan builds a few layers of each stack; no published model has a thousand",
        example="2",
    ),
    "request_tokens": Quantity(
        1.0,
        10_000_000.0,
        "tokens",
        "the longest context of a published model is 10M tokens (Llama 4 Scout); a prompt is built in memory",
        example="512",
    ),
    "concurrency": Quantity(
        1.0,
        100_000.0,
        "requests",
        "requests in flight from one load generator; beyond 100,000 the client, not the server, is measured",
        example="32",
    ),
    "latency_ms": Quantity(
        0.0,
        3_600_000.0,
        "milliseconds",
        "a time to first token or per output token is positive and under an hour",
        low_open=True,
        example="35.2",
    ),
    # Limits a user may set through the environment (silica._files).
    "file_mb": Quantity(
        0.0,
        1_000_000.0,
        "megabytes",
        "a file is read whole into memory: above 0, and a terabyte is far past any input Silica reads",
        low_open=True,
        example="256",
    ),
    "rows": Quantity(
        1.0,
        1e9,
        "rows",
        "a measurement or price file has rows; a billion would not fit in memory as rows",
        example="500000",
    ),
}

# What a result may say at all (`silica.results` checks every estimate before it is returned). A
# figure outside is not a plan but an overflow or a nonsense input that slipped through: a negative
# decode step, an MFU over 100%, 300-digit dollars. Bounds are generous on purpose.
RESULT_RANGES: dict[str, Quantity] = {
    "time_ms": Quantity(0.0, 1e10, "milliseconds", "a phase time is not negative, and less than four months"),
    "step_s": Quantity(0.0, 1e7, "seconds", "a step time is not negative, and less than four months"),
    "days": Quantity(0.0, 1e6, "days", "a run time is not negative, and less than 2,700 years"),
    "rate": Quantity(
        0.0,
        1e13,
        "tokens per second",
        "a token rate is not negative, and below 10^13 a second",
    ),
    "usd": Quantity(0.0, 1e13, "US dollars", "a cost is not negative and below ten trillion dollars"),
    "fraction": Quantity(0.0, 1.0, "fraction of peak", "a utilisation is between 0 and 100%"),
    "gib": Quantity(0.0, 1e9, "GiB", "memory is not negative and below an exabyte"),
}


def check(kind: str, value: float, field: str) -> float:
    """`value` if it lies in the range of `kind`, else one `InputError` naming `field` and the range.

    The line says which way it is wrong: not a number, not finite, a likely slip of unit (a
    millisecond timestamp), below or above the range."""
    q = QUANTITIES[kind]
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InputError(f"{field} must be a number of {q.unit}, got {value!r:.40}.", f"e.g. {q.example}.")
    fix = f"give a value such as {q.example}." if q.example else "give a value in that range."
    number = float(value)
    if not math.isfinite(number):
        raise InputError(f"{field} = {number} is not a finite number of {q.unit}.", fix)
    if q.contains(number):
        return number
    if q.unit_slip is not None and q.contains(number / q.unit_slip[0]):
        raise InputError(f"{field} = {number:.6g} looks like {q.unit_slip[1]}.", fix)
    low = f"more than {q.low:,g}" if q.low_open else f"at least {q.low:,g}"
    bounds = q.bounds or f"{low} and at most {q.high:,g}"
    side = "below" if number <= q.low else "above"
    raise InputError(
        f"{field} = {number:.6g} is {side} the sensible range of {q.unit} ({bounds}: {q.reason}).", fix
    )


def no_repeats(names: Iterable[str], what: str, fix: str) -> None:
    """Refuse a single-value field given twice (`--price X=1 --price X=2`): last-wins hides a typo."""
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise InputError(f"{what} {name!r} is given twice.", fix)
        seen.add(name)

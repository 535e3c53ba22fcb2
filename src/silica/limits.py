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
    ),
    "window_s": Quantity(
        1.0,
        366 * 86_400.0,
        "seconds",
        "a monitored window is at least one second and at most a year",
        example="6h",
    ),
}


def check(kind: str, value: float, field: str) -> float:
    """`value` if it lies in the range of `kind`, else one `InputError` naming `field` and the range."""
    q = QUANTITIES[kind]
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InputError(f"{field} must be a number of {q.unit}, got {value!r}.", f"e.g. {q.example}.")
    if not q.contains(float(value)):
        low = f"more than {q.low:,g}" if q.low_open else f"at least {q.low:,g}"
        bounds = q.bounds or f"{low} and at most {q.high:,g}"
        raise InputError(
            f"{field} = {value:.6g} is outside the sensible range of {q.unit} ({bounds}: {q.reason}).",
            f"give a value such as {q.example}." if q.example else "give a value in that range.",
        )
    return float(value)


def no_repeats(names: Iterable[str], what: str, fix: str) -> None:
    """Refuse a single-value field given twice (`--price X=1 --price X=2`): last-wins hides a typo."""
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise InputError(f"{what} {name!r} is given twice.", fix)
        seen.add(name)

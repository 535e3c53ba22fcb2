"""The energy options and rows the estimate and compare commands share (issue 28), kept out of the
front-door command modules: `--pue`, `--usd-per-mwh`, and the power / J per token / tokens per MW /
carbon rows of an estimate's table (`results.EnergyUse`)."""

from __future__ import annotations

import math
from typing import Any

import typer

from silica.errors import InputError

__all__ = ["checked", "energy_rows", "pue_option", "usd_per_mwh_option"]


def pue_option() -> Any:
    return typer.Option(None, "--pue", help="Site PUE (default 1.135, Cloud Carbon Footprint's AWS figure).")


def usd_per_mwh_option() -> Any:
    return typer.Option(
        None, "--usd-per-mwh", help="Electricity price (on-premises): energy USD per 1M tokens."
    )


def checked(flag: str, value: float | None, *, low: float) -> float | None:
    """A finite number >= `low`, or None; anything else is a one-line input error."""
    if value is not None and not (math.isfinite(value) and value >= low):
        raise InputError(
            f"{flag} must be a finite number >= {low:g}, got {value!r}.",
            f"pass {flag} {max(low, 1):g} or more.",
        )
    return value


def energy_rows(table: Any, u: Any) -> None:
    """Power, J/token, tokens per MW and carbon rows (`results.EnergyUse`), with their bands."""
    if u is None:
        return
    if not u.known:
        table.add_row("energy", f"unknown: {u.reason}")
        return

    def banded(v: float, lo: float | None, hi: float | None, spec: str) -> str:
        return (
            f"{format(v, spec)}  (band {format(lo, spec)} - {format(hi, spec)})"
            if lo is not None
            else format(v, spec)
        )

    table.add_row(
        "power / instance W",
        banded(u.instance_power_w, u.instance_power_w_low, u.instance_power_w_high, ",.0f"),
    )
    if u.j_per_training_token is not None:
        table.add_row(
            "J / training token",
            banded(u.j_per_training_token, u.j_per_training_token_low, u.j_per_training_token_high, ".4f"),
        )
        if u.mwh_per_run is not None:
            table.add_row(f"MWh per run (facility, PUE {u.pue:g})", f"{u.mwh_per_run:,.1f}")
        if u.energy_usd_per_run is not None:
            table.add_row(f"energy USD per run at ${u.usd_per_mwh:g}/MWh", f"{u.energy_usd_per_run:,.0f}")
        return
    table.add_row(
        "J / output token",
        banded(u.j_per_output_token, u.j_per_output_token_low, u.j_per_output_token_high, ".3f"),
    )
    table.add_row(
        "output tok/s per MW (IT)",
        banded(
            u.output_tokens_per_s_per_mw,
            u.output_tokens_per_s_per_mw_low,
            u.output_tokens_per_s_per_mw_high,
            ",.0f",
        ),
    )
    table.add_row(
        f"output tok/s per MW (facility, PUE {u.pue:g})", f"{u.output_tokens_per_s_per_facility_mw:,.0f}"
    )
    if u.kg_co2e_per_1m_output_tokens is not None:
        table.add_row(
            f"kgCO2e / 1M output tokens ({u.region})",
            banded(
                u.kg_co2e_per_1m_output_tokens,
                u.kg_co2e_per_1m_output_tokens_low,
                u.kg_co2e_per_1m_output_tokens_high,
                ".3f",
            ),
        )
    if u.energy_usd_per_1m_output_tokens is not None:
        table.add_row(
            f"energy USD / 1M output tokens at ${u.usd_per_mwh:g}/MWh",
            f"{u.energy_usd_per_1m_output_tokens:.4f}",
        )

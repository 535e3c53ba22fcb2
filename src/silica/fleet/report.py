"""The fleet simulation report, kept importable from `silica.fleet` for library users.

The drawing lives in the one report stack (`silica.report.fleet`, `silica.report.svg`); this module only
forwards to it, importing it when called so the simulator never depends on the presentation layer.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from silica.fleet.simulate import Simulation
    from silica.report.page import Meta

__all__ = ["render_html", "write_report"]


def _meta(sim: Simulation, meta: Meta | None) -> Meta:
    from silica.report.page import Meta

    if meta is not None:
        return meta
    bases = sorted({p["price_basis"] for p in sim.fleet["pools"]})
    return Meta(command=f"silica fleet simulate {sim.fleet['name']}", prices="; ".join(bases) or "none")


def render_html(sim: Simulation, title: str | None = None, meta: Meta | None = None) -> str:
    from silica.report.fleet import fleet_html

    return fleet_html(sim, _meta(sim, meta), title)


def write_report(sim: Simulation, path: Path, title: str | None = None, meta: Meta | None = None) -> Path:
    from silica.report.fleet import write_fleet_report

    return write_fleet_report(sim, path, _meta(sim, meta), title)

"""Fleet planning and simulation: inference by day, training by night, on real demand shapes.

    fleet file --spec--> FleetSpec --scenario--> Fleet (pools with capacity from the performance
    model, demand per step, training jobs) --simulate--> Simulation (per policy: metrics, series)
                                              \\--plan--> FleetPlan (cheapest mix, runners-up, why)
                                              \\--sweep--> SweepResult (mixes x policies x demands)

Policies are arrays over all steps; only training jobs go through an event loop, so the cost of a
simulation grows with pools, steps and jobs, not with chips.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from silica.catalog.schema import Catalog
from silica.fleet.demand import InferenceDemand
from silica.fleet.jobs import TrainingJob
from silica.fleet.plan import FleetPlan, plan_fleet
from silica.fleet.policies import POLICIES, Policy
from silica.fleet.scenario import build_fleet, make_policies
from silica.fleet.simulate import Fleet, FleetRun, Simulation, simulate
from silica.fleet.spec import FleetFile, load_fleet_file
from silica.fleet.sweep import SweepResult, run_sweep

__all__ = [
    "POLICIES",
    "Fleet",
    "FleetFile",
    "FleetPlan",
    "FleetRun",
    "InferenceDemand",
    "Policy",
    "Simulation",
    "SweepResult",
    "TrainingJob",
    "build_fleet",
    "load_fleet_file",
    "make_policies",
    "plan_fleet",
    "run_sweep",
    "simulate",
    "simulate_file",
]


def simulate_file(
    path: Path | str,
    policies: Sequence[str] | None = None,
    *,
    catalog: Catalog | None = None,
    latency_model: str = "fluid",
) -> Simulation:
    """Simulate the fleet file at `path` under its own policies, or the ones named.

    `catalog`: the catalog with the user's prices (the plan context's); None: the bundled one.
    `latency_model`: "fluid" or "request" (SLO attainment from the request-level simulator).
    """
    ff = load_fleet_file(Path(path))
    return simulate(
        build_fleet(ff, catalog=catalog), make_policies(ff, policies), latency_model=latency_model
    )

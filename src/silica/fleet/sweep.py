"""Run many scenarios (fleet mixes x policies x demand scenarios) in parallel, locally or on Ray.

A scenario travels as a small dict (the fleet file's path and three names), and each worker
rebuilds it from the file: nothing large or unpicklable crosses processes, and a Ray cluster only
needs Silica installed and the file readable. Results are plain dicts, recorded in Silica's store
(kind "fleet_sweep") unless the caller opts out.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from silica.errors import InputError, SilicaError
from silica.fleet.spec import DemandSpec, FleetFile, PoolSpec, as_policy, load_fleet_file

__all__ = ["Executor", "SweepResult", "plan_scenarios", "run_scenario", "run_sweep"]

Executor = Literal["local", "ray"]
OnDone = Callable[[dict[str, Any]], None]


@dataclass(frozen=True, slots=True)
class SweepResult:
    fleet_file: str
    executor: str
    scenarios: list[dict[str, Any]]
    stored: list[int] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "fleet_file": self.fleet_file,
            "executor": self.executor,
            "scenarios": self.scenarios,
            "stored_ids": self.stored,
        }


def _mixes(ff: FleetFile) -> dict[str, tuple[list[PoolSpec], tuple[str | int, ...]]]:
    sweep = ff.spec.sweep
    if sweep is not None and sweep.mixes:
        return {name: (pools, ("sweep", "mixes", name)) for name, pools in sweep.mixes.items()}
    return {"fleet": (list(ff.spec.pools), ("pools",))}


def _demands(ff: FleetFile) -> dict[str, tuple[DemandSpec, tuple[str | int, ...]]]:
    sweep = ff.spec.sweep
    if sweep is not None and sweep.demands:
        return {name: (d, ("sweep", "demands", name)) for name, d in sweep.demands.items()}
    return {"demand": (ff.spec.inference.demand, ("inference", "demand"))}


def _policies(ff: FleetFile, names: list[str] | None) -> list[str]:
    if names:
        return names
    sweep = ff.spec.sweep
    if sweep is not None and sweep.policies:
        return [as_policy(p).name for p in sweep.policies]
    return [p.name for p in ff.spec.policies()]


def plan_scenarios(ff: FleetFile, policies: list[str] | None = None) -> list[dict[str, Any]]:
    """Every (mix, policy, demand) as a task dict; bad names and demands fail here, at their line."""
    from silica.catalog import load_catalog
    from silica.fleet.scenario import check_instances, make_demand

    catalog = load_catalog()
    mixes, demands = _mixes(ff), _demands(ff)
    for pools, loc in mixes.values():
        check_instances(ff, catalog, [((*loc, i, "instance"), p.instance) for i, p in enumerate(pools)])
    for spec, loc in demands.values():
        make_demand(ff, spec, loc)
    names = _policies(ff, policies)
    for name in names:
        as_policy(name)  # type: ignore[arg-type]
    return [
        {"path": str(ff.path), "mix": m, "policy": p, "demand": d, "name": f"{m}/{p}/{d}"}
        for m, p, d in itertools.product(mixes, names, demands)
    ]


def run_scenario(task: dict[str, Any]) -> dict[str, Any]:
    """Build and simulate one scenario (runs in a worker process or a Ray task)."""
    from silica.fleet.scenario import build_fleet, make_policies
    from silica.fleet.simulate import run_policy

    out: dict[str, Any] = {k: task[k] for k in ("name", "mix", "policy", "demand")}
    try:
        ff = load_fleet_file(Path(task["path"]))
        pools, pools_loc = _mixes(ff)[task["mix"]]
        demand, demand_loc = _demands(ff)[task["demand"]]
        fleet = build_fleet(
            ff, pools=pools, pools_loc=pools_loc, demand=demand, demand_loc=demand_loc, name=task["name"]
        )
        run = run_policy(fleet, make_policies(ff, [task["policy"]])[0], series_points=1)
    except SilicaError as err:
        out["error"] = str(err)
        return out
    out["chips"] = fleet.chips
    out["pools"] = run.pools
    out["metrics"] = run.metrics
    out["demand_summary"] = fleet.demand.summary()
    return out


def _local(tasks: list[dict[str, Any]], workers: int, on_done: OnDone | None) -> list[dict[str, Any]]:
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed

    if workers <= 1 or len(tasks) == 1:
        serial = []
        for task in tasks:
            serial.append(run_scenario(task))
            if on_done:
                on_done(serial[-1])
        return serial
    # spawn, not fork: the caller may run a progress-bar thread, and forking with threads is unsafe.
    with ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        futures = {pool.submit(run_scenario, t): i for i, t in enumerate(tasks)}
        results: list[dict[str, Any]] = [{} for _ in tasks]
        for fut in as_completed(futures):
            results[futures[fut]] = fut.result()
            if on_done:
                on_done(results[futures[fut]])
    return results


def _ray(tasks: list[dict[str, Any]], workers: int, on_done: OnDone | None) -> list[dict[str, Any]]:
    try:
        import ray
    except ModuleNotFoundError:
        raise InputError(
            "--executor ray needs Ray installed.", "pip install 'silica[ray]' (or pip install ray)."
        ) from None
    address = os.environ.get("RAY_ADDRESS") or None
    started = not ray.is_initialized()
    if started:
        kwargs: dict[str, Any] = {"address": address, "include_dashboard": False, "log_to_driver": False}
        if address is None:
            kwargs["num_cpus"] = max(1, workers)
        try:
            ray.init(**kwargs)
        except (ConnectionError, RuntimeError, ValueError) as err:
            where = f"the Ray cluster at RAY_ADDRESS={address}" if address else "a local Ray"
            raise InputError(
                f"Cannot start or reach {where}: {err}.", "check RAY_ADDRESS, or unset it."
            ) from None
    try:
        remote = ray.remote(num_cpus=1)(run_scenario)
        refs = {remote.remote(t): i for i, t in enumerate(tasks)}
        results: list[dict[str, Any]] = [{} for _ in tasks]
        pending = list(refs)
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            for ref in done:
                results[refs[ref]] = ray.get(ref)
                if on_done:
                    on_done(results[refs[ref]])
    finally:
        if started:
            ray.shutdown()
    return results


def run_sweep(
    path: Path | str,
    *,
    policies: list[str] | None = None,
    executor: Executor = "local",
    workers: int | None = None,
    store: bool = True,
    on_start: Callable[[int], None] | None = None,
    on_done: OnDone | None = None,
) -> SweepResult:
    """Run every scenario of the fleet file's `sweep:` section; record each result in the store."""
    ff = load_fleet_file(Path(path))
    tasks = plan_scenarios(ff, policies)
    if on_start:
        on_start(len(tasks))
    n = workers or os.cpu_count() or 1
    if executor == "ray":
        results = _ray(tasks, n, on_done)
    elif executor == "local":
        results = _local(tasks, n, on_done)
    else:
        raise InputError(f"Unknown executor {executor!r}.", "use --executor local or --executor ray.")
    failed = [r for r in results if "error" in r]
    if failed:
        raise InputError(f"Scenario {failed[0]['name']}: {failed[0]['error']}", None)
    stored: list[int] = []
    if store:
        from silica.store import record  # another module's front door; imported only when storing

        stored = [record("fleet_sweep", r["name"], r) for r in results]
    return SweepResult(str(ff.path), executor, results, stored)

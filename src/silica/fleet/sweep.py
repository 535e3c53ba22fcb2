"""Run many scenarios (fleet mixes x policies x demand scenarios) in parallel, locally or on Ray.

The driver reads the fleet file (and any trace it names) once and resolves each (mix, demand) into a
`Fleet`: pools with capacities and prices, demand per step, jobs. A task carries that resolved fleet
and the policy, never a path, so a worker (a process here or a Ray worker on another machine) reads
no file and needs only Silica installed; on Ray each fleet is put in the object store once and
shared by its policies. Results are plain dicts, recorded in Silica's store (kind "fleet_sweep") in
one transaction, all or none, unless the caller opts out.
"""

from __future__ import annotations

import itertools
import logging
import os
import socket
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib.util import find_spec
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from silica.errors import InputError, SilicaError
from silica.fleet.policies import Policy
from silica.fleet.simulate import Fleet
from silica.fleet.spec import DemandSpec, FleetFile, PoolSpec, as_policy, load_fleet_file

__all__ = ["Executor", "SweepResult", "plan_scenarios", "probe_ray_address", "run_scenario", "run_sweep"]

Executor = Literal["local", "ray"]
OnDone = Callable[[dict[str, Any]], None]
RAY_PROBE_TIMEOUT_S = 3.0
RAY_DEFAULT_PORTS = {"ray": 10001, "": 6379}  # Ray Client (ray://) and the GCS of `ray start --head`


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
    """Every (mix, policy, demand) as a task; bad names, demands and files fail here, at their line.

    A task is {"name", "mix", "policy", "demand"} (what the result repeats), "fleet" (the resolved
    `Fleet`, shared by the tasks of one mix and demand) and "knobs" (the `Policy`).
    """
    from silica.catalog import load_catalog
    from silica.fleet.scenario import build_fleet, check_instances, make_policies

    catalog = load_catalog()
    mixes, demands = _mixes(ff), _demands(ff)
    for pools, loc in mixes.values():
        check_instances(ff, catalog, [((*loc, i, "instance"), p.instance) for i, p in enumerate(pools)])
    names = _policies(ff, policies)
    knobs = {p: make_policies(ff, [p])[0] for p in names}
    fleets: dict[tuple[str, str], Fleet] = {}
    for (m, (pools, pools_loc)), (d, (demand, demand_loc)) in itertools.product(
        mixes.items(), demands.items()
    ):
        fleets[(m, d)] = build_fleet(
            ff,
            catalog=catalog,
            pools=pools,
            pools_loc=pools_loc,
            demand=demand,
            demand_loc=demand_loc,
            name=f"{m}/{d}",
        )
    return [
        {
            "name": f"{m}/{p}/{d}",
            "mix": m,
            "policy": p,
            "demand": d,
            "fleet": fleets[(m, d)],
            "knobs": knobs[p],
        }
        for m, p, d in itertools.product(mixes, names, demands)
    ]


def _meta(task: dict[str, Any]) -> dict[str, Any]:
    return {k: task[k] for k in ("name", "mix", "policy", "demand")}


def _simulate(meta: dict[str, Any], fleet: Fleet, policy: Policy) -> dict[str, Any]:
    """Simulate one scenario (in a worker process or a Ray task): reads no file."""
    from silica.fleet.simulate import job_warnings, run_policy

    out = dict(meta)
    try:
        run = run_policy(fleet, policy, series_points=1)
    except SilicaError as err:
        out["error"] = str(err)
        return out
    out["chips"] = fleet.chips
    out["pools"] = run.pools
    out["metrics"] = run.metrics
    out["demand_summary"] = fleet.demand.summary()
    out["warnings"] = list(job_warnings(fleet))
    return out


def run_scenario(task: dict[str, Any]) -> dict[str, Any]:
    """Simulate one task of `plan_scenarios`."""
    return _simulate(_meta(task), task["fleet"], task["knobs"])


MAX_WORKERS = 1024  # processes or Ray tasks at once; past that, start-up costs more than it buys


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


def probe_ray_address(address: str, timeout_s: float = RAY_PROBE_TIMEOUT_S) -> None:
    """Fail fast, in one line, if nothing listens at a Ray address (`ray.init` would retry for minutes).

    `host:port` is the cluster's GCS (port 6379 if none), `ray://host:port` its Ray Client server
    (port 10001 if none). "auto" and "local" name no host and are left to Ray.
    """
    if address in ("auto", "local"):
        return
    try:
        parts = urlsplit(address if "://" in address else f"//{address}")
        host, port = parts.hostname, parts.port
    except ValueError:
        host, port = None, None
    if not host:
        raise InputError(
            f"RAY_ADDRESS={address!r} is not a Ray address.", "use host:port or ray://host:port, or unset it."
        )
    port = port or RAY_DEFAULT_PORTS.get(parts.scheme, 6379)
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            pass
    except OSError as err:
        why = "timed out" if isinstance(err, TimeoutError) else err.strerror or type(err).__name__
        raise InputError(
            f"Cannot reach the Ray cluster at RAY_ADDRESS={address} ({host}:{port}: {why}).",
            "start the cluster or correct RAY_ADDRESS; unset it to run on a local Ray.",
        ) from None


def _ray(tasks: list[dict[str, Any]], workers: int, on_done: OnDone | None) -> list[dict[str, Any]]:
    if find_spec("ray") is None:
        raise InputError(
            "--executor ray needs Ray installed.", "pip install 'silica[ray]' (or pip install ray)."
        )
    address = os.environ.get("RAY_ADDRESS") or None
    if address is not None:
        probe_ray_address(address)
    import ray

    started = not ray.is_initialized()
    if started:
        kwargs: dict[str, Any] = {
            "address": address,
            "include_dashboard": False,
            "log_to_driver": False,
            "logging_level": logging.WARNING,  # Ray's INFO lines would break the one-line error contract
        }
        if address is None:
            kwargs["num_cpus"] = max(1, workers)
        try:
            ray.init(**kwargs)
        except (ConnectionError, RuntimeError, ValueError) as err:
            where = f"the Ray cluster at RAY_ADDRESS={address}" if address else "a local Ray"
            first = (str(err).strip().splitlines() or [type(err).__name__])[0].rstrip(".")
            raise InputError(
                f"Cannot start or reach {where}: {first}.", "check RAY_ADDRESS, or unset it."
            ) from None
    try:
        remote = ray.remote(num_cpus=1)(_simulate)
        shared: dict[int, Any] = {}  # one object-store copy per fleet, whatever its policies
        for t in tasks:
            if id(t["fleet"]) not in shared:
                shared[id(t["fleet"])] = ray.put(t["fleet"])
        refs = {remote.remote(_meta(t), shared[id(t["fleet"])], t["knobs"]): i for i, t in enumerate(tasks)}
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
    """Run every scenario of the fleet file's `sweep:` section; record the results in the store."""
    if workers is not None and not 1 <= workers <= MAX_WORKERS:
        from silica.errors import InputError

        raise InputError(
            f"--workers must be 1 to {MAX_WORKERS}, got {workers}.",
            "pass --workers 1 or more (default: one per CPU).",
        )
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
        from silica.store import open_store  # another module's front door; imported only when storing

        # One transaction for the whole sweep: all its results are recorded, or none is.
        stored = open_store().record_many([("fleet_sweep", r["name"], r) for r in results])
    return SweepResult(str(ff.path), executor, results, stored)

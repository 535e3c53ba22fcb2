"""Size each instance type to tail-latency SLOs by simulation: the cheapest replica count (and
engine chunk size) whose simulated p90 TTFT and p99 time between tokens meet the targets, for
aggregated serving and for disaggregated prefill/decode pools.

The average-based planner (`plan.inference_search`) sizes a load by its mean token rate; it cannot
see queueing under bursts, prefill chunks stalling decodes, or KV-cache pressure, so its cheapest
option can miss a p99 target that another instance type meets. This module starts from the
comparison's chosen layout per instance type and adds instances until the simulated tails meet the
targets (doubling, then bisection), trying a smaller prefill chunk when decode stalls set the tail.
Replicas share arrivals round-robin (constant time per arrival, so a search over the whole catalog
stays fast); the tails under a load-aware balancer are no worse.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from silica.catalog.schema import Catalog, PurchaseOption
from silica.cost import SECONDS_PER_MONTH
from silica.errors import InputError
from silica.models import load_model
from silica.perf.calibration import Calibration
from silica.plan.compare import Comparison
from silica.plan.targets import resolve_targets
from silica.results import InferenceEstimate
from silica.simulate.deploy import table_for
from silica.simulate.disagg import KvTransfer, simulate_disaggregated
from silica.simulate.engine import EngineSettings
from silica.simulate.run import SimResult, simulate
from silica.simulate.steptime import StepTable
from silica.simulate.traffic import Requests, synthetic
from silica.workload import InferenceWorkload

__all__ = ["SizedOption", "SloSizing", "size_estimate", "size_to_slo"]

DEFAULT_CHUNK = 2048  # vLLM V1's default token budget per step
SMALLER_CHUNKS = (1024, 512, 256, 128, 64)
PREFILL_BUDGET = 8192  # a prefill-only replica's token budget per step
MAX_UNITS = 64  # deployment units (the planner's instance groups) searched per pool


@dataclass(frozen=True, slots=True)
class SizedOption:
    """One instance type sized to the SLOs (or why it cannot meet them)."""

    instance: str
    mode: str  # "aggregated" or "disaggregated"
    layout: str
    meets: bool
    instances: int | None
    prefill_instances: int | None = None
    decode_instances: int | None = None
    max_batched_tokens: int | None = None
    usd_per_hour: float | None = None
    usd_per_month: float | None = None
    ttft_p90_ms: float | None = None
    tbt_p99_ms: float | None = None
    average_instances: int | None = None  # what the average-based planner asked for
    kv_transfer: KvTransfer | None = None
    reason: str = ""

    def to_dict(self) -> dict[str, Any]:
        out = {k: getattr(self, k) for k in self.__slots__ if k != "kv_transfer"}
        out["kv_transfer"] = self.kv_transfer.to_dict() if self.kv_transfer else None
        return out


@dataclass(frozen=True, slots=True)
class SloSizing:
    """Every instance type sized by simulation, cheapest first, beside the average-based order."""

    model: str
    rate: float
    ttft_p90_ms: float
    tbt_p99_ms: float
    traffic: str
    options: tuple[SizedOption, ...]
    average_order: tuple[str, ...]
    simulations: int
    seconds: float
    notes: tuple[str, ...] = field(default=())

    @property
    def slo_order(self) -> tuple[str, ...]:
        """Instance types by the cost of their cheapest SLO-meeting deployment (either mode)."""
        seen: list[str] = []
        for o in self.options:
            if o.meets and o.usd_per_hour is not None and o.instance not in seen:
                seen.append(o.instance)
        return tuple(seen)

    def to_dict(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "rate_req_per_s": self.rate,
            "ttft_p90_ms": self.ttft_p90_ms,
            "tbt_p99_ms": self.tbt_p99_ms,
            "traffic": self.traffic,
            "options": [o.to_dict() for o in self.options],
            "average_order": list(self.average_order),
            "slo_order": list(self.slo_order),
            "simulations": self.simulations,
            "seconds": self.seconds,
            "notes": list(self.notes),
        }


def _meets(r: SimResult, ttft: float, tbt: float) -> bool:
    return r.completed == r.requests and r.ttft.p90 <= ttft and r.tbt.p99 <= tbt


def _search(
    check: Callable[[int], tuple[bool, SimResult]], lower: int, upper: int = MAX_UNITS
) -> tuple[int | None, SimResult | None]:
    """The fewest units in [lower, upper] that pass `check` (assumed monotone): double, then bisect."""
    n = max(1, lower)
    if n > upper:
        return None, None
    ok, res = check(n)
    fail = n - 1
    while not ok:
        if n >= upper:
            return None, res
        fail, n = n, min(2 * n, upper)
        ok, res = check(n)
    best, best_res = n, res
    while best - fail > 1:
        mid = (best + fail) // 2
        ok, res = check(mid)
        if ok:
            best, best_res = mid, res
        else:
            fail = mid
    return best, best_res


class _Sizer:
    def __init__(self, reqs: Requests, ttft: float, tbt: float) -> None:
        self.reqs = reqs
        self.ttft = ttft
        self.tbt = tbt
        self.runs = 0

    def aggregated(self, est: InferenceEstimate, table: StepTable, average: int | None) -> SizedOption:
        dp, per_unit = int(est.dp or 1), int(est.count)
        base = SizedOption(
            instance=est.instance,
            mode="aggregated",
            layout=_layout(est),
            meets=False,
            instances=None,
            average_instances=average,
        )
        lower = max(
            1, math.ceil(self.reqs.rate * float(self.reqs.output.mean()) / (dp * table.max_output_tok_s()))
        )
        best: SizedOption | None = None
        last: SimResult | None = None
        for chunk in dict.fromkeys((DEFAULT_CHUNK, _fitting_chunk(table, self.tbt))):
            settings = EngineSettings(max_num_seqs=table.max_num_seqs, max_batched_tokens=chunk)

            def check(units: int, settings: EngineSettings = settings) -> tuple[bool, SimResult]:
                self.runs += 1
                r = simulate(self.reqs, table, replicas=units * dp, settings=settings)
                return _meets(r, self.ttft, self.tbt), r

            units, res = _search(
                check, lower, (best.instances // per_unit - 1) if best and best.instances else MAX_UNITS
            )
            last = res or last
            if units is not None and res is not None:
                usd = None if est.usd_per_hour is None else est.usd_per_hour * units
                option = replace(
                    base,
                    meets=True,
                    instances=units * per_unit,
                    max_batched_tokens=chunk,
                    usd_per_hour=usd,
                    usd_per_month=None if usd is None else usd * SECONDS_PER_MONTH / 3600,
                    ttft_p90_ms=res.ttft.p90,
                    tbt_p99_ms=res.tbt.p99,
                )
                best = option  # the search was bounded by the previous best: this one is cheaper
                if units == lower:
                    break  # already the fewest the throughput allows
        if best is not None:
            return best
        assert last is not None
        return replace(
            base,
            ttft_p90_ms=last.ttft.p90,
            tbt_p99_ms=last.tbt.p99,
            reason=f"misses the targets even at {MAX_UNITS * per_unit} instances "
            f"(p90 TTFT {last.ttft.p90:,.0f} ms, p99 TBT {last.tbt.p99:,.1f} ms)",
        )

    def disaggregated(self, est: InferenceEstimate, table: StepTable) -> SizedOption:
        dp, per_unit = int(est.dp or 1), int(est.count)
        base = SizedOption(
            instance=est.instance, mode="disaggregated", layout=_layout(est), meets=False, instances=None
        )
        if not (table.link_bytes_per_s > 0 and math.isfinite(table.link_bytes_per_s)):
            return replace(base, reason="no published network bandwidth")
        prompt_only = Requests(self.reqs.arrival, self.reqs.prompt, np.ones(len(self.reqs)), self.reqs.source)
        p_set = EngineSettings(max_num_seqs=table.max_num_seqs, max_batched_tokens=PREFILL_BUDGET)
        # The prefill replica returns the first token, so TTFT does not wait for the KV transfer:
        # the prefill pool is sized on TTFT alone, then the decode pool on the tails of the whole.

        def check_p(units: int) -> tuple[bool, SimResult]:
            self.runs += 1
            r = simulate(prompt_only, table, replicas=units * dp, settings=p_set)
            return r.completed == r.requests and r.ttft.p90 <= self.ttft, r

        x, _ = _search(check_p, 1)
        if x is None:
            return replace(base, reason="prefill pool misses the TTFT target")
        d_set = EngineSettings(max_num_seqs=table.max_num_seqs, max_batched_tokens=DEFAULT_CHUNK)
        transfer: list[KvTransfer] = []

        def check_d(units: int) -> tuple[bool, SimResult]:
            self.runs += 1
            r, kv = simulate_disaggregated(
                self.reqs,
                table,
                table,
                prefill_replicas=x * dp,
                decode_replicas=units * dp,
                decode_instances=units * per_unit,
                prefill_settings=p_set,
                decode_settings=d_set,
                balancer="round-robin",
            )
            transfer[:] = [kv]
            return _meets(r, self.ttft, self.tbt), r

        lower = max(
            1, math.ceil(self.reqs.rate * float(self.reqs.output.mean()) / (dp * table.max_output_tok_s()))
        )
        y, res = _search(check_d, lower)
        if y is None or res is None:
            return replace(base, reason="decode pool misses the TBT target")
        check_d(y)  # the transfer summary of the chosen size
        units = x + y
        usd = None if est.usd_per_hour is None else est.usd_per_hour * units
        return replace(
            base,
            meets=True,
            instances=units * per_unit,
            prefill_instances=x * per_unit,
            decode_instances=y * per_unit,
            max_batched_tokens=PREFILL_BUDGET,
            usd_per_hour=usd,
            usd_per_month=None if usd is None else usd * SECONDS_PER_MONTH / 3600,
            ttft_p90_ms=res.ttft.p90,
            tbt_p99_ms=res.tbt.p99,
            kv_transfer=transfer[0] if transfer else None,
        )


def _fitting_chunk(table: StepTable, tbt_ms: float) -> int:
    """The largest prefill chunk whose step (with a small decode batch beside it) takes at most 3/4
    of the time-between-tokens target: a step that carries a chunk is a decode step for everyone
    running, so a smaller chunk is what lets a loaded replica meet a p99 TBT target at all."""
    for chunk in (DEFAULT_CHUNK, *SMALLER_CHUNKS):
        if table.prefill_s(chunk + 32) * 1e3 <= 0.75 * tbt_ms:
            return chunk
    return SMALLER_CHUNKS[-1]


def _layout(est: InferenceEstimate) -> str:
    parts = [f"tp={est.tp}"]
    if (est.pp or 1) > 1:
        parts.append(f"pp={est.pp}")
    if (est.ep or 1) > 1:
        parts.append(f"ep={est.ep}")
    parts.append(
        f"{est.dp} replica{'s' if (est.dp or 1) > 1 else ''} per {est.count} instance{'s' if est.count > 1 else ''}"
    )
    return ", ".join(parts)


def size_to_slo(
    comparison: Comparison,
    *,
    rate: float,
    ttft_p90_ms: float,
    tbt_p99_ms: float,
    catalog: Catalog | None = None,
    calibration: Calibration | None = None,
    option: PurchaseOption | None = None,
    region: str | None = None,
    engine: str | None = None,
    requests: int = 2000,
    seed: int = 0,
    arrival: str = "poisson",
    cv: float = 1.0,
    disaggregated: bool = True,
    trace: Requests | None = None,
) -> SloSizing:
    """Size every feasible option of `comparison` (an inference comparison) to the tail targets."""
    for name, value in (("--ttft-p90-ms", ttft_p90_ms), ("--tbt-p99-ms", tbt_p99_ms), ("--rate", rate)):
        if not (value > 0 and math.isfinite(value)):
            raise InputError(
                f"{name} must be a finite positive number, got {value}.", f"pass {name} above 0."
            )
    if comparison.task != "inference":
        raise InputError("SLO sizing is for serving.", "drop --ttft-p90-ms/--tbt-p99-ms for training.")
    feasible = [r for r in comparison.results if isinstance(r, InferenceEstimate) and r.feasible and r.tp]
    return _size(
        comparison.model,
        InferenceWorkload(**comparison.workload),
        feasible,
        rate=rate,
        ttft_p90_ms=ttft_p90_ms,
        tbt_p99_ms=tbt_p99_ms,
        targets_from={"catalog": catalog, "calibration": calibration, "option": option, "region": region}
        | {"engine": engine},
        reqs_from={"requests": requests, "seed": seed, "arrival": arrival, "cv": cv, "trace": trace},
        disaggregated=disaggregated,
    )


def size_estimate(
    estimate: InferenceEstimate,
    workload: InferenceWorkload,
    *,
    rate: float,
    ttft_p90_ms: float,
    tbt_p99_ms: float,
    catalog: Catalog | None = None,
    calibration: Calibration | None = None,
    option: PurchaseOption | None = None,
    region: str | None = None,
    engine: str | None = None,
    requests: int = 2000,
    seed: int = 0,
    disaggregated: bool = True,
) -> SloSizing:
    """Size one estimated deployment (`silica estimate`'s) to the tail targets: whether it meets
    them at `rate` and how many of its instances it needs, aggregated and disaggregated."""
    for name, value in (("--ttft-p90-ms", ttft_p90_ms), ("--tbt-p99-ms", tbt_p99_ms), ("--rate", rate)):
        if not (value > 0 and math.isfinite(value)):
            raise InputError(
                f"{name} must be a finite positive number, got {value}.", f"pass {name} above 0."
            )
    if not (estimate.feasible and estimate.tp):
        raise InputError(
            f"{estimate.model} cannot be served on {estimate.instance}: {'; '.join(estimate.reasons) or 'infeasible'}.",
            "choose a deployment that fits before sizing it to tail targets.",
        )
    return _size(
        estimate.model,
        workload,
        [estimate],
        rate=rate,
        ttft_p90_ms=ttft_p90_ms,
        tbt_p99_ms=tbt_p99_ms,
        targets_from={"catalog": catalog, "calibration": calibration, "option": option, "region": region}
        | {"engine": engine},
        reqs_from={"requests": requests, "seed": seed, "arrival": "poisson", "cv": 1.0, "trace": None},
        disaggregated=disaggregated,
    )


def _size(
    model: str,
    wl: InferenceWorkload,
    feasible: list[InferenceEstimate],
    *,
    rate: float,
    ttft_p90_ms: float,
    tbt_p99_ms: float,
    targets_from: dict[str, Any],
    reqs_from: dict[str, Any],
    disaggregated: bool,
) -> SloSizing:
    started = time.perf_counter()
    spec = load_model(model)
    trace: Requests | None = reqs_from["trace"]
    requests, seed, arrival, cv = (reqs_from[k] for k in ("requests", "seed", "arrival", "cv"))
    reqs = trace or synthetic(
        rate=rate,
        n=requests,
        input_len=wl.input_len,
        output_len=wl.output_len,
        arrival=arrival,
        cv=cv,
        seed=seed,
    )
    targets = {t.instance.id: t for t in resolve_targets([r.instance for r in feasible], **targets_from)}
    sizer = _Sizer(reqs, ttft_p90_ms, tbt_p99_ms)
    options: list[SizedOption] = []
    for est in feasible:
        table = table_for(spec, est, targets[est.instance], wl)
        options.append(sizer.aggregated(est, table, est.instances_for_load))
        if disaggregated:
            options.append(sizer.disaggregated(est, table))
    options.sort(
        key=lambda o: (not o.meets, o.usd_per_hour is None, o.usd_per_hour or 0.0, o.instance, o.mode)
    )
    average = tuple(r.instance for r in feasible if r.price is not None)
    return SloSizing(
        model=spec.id,
        rate=reqs.rate if trace is not None else rate,
        ttft_p90_ms=ttft_p90_ms,
        tbt_p99_ms=tbt_p99_ms,
        traffic=reqs.source,
        options=tuple(options),
        average_order=average,
        simulations=sizer.runs,
        seconds=time.perf_counter() - started,
        notes=_differences(options, average),
    )


def _differences(options: list[SizedOption], average: tuple[str, ...]) -> tuple[str, ...]:
    """Where sizing by simulated tails disagrees with sizing by averages, in words."""
    notes = []
    agg = {o.instance: o for o in options if o.mode == "aggregated"}
    for inst in average:
        o = agg.get(inst)
        if o is None or o.average_instances is None:
            continue
        if not o.meets:
            notes.append(
                f"{inst}: the average-based plan ({o.average_instances} instances) cannot meet the tail targets: {o.reason}"
            )
        elif (o.instances or 0) > o.average_instances:
            notes.append(
                f"{inst}: needs {o.instances} instances for the tails, not the {o.average_instances} the averages ask for"
            )
    slo_first = next((o for o in options if o.meets and o.usd_per_hour is not None), None)
    if slo_first is not None and average and slo_first.instance != average[0]:
        notes.append(
            f"cheapest by the averages is {average[0]}; cheapest meeting the tails is {slo_first.instance} ({slo_first.mode})"
        )
    for o in options:
        if o.mode == "disaggregated" and o.meets:
            a = agg.get(o.instance)
            if a is not None and (not a.meets or (a.usd_per_hour or math.inf) > (o.usd_per_hour or math.inf)):
                kv = o.kv_transfer
                notes.append(
                    f"{o.instance}: disaggregated {o.prefill_instances}P+{o.decode_instances}D beats aggregated"
                    + (
                        f" (KV transfer {kv.mean_ms:.1f} ms, {kv.bytes_per_request / 1e6:.0f} MB per request)"
                        if kv
                        else ""
                    )
                )
    return tuple(notes)

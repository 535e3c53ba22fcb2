"""Turn a validated fleet file into a `Fleet` the simulator can run: demand, jobs, pools, policies.

Everything that can be wrong with the file's meaning (an unknown instance or model, a demand
without a peak, a trace that does not parse) is reported here with the file, line and field.
The planner and the sweep call `build_fleet` with other pools or demands than the file's own.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import UTC, datetime

import numpy as np

from silica.catalog import load_catalog
from silica.catalog.schema import Catalog
from silica.cost import HOURS_PER_DAY
from silica.errors import DataFileError, InputError, SilicaError, UnknownNameError
from silica.fleet import demand as dm
from silica.fleet.capacity import PoolRequest, resolve_pools
from silica.fleet.jobs import TrainingJob, from_philly
from silica.fleet.policies import POLICIES, Policy
from silica.fleet.simulate import Fleet
from silica.fleet.spec import DemandSpec, FleetFile, PolicySpec, PoolSpec
from silica.fleet.traces import RateShape, load_azure_llm, load_mooncake, load_philly, load_request_csv
from silica.workload import InferenceWorkload, TrainingWorkload

__all__ = ["build_fleet", "check_instances", "make_demand", "make_jobs", "make_policies"]

Loc = tuple[str | int, ...]
DEFAULT_DAYS = 7.0
MAX_STEPS = 1_000_000  # about 1.9 years of 1-minute steps: beyond it a file is a mistake, not a fleet
MAX_JOBS = 1_000_000  # training jobs after `repeat` (and the Philly window) are expanded


def check_instances(ff: FleetFile, catalog: Catalog, names: Sequence[tuple[Loc, str]]) -> None:
    """Every instance id named in the file must be in the catalog: fail at its line, with suggestions."""
    import difflib

    for loc, name in names:
        if name not in catalog.instances:
            close = difflib.get_close_matches(name, list(catalog.instances), n=3, cutoff=0.5)
            hint = f"Did you mean {', '.join(repr(c) for c in close)}? " if close else ""
            raise ff.error(loc, f"unknown instance {name!r}.", hint + "run `silica catalog instances`.")


def _horizon_hours(ff: FleetFile) -> tuple[float, Loc] | None:
    """The horizon the file states (days or hours) and the field that states it; None if neither."""
    spec = ff.spec
    if spec.days is not None and spec.hours is not None:
        raise ff.error(("hours",), "give days or hours, not both.", "remove one of them.")
    if spec.hours is not None:
        return spec.hours, ("hours",)
    if spec.days is not None:
        return spec.days * HOURS_PER_DAY, ("days",)
    return None


def _check_steps(
    ff: FleetFile,
    steps: float,
    what: str,
    loc: Loc,
    fix: str = "use longer steps (step_minutes) or a shorter horizon (days or hours).",
) -> int:
    """`steps` (possibly fractional) as a whole number of steps, at least one and at most MAX_STEPS."""
    step_min = ff.spec.step_minutes
    if not steps >= 1.0 - 1e-9:
        raise ff.error(
            loc,
            f"{what} is shorter than one step of {step_min:g} min.",
            "give a horizon of at least one step, or shorter steps (step_minutes).",
        )
    if not steps <= MAX_STEPS:  # also catches a horizon too long to count
        if loc in (("days",), ("hours",)) and step_min < 1.0:
            loc = ("step_minutes",)  # a sub-minute step is the likelier slip than the horizon
        raise ff.error(
            loc,
            f"{what} at {step_min:g}-minute steps is {_count(steps)} steps; the limit is {MAX_STEPS:,} steps.",
            fix,
        )
    return max(1, round(steps))


def _count(steps: float) -> str:
    return f"{steps:,.0f}" if steps < 1e15 else f"{steps:.3g}"


def _steps(ff: FleetFile, natural: int | None) -> int:
    """Steps in the horizon: the file's days or hours, else a replay's own length, else 7 days."""
    stated = _horizon_hours(ff)
    if stated is None and natural is not None:
        return natural
    hours, loc = stated if stated is not None else (DEFAULT_DAYS * HOURS_PER_DAY, ("step_minutes",))
    return _check_steps(ff, hours * 60.0 / ff.spec.step_minutes, f"a horizon of {hours:g} h", loc)


def _replay_trace(ff: FleetFile, spec: DemandSpec, loc: Loc, step_s: float) -> dm.InferenceDemand:
    """A raw trace binned into steps: only the stated horizon of it, or all of it within MAX_STEPS."""
    path = ff.resolve(spec.trace or "")
    loader = {"csv": load_request_csv, "azure": load_azure_llm, "mooncake": load_mooncake}[spec.trace_format]
    trace = loader(path)
    if _horizon_hours(ff) is not None:
        steps = _steps(ff, None)
        replayed = dm.replay(trace, step_s, spec.scale, max_steps=steps)
    else:
        span = trace.span_s
        _check_steps(
            ff,
            span / step_s + 1.0,
            f"the trace {path.name} (spanning {span:g} s)",
            (*loc, "trace"),
            "use longer steps (step_minutes), or set hours: (or days:) to replay only their length of it.",
        )
        replayed = dm.replay(trace, step_s, spec.scale)
        steps = replayed.steps
    return _rescaled(_fit(replayed, steps), spec)


def _fit(demand: dm.InferenceDemand, steps: int) -> dm.InferenceDemand:
    """Cut a replay to the horizon, or repeat it (saying so) when the horizon is longer."""
    if demand.steps == steps:
        return demand
    reps = math.ceil(steps / demand.steps)
    note = (
        (f"the {demand.steps}-step replay is repeated {reps} times to fill the horizon",) if reps > 1 else ()
    )

    def cut(a: dm.FloatArray) -> dm.FloatArray:
        return np.asarray(np.tile(a, reps)[:steps], dtype=np.float64)

    return dm.InferenceDemand(
        name=demand.name,
        source=demand.source,
        step_s=demand.step_s,
        requests_per_s=cut(demand.requests_per_s),
        input_tokens_per_s=cut(demand.input_tokens_per_s),
        output_tokens_per_s=cut(demand.output_tokens_per_s),
        notes=(*demand.notes, *note),
    )


def _rescaled(demand: dm.InferenceDemand, spec: DemandSpec) -> dm.InferenceDemand:
    peak = demand.output_tokens_per_s.max(initial=0.0)
    if spec.peak_output_tokens_per_s is not None:
        k = spec.peak_output_tokens_per_s / peak if peak > 0 else 1.0
    elif spec.peak_requests_per_s is not None:
        top = demand.requests_per_s.max(initial=0.0)
        k = spec.peak_requests_per_s / top if top > 0 else 1.0
    else:
        return demand
    return dm.InferenceDemand(
        name=demand.name,
        source=demand.source,
        step_s=demand.step_s,
        requests_per_s=demand.requests_per_s * k,
        input_tokens_per_s=demand.input_tokens_per_s * k,
        output_tokens_per_s=demand.output_tokens_per_s * k,
        notes=(*demand.notes, f"rescaled x{k:.4g} to the stated peak"),
    )


def _shape(ff: FleetFile, spec: DemandSpec, loc: Loc) -> RateShape:
    if spec.shape == "diurnal":
        return dm.diurnal_shape(spec.peak_to_trough, spec.peak_hour, spec.weekend_factor)
    if spec.shape == "flat":
        return RateShape("flat", "flat demand (no shape)", np.array([0.0]), np.array([1.0]), 86400.0)
    known = (*dm.BUNDLED_SHAPES, *dm.BUNDLED_TRACES, "diurnal", "flat")
    if spec.shape not in dm.BUNDLED_SHAPES:
        raise ff.error(
            (*loc, "shape"), f"unknown demand shape {spec.shape!r}.", f"use one of {', '.join(known)}."
        )
    return dm.bundled_shape(spec.shape)


def _lengths(ff: FleetFile, spec: DemandSpec, loc: Loc) -> dm.Lengths:
    if spec.input_len is not None and spec.output_len is not None:
        return dm.Lengths(spec.input_len, spec.output_len, "stated in the fleet file")
    if spec.lengths is None:
        raise ff.error(
            loc,
            "a demand shape needs request lengths.",
            "set input_len and output_len, or lengths: azure:conv.",
        )
    try:
        found = dm.lengths_of(spec.lengths)
    except SilicaError as err:
        raise ff.wrap((*loc, "lengths"), err) from None
    return dm.Lengths(spec.input_len or found.input_len, spec.output_len or found.output_len, found.source)


def make_demand(ff: FleetFile, spec: DemandSpec, loc: Loc = ("inference", "demand")) -> dm.InferenceDemand:
    """Demand per step over the file's horizon; a demand too large for floating point is an error."""
    with np.errstate(over="ignore", invalid="ignore"):
        demand = _make_demand(ff, spec, loc)
    rates = (demand.requests_per_s, demand.input_tokens_per_s, demand.output_tokens_per_s)
    if not all(np.isfinite(a).all() for a in rates):
        raise ff.error(
            loc,
            "the demand overflows floating point (a rate or a token count reaches infinity).",
            "check the peak, scale and request lengths, and their units.",
        )
    return demand


def _make_demand(ff: FleetFile, spec: DemandSpec, loc: Loc) -> dm.InferenceDemand:
    step_s = ff.spec.step_minutes * 60.0
    try:
        if spec.trace is not None:
            return _replay_trace(ff, spec, loc, step_s)
        if spec.shape in dm.BUNDLED_TRACES:
            replayed = dm.replay_bundled(spec.shape, step_s, spec.scale)
            return _rescaled(_fit(replayed, _steps(ff, replayed.steps)), spec)
        shape = _shape(ff, spec, loc)
        lengths = _lengths(ff, spec, loc)
        if spec.peak_requests_per_s is not None:
            peak = spec.peak_requests_per_s
        elif spec.peak_output_tokens_per_s is not None:
            peak = spec.peak_output_tokens_per_s / lengths.output_len
        else:
            raise ff.error(
                loc, "a demand shape needs a peak.", "set peak_requests_per_s or peak_output_tokens_per_s."
            )
        return dm.profile(
            shape,
            steps=_steps(ff, None),
            step_s=step_s,
            peak_requests_per_s=peak,
            lengths=lengths,
            burst=spec.burstiness,
            seed=spec.seed,
            start_s=spec.start_day * 86400.0,
        )
    except DataFileError:
        raise  # already names its file, line and field (the fleet file's, or a trace's)
    except SilicaError as err:
        raise ff.wrap(loc, err) from None


def make_jobs(ff: FleetFile) -> list[TrainingJob]:
    training = ff.spec.training
    if training is None:
        return []
    jobs: list[TrainingJob] = []
    total = 0
    for i, job in enumerate(training.jobs):
        total += job.repeat
        if total > MAX_JOBS:
            raise ff.error(
                ("training", "jobs", i, "repeat"),
                f"the jobs up to {job.name!r} expand to {total:,} training jobs; the limit is {MAX_JOBS:,}.",
                "use fewer repeats, or fewer, larger jobs.",
            )
        for k in range(job.repeat):
            start = job.earliest_start_hours + k * job.every_hours
            try:
                jobs.append(
                    TrainingJob(
                        name=job.name if job.repeat == 1 else f"{job.name}-{k + 1}",
                        chips=job.chips,
                        hours=job.hours,
                        earliest_start_h=start,
                        deadline_h=None
                        if job.deadline_hours is None
                        else job.deadline_hours + k * job.every_hours,
                        checkpointable=job.checkpointable,
                    )
                )
            except InputError as err:
                raise ff.wrap(("training", "jobs", i), err) from None
    if training.philly is not None:
        ph = training.philly
        try:
            trace = load_philly(ff.resolve(ph.path))
            window = (
                None
                if ph.start is None
                else datetime(ph.start.year, ph.start.month, ph.start.day, tzinfo=UTC)
            )
            jobs += from_philly(
                trace,
                start=window,
                days=ph.days,
                chips_per_gpu=ph.chips_per_gpu,
                speedup=ph.speedup,
                deadline_slack=ph.deadline_slack,
                checkpointable=ph.checkpointable,
                max_jobs=ph.max_jobs,
            )
        except DataFileError:
            raise
        except SilicaError as err:
            raise ff.wrap(("training", "philly"), err) from None
        if len(jobs) > MAX_JOBS:
            raise ff.error(
                ("training", "philly"),
                f"with the Philly window the fleet has {len(jobs):,} training jobs; the limit is {MAX_JOBS:,}.",
                "set training.philly.max_jobs, or a shorter window (days).",
            )
    return jobs


def make_policies(ff: FleetFile, names: Sequence[str] | None = None) -> list[Policy]:
    """The file's policies, or the named ones (keeping the file's knobs for a policy it names)."""
    own: dict[str, PolicySpec] = {p.name: p for p in ff.spec.policies()}
    if not names:
        return [Policy(**p.model_dump()) for p in ff.spec.policies()]
    out = []
    for name in names:
        if name not in POLICIES:
            raise UnknownNameError("policy", name, POLICIES, f"use one of {', '.join(POLICIES)}.")
        spec = own.get(name)
        out.append(Policy(**spec.model_dump()) if spec else Policy(name))
    return out


def _reference(ff: FleetFile, catalog: Catalog) -> str | None:
    """The instance the jobs' `hours` are measured on: `training.reference_instance`, else the file's
    first pool that trains. The planner and the sweep replace the pools, so without this default the
    jobs' hours would silently be read on whichever candidate came first."""
    from silica.fleet.capacity import can_train

    training = ff.spec.training
    if training is not None and training.reference_instance is not None:
        return training.reference_instance
    trains = (
        p.instance
        for p in ff.spec.pools
        if p.instance in catalog.instances and p.train is not False and can_train(catalog, p.instance)
    )
    return next(trains, None)


def build_fleet(
    ff: FleetFile,
    *,
    catalog: Catalog | None = None,
    pools: Sequence[PoolSpec] | None = None,
    pools_loc: Loc = ("pools",),
    demand: DemandSpec | None = None,
    demand_loc: Loc = ("inference", "demand"),
    name: str | None = None,
) -> Fleet:
    """The fleet of the file, or of other pools and demand (what plan and sweep vary)."""
    from silica.models import load_model

    spec = ff.spec
    catalog = catalog or load_catalog()
    pool_specs = list(spec.pools if pools is None else pools)
    if not pool_specs:
        raise ff.error(pools_loc, "the fleet has no pools.", "add pools: with instance and count.")
    check_instances(
        ff, catalog, [((*pools_loc, i, "instance"), p.instance) for i, p in enumerate(pool_specs)]
    )
    model = spec.inference.model
    if "/" in model or model.endswith(".json"):
        model = str(ff.resolve(model))
    try:
        load_model(model)
    except SilicaError as err:
        raise ff.wrap(("inference", "model"), err) from None
    load = make_demand(ff, demand or spec.inference.demand, demand_loc)
    workload = InferenceWorkload(
        input_len=max(1, round(load.mean_input_len)),
        output_len=max(1, round(load.mean_output_len)),
        ttft_slo_ms=spec.inference.ttft_slo_ms,
        tpot_slo_ms=spec.inference.tpot_slo_ms,
        weight_dtype=spec.inference.dtype,
        compute_dtype=spec.inference.dtype,
    )
    training = spec.training
    jobs = make_jobs(ff)
    if training is not None and training.reference_instance is not None:
        check_instances(ff, catalog, [(("training", "reference_instance"), training.reference_instance)])
    try:
        resolved = resolve_pools(
            [PoolRequest(p.instance, p.count, p.purchase, p.price_usd_per_hour, p.train) for p in pool_specs],
            catalog=catalog,
            model=model,
            workload=workload,
            training_model=None if training is None else training.model,
            training_workload=None
            if training is None or training.model is None
            else TrainingWorkload(training.seq_len),
            reference_instance=_reference(ff, catalog),
            region=spec.region,
            has_jobs=bool(jobs),
        )
    except SilicaError as err:
        raise ff.wrap(("training",), err) from None
    notes = [f"inference request for capacity: {workload.input_len} in / {workload.output_len} out tokens"]
    if jobs and not any(p.train_speed for p in resolved):
        notes.append(f"no pool can train, so none of the {len(jobs)} training jobs can run")
    return Fleet(
        name=name or spec.name,
        pools=tuple(resolved),
        demand=load,
        jobs=tuple(jobs),
        model=model,
        restart_minutes=10.0 if training is None else training.restart_minutes,
        checkpoint_minutes=30.0 if training is None else training.checkpoint_minutes,
        assumptions=tuple(notes),
        workload=workload,
    )

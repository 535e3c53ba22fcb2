"""`advise`: the front door. Inventory in, one verdict per workload out, with the numbers behind it.

For each workload: plan every instance type (`silica.plan.compare`), model today's deployment
(`silica.plan.estimate`), cost both at the workload's load, apply the decision rules, and re-decide on a
grid of prices and utilisations to show how firm the verdict is.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from silica.advise.costing import candidates, current_cost
from silica.advise.decide import decide, migration_weeks, with_estimates
from silica.advise.inventory import Inventory, WorkloadSpec, in_yaml_terms, load_inventory
from silica.advise.results import Advice, Sensitivity, Verdict, WorkloadAdvice
from silica.advise.rules import Rules, load_rules
from silica.cost import HOURS_PER_MONTH
from silica.errors import InputError, SilicaError, UnknownNameError
from silica.perf.stacks import load_stacks
from silica.plan import compare, estimate
from silica.results import Estimate
from silica.workload import Deployment

__all__ = ["PRICE_FACTORS", "UTILISATIONS", "advise", "advise_workload", "effective_rules", "engines_for"]

PRICE_FACTORS: tuple[float, ...] = (0.5, 0.75, 1.0, 1.25, 1.5)
UTILISATIONS: tuple[float, ...] = (0.4, 0.55, 0.7, 0.85, 1.0)


def effective_rules(
    inv: Inventory, settings: Mapping[str, Any] | None = None, base: Rules | None = None
) -> Rules:
    """The bundled rules, then the inventory's `rules:` overrides, then `--set` ones (last wins)."""
    rules = base or load_rules()
    if inv.rule_overrides:
        origin = {k: f"{inv.path}, line {inv.rule_lines[k]}, field rules.{k}" for k in inv.rule_overrides}
        rules = rules.with_overrides(inv.rule_overrides, origin)
    if settings:
        rules = rules.with_overrides(settings, "--set")
    return rules


def advise(
    inventory: Inventory | str | Path,
    *,
    settings: Mapping[str, Any] | None = None,
    rules: Rules | None = None,
) -> Advice:
    """Advise every workload of an inventory (a path or an already loaded `Inventory`)."""
    inv = inventory if isinstance(inventory, Inventory) else load_inventory(inventory)
    rules = effective_rules(inv, settings, rules)
    rate = inv.engineer_usd_per_week or rules["engineer_usd_per_week"]
    workloads = tuple(advise_workload(spec, inv, rules, rate) for spec in inv.workloads)
    option = inv.option or "the catalog's default (your price, else on-demand, else Capacity Block)"
    return Advice(
        inventory=str(inv.path),
        workloads=workloads,
        rules=rules.to_dict(),
        engineer_usd_per_week=rate,
        assumptions=(
            f"prices: {option}" + (f" in {inv.region}" if inv.region else ""),
            f"a month is {HOURS_PER_MONTH:g} hours, as AWS bills it",
            f"migration cost = engineer-weeks x ${rate:,.0f} per engineer-week; running old and new side by "
            "side during the cut-over is not counted beyond the GPU fallback rule",
            "Trainium2/3 and UltraServer prices are not public: those options show a break-even price, "
            "never a cost",
        ),
    )


def engines_for(spec: WorkloadSpec, inv: Inventory) -> dict[str, str] | None:
    """The stack named for this workload, as {chip vendor: stack}, or None for every vendor's default.

    The workload's own `engine:` wins over the context's (`--engine`). A named stack runs on one vendor's
    chips only (vLLM's CUDA build is not vLLM on Neuron), so it applies to that vendor's options and to
    today's deployment when it is on them; the other vendor's options keep its recommended stack, so
    naming the engine a team runs today never hides the migration options. A context engine that does
    not do the workload's task (a serving stack, for a training workload) is not applied to it.
    """
    name = spec.engine or (inv.context.engine if inv.context is not None else None)
    if name is None:
        return None
    stacks = load_stacks()
    key = name.strip().lower()
    if key not in stacks:
        raise UnknownNameError("engine", name, stacks, "pass --engine with one of the names listed.")
    kind = "training" if spec.task == "training" else "inference"
    if kind not in stacks[key].tasks:
        return None
    return {stacks[key].vendor: key}


def _plan(spec: WorkloadSpec, inv: Inventory) -> tuple[tuple[Estimate, ...], Estimate | None]:
    engines = engines_for(spec, inv)
    # Numeric warnings from the planner (numpy over all-NaN rows, for an instance with no finite layout)
    # are not failures: such instances come back infeasible with their reason, which is what we report.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        try:
            found = compare(
                spec.model,
                spec.workload,
                catalog=inv.catalog,
                option=inv.option,
                region=inv.region,
                engine=engines,
                context=inv.context,
            ).results
            now = _today(spec, inv, engines) if spec.current.instance is not None else None
        except SilicaError as err:
            # Name the inventory's YAML fields, never the CLI flags the planner's messages speak of.
            raise InputError(
                f"{inv.path}, line {spec.line}, workload {spec.name!r}: {in_yaml_terms(err.problem)}",
                in_yaml_terms(err.fix) if err.fix else err.fix,
            ) from None
    return found, now


def _today(spec: WorkloadSpec, inv: Inventory, engines: dict[str, str] | None) -> Estimate:
    """The model's view of today's deployment.

    Inference: `count` instances are replicas of the smallest unit that holds the model (serving
    engines run a model that fits one instance as one replica per instance, and chain instances only
    when it does not), so 2 x g6e.xlarge is two one-GPU replicas, never one model split over two
    instances. The estimate is of one unit; the smallest divisor of `count` that fits is taken, and
    when none does, the whole fleet as one deployment says why. Training: the cluster as it is.
    """
    instance = spec.current.instance
    assert instance is not None
    count = spec.current.count

    def run(n: int) -> Estimate:
        return estimate(
            spec.model,
            spec.workload,
            Deployment(instance, n),
            catalog=inv.catalog,
            option=inv.option,
            region=inv.region,
            engine=engines,  # by vendor: the named stack when today's chips are its vendor's
            context=inv.context,
        )

    if spec.task == "inference":
        for unit in (n for n in range(1, count) if count % n == 0):
            try:
                found = run(unit)
            except SilicaError:
                continue  # a layout this unit cannot take (tp, pipeline stages): try the next size
            if found.feasible:
                return found
    return run(count)


def advise_workload(spec: WorkloadSpec, inv: Inventory, rules: Rules, rate: float) -> WorkloadAdvice:
    found, now = _plan(spec, inv)
    current = current_cost(spec, now, rules)
    cands = candidates(spec, found, current.runs_per_month)
    decision = with_estimates(decide(spec, cands, current, rules, rate), cands)
    knob = "serving_utilisation" if spec.task == "inference" else "training_goodput"
    utils = tuple(sorted({*UTILISATIONS, rules[knob]}))
    grid: list[tuple[Verdict, ...]] = []
    for factor in PRICE_FACTORS:
        row = tuple(
            decide(spec, cands, current, rules, rate, price_factor=factor, utilisation=u).verdict
            for u in utils
        )
        grid.append(row)
    assumptions = [f"today: {current.basis}"]
    if current.runs_basis:
        assumptions.append(f"runs per month {current.runs_per_month:.2f}: {current.runs_basis}")
    assumptions.append(f"{knob} {rules[knob]:g}: proposed fleets are sized for it")
    engines = engines_for(spec, inv)
    if engines:
        assumptions.append(
            "engine: "
            + ", ".join(f"{e} on the {v} options" for v, e in engines.items())
            + (" (the workload's engine:)" if spec.engine else " (--engine)")
            + "; the other vendor's on its recommended stack"
        )
    seen = set()
    for cand in cands:
        if cand.group not in seen and cand.estimate.instance != spec.current.instance:
            seen.add(cand.group)
            assumptions.append(f"migration to {cand.group}: {migration_weeks(spec, cand, rules)[1]}")
    if spec.current.instance is not None:
        assumptions.append(f"resizing today's {spec.current.instance} fleet: 0 engineer-weeks (no migration)")
    scan = spec.constraints.scan
    if scan is not None and scan.failed is not None:
        assumptions.append(f"scan {scan.name} failed ({scan.failed}): its verdicts and effort are not used")
    if now is not None and not now.feasible and spec.task == "training":
        assumptions.append(f"the model finds today's deployment infeasible: {'; '.join(now.reasons)}")
    return WorkloadAdvice(
        name=spec.name,
        model=spec.model.id,
        task=spec.task,
        verdict=decision.verdict,
        reasons=decision.reasons,
        current=current,
        proposed=decision.proposed,
        best_alternative=decision.best_alternative,
        best=decision.best,
        options=decision.options,
        right_size=decision.right_size,
        sensitivity=Sensitivity(PRICE_FACTORS, utils, tuple(grid), knob),
        assumptions=tuple(assumptions),
    )

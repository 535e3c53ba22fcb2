"""Calibration: a few physical efficiency parameters per chip family, kept as data.

The parameters are fitted by `silica calibrate` (see `silica.validate.fit`) on published
measurements and shipped in `data/calibration.json` with the command that produced them. A family
without measurements inherits from its nearest measured family by a stated rule, and its
uncertainty band is widened.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field, fields, replace
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

from silica.errors import DataFileError
from silica.perf.stacks import load_stacks

__all__ = [
    "DEFAULT_PARAMS",
    "FITTED_PARAM_NAMES",
    "INHERITANCE",
    "PARAM_BOUNDS",
    "TRAINING_ATTENTION",
    "Calibration",
    "FamilyParams",
    "Resolved",
    "clip_band",
    "load_calibration",
]


@dataclass(frozen=True, slots=True)
class FamilyParams:
    """How close a chip family gets to its datasheet, in ten physically meaningful numbers.

    compute_eff_max      fraction of dense peak a large matmul reaches
    compute_half_tokens  tokens per matmul (its M dimension) at which efficiency is half of that
                         maximum: a matmul over few tokens cannot fill the systolic array or
                         tensor-core tiles, so its time stops shrinking with the work
    memory_eff           fraction of peak HBM bandwidth a weight or KV stream reaches
    layer_overhead_us    fixed time per transformer layer per forward step (launch, sync, DMA setup)
    collective_latency_us  fixed time per collective (all-reduce) between chips
    collective_bw_eff    fraction of the chip-to-chip link bandwidth a tensor-parallel
                         all-reduce reaches (NCCL over NVLink gets most of it)
    attention_eff        efficiency of the inference engine's attention math (QK^T, softmax, AV)
                         relative to a large matmul: near 1 with fused flash-attention kernels,
                         far lower where the score matrix is materialised and the softmax runs
                         on vector engines (training stacks all use fused kernels)
    sequence_overhead_us  the serving engine's host work per sequence per forward step
                         (scheduling, sampling, KV block bookkeeping): grows with the batch.
                         0 for a file written before it existed (the term is then absent)
    moe_layer_overhead_us  fixed time a mixture-of-experts layer adds per pass beyond a dense
                         layer's: the router's top-k, the token-count copy to the host that a
                         dropless dispatch waits for, permute and unpermute, one GEMM launch
                         per local expert. It does not shrink with the tokens, so small
                         micro-batches pay it most. 0 for a file written before it existed
    request_overhead_us  a served request's fixed time outside the forward passes, paid once
                         before its first token: the front end's HTTP handling and tokenisation,
                         admitting the request to the scheduler, detokenising and streaming the
                         first token. It adds to a served (continuous-batching) TTFT only. 0 in
                         the shipped calibration: the published rows it is fitted on are static
                         batches whose TTFT is the batch's prefill (`validate.predict`), which do
                         not identify it, so `calibrate` leaves it out (`FITTED_PARAM_NAMES`);
                         `calibrate --from-pilot` fits it where a pilot's TTFT identifies it
    """

    compute_eff_max: float
    compute_half_tokens: float
    memory_eff: float
    layer_overhead_us: float
    collective_latency_us: float
    collective_bw_eff: float
    attention_eff: float
    sequence_overhead_us: float = 0.0
    moe_layer_overhead_us: float = 0.0
    request_overhead_us: float = 0.0


PARAM_NAMES: tuple[str, ...] = tuple(f.name for f in fields(FamilyParams))
# Parameters that published rows (static-batch tables) can identify: `calibrate` fits these only.
FITTED_PARAM_NAMES: tuple[str, ...] = tuple(n for n in PARAM_NAMES if n != "request_overhead_us")

# Physical bounds the fit may not leave: efficiencies are fractions, times are non-negative.
PARAM_BOUNDS: dict[str, tuple[float, float]] = {
    "compute_eff_max": (0.05, 0.85),  # the best dense GEMMs reach ~75-85% of datasheet peak
    "compute_half_tokens": (1.0, 4096.0),
    "memory_eff": (0.2, 0.98),
    "layer_overhead_us": (0.5, 2000.0),
    "collective_latency_us": (1.0, 2000.0),
    "collective_bw_eff": (0.01, 1.0),
    "attention_eff": (0.01, 1.0),
    "sequence_overhead_us": (0.01, 500.0),
    "moe_layer_overhead_us": (0.1, 5000.0),
    "request_overhead_us": (0.0, 1e6),  # up to a second: a front end that slow is broken, not slow
}

# Before any fit: typical values (CUTLASS/cuBLAS GEMMs reach ~70-80% of peak; streams ~80% of HBM).
DEFAULT_PARAMS = FamilyParams(
    compute_eff_max=0.7,
    compute_half_tokens=64.0,
    memory_eff=0.8,
    layer_overhead_us=20.0,
    collective_latency_us=20.0,
    collective_bw_eff=0.7,
    attention_eff=0.5,
    sequence_overhead_us=5.0,
    moe_layer_overhead_us=20.0,
    request_overhead_us=0.0,  # not identified by published rows (see `FamilyParams`)
)


def _families() -> tuple[dict[str, tuple[str, str]], dict[str, dict[str, tuple[float, str]]]]:
    """The inheritance rules and parameter overrides of `data/families.yaml` (data, not code).

    The neuron-v2 measurements come from transformers-neuronx (SDK 2.18), whose context encoding
    materialises the attention scores; the Trainium2/3 inference stack ships a fused flash-attention
    context-encoding kernel, so there the attention math runs at matmul efficiency as on GPUs: such
    software facts are the file's `overrides`.
    """
    from silica._yaml import safe_load

    where = "data/families.yaml"
    raw = safe_load(resources.files("silica").joinpath(where).read_text())
    if not isinstance(raw, dict) or raw.get("schema_version") != 1:
        raise DataFileError(f"{where}: schema_version must be 1.", "reinstall Silica.")
    inheritance: dict[str, tuple[str, str]] = {}
    overrides: dict[str, dict[str, tuple[float, str]]] = {}
    for family, row in raw["families"].items():
        inheritance[str(family)] = (str(row["inherits"]), str(row["rule"]))
        for name, fact in (row.get("overrides") or {}).items():
            overrides.setdefault(str(family), {})[str(name)] = (float(fact["value"]), str(fact["why"]))
    return inheritance, overrides


def _training_attention() -> dict[str, tuple[float, str]]:
    """`training_attention` of `data/families.yaml`: family -> (fraction of the 16-bit dense peak
    that the published fused flash-attention kernel reaches in training, its source)."""
    from silica._yaml import safe_load

    raw = safe_load(resources.files("silica").joinpath("data/families.yaml").read_text())
    table = raw.get("training_attention") or {}
    return {str(f): (float(fact["value"]), " ".join(str(fact["why"]).split())) for f, fact in table.items()}


# family -> (the measured family it inherits from, the stated rule); family -> {param: (value, why)}
INHERITANCE, INHERITED_OVERRIDES = _families()
# family -> (flash-attention training speed as a fraction of the 16-bit peak, source)
TRAINING_ATTENTION = _training_attention()

# How much wider an inherited band is than its source family's, per generation of distance.
INHERITED_BAND_WIDENING = 1.5
# A calibration file with no bands at all (hand-written): a deliberately wide p10-p90 guess, flagged as such.
UNMEASURED_BAND = (0.5, 2.0)


@dataclass(frozen=True, slots=True)
class Resolved:
    """Parameters for one (family, stack), and which calibration entry they came from and why."""

    params: FamilyParams
    key: str  # the entry used: "hopper/trtllm", "hopper" (pooled), or "defaults"
    inherited_from: str | None  # the measured family they come from, when not the chip's own
    note: str


@dataclass(frozen=True, slots=True)
class Overlay:
    """Parameters a pilot or monitor fitted for (family/engine) pairs, applied over the shipped ones.

    `labels` names each entry's source run; an empty overlay marks a calibration the user's overlay
    must not be applied to (`perf.overlay.without_user_overlay`).
    """

    labels: dict[str, str] = field(default_factory=dict)
    params: dict[str, FamilyParams] = field(default_factory=dict)
    # p10-p90 of measured / predicted per metric, from the fit's own residuals on the user's server
    # (`pilot.calibrate.residual_band`): where an entry applies, its band replaces the published
    # family's, which describes other servers' published rows.
    bands: dict[str, dict[str, tuple[float, float]]] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Calibration:
    """Fitted parameters per family, and each family's error band per metric.

    `bands[family][metric] = (low, high)`: the p10 and p90 of measured / predicted on the
    validation set; an estimate x is reported with the band [x * low, x * high].
    """

    params: dict[str, FamilyParams]
    bands: dict[str, dict[str, tuple[float, float]]]
    fitted_rows: dict[str, int]
    generated_by: str
    as_of: str
    source: str
    # What `silica calibrate` records beside the parameters (JSON keys in brackets). Typed fields,
    # not a side-channel dict, so every reader names what it reads.
    metrics: tuple[str, ...] = ()  # ["metrics"] the figures the fit compares
    fitted_stacks: dict[str, dict[str, int]] = field(
        default_factory=dict
    )  # ["fitted_stacks"] rows per entry and stack group
    band_note: str = ""  # ["band"] how the bands were made
    band_widening: float = 1.0  # ["band_widening"] the pooled log-widening
    band_widening_by_family: dict[str, float] = field(default_factory=dict)  # ["band_widening_by_family"]
    band_coverage: dict[str, Any] = field(
        default_factory=dict
    )  # ["band_coverage"] in/out-of-sample, per family
    best_published_mfu: dict[str, Any] = field(
        default_factory=dict
    )  # ["best_published_mfu"] family/dtype/kind -> row
    overlay: Overlay | None = None  # a pilot's or monitor's overlay (perf/overlay.py); never in the file

    def resolve(self, family: str, stack: str | None = None, task: str | None = None) -> Resolved:
        """The parameters for a family under a serving or training stack, and where they come from.

        Search order: the family's own fit for the stack's group, then for the groups the stack
        inherits from (`data/stacks.yaml`), then the family's pooled fit (all its measurements);
        a family without any walks `INHERITANCE` and repeats. `stack=None`: the pooled fit.

        `task` "training": an entry fitted on other stacks' rows describes their attention kernels
        (serving engines; some materialise the score matrix), not a training stack's fused flash
        attention (Megatron-Core/Transformer Engine, NxD Training's NKI kernel); so training on an
        entry that is not its stack's own runs attention at matmul efficiency (`attention_eff` 1).
        """
        found = self._resolve(family, stack)
        if task != "training" or stack is None or stack not in load_stacks():
            return found
        own = f"/{load_stacks()[stack].group}"
        if found.key.endswith(own) or found.params.attention_eff == 1.0:
            return found
        return replace(
            found,
            params=replace(found.params, attention_eff=1.0),
            note=f"{found.note}; training attention: fused flash attention at matmul efficiency "
            f"(attention_eff 1; {found.key}'s is its serving stacks')",
        )

    def _resolve(self, family: str, stack: str | None = None) -> Resolved:
        stacks = load_stacks()
        chain: list[str] = []
        name = stack
        while name is not None and name in stacks and name not in chain:
            chain.append(name)
            name = stacks[name].inherits
        seen, steps = family, 0
        while True:
            for i, s in enumerate(chain):
                key = f"{seen}/{stacks[s].group}"
                if key in self.params:
                    return self._resolved(family, seen, steps, key, stacks[chain[0]].label, chain[: i + 1])
            if seen in self.params:
                return self._resolved(family, seen, steps, seen, stacks[chain[0]].label if chain else "", [])
            if seen not in INHERITANCE:
                return Resolved(
                    DEFAULT_PARAMS,
                    "defaults",
                    "defaults",
                    f"{family}: no fitted parameters; uncalibrated defaults",
                )
            seen, steps = INHERITANCE[seen][0], steps + 1

    def _resolved(self, family: str, seen: str, steps: int, key: str, label: str, via: list[str]) -> Resolved:
        stacks = load_stacks()
        params = self.params[key]
        if steps and family in INHERITED_OVERRIDES:
            params = replace(params, **{k: v for k, (v, _) in INHERITED_OVERRIDES[family].items()})
        counts = self.fitted_stacks.get(key, {})
        rows = ", ".join(f"{g} {n}" for g, n in sorted(counts.items(), key=lambda kv: -kv[1]))
        fitted = f"fitted on {seen} measurements" + (f" ({rows} rows)" if rows else "")
        if len(via) > 1:
            fitted = (
                f"{label}: no measurements on {seen}; parameters of {stacks[via[-1]].label} "
                f"({stacks[via[0]].why}), {fitted}"
            )
        elif not via and label:
            fitted = f"{label}: no measurements of its own on {seen}; {fitted}"
        if steps:
            rule = INHERITANCE.get(family, ("", "nearest measured family"))[1]
            fitted = f"{family} has no measurements: parameters inherited from {seen} ({rule}); {fitted}"
            for name, (value, why) in INHERITED_OVERRIDES.get(family, {}).items():
                fitted += f"; {name}={value:g}: {why}"
        return Resolved(params, key, seen if steps else None, fitted)

    def band(
        self, family: str, metric: str | tuple[str, ...], stack: str | None = None
    ) -> tuple[float, float]:
        """p10/p90 of measured/predicted for this family and metric, widened when inherited.

        `metric` may list several metrics, nearest first; the family's overall band is the fallback.
        With `stack`, a user overlay's own band for (family, stack) and that metric comes first.
        """
        metrics = (metric,) if isinstance(metric, str) else metric
        own = self.overlay_band(family, metric, stack)
        if own is not None:
            return own
        steps = 0
        seen = family
        while seen not in self.bands and seen in INHERITANCE:
            seen = INHERITANCE[seen][0]
            steps += 1
        table = self.bands.get(seen, {})
        found = [table[m] for m in metrics if m in table]
        low, high = found[0] if found else table.get("all") or UNMEASURED_BAND
        for _ in range(steps):
            low, high = low**INHERITED_BAND_WIDENING, high**INHERITED_BAND_WIDENING
        return min(low, 1.0), max(high, 1.0)

    def overlay_band(
        self, family: str, metric: str | tuple[str, ...], stack: str | None
    ) -> tuple[float, float] | None:
        """The user overlay's band for (family, stack) and the first of `metric` it has, or None."""
        if self.overlay is None or stack is None:
            return None
        table = self.overlay.bands.get(f"{family}/{stack}", {})
        metrics = (metric,) if isinstance(metric, str) else metric
        found = [table[m] for m in metrics if m in table]
        return (min(found[0][0], 1.0), max(found[0][1], 1.0)) if found else None

    def mfu_check(self, family: str, dtype: str, mfu: float, moe: bool = False) -> str | None:
        """A sentence when a training MFU goes beyond what was ever measured on this family.

        The ceiling is the best MFU of any published training row of the family (or of the family
        it inherits from) at this compute dtype and of the same kind of model, dense or
        mixture-of-experts (`best_published_mfu`, written by `calibrate` from the bundled rows; the
        sentence names the row, its engine and its source).
        """
        table = self.best_published_mfu
        kind = "moe" if moe else "dense"
        label = "mixture-of-experts" if moe else "dense"
        seen = family
        while kind not in table.get(seen, {}).get(dtype, {}) and seen in INHERITANCE:
            seen = INHERITANCE[seen][0]
        best = table.get(seen, {}).get(dtype, {}).get(kind)
        if best is None:
            return (
                f"extrapolates: no published {dtype} training measurement of a {label} model on {family} "
                f"(or the family it inherits from) bounds this MFU of {mfu:.1%}"
            )
        if mfu <= float(best["mfu"]):
            return None
        return (
            f"extrapolates: MFU {mfu:.1%} is above the best published {dtype} training MFU of a {label} "
            f"model on {seen} ({float(best['mfu']):.1%}: {best['row']}, {best.get('engine', 'unnamed')}; "
            f"{best['source']})"
        )

    def with_params(self, family: str, params: FamilyParams) -> Calibration:
        """The family's parameters replaced for every stack (its per-stack entries dropped)."""
        kept = {k: p for k, p in self.params.items() if not k.startswith(f"{family}/")}
        return replace(self, params={**kept, family: params})


def clip_band(
    value: float, low: float, high: float, *, floor: float | None = None, ceiling: float | None = None
) -> tuple[float, float]:
    """The band value x [low, high] (ratios) as values, cut at what physics allows.

    A time metric's band never reaches below `floor` (the phase's FLOPs at peak compute or its
    bytes at peak bandwidth, `perf.kernels.PhaseSeconds.floor`); a speed metric's never above
    `ceiling` (the same bound as a rate, or 100% MFU for training). A bound the point value itself
    passes (it cannot, by construction) leaves the point as that band edge, so the band always
    contains its value.
    """
    lo, hi = value * low, value * high
    if floor is not None and math.isfinite(floor):
        lo = max(lo, min(floor, value))
    if ceiling is not None and math.isfinite(ceiling):
        hi = min(hi, max(ceiling, value))
    return lo, hi


# The declared range (silica.limits) each parameter a calibration file holds must lie in.
PARAM_KINDS: dict[str, str] = {
    "compute_eff_max": "efficiency",
    "compute_half_tokens": "half_tokens",
    "memory_eff": "efficiency",
    "layer_overhead_us": "overhead_us",
    "collective_latency_us": "overhead_us",
    "collective_bw_eff": "efficiency",
    "attention_eff": "efficiency",
    "sequence_overhead_us": "overhead_us",
    "moe_layer_overhead_us": "overhead_us",
    "request_overhead_us": "overhead_us",
}


def _checked(params: Any, where: str) -> dict[str, float]:
    """A family's parameters, each a finite number in its declared range (one line naming it if not):
    an efficiency of 0 or 1e308 would print a negative or absurd step time, not an error."""
    from silica.limits import check

    if not isinstance(params, dict):
        raise DataFileError(
            f"{where} is not an object of parameters.", "regenerate it with `silica calibrate`."
        )
    return {name: check(PARAM_KINDS[name], value, f"{where}.{name}") for name, value in params.items()}


def _parse(raw: dict[str, Any], where: str) -> Calibration:
    if not isinstance(raw, dict) or not isinstance(raw.get("families"), dict):
        raise DataFileError(
            f"Calibration file {where} is not a calibration: it needs a 'families' object of parameters.",
            "pass a file written by `silica calibrate --out`.",
        )
    try:
        for fam, p in raw["families"].items():
            unknown = sorted(set(p) - set(PARAM_NAMES)) if isinstance(p, dict) else []
            if unknown:  # repr: a key may hold any character, the message stays one line
                raise ValueError(f"{fam!r} has unknown parameter(s) {', '.join(map(repr, unknown))}")
        unknown_keys = sorted(set(raw) - _FILE_KEYS)
        if unknown_keys:
            raise ValueError(f"unknown key(s) {', '.join(map(repr, unknown_keys))}")
        params = {
            fam: FamilyParams(**_checked(p, f"{where}: families.{fam}")) for fam, p in raw["families"].items()
        }
        bands = {
            fam: {metric: (float(lo), float(hi)) for metric, (lo, hi) in table.items()}
            for fam, table in raw.get("bands", {}).items()
        }
        return Calibration(
            params=params,
            bands=bands,
            fitted_rows={k: int(v) for k, v in raw.get("fitted_rows", {}).items()},
            generated_by=str(raw["generated_by"]),
            as_of=str(raw["as_of"]),
            source=str(raw["source"]),
            metrics=tuple(str(m) for m in raw.get("metrics", ())),
            fitted_stacks={
                str(k): {str(g): int(n) for g, n in v.items()}
                for k, v in raw.get("fitted_stacks", {}).items()
            },
            band_note=str(raw.get("band", "")),
            band_widening=float(raw.get("band_widening", 1.0)),
            band_widening_by_family={
                str(k): float(v) for k, v in raw.get("band_widening_by_family", {}).items()
            },
            band_coverage=dict(raw.get("band_coverage", {})),
            best_published_mfu=dict(raw.get("best_published_mfu", {})),
        )
    except (KeyError, TypeError, ValueError, AttributeError) as err:
        raise DataFileError(
            f"Calibration file {where} is invalid: {err}.", "regenerate it with `silica calibrate`."
        ) from err


_FILE_KEYS = frozenset(
    {
        "generated_by",
        "as_of",
        "source",
        "families",
        "bands",
        "fitted_rows",
        "metrics",
        "fitted_stacks",
        "band",
        "band_widening",
        "band_widening_by_family",
        "band_coverage",
        "best_published_mfu",
    }
)


def calibration_to_json(cal: Calibration) -> dict[str, Any]:
    """The file `silica calibrate --out` writes (`_parse` reads it back); the overlay is never saved."""
    recorded: dict[str, Any] = {}
    if cal.metrics:
        recorded["metrics"] = list(cal.metrics)
    if cal.fitted_stacks:
        recorded["fitted_stacks"] = cal.fitted_stacks
    if cal.band_note:
        recorded |= {
            "band": cal.band_note,
            "band_widening": cal.band_widening,
            "band_widening_by_family": cal.band_widening_by_family,
            "band_coverage": cal.band_coverage,
            "best_published_mfu": cal.best_published_mfu,
        }
    return {
        "generated_by": cal.generated_by,
        "as_of": cal.as_of,
        "source": cal.source,
        "families": {
            fam: {n: round(getattr(p, n), 6) for n in PARAM_NAMES} for fam, p in sorted(cal.params.items())
        },
        "bands": {
            fam: {m: [round(lo, 4), round(hi, 4)] for m, (lo, hi) in sorted(t.items())}
            for fam, t in sorted(cal.bands.items())
        },
        "fitted_rows": dict(sorted(cal.fitted_rows.items())),
        **recorded,
    }


@lru_cache(maxsize=8)
def load_calibration(path: Path | None = None) -> Calibration:
    """The shipped calibration, or one written by `silica calibrate --out PATH`."""
    if path is None:
        text = resources.files("silica").joinpath("data/calibration.json").read_text()
        where = "data/calibration.json (bundled)"
    else:
        from silica._files import parse_json, read_text

        where = str(path)
        raw = parse_json(read_text(path, "calibration file", "a file from `silica calibrate --out`"), where)
        return _parse(raw, where)
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as err:
        raise DataFileError(f"Calibration file {where} is not JSON: {err}.", "regenerate it.") from err
    return _parse(raw, where)

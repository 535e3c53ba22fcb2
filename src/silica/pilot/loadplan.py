"""The load plan a pilot follows: request shape, concurrency steps, SLOs, and what was deployed.

It is written by `silica pilot plan` (with the prediction beside it) and read by `silica pilot run`
and `silica pilot compare`; a run without a plan gets `default_plan`, which has no prediction.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from silica.errors import DataFileError, InputError

__all__ = ["PLAN_FILE", "PREDICTION_FILE", "Deployed", "LoadPlan", "default_plan", "read_plan"]

PLAN_FILE = "load_plan.json"
PREDICTION_FILE = "prediction.json"
SCHEMA = "silica.pilot.load_plan/1"


@dataclass(frozen=True, slots=True)
class Deployed:
    """What the kit launches: the estimate's layout on one instance with one engine."""

    model: str
    instance: str
    chip: str
    family: str
    vendor: str
    engine: str
    tp: int
    max_batch: int
    max_len: int
    dtype: str


@dataclass(frozen=True, slots=True)
class LoadPlan:
    """Closed-loop steps (`concurrency`), then open-loop steps (`rates`), then a prompt-length sweep
    (`input_lens` at `sweep_concurrency`); every step but the sweep's at `input_len`.

    Closed loop: at each step `concurrency` streams send requests back to back, so N are in flight;
    it maps one to one onto the batch the estimate predicts for. Open loop: requests arrive at a
    rate (Poisson or evenly spaced, as `vllm bench serve --request-rate` and guidellm send them),
    whatever the server's pace, which is what production sees; past capacity it measures the queue.

    A step runs for time when `duration_s` is set: `warmup_s` of load first, then the steady window
    of `duration_s` whose requests alone are counted, then `cooldown_s` more load so the last steady
    requests finish at full load too. Without `duration_s` a closed-loop step runs
    `requests_per_step` requests (a step with fewer requests than its concurrency is a burst).
    """

    input_len: int
    output_len: int
    concurrency: tuple[int, ...]
    requests_per_step: int
    ttft_slo_ms: float | None = None
    tpot_slo_ms: float | None = None
    warmup_requests: int = 1
    deployed: Deployed | None = None
    api: str = "completions"  # "completions" or "chat"
    ignore_eos: bool = True
    notes: tuple[str, ...] = field(default=())
    duration_s: float | None = None  # steady window of a timed step
    warmup_s: float = 0.0
    cooldown_s: float = 0.0
    rates: tuple[float, ...] = ()  # open-loop steps, requests per second
    arrival: str = "poisson"  # "poisson" or "constant" inter-arrival times
    seed: int = 0  # of the prompts and the arrival times
    # Prompt-length sweep: closed-loop steps at `sweep_concurrency` with these prompt lengths, after
    # the others. TTFT's growth with the prompt is the prefill rate (compute efficiency); at one
    # length a prefill rate and a fixed time per request cannot be told apart.
    input_lens: tuple[int, ...] = ()
    sweep_concurrency: int = 1
    # Where each request's lengths came from when not `input_len`/`output_len` (a dataset's pairs;
    # those two are then its means, what the prediction and the fit use): provenance only.
    dataset: str | None = None

    def __post_init__(self) -> None:
        if self.input_len < 1 or self.output_len < 1:
            raise InputError("A pilot needs input and output lengths of at least 1 token.", "raise them.")
        from silica.limits import check

        # A kit's load_plan.json may be edited: a 10^9-token prompt would be built in memory per request.
        check("request_tokens", self.input_len, "input_len (--input-len)")
        check("request_tokens", self.output_len, "output_len (--output-len)")
        for c in self.concurrency:
            check("concurrency", c, "concurrency (--concurrency)")
        for n in self.input_lens:
            check("request_tokens", n, "prompt-length sweep (--input-lens)")
        check("concurrency", self.sweep_concurrency, "sweep concurrency")
        if self.deployed is not None and self.input_lens:
            longest = max(self.input_lens) + self.output_len
            if longest > self.deployed.max_len:
                raise InputError(
                    f"A sweep prompt of {max(self.input_lens)} tokens and {self.output_len} generated do not "
                    f"fit the kit's max model length {self.deployed.max_len}.",
                    "sweep shorter prompts, or plan the kit with them (silica pilot plan --input-lens).",
                )
        check("concurrency", self.requests_per_step, "requests per step (--requests)")
        if not self.concurrency and not self.rates and not self.input_lens:
            raise InputError("A pilot needs at least one load step.", "pass --concurrency or --rate.")
        if self.concurrency and min(self.concurrency) < 1:
            raise InputError("Every load step needs a concurrency of 1 or more.", "fix --concurrency.")
        if self.rates and (min(self.rates) <= 0 or not all(r < float("inf") for r in self.rates)):
            raise InputError("Every request rate must be a positive number.", "fix --rate.")
        if self.rates and self.duration_s is None:
            raise InputError("Open-loop (--rate) steps run for a time.", "pass --duration SECONDS.")
        if self.duration_s is not None and not self.duration_s > 0:
            raise InputError("The steady window must be longer than 0 s.", "fix --duration.")
        if self.warmup_s < 0 or self.cooldown_s < 0:
            raise InputError("Warm-up and cool-down cannot be negative.", "fix --warmup / --cooldown.")
        if self.arrival not in ("poisson", "constant"):
            raise InputError(f"Unknown arrival process {self.arrival!r}.", "use poisson or constant.")
        if self.requests_per_step < 1:
            raise InputError("Each step needs at least one request.", "raise --requests.")
        if self.api not in ("completions", "chat"):
            raise InputError(f"Unknown API {self.api!r}.", "use completions or chat.")

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["schema"] = SCHEMA
        out["concurrency"] = list(self.concurrency)
        out["rates"] = list(self.rates)
        out["notes"] = list(self.notes)
        out["input_lens"] = list(self.input_lens)
        return out

    @classmethod
    def from_dict(cls, raw: dict[str, Any], where: str) -> LoadPlan:
        try:
            if raw.get("schema") != SCHEMA:
                raise ValueError(f"schema is {raw.get('schema')!r}, expected {SCHEMA}")
            dep = raw.get("deployed")
            return cls(
                input_len=int(raw["input_len"]),
                output_len=int(raw["output_len"]),
                concurrency=tuple(int(c) for c in raw["concurrency"]),
                requests_per_step=int(raw["requests_per_step"]),
                ttft_slo_ms=raw.get("ttft_slo_ms"),
                tpot_slo_ms=raw.get("tpot_slo_ms"),
                warmup_requests=int(raw.get("warmup_requests", 1)),
                deployed=Deployed(**dep) if dep else None,
                api=str(raw.get("api", "completions")),
                ignore_eos=bool(raw.get("ignore_eos", True)),
                notes=tuple(raw.get("notes", ())),
                duration_s=None if raw.get("duration_s") is None else float(raw["duration_s"]),
                warmup_s=float(raw.get("warmup_s", 0.0)),
                cooldown_s=float(raw.get("cooldown_s", 0.0)),
                rates=tuple(float(r) for r in raw.get("rates", ())),
                arrival=str(raw.get("arrival", "poisson")),
                seed=int(raw.get("seed", 0)),
                input_lens=tuple(int(n) for n in raw.get("input_lens", ())),
                sweep_concurrency=int(raw.get("sweep_concurrency", 1)),
                dataset=None if raw.get("dataset") is None else str(raw["dataset"]),
            )
        except (KeyError, TypeError, ValueError) as err:
            raise DataFileError(
                f"Load plan {where} is invalid: {err}.", "rewrite it with `silica pilot plan`."
            ) from err


def default_plan(
    input_len: int = 256,
    output_len: int = 64,
    concurrency: tuple[int, ...] = (1, 2, 4, 8),
    requests_per_step: int = 16,
) -> LoadPlan:
    return LoadPlan(input_len, output_len, concurrency, requests_per_step)


def read_json(path: Path, what: str) -> dict[str, Any]:
    """A JSON object Silica wrote (pilot result, prediction, monitor report); anything else is one line."""
    from silica._files import parse_json, read_text

    raw = parse_json(read_text(path, what, "the file Silica wrote"), path, "the file Silica wrote")
    if not isinstance(raw, dict):
        raise DataFileError(
            f"{what.capitalize()} {path} is not a JSON object.", "pass the file Silica wrote."
        )
    return raw


def read_plan(directory: Path) -> LoadPlan:
    """The load plan in a kit directory written by `silica pilot plan`."""
    path = directory / PLAN_FILE
    if not path.is_file():
        raise InputError(
            f"{directory} has no {PLAN_FILE}.", "pass the --out directory of `silica pilot plan`."
        )
    return LoadPlan.from_dict(read_json(path, "load plan"), str(path))

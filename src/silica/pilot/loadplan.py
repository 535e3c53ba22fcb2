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
    """Closed-loop steps: at each, `concurrency` streams send requests back to back.

    Concurrency rather than a request rate, because it maps one to one onto the batch the estimate
    predicts for, and because an open-loop rate past capacity only measures the queue.
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

    def __post_init__(self) -> None:
        if self.input_len < 1 or self.output_len < 1:
            raise InputError("A pilot needs input and output lengths of at least 1 token.", "raise them.")
        if not self.concurrency or min(self.concurrency) < 1:
            raise InputError("Every load step needs a concurrency of 1 or more.", "fix --concurrency.")
        if self.requests_per_step < 1:
            raise InputError("Each step needs at least one request.", "raise --requests.")
        if self.api not in ("completions", "chat"):
            raise InputError(f"Unknown API {self.api!r}.", "use completions or chat.")

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["schema"] = SCHEMA
        out["concurrency"] = list(self.concurrency)
        out["notes"] = list(self.notes)
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

"""Inputs that once crashed, hung or ran away: each is one line on stderr and exit code 2, or a warning.

Binary files and non-finite numbers; horizons shorter than a step or longer than MAX_STEPS steps;
more than MAX_JOBS jobs; plans past the instance limit; jobs the fleet can never run as asked.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from silica.errors import DataFileError
from silica.fleet import simulate_file
from silica.fleet.traces import load_request_csv

from .test_cli import TRAINING_MODEL, invoke, one_line_error

BINARY = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\xff\xfe" * 64


def edit(path: Path, old: str, new: str) -> Path:
    text = path.read_text()
    assert old in text, old
    path.write_text(text.replace(old, new))
    return path


def replaying(path: Path, trace: str) -> Path:
    """The small fleet, replaying `trace` (beside it) instead of its diurnal shape."""
    return edit(path, "    shape: diurnal\n", f"    trace: {trace}\n")


# --- 1. binary files and non-finite numbers ------------------------------------------------------------


def test_a_binary_trace_is_a_data_file_error(small_fleet: Callable[..., Path], tmp_path: Path) -> None:
    (tmp_path / "t.csv").write_bytes(BINARY)
    with pytest.raises(DataFileError, match="not a UTF-8 text file"):
        load_request_csv(tmp_path / "t.csv")
    one_line_error(invoke("simulate", str(replaying(small_fleet(), "t.csv"))), "t.csv: not a UTF-8 text file")


def test_a_binary_fleet_file_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "fleet.yaml"
    path.write_bytes(BINARY)
    one_line_error(invoke("simulate", str(path)), "fleet.yaml is not UTF-8 text")


@pytest.mark.parametrize(
    ("old", "new", "field"),
    [
        ("hours: 48", "days: .inf", "days"),
        ("hours: 48", "hours: .nan", "hours"),
        ("step_minutes: 5", "step_minutes: .inf", "step_minutes"),
        (
            "peak_output_tokens_per_s: 100000.0",
            "peak_output_tokens_per_s: .inf",
            "inference.demand.peak_output_tokens_per_s",
        ),
        ("peak_to_trough: 3.0", "peak_to_trough: .nan", "inference.demand.peak_to_trough"),
        (
            "purchase: reserved}",
            "purchase: reserved, price_usd_per_hour: .inf}",
            "pools.0.price_usd_per_hour",
        ),
        ("hours: 12, deadline_hours: 46", "hours: .inf, deadline_hours: 46", "training.jobs.0.hours"),
        ("every_hours: 5", "every_hours: .inf", "training.jobs.1.every_hours"),
    ],
)
def test_non_finite_numbers_are_rejected_at_their_field(
    small_fleet: Callable[..., Path], old: str, new: str, field: str
) -> None:
    path = edit(small_fleet(), old, new)
    one_line_error(invoke("simulate", str(path)), f"field '{field}': Input should be a finite number")


# --- 2. horizons, steps and jobs within bounds ---------------------------------------------------------


def test_a_horizon_shorter_than_one_step_says_so(small_fleet: Callable[..., Path]) -> None:
    one_line_error(
        invoke("simulate", str(small_fleet(hours=0.001, step=1))),
        "field 'hours': a horizon of 0.001 h is shorter than one step of 1 min",
    )


def test_a_horizon_shorter_than_the_policy_lags_simulates(small_fleet: Callable[..., Path]) -> None:
    # 6 one-minute steps, fewer than the 10-minute launch and 30-minute cool-down of the policies.
    result = invoke(
        "simulate",
        str(small_fleet(hours=0.1, step=1)),
        "--policy",
        "autoscale",
        "--policy",
        "day_night",
        "--json",
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["fleet"]["steps"] == 6


@pytest.mark.parametrize(
    ("hours", "step", "field"),
    [(48, 0.00001, "step_minutes"), (1e9, 5, "hours")],
)
def test_too_many_steps_fail_fast_naming_the_field_and_the_limit(
    small_fleet: Callable[..., Path], hours: float, step: float, field: str
) -> None:
    start = time.monotonic()
    one_line_error(
        invoke("simulate", str(small_fleet(hours=hours, step=step))),
        f"field '{field}': a horizon of {hours:g} h at {step:g}-minute steps is",
    )
    assert (
        "the limit is 1,000,000 steps" in invoke("simulate", str(small_fleet(hours=hours, step=step))).stderr
    )
    assert time.monotonic() - start < 20


def test_a_trace_spanning_too_many_steps_fails_unless_a_horizon_cuts_it(
    small_fleet: Callable[..., Path], tmp_path: Path
) -> None:
    (tmp_path / "t.csv").write_text("timestamp,input_tokens,output_tokens\n0,1000,200\n1e12,1000,200\n")
    path = replaying(small_fleet(), "t.csv")
    text = path.read_text()
    path.write_text(text.replace("hours: 48\n", ""))  # the trace's own length: 3.3e9 five-minute steps
    err = one_line_error(invoke("simulate", str(path)), "field 'inference.demand.trace': the trace t.csv")
    assert "the limit is 1,000,000 steps" in err
    path.write_text(text)  # with hours: 48, only the first two days of it are binned
    sim = simulate_file(path, ["static"])
    assert sim.fleet["steps"] == 576 and sim.fleet["demand"]["steps"] == 576


def test_too_many_jobs_fail_fast_naming_the_repeat(small_fleet: Callable[..., Path]) -> None:
    path = edit(small_fleet(), "repeat: 8,", "repeat: 100000000,")
    start = time.monotonic()
    one_line_error(
        invoke("simulate", str(path)),
        "field 'training.jobs.1.repeat': the jobs up to 'ft' expand to 100,000,001 training jobs; "
        "the limit is 1,000,000",
    )
    assert time.monotonic() - start < 20


# --- 5. plan: the instance limit ----------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["0", "-3"])
def test_plan_rejects_max_instances_below_one(small_fleet: Callable[..., Path], value: str) -> None:
    one_line_error(
        invoke("plan", str(small_fleet()), "--instances", "trn1.32xlarge", "--max-instances", value),
        f"--max-instances must be at least 1, got {value}",
    )


def test_plan_past_the_default_instance_limit_exits_2(small_fleet: Callable[..., Path]) -> None:
    # 1e12 output tokens/s needs about 1e8 trn1.32xlarge: past the default 1,000,000 per pool.
    path = edit(small_fleet(), "peak_output_tokens_per_s: 100000.0", "peak_output_tokens_per_s: 1.0e12")
    err = one_line_error(
        invoke("plan", str(path), "--instances", "trn1.32xlarge"), "even at 1,000,000 instances"
    )
    assert "the limit of 1,000,000 instances per pool" in err and "--max-instances" in err


# --- 6. jobs the fleet can never run as asked: warnings, or a plan error ---------------------------------


def test_a_job_bigger_than_every_pool_is_a_warning(small_fleet: Callable[..., Path]) -> None:
    path = edit(small_fleet(), "{name: big, chips: 384,", "{name: big, chips: 4096,")
    result = invoke("simulate", str(path), "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert len(data["warnings"]) == 1
    assert (
        "1 training job(s) need more chips than the largest pool that trains (640 chips)"
        in data["warnings"][0]
    )
    assert data["warnings"][0].endswith(": big")
    text = invoke("simulate", str(path)).output  # piped: TSV on stdout, the warning on stderr
    assert "warning: 1 training job(s) need more chips" in text


def test_a_deadline_shorter_than_the_job_is_a_warning(small_fleet: Callable[..., Path]) -> None:
    path = edit(small_fleet(), "hours: 12, deadline_hours: 46", "hours: 12, deadline_hours: 8")
    data = json.loads(invoke("simulate", str(path), "--json").stdout)
    assert len(data["warnings"]) == 1
    warning = data["warnings"][0]
    assert "1 training job(s) cannot meet their deadline" in warning
    assert "(big needs 12.17 h with its restart, its deadline leaves 8 h): big" in warning
    assert all(r["jobs"][0]["deadline_missed"] for r in data["runs"])


def test_the_small_fleet_has_no_warnings(small_fleet: Callable[..., Path]) -> None:
    assert simulate_file(small_fleet()).warnings == ()


def test_sweep_results_carry_the_warnings(small_fleet: Callable[..., Path]) -> None:
    path = edit(small_fleet(), "{name: big, chips: 384,", "{name: big, chips: 768,")
    extra = "sweep:\n  mixes:\n    small: [{instance: trn1.32xlarge, count: 40}]\n    large: [{instance: trn1.32xlarge, count: 60}]\n"
    path.write_text(path.read_text() + extra)
    result = invoke("sweep", str(path), "--no-store", "--workers", "1", "--policy", "static", "--json")
    assert result.exit_code == 0, result.output
    warned = {s["name"]: s["warnings"] for s in json.loads(result.stdout)["scenarios"]}
    assert warned["large/static/demand"] == []  # 960 chips hold the 768-chip job
    assert "largest pool that trains (640 chips)" in warned["small/static/demand"][0]


def test_plan_with_a_deadline_no_candidate_can_meet_exits_2(small_fleet: Callable[..., Path]) -> None:
    path = edit(small_fleet(), "hours: 12, deadline_hours: 46", "hours: 12, deadline_hours: 8")
    path.write_text(path.read_text().replace("training:\n", TRAINING_MODEL))
    start = time.monotonic()
    one_line_error(
        invoke("plan", str(path), "--instances", "trn1.32xlarge"),
        "Training job 'big' cannot meet its deadline on any candidate: started on arrival on the fastest, "
        "trn1.32xlarge, it needs 12.17 h",
    )
    assert time.monotonic() - start < 20

"""`silica fleet simulate | plan | sweep` end to end, and every bad input as one line with exit code 2."""

from __future__ import annotations

import json
import pickle
import subprocess
import sys
import time
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from silica.cli.app import app
from silica.errors import InputError
from silica.fleet import load_fleet_file, run_sweep
from silica.fleet.sweep import plan_scenarios, probe_ray_address

REPO = Path(__file__).resolve().parents[2]


def invoke(*args: str) -> Any:
    return CliRunner().invoke(app, ["fleet", *args])


def one_line_error(result: Any, needle: str) -> str:
    assert result.exit_code == 2, result.output
    err = result.stderr.strip()
    assert err.count("\n") == 0 and err.startswith("error:"), err
    assert needle in err, err
    assert "Traceback" not in result.output
    return str(err)


# --- simulate ---------------------------------------------------------------------------------------


def test_simulate_json_is_the_library_result(small_fleet: Callable[..., Path]) -> None:
    result = invoke("simulate", str(small_fleet()), "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    runs = {r["policy"]["name"]: r["metrics"] for r in data["runs"]}
    assert set(runs) == {"static", "day_night"}
    assert runs["day_night"]["lent_chip_hours"] > runs["static"]["lent_chip_hours"] == 0
    assert runs["static"]["total_usd"] > 0  # trn1.32xlarge has a public reserved price
    assert data["fleet"]["pools"][0]["price_basis"].startswith("reserved_1yr")
    assert "series" not in data["runs"][0]  # only with --series
    assert data["comparison"]["baseline"] == "static"


def test_simulate_html_report_is_self_contained(small_fleet: Callable[..., Path], tmp_path: Path) -> None:
    out = tmp_path / "r.html"
    result = invoke(
        "simulate",
        str(small_fleet()),
        "--html",
        str(out),
        "--policy",
        "static",
        "--policy",
        "day_night",
        "--policy",
        "autoscale",
    )
    assert result.exit_code == 0, result.output
    html = out.read_text()
    assert html.count("<svg") >= 6 and "day_night against static" in html and "autoscale" in html
    for remote in ("<script", "http://", "https://", "<link", "@import"):
        assert remote not in html.replace('xmlns="http://www.w3.org/2000/svg"', "")


def test_named_policy_keeps_the_files_knobs(small_fleet: Callable[..., Path]) -> None:
    extra = "  - {name: autoscale, base_quantile: 0.9}\n"
    path = small_fleet()
    path.write_text(
        path.read_text().replace("policy: [static, day_night]\n", "policy:\n  - static\n" + extra)
    )
    data = json.loads(invoke("simulate", str(path), "--json", "--policy", "autoscale").stdout)
    assert [r["policy"]["base_quantile"] for r in data["runs"]] == [0.9]


@pytest.mark.parametrize(
    ("old", "new", "needle"),
    [
        (
            "instance: trn1.32xlarge",
            "instance: trn1.32xlrge",
            "line 15, field 'pools.0.instance': unknown instance 'trn1.32xlrge'. To fix: Did you mean 'trn1.32xlarge'",
        ),
        (
            "count: 40",
            "count: 0",
            "line 15, field 'pools.0.count': Input should be greater than or equal to 1",
        ),
        (
            "  ttft_slo_ms: 1000",
            "  ttft_slo: 1000",
            "line 6, field 'inference.ttft_slo': Extra inputs are not permitted",
        ),
        ("shape: diurnal", "shape: weekly", "field 'inference.demand.shape': unknown demand shape 'weekly'"),
        ("    peak_output_tokens_per_s: 100000.0\n", "", "a demand shape needs a peak"),
        (
            "model: llama-3.1-8b",
            "model: llama-3.1-9b",
            "field 'inference.model': Unknown model 'llama-3.1-9b'",
        ),
        ("policy: [static, day_night]", "policy: [static, night_day]", "field 'policy"),
        ("hours: 48", "hours: [48", "line 3: not valid YAML (expected ',' or ']'"),
    ],
)
def test_bad_fleet_files_fail_in_one_line(
    small_fleet: Callable[..., Path], old: str, new: str, needle: str
) -> None:
    path = small_fleet()
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))
    one_line_error(invoke("simulate", str(path)), needle)


def test_unsorted_trace_fails_naming_both_files(small_fleet: Callable[..., Path], tmp_path: Path) -> None:
    trace = tmp_path / "t.csv"
    trace.write_text("timestamp,input_tokens,output_tokens\n0,100,10\n120,100,10\n60,100,10\n")
    path = small_fleet()
    path.write_text(
        path.read_text().replace("    shape: diurnal\n", "    trace: t.csv\n").replace("hours: 48\n", "")
    )
    one_line_error(
        invoke("simulate", str(path)), "t.csv, line 4, field 'timestamp': timestamp 60.000 s is earlier"
    )


def test_traces_prefix_needs_a_folder(
    small_fleet: Callable[..., Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SILICA_TRACES", raising=False)
    path = small_fleet()
    path.write_text(path.read_text().replace("    shape: diurnal\n", "    trace: traces:azure/x.csv\n"))
    one_line_error(invoke("simulate", str(path)), "needs a traces folder")


def test_unknown_policy_on_the_command_line(small_fleet: Callable[..., Path]) -> None:
    one_line_error(
        invoke("simulate", str(small_fleet()), "--policy", "nightshift"), "Unknown policy 'nightshift'"
    )


# --- plan ---------------------------------------------------------------------------------------------


TRAINING_MODEL = "training:\n  model: llama-3.1-8b\n  seq_len: 4096\n  reference_instance: trn1.32xlarge\n"


def test_plan_picks_the_cheapest_mix_and_explains_the_rest(small_fleet: Callable[..., Path]) -> None:
    path = small_fleet()
    path.write_text(path.read_text().replace("training:\n", TRAINING_MODEL))
    result = invoke(
        "plan",
        str(path),
        "--instances",
        "trn1.32xlarge,inf2.48xlarge,g6e.48xlarge,p5.48xlarge",
        "--target",
        "0.99",
        "--json",
    )
    assert result.exit_code == 0, result.output
    plan = json.loads(result.stdout)
    best = plan["best"]
    assert best["meets"] and best["metrics"]["slo_attainment"] >= 0.99
    assert best["metrics"]["jobs_deadline_missed"] == 0
    costs = [
        c["metrics"]["total_usd"] for c in plan["runners_up"] if c["meets"] and c["metrics"]["total_usd"]
    ]
    assert costs and all(best["metrics"]["total_usd"] <= c for c in costs)
    why = {c["label"]: c["why_lost"] for c in plan["runners_up"]}
    assert all(why.values())  # every runner-up says why it lost
    assert "cannot train" in why["inf2.48xlarge reserved"]
    assert "no price" in why["p5.48xlarge reserved"]  # p5 has no public 1-year reserved price
    assert any("% more" in w for w in why.values())


def test_plan_that_no_fleet_meets_exits_2(small_fleet: Callable[..., Path]) -> None:
    # The peak needs about 17 trn1.32xlarge: none of at most 5 reaches 99.9%.
    err = one_line_error(
        invoke(
            "plan",
            str(small_fleet()),
            "--instances",
            "trn1.32xlarge",
            "--target",
            "0.999",
            "--max-instances",
            "5",
        ),
        "No fleet mix meets 99.90% SLO attainment",
    )
    assert "Closest: trn1.32xlarge reserved (SLO attainment" in err and "even at 5 instances" in err
    assert "To fix:" in err


def test_plan_with_an_slo_no_chip_meets_exits_2(small_fleet: Callable[..., Path]) -> None:
    path = small_fleet()
    path.write_text(path.read_text().replace("ttft_slo_ms: 1000", "ttft_slo_ms: 0.01"))
    one_line_error(
        invoke("plan", str(path), "--instances", "trn1.32xlarge,trn1n.32xlarge"), "No fleet mix meets 99.00%"
    )


def test_plan_with_unknown_candidate(small_fleet: Callable[..., Path]) -> None:
    one_line_error(invoke("plan", str(small_fleet()), "--instances", "p5.48xl"), "unknown instance 'p5.48xl'")


# --- sweep ---------------------------------------------------------------------------------------------

SWEEP = """\
sweep:
  policies: [static, day_night]
  mixes:
    small: [{instance: trn1.32xlarge, count: 40}]
    large: [{instance: trn1.32xlarge, count: 60}]
  demands:
    diurnal: {shape: diurnal, input_len: 1000, output_len: 200, peak_output_tokens_per_s: 1.0e5}
    flat: {shape: flat, input_len: 1000, output_len: 200, peak_output_tokens_per_s: 0.5e5}
"""


class FakeStore:
    """Stands in for a `silica.store.Store`: remembers each `record_many` batch (one transaction)."""

    def __init__(self, batches: list[list[tuple[str, str, dict[str, Any]]]]) -> None:
        self.batches = batches

    def record_many(self, items: list[tuple[str, str, dict[str, Any]]]) -> list[int]:
        first = sum(len(b) for b in self.batches) + 1
        self.batches.append(list(items))
        return list(range(first, first + len(items)))


def fake_store(monkeypatch: pytest.MonkeyPatch) -> list[list[tuple[str, str, dict[str, Any]]]]:
    """Stand in for silica.store (another module) so sweeps can be tested without a database.

    Returns the batches written; `record` (one transaction per result) must not be used.
    """
    batches: list[list[tuple[str, str, dict[str, Any]]]] = []
    module = types.ModuleType("silica.store")

    def record(kind: str, name: str, payload: dict[str, Any]) -> int:
        raise AssertionError("a sweep must record its results in one transaction, not one by one")

    module.record = record  # type: ignore[attr-defined]
    module.open_store = lambda url=None: FakeStore(batches)  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "silica.store", module)
    return batches


def test_sweep_runs_every_scenario_in_parallel_and_records_them_in_one_transaction(
    small_fleet: Callable[..., Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    batches = fake_store(monkeypatch)
    result = invoke("sweep", str(small_fleet(extra=SWEEP)), "--workers", "2", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    names = [s["name"] for s in data["scenarios"]]
    assert len(names) == 8 and "large/day_night/flat" in names
    assert len(batches) == 1  # all or none
    assert [c[1] for c in batches[0]] == names and {c[0] for c in batches[0]} == {"fleet_sweep"}
    assert data["stored_ids"] == list(range(1, 9))
    by = {s["name"]: s["metrics"] for s in data["scenarios"]}
    assert by["small/day_night/diurnal"]["lent_chip_hours"] > by["small/static/diurnal"]["lent_chip_hours"]


def test_sweep_results_share_one_batch_in_a_real_store(
    small_fleet: Callable[..., Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("sqlalchemy", reason="the store needs the `store` extra")
    from silica import store

    url = f"sqlite:///{tmp_path / 'silica.db'}"
    monkeypatch.setenv("SILICA_DB_URL", url)
    try:
        result = run_sweep(small_fleet(extra=SWEEP), policies=["static"], workers=1)
        kept = store.open_store(url).history("fleet_sweep")
    finally:
        store.close_all()
    assert sorted(r.id for r in kept) == sorted(result.stored) and len(kept) == 4
    assert len({r.batch for r in kept}) == 1


def test_sweep_no_store_records_nothing(
    small_fleet: Callable[..., Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    batches = fake_store(monkeypatch)
    result = invoke(
        "sweep", str(small_fleet(extra=SWEEP)), "--workers", "1", "--no-store", "--policy", "static"
    )
    assert result.exit_code == 0, result.output
    assert batches == [] and "small/static/flat" in result.stdout


def test_sweep_bad_mix_fails_before_running(small_fleet: Callable[..., Path]) -> None:
    bad = SWEEP.replace("large: [{instance: trn1.32xlarge", "large: [{instance: trn9.32xlarge")
    one_line_error(
        invoke("sweep", str(small_fleet(extra=bad)), "--no-store"), "field 'sweep.mixes.large.0.instance'"
    )


def test_sweep_tasks_carry_no_path_and_workers_read_no_file(
    small_fleet: Callable[..., Path], tmp_path: Path
) -> None:
    trace = tmp_path / "t.csv"
    trace.write_text(
        "timestamp,input_tokens,output_tokens\n" + "".join(f"{i},1000,200\n" for i in range(0, 7200, 7))
    )
    path = small_fleet(extra=SWEEP.replace("flat: {shape: flat,", "flat: {trace: t.csv,"))
    tasks = plan_scenarios(load_fleet_file(path), ["static"])
    blob = pickle.dumps(tasks)
    assert str(path).encode() not in blob  # (the trace's path stays in its demand's source, a label)

    def remove_the_files(_: int) -> None:  # once planned, a worker (here: a spawned process) reads none
        path.unlink()
        trace.unlink()

    result = run_sweep(path, policies=["static"], workers=2, store=False, on_start=remove_the_files)
    assert [s["name"] for s in result.scenarios] == [t["name"] for t in tasks]
    assert all("error" not in s for s in result.scenarios)


def test_ray_address_is_probed_before_ray_init() -> None:
    start = time.monotonic()
    with pytest.raises(InputError, match=r"Cannot reach the Ray cluster at RAY_ADDRESS=127\.0\.0\.1:1 "):
        probe_ray_address("127.0.0.1:1")  # nothing listens on port 1
    assert time.monotonic() - start < 10
    with pytest.raises(InputError, match="is not a Ray address"):
        probe_ray_address("head-node:port")
    probe_ray_address("auto")  # names no host: left to Ray


# --- start-up stays light -------------------------------------------------------------------------------


def test_the_fleet_command_module_imports_no_heavy_libraries() -> None:
    code = "import sys, silica.cli.app; print(sorted(m for m in ('numpy', 'scipy', 'ray', 'rich') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_jobs_on_a_fleet_that_cannot_train_are_reported(small_fleet: Callable[..., Path]) -> None:
    path = small_fleet()
    path.write_text(path.read_text().replace("instance: trn1.32xlarge", "instance: inf2.48xlarge"))
    data = json.loads(invoke("simulate", str(path), "--json").stdout)
    assert any("no pool can train" in a for a in data["assumptions"])
    for run in data["runs"]:
        assert run["metrics"]["jobs_completed"] == 0 and run["metrics"]["training_chip_hours"] == 0

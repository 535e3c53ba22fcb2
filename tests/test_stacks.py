"""Serving and training stacks (`--engine`): names, vendor defaults, and how a calibration is chosen."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from silica.cli.app import app
from silica.errors import InputError, UnknownNameError
from silica.perf.calibration import Calibration, FamilyParams, load_calibration
from silica.perf.stacks import default_stack, load_stacks, resolve_stack, stack_of_source
from silica.validate.benchmarks import bundled_files, read_benchmarks
from silica.validate.predict import row_stack

PUBLISHED = Path(__file__).resolve().parents[1].parent / "shared" / "benchmarks" / "published.csv"
A = FamilyParams(0.5, 50.0, 0.7, 10.0, 20.0, 0.5, 1.0)
B = FamilyParams(0.6, 40.0, 0.8, 2.0, 5.0, 0.7, 1.0)
C = FamilyParams(0.4, 80.0, 0.6, 30.0, 30.0, 0.4, 1.0)


def _cal(params: dict[str, FamilyParams]) -> Calibration:
    return Calibration(params, {}, {}, "test", "", "")


def test_each_vendor_has_a_sourced_default_per_task() -> None:
    for vendor in ("nvidia", "aws"):
        for task in ("inference", "training"):
            stack, source = default_stack(vendor, task)
            assert stack.vendor == vendor and task in stack.tasks
            assert "docs" in source.lower() and "20" in source  # a named page and its date
    assert default_stack("aws", "inference")[0].name == "vllm-neuron"  # Neuron's recommendation since 2.34


def test_bad_engine_names_and_places_are_refused() -> None:
    with pytest.raises(UnknownNameError):
        resolve_stack("tensorflow-serving", "nvidia", "inference", "p5.48xlarge")
    with pytest.raises(InputError, match=r"does not run inference on p5\.48xlarge"):
        resolve_stack("nxdi", "nvidia", "inference", "p5.48xlarge")
    with pytest.raises(InputError, match="does not run training"):
        resolve_stack("vllm", "nvidia", "training", "p5.48xlarge")
    assert resolve_stack("TRTLLM", "nvidia", "inference", "p5.48xlarge").name == "trtllm"


def test_every_measurement_names_a_known_stack() -> None:
    """Each row's stack comes from its engine cell or its source; none may be left unnamed."""
    files = [*bundled_files(), *bundled_files(holdout=True)]
    if PUBLISHED.exists():
        files.append(PUBLISHED)
    stacks = load_stacks()
    for f in files:
        for row in read_benchmarks(f):
            assert row_stack(row) in stacks, (f.name, row.source, row.engine)
    assert stack_of_source("NVIDIA NeMo Framework performance summary") == "nemo"
    assert stack_of_source("somebody's blog") == ""


def test_resolution_prefers_the_stacks_own_fit_then_its_parent_then_the_pool() -> None:
    cal = _cal({"hopper": A, "hopper/trtllm": B, "ampere": C})
    own = cal.resolve("hopper", "trtllm")
    assert own.params == B and own.key == "hopper/trtllm" and own.inherited_from is None
    nim = cal.resolve("hopper", "nim-trtllm")  # same group as trtllm
    assert nim.key == "hopper/trtllm"
    vllm = cal.resolve("hopper", "vllm")  # unmeasured: inherits trtllm, and says so
    assert vllm.params == B and "no measurements on hopper" in vllm.note and "TensorRT-LLM" in vllm.note
    nemo = cal.resolve("hopper", "nemo")  # no training entry: the family's pooled fit
    assert nemo.params == A and nemo.key == "hopper" and "no measurements of its own" in nemo.note
    assert cal.resolve("hopper").params == A
    black = cal.resolve("blackwell", "trtllm")  # family inheritance, then the stack's entry there
    assert black.params == B and black.inherited_from == "hopper" and "inherited from hopper" in black.note
    assert cal.resolve("ampere", "trtllm").params == C
    assert cal.resolve("unknown-family", "trtllm").key == "defaults"


def test_replacing_a_familys_parameters_replaces_them_for_every_stack() -> None:
    cal = _cal({"hopper": A, "hopper/trtllm": B}).with_params("hopper", C)
    assert cal.resolve("hopper", "trtllm").params == C and cal.resolve("hopper", "nemo").params == C


def test_shipped_calibration_names_the_stacks_each_entry_was_fitted_on() -> None:
    cal = load_calibration()
    fitted = cal.fitted_stacks
    for key in cal.params:
        assert key in fitted and sum(fitted[key].values()) == cal.fitted_rows[key], key
        if "/" in key:  # a stack's own entry holds that stack's rows only
            _family, group = key.split("/")
            assert set(fitted[key]) == {group}, key


def _estimate(*args: str) -> dict[str, object]:
    result = CliRunner().invoke(app, ["estimate", *args, "--json"])
    assert result.exit_code == 0, result.output
    body: dict[str, object] = json.loads(result.output)
    return body


def test_estimate_names_its_engine_and_the_calibration_it_used() -> None:
    gpu = _estimate("llama-3.1-8b", "--on", "g6e.xlarge")
    assert gpu["engine"] == "trtllm" and "TensorRT-LLM" in str(gpu["calibration"])
    neuron = _estimate("llama-3.1-8b", "--on", "inf2.xlarge")
    assert neuron["engine"] == "vllm-neuron" and "vLLM Neuron" in str(neuron["calibration"])
    train = _estimate("llama-3.1-8b", "--on", "p5.48xlarge", "--task", "training", "--seq-len", "8192")
    assert train["engine"] == "nemo"
    vllm = _estimate("llama-3.1-8b", "--on", "g6e.xlarge", "--engine", "vllm")
    assert vllm["engine"] == "vllm" and "vLLM" in str(vllm["calibration"])


def test_compare_with_an_engine_keeps_the_instances_it_runs_on() -> None:
    result = CliRunner().invoke(
        app, ["compare", "llama-3.1-8b", "--engine", "vllm-neuron", "--json", "--input-len", "512"]
    )
    assert result.exit_code == 0, result.output
    rows = json.loads(result.output)["results"]
    assert rows and {r["vendor"] for r in rows} == {"aws"} and {r["engine"] for r in rows} == {"vllm-neuron"}

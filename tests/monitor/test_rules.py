"""Generated Prometheus rules pass `promtool check rules`, and counter resets are shown in the report."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from tests.monitor import scenario
from tests.monitor.conftest import Replay, run

PROMTOOL = shutil.which("promtool")


def _rules(replay: Replay, tmp_path: Path) -> Path:
    out = tmp_path / "rules.yml"
    code, stdout, err = run(
        "monitor", "rules", "--plan", f"chat-gpu={replay.gpu_plan}", "--plan", f'chat "neuron"={replay.neuron_plan}',
        "--tpot-slo-ms", "80", "--out", str(out),
    )  # fmt: skip
    assert code == 0, err
    assert "wrote" in stdout
    return out


def test_rules_cover_each_deployment_with_its_band(replay: Replay, tmp_path: Path) -> None:
    doc = yaml.safe_load(_rules(replay, tmp_path).read_text())
    groups = {g["name"]: g["rules"] for g in doc["groups"]}
    assert set(groups) == {"silica-chat-gpu", 'silica-chat "neuron"'}
    gpu = groups["silica-chat-gpu"]
    records = {r["record"] for r in gpu if "record" in r}
    assert {
        "silica:output_tokens_per_second",
        "silica:tpot_seconds:mean",
        "silica:ttft_seconds:p99",
    } <= records
    band = next(r for r in gpu if r.get("alert") == "SilicaTPOTAbovePlan")
    assert band["expr"].endswith(f"> {replay.gpu['tpot_ms_high'] / 1000:.6g}")
    assert any(r.get("alert") == "SilicaTPOTP99AboveSLO" and r["expr"].endswith("> 0.08") for r in gpu)
    neuron = groups['silica-chat "neuron"']
    assert 'deployment="chat \\"neuron\\""' in neuron[0]["expr"]  # the label value quoted for PromQL


@pytest.mark.e2e
def test_promtool_checks_the_generated_rules(replay: Replay, tmp_path: Path) -> None:
    if PROMTOOL is None:
        if os.environ.get("CI") == "true":
            pytest.fail("promtool is required under CI (.ci/services.sh installs it)")
        pytest.skip("promtool not installed (apt-get install -y prometheus)")
    rules = _rules(replay, tmp_path)
    done = subprocess.run(
        [PROMTOOL, "check", "rules", str(rules)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS" in done.stdout + done.stderr


def test_counter_resets_are_shown(replay: Replay) -> None:
    code, out, err = run(
        "monitor", "report", "--plan", f"chat-gpu={replay.gpu_plan}", "--plan", f"chat-neuron={replay.neuron_plan}",
        "--from", str(replay.openmetrics), "--since", str(replay.since), "--until", str(replay.until),
        "--json", "--no-store",
    )  # fmt: skip
    assert code == 0, err
    gpu = json.loads(out)["deployments"][0]
    assert len(gpu["resets"]) == 1 and scenario.RESET_HOST in gpu["resets"][0]
    code, text, err = run(
        "monitor", "report", "--plan", f"chat-gpu={replay.gpu_plan}", "--from", str(replay.openmetrics),
        "--since", str(replay.since), "--until", str(replay.until), "--no-store",
    )  # fmt: skip
    assert code == 0, err
    assert "reset at" in text and scenario.RESET_HOST in text

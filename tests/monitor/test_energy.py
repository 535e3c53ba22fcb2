"""Measured joules per output token from DCGM board power, beside the plan's chip-only figure (issue 28)."""

from __future__ import annotations

import json

import pytest
from tests.monitor import scenario
from tests.monitor.conftest import Replay, report_cli


def test_measured_joules_per_token_come_from_dcgm_power(replay: Replay) -> None:
    code, out, err = report_cli(replay, "--no-store", "--json")
    assert code == 0, err
    gpu, neuron = json.loads(out)["deployments"]
    o = gpu["overall"]
    # Four L40S hosts drawing 250 W each (the scenario's DCGM gauge), whatever gaps the series have.
    assert o["chip_power_w"] == pytest.approx(len(scenario.GPU_HOSTS) * 250.0)
    assert o["chip_j_per_output_token"] == pytest.approx(o["chip_power_w"] / o["output_tokens_per_s"])
    planned = gpu["plan"]["chip_j_per_output_token"]
    assert planned is not None and planned > 0  # the L40S plan carries its energy
    # Inferentia2 publishes no power and neuron-monitor exports none here: unknown on both sides.
    assert neuron["overall"]["chip_j_per_output_token"] is None
    assert neuron["plan"]["chip_j_per_output_token"] is None


def test_table_prints_the_energy_line(replay: Replay) -> None:
    code, out, err = report_cli(replay, "--no-store")
    assert code == 0, err
    [line] = [x for x in out.splitlines() if x.startswith("energy: chat-gpu")]
    assert "J per output token measured" in line and "vs plan" in line

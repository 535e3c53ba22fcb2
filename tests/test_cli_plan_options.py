"""`estimate` and `compare` take one option set (`PlanOptions`), declared once."""

from __future__ import annotations

import json
from dataclasses import fields

import pytest
import typer
from typer.testing import CliRunner

from silica.cli.app import app
from silica.cli.estimate_cmd import PlanOptions, Task
from silica.workload import InferenceWorkload, TrainingWorkload

runner = CliRunner()


@pytest.mark.parametrize("command", ["estimate", "compare"])
def test_both_commands_offer_every_shared_option(command: str) -> None:
    cmd = typer.main.get_group(app).commands[command]
    flags = {flag for p in cmd.params for flag in p.opts}
    expected = {f.metadata["flag"] for f in fields(PlanOptions)}
    assert expected <= flags, expected - flags


def test_options_build_the_workload_they_describe() -> None:
    wl = PlanOptions(
        input_len=2048, output_len=64, rate_req_per_s=3.0, compute_dtype="fp8", weight_dtype="int8"
    ).workload()
    assert isinstance(wl, InferenceWorkload)
    assert (wl.input_len, wl.output_len, wl.rate_req_per_s) == (2048, 64, 3.0)
    assert (wl.compute_dtype, wl.weight_dtype) == ("fp8", "int8")
    train = PlanOptions(task=Task.training, seq_len=4096, tokens=1e9, micro_batch=2).workload()
    assert isinstance(train, TrainingWorkload)
    assert (train.seq_len, train.tokens, train.micro_batch) == (4096, 1e9, 2)


def test_a_user_price_reaches_both_commands() -> None:
    price = ["p5.48xlarge=10"]
    est = runner.invoke(app, ["estimate", "llama-3.1-8b", "--on", "p5.48xlarge", "--price", *price, "--json"])
    assert est.exit_code == 0, est.output
    assert json.loads(est.stdout)["price"]["usd_per_hour"] == 10.0
    cmp = runner.invoke(
        app, ["compare", "llama-3.1-8b", "--instance", "p5.48xlarge", "--price", *price, "--json"]
    )
    assert cmp.exit_code == 0, cmp.output
    assert json.loads(cmp.stdout)["results"][0]["price"]["usd_per_hour"] == 10.0

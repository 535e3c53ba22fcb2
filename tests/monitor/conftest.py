"""Shared fixtures: a throwaway store, plans saved by `silica estimate --json`, the scenario file."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from tests.monitor import scenario
from typer.testing import CliRunner

from silica import store
from silica.cli.app import app

DATA = Path(__file__).resolve().parents[1] / "data" / "monitor"


@pytest.fixture(autouse=True)
def _isolated_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    url = f"sqlite:///{tmp_path / 'silica-test.db'}"
    monkeypatch.setenv("SILICA_DB_URL", url)
    yield url
    store.close_all()


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args))
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


@dataclass(frozen=True)
class Replay:
    since: float
    until: float
    gpu_plan: Path
    neuron_plan: Path
    gpu: dict  # type: ignore[type-arg]
    neuron: dict  # type: ignore[type-arg]
    openmetrics: Path


def _estimate(tmp: Path, instance: str) -> tuple[Path, dict]:  # type: ignore[type-arg]
    code, out, err = run(
        "estimate", "llama-3.1-8b", "--on", instance, "--input-len", "1024", "--output-len", "256", "--json"
    )
    assert code == 0, err
    path = tmp / f"plan-{instance}.json"
    path.write_text(out)
    return path, json.loads(out)


@pytest.fixture(scope="session")
def replay(tmp_path_factory: pytest.TempPathFactory) -> Replay:
    tmp = tmp_path_factory.mktemp("replay")
    gpu_path, gpu = _estimate(tmp, "g6e.xlarge")
    neuron_path, neuron = _estimate(tmp, "inf2.xlarge")
    since = scenario.hour_aligned_start(time.time())
    text = scenario.openmetrics(
        since,
        scenario.Plan(gpu["tpot_ms"] / 1000, gpu["ttft_ms"] / 1000),
        scenario.Plan(neuron["tpot_ms"] / 1000, neuron["ttft_ms"] / 1000),
    )
    om = tmp / "scrapes.om"
    om.write_text(text)
    return Replay(since, since + scenario.STEP * scenario.SCRAPES, gpu_path, neuron_path, gpu, neuron, om)


def report_cli(replay: Replay, *extra: str) -> tuple[int, str, str]:
    """`silica monitor report` over the replay's two deployments in 1-hour windows."""
    return run(
        "monitor",
        "report",
        "--plan",
        f"chat-gpu={replay.gpu_plan}",
        "--plan",
        f"chat-neuron={replay.neuron_plan}",
        "--from",
        str(replay.openmetrics),
        "--since",
        str(replay.since),
        "--until",
        str(replay.until),
        "--window",
        "1h",
        *extra,
    )

"""The vLLM loopback validation's analysis (scripts/simulate_validation_vllm.py) on its bundled
measurements: the fit reads closed-loop requests only, and the front end's time counts the requests
already in the system."""

from __future__ import annotations

import copy
import importlib.util
import json
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "simulate_validation_vllm", ROOT / "scripts" / "simulate_validation_vllm.py"
    )
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_the_fit_never_reads_the_open_loop_runs() -> None:
    mod = _script()
    data = json.loads(mod.DATA.read_text())
    table, cv, front = mod.fit(data, probe=1)
    scrambled = copy.deepcopy(data)
    for run in scrambled["open_loop"]:
        for row in run["rows"]:
            row[3] *= 10.0  # every measured TTFT and TPOT ten times longer
            row[4] = None if row[4] is None else row[4] * 10.0
    table2, cv2, front2 = mod.fit(scrambled, probe=1)
    assert table2 == table and cv2 == cv
    assert (front2.base, front2.per_stream) == (front.base, front.per_stream)
    # and the server's own limits reach the simulator
    assert table.max_num_seqs == data["server"]["max_num_seqs"] == 8
    assert data["server"]["chunked_prefill"] is True


def test_the_front_end_time_grows_with_the_requests_in_the_system() -> None:
    mod = _script()
    front = mod.Front(0.005, 0.002, 0.005, np.zeros(1))
    arrival = np.array([0.0, 0.1, 0.2, 1.0])
    finish = np.array([0.5, 0.6, 0.7, 1.2])  # the first three overlap; the last arrives alone
    delay = front.delay(arrival, finish, np.random.default_rng(0))
    assert delay == pytest.approx([0.005, 0.007, 0.009, 0.005])

"""`silica pilot run` when the endpoint misbehaves: one line, or finished steps kept and the failure recorded."""

from __future__ import annotations

import json
from pathlib import Path

from tests.pilot.conftest import run
from tests.pilot.sse_server import serving

from silica.pilot.loadplan import LoadPlan
from silica.pilot.runner import run_plan, summarise_step


def test_dead_endpoint_is_one_line(tmp_path: Path) -> None:
    from tests.pilot.tiny_server import free_port

    out = tmp_path / "r.json"
    code, _, err = run(
        "pilot", "run", "--endpoint", f"http://127.0.0.1:{free_port()}", "--model", "m", "--out", str(out)
    )
    assert code == 2 and err.count("\n") == 1 and "Nothing answers" in err and "To fix" in err
    assert not out.exists()
    code, _, err = run("pilot", "run", "--endpoint", "localhost:8000", "--model", "m")
    assert code == 2 and "not an http(s) URL" in err


def test_500_mid_run_keeps_the_finished_steps(tmp_path: Path) -> None:
    with serving() as srv:
        out = tmp_path / "r.json"
        code, _, err = run(
            "pilot",
            "run",
            "--endpoint",
            f"http://127.0.0.1:{srv.port}",
            "--model",
            "fail-after-6",
            "--concurrency",
            "1,2,4",
            "--requests",
            "3",
            "--out",
            str(out),
        )
    assert code == 0, err  # something was measured: the file is the answer, with the failure in it
    res = json.loads(out.read_text())
    # warm-up (1) + 3 requests at c=1 + 2 of the c=2 step succeed; request 7 gets the 500
    assert [s["concurrency"] for s in res["steps"]] == [1, 2]
    assert res["steps"][0]["completed"] == 3 and res["steps"][0]["output_tokens"] == 3 * 64
    assert res["steps"][1]["failed"] >= 1
    assert "HTTP 500" in res["stopped"] and "concurrency 2" in res["stopped"]


def test_stream_that_stops_is_recorded_not_hung() -> None:
    with serving() as srv:
        plan = LoadPlan(input_len=4, output_len=8, concurrency=(1,), requests_per_step=1, warmup_requests=0)
        stalled = run_plan(f"http://127.0.0.1:{srv.port}", "stall", plan, read_timeout_s=0.5)
        cut = run_plan(f"http://127.0.0.1:{srv.port}", "cut", plan, read_timeout_s=5)
    assert stalled.steps == () and "the stream stopped" in (stalled.stopped or "")
    assert cut.steps == () and cut.stopped is not None and "failed" in cut.stopped


def test_step_figures_by_hand() -> None:
    """Percentiles, TPOT, throughput and goodput from request timings written out by hand."""
    from silica.pilot.client import RequestRecord

    plan = LoadPlan(
        input_len=4, output_len=3, concurrency=(2,), requests_per_step=2, ttft_slo_ms=150, tpot_slo_ms=60
    )
    a = RequestRecord(start=0.0, events=[0.1, 0.15, 0.2], end=0.2, output_tokens=3)  # ttft 100, tpot 50
    b = RequestRecord(start=0.0, events=[0.3, 0.4, 0.5], end=0.5, output_tokens=3)  # ttft 300, tpot 100
    s = summarise_step(plan, 2, [a, b], duration_s=0.5)
    assert s.ttft_ms["p50"] == 200.0 and s.ttft_ms["p90"] == 280.0
    assert s.tpot_ms["mean"] == 75.0
    assert s.itl_ms["p50"] == 75.0  # gaps 50, 50, 100, 100
    assert s.output_tokens_per_s == 12.0
    assert s.goodput_requests_per_s == 2.0 and s.slo_attainment == 0.5  # only a meets both SLOs

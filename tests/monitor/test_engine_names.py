"""TensorRT-LLM (trtllm-serve) and Triton's TensorRT-LLM backend: the names the monitor reads for them.

Triton keeps running and waiting requests, and the KV-cache fraction, in one gauge family each, told
apart by a label; the monitor must read only the member that means the signal (a `max` of 512 is no
running batch). The exposition is the backend's documented example (tests/data/pilot/SOURCES.md),
stamped with two scrape times as a recording scraper keeps it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from silica.monitor.report import _classify
from silica.monitor.series import read_exposition
from silica.monitor.signals import family_of, known_names, signal_of

TRITON = Path(__file__).resolve().parents[1] / "data" / "pilot" / "triton-trtllm-metrics.prom"


def _stamped(text: str, times_ms: list[int]) -> str:
    """The same exposition scraped at each time: each family's samples repeated with a timestamp."""
    blocks: list[tuple[list[str], list[str]]] = []  # (comment lines, sample lines) per family
    for line in text.splitlines():
        if line.startswith("# HELP") or not blocks:
            blocks.append(([], []))
        if line.startswith("#"):
            blocks[-1][0].append(line)
        elif line:
            blocks[-1][1].append(line)
    out = [c for heads, samples in blocks for c in heads + [f"{s} {t}" for t in times_ms for s in samples]]
    return "\n".join(out) + "\n"


def test_one_label_matcher_picks_the_member_that_means_the_signal() -> None:
    assert family_of('nv_trt_llm_request_metrics{request_type="active"}') == (
        "nv_trt_llm_request_metrics",
        ("request_type", "active"),
    )
    active = signal_of("nv_trt_llm_request_metrics", (("request_type", "active"),))
    waiting = signal_of("nv_trt_llm_request_metrics", (("model", "m"), ("request_type", "waiting")))
    assert active and active[0].key == "requests_running" and active[1] == "triton"
    assert waiting and waiting[0].key == "requests_waiting"
    assert signal_of("nv_trt_llm_request_metrics", (("request_type", "max"),)) is None
    assert signal_of("nv_trt_llm_request_metrics") is None
    assert "nv_trt_llm_request_metrics" in known_names()


def test_trtllm_serve_histograms_are_read_as_request_latency() -> None:
    for name, key in (
        ("trtllm_time_to_first_token_seconds", "ttft"),
        ("trtllm_time_per_output_token_seconds", "tpot"),
        ("trtllm_e2e_request_latency_seconds", "e2e"),
        ("trtllm_request_queue_time_seconds", "queue_time"),
        ("trtllm_kv_cache_utilization", "kv_cache_usage"),
    ):
        found = signal_of(name)
        assert found and found[0].key == key and found[1] == "trtllm"
    assert "trtllm_time_per_output_token_seconds_bucket" in known_names()


def test_the_documented_triton_example_reads_running_waiting_and_kv_use() -> None:
    t0 = 1_796_112_000_000
    tel = read_exposition(_stamped(TRITON.read_text(), [t0, t0 + 30_000]), source="triton")
    sig = _classify(tel.series)
    running = [s for s, _ in sig["requests_running"]]
    waiting = [s for s, _ in sig["requests_waiting"]]
    kv = [s for s, _ in sig["kv_cache_usage"]]
    assert [s.label("request_type") for s in running] == ["active"]
    assert running[0].values == (0.0, 0.0)
    assert [s.label("request_type") for s in waiting] == ["waiting"]
    assert waiting[0].values == (1.0, 1.0)
    assert kv[0].values == (pytest.approx(0.4875), pytest.approx(0.4875))


def test_the_engine_dashboard_queries_triton_with_its_label_matcher() -> None:
    from silica.monitor.dashboard import engine_dashboard

    exprs = "\n".join(t["expr"] for p in engine_dashboard()["panels"] for t in p.get("targets", []))
    assert 'nv_trt_llm_request_metrics{request_type="active",deployment=~"$deployment"}' in exprs
    assert (
        'nv_trt_llm_kv_cache_block_metrics{kv_cache_block_type="fraction",deployment=~"$deployment"}' in exprs
    )
    assert "rate(trtllm_time_per_output_token_seconds_bucket{" in exprs

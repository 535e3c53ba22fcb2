"""Serving context parallelism (`--cp` with task inference): physics the estimate must respect.

A long prompt's prefill split over cp ranks (each a full tp group) runs faster, but never more
than cp times faster and never below the compute or bandwidth bound; at a short prompt, where the
weights' stream sets the pace, splitting buys nothing; the KV cache per rank shrinks by cp; and
only the engines that document the mode accept it.
"""

from __future__ import annotations

import numpy as np
import pytest

from silica.catalog import load_catalog
from silica.errors import InputError
from silica.models import load_model
from silica.perf.calibration import load_calibration
from silica.perf.inference import InferencePerf, inference_perf
from silica.perf.inputs import Layout, Requests
from silica.perf.kernels import ModelCosts
from silica.perf.machine import machine_arrays
from silica.perf.precision import precision, widths

LONG = 131072 - 256  # 128K positions with the 256 generated tokens


def _perf(*, cp: float, input_len: float, tp: float = 4.0, instance: str = "p5.48xlarge") -> InferencePerf:
    cat = load_catalog()
    chip, inst = cat.chips["h100"], cat.instances[instance]
    m = machine_arrays([(chip, inst, load_calibration().resolve(chip.family).params)], "bf16")
    one = np.ones(1)
    model = load_model("llama-3.1-70b")
    lay = Layout(tp=tp * one, pp=one, batch=one, static_shapes=np.zeros(1, dtype=bool), cp=cp * one)
    req = Requests(input_len=input_len * one, output_len=256.0 * one, seq_len=(input_len + 256.0) * one)
    return inference_perf(
        ModelCosts.of(model), m, lay, req, widths(precision("bf16", "bf16"), 1), d_ff=float(model.d_ff)
    )


def test_long_prompt_prefill_is_faster_but_never_more_than_cp_times() -> None:
    one, two = _perf(cp=1, input_len=LONG), _perf(cp=2, input_len=LONG)
    ttft1, ttft2 = float(one.ttft_s[0]), float(two.ttft_s[0])
    assert ttft2 < 0.7 * ttft1  # 128K tokens: attention and matmuls dominate, and they split
    assert ttft2 >= ttft1 / 2.0  # the weights' stream, overheads and the ring do not split
    assert ttft2 >= float(two.ttft_floor_s[0]) > 0.0
    assert float(two.prefill_s[0]) >= float(one.prefill_s[0]) / 2.0


def test_short_prompt_gains_nothing_beyond_the_exchange() -> None:
    """32 tokens on tp 4: the step streams all of a rank's weights whatever its tokens (below the
    H100's ridge of ~300 tokens per matmul), so cp 2 is no faster and only its exchange, a
    latency per layer, can make it slower."""
    one, two = _perf(cp=1, input_len=32), _perf(cp=2, input_len=32)
    assert float(two.prefill_s[0]) >= 0.99 * float(one.prefill_s[0])
    assert float(one.prefill_split.pipeline[0]) == 0.0  # cp 1 exchanges nothing


def test_a_ring_across_instances_is_exposed_more_than_one_over_nvlink() -> None:
    """A short prompt has little attention to hide the key/value exchange behind; tp 8 x cp 2
    leaves the 8-GPU instance and moves its keys and values at one GPU's share of EFA."""
    inside = _perf(cp=2, input_len=4096, tp=4.0)
    across = _perf(cp=2, input_len=4096, tp=8.0)
    assert float(across.prefill_split.pipeline[0]) >= float(inside.prefill_split.pipeline[0]) >= 0.0
    assert float(across.prefill_split.pipeline[0]) > 0.0


def test_kv_cache_per_rank_falls_by_cp_and_decode_reads_less() -> None:
    one, two = _perf(cp=1, input_len=LONG), _perf(cp=2, input_len=LONG)
    assert float(two.kv_bytes[0]) == pytest.approx(float(one.kv_bytes[0]) / 2.0)
    assert float(two.weights_bytes[0]) == pytest.approx(float(one.weights_bytes[0]))
    assert float(two.decode_split.kv_bytes[0][0]) == pytest.approx(
        float(one.decode_split.kv_bytes[0][0]) / 2.0
    )
    assert float(two.tpot_s[0]) >= float(two.tpot_floor_s[0]) > 0.0


def test_estimate_widens_the_band_and_refuses_engines_without_it() -> None:
    from silica.plan import estimate
    from silica.workload import Deployment, InferenceWorkload

    wl = InferenceWorkload(input_len=LONG, output_len=256, batch=1)
    one = estimate("llama-3.1-70b", wl, Deployment("p5.48xlarge", tp=4, cp=1), engine="vllm")
    two = estimate("llama-3.1-70b", wl, Deployment("p5.48xlarge", tp=4, cp=2), engine="vllm")
    assert two.cp == 2 and one.cp is None and two.dp * 2 * 4 == 8
    assert one.ttft_ms is not None and two.ttft_ms is not None
    assert one.ttft_ms / 2.0 <= two.ttft_ms < one.ttft_ms
    b1, b2 = one.bands["ttft_ms"], two.bands["ttft_ms"]
    assert b2.high / b2.low > b1.high / b1.low  # no measured row: wider
    assert any("context parallel over 2 ranks" in a for a in two.assumptions)
    with pytest.raises(InputError, match=r"engines that do: .*vllm"):
        estimate("llama-3.1-70b", wl, Deployment("p5.48xlarge", tp=4, cp=2), engine="trtllm")


def test_cli_refuses_cp_on_an_engine_without_it_in_one_line() -> None:
    from typer.testing import CliRunner

    from silica.cli.app import app

    args = ["estimate", "llama-3.1-8b", "--on", "p5.48xlarge", "--input-len", "65536", "--cp", "2"]
    out = CliRunner().invoke(app, [*args, "--engine", "trtllm"])
    assert out.exit_code == 2
    lines = out.output.strip().splitlines()
    assert lines[-1].startswith("error: cp 2 for inference needs an engine") and "vllm-neuron" in lines[-1]
    ok = CliRunner().invoke(app, [*args, "--engine", "vllm", "--tp", "4", "--batch", "1"])
    assert ok.exit_code == 0, ok.output
    assert "cp=2" in ok.output


def test_a_cp_group_larger_than_a_stage_is_refused_and_one_across_instances_served() -> None:
    from silica.plan import estimate
    from silica.workload import Deployment, InferenceWorkload

    wl = InferenceWorkload(input_len=LONG, output_len=256, batch=1)
    with pytest.raises(InputError, match=r"tp 8 x cp 2 needs 16 units"):
        estimate("llama-3.1-70b", wl, Deployment("p5.48xlarge", tp=8, cp=2), engine="vllm")
    across = estimate(
        "llama-3.1-70b", wl, Deployment("p5.48xlarge", count=2, tp=8, pp=1, cp=2), engine="vllm"
    )
    alone = estimate("llama-3.1-70b", wl, Deployment("p5.48xlarge", tp=8), engine="vllm")
    assert across.feasible and across.cp == 2
    assert across.ttft_ms is not None and alone.ttft_ms is not None
    assert alone.ttft_ms / 2.0 <= across.ttft_ms < alone.ttft_ms

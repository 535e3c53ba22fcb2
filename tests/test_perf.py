"""Properties of the performance formulas that must hold for any model and hardware."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from silica.catalog import load_catalog
from silica.models import load_model
from silica.perf.calibration import load_calibration
from silica.perf.inference import inference_perf, neuron_bucket
from silica.perf.kernels import ModelCosts, decode_seconds
from silica.perf.machine import machine_arrays
from silica.perf.precision import precision

MODELS = ["llama-3.1-8b", "mixtral-8x7b", "deepseek-v3", "gemma-2-9b", "qwen3-30b-a3b", "llama-3.1-70b"]
CHIPS = ["h100", "a100-80gb", "inferentia2", "trainium1", "trainium2", "l40s", "b200"]


def _machine(chip_id: str, n: int = 1):
    cat = load_catalog()
    chip = cat.chips[chip_id]
    params = load_calibration().for_family(chip.family)[0]
    return machine_arrays([(chip, None, params)] * n, "bf16"), chip


@settings(max_examples=60, deadline=None)
@given(
    model=st.sampled_from(MODELS),
    chip=st.sampled_from(CHIPS),
    batch=st.integers(1, 512),
    context=st.integers(1, 32768),
    tp_exp=st.integers(0, 3),
)
def test_tpot_never_below_memory_bandwidth_bound(
    model: str, chip: str, batch: int, context: int, tp_exp: int
) -> None:
    """A decode step streams the weights it touches and the KV cache: it cannot beat peak bandwidth."""
    spec = load_model(model)
    m, _ = _machine(chip)
    costs = ModelCosts.of(spec)
    tp = np.asarray([2.0**tp_exp])
    one = np.ones(1)
    step = decode_seconds(
        costs,
        m,
        tp,
        one,
        np.asarray([float(batch)]),
        np.asarray([float(context)]),
        2.0 * one,
        2.0 * one,
        2.0 * one,
        np.zeros(1, dtype=bool),
    )
    weights = costs.weights_read(np.asarray([float(batch)])) * 2.0 / tp
    kv = np.asarray(
        batch * min(context, spec.sliding_window or context) * costs.kv_bytes_per_token_per_unit(tp, 2.0)
    ) * np.ones(1)
    if not spec.sliding_window:
        assert kv[0] > 0
    bound = (weights + (kv if not spec.sliding_window else 0.0)) / m.unit_bw  # at the unit's full bandwidth
    assert step[0] >= bound[0] * (1 - 1e-9)


@settings(max_examples=40, deadline=None)
@given(model=st.sampled_from(MODELS), tokens=st.integers(1, 100_000))
def test_moe_reads_between_active_and_total_weights(model: str, tokens: int) -> None:
    spec = load_model(model)
    costs = ModelCosts.of(spec)
    read = float(costs.weights_read(np.asarray([float(tokens)]))[0])
    assert read <= spec.total_params - spec.embedding_params + 1
    assert read >= spec.matmul_params_per_token - spec.vocab_size * spec.d_model - 1


def test_moe_touches_more_experts_with_more_tokens() -> None:
    costs = ModelCosts.of(load_model("mixtral-8x7b"))
    reads = costs.weights_read(np.asarray([1.0, 2.0, 8.0, 64.0, 4096.0]))
    assert np.all(np.diff(reads) > 0)
    assert reads[-1] == pytest.approx(
        costs.static_params + costs.n_moe_layers * 8 * costs.expert_params, rel=1e-6
    )


def test_neuron_buckets_are_powers_of_two_capped_at_seq_len() -> None:
    out = neuron_bucket(np.asarray([1.0, 128.0, 129.0, 3000.0, 5000.0]), np.asarray([8192.0] * 4 + [4096.0]))
    assert out.tolist() == [128.0, 128.0, 256.0, 4096.0, 5000.0]


def _perf(model: str, chip: str, batch: float, input_len: float, output_len: float, weight: str = "bf16"):
    m, _ = _machine(chip)
    prec = precision(weight, "bf16")  # type: ignore[arg-type]
    one = np.ones(1)
    return inference_perf(
        ModelCosts.of(load_model(model)),
        m,
        tp=one,
        pp=one,
        batch=batch * one,
        input_len=input_len * one,
        output_len=output_len * one,
        seq_len=(input_len + output_len) * one,
        w_bytes=prec.weight_bytes * one,
        act_bytes=prec.act_bytes * one,
        kv_bytes=prec.kv_bytes * one,
        static_shapes=np.zeros(1, dtype=bool),
        d_ff=14336.0,
    )


def test_longer_prompts_take_longer_and_more_memory() -> None:
    short, long = _perf("llama-3.1-8b", "h100", 8, 512, 128), _perf("llama-3.1-8b", "h100", 8, 4096, 128)
    assert long.ttft_s[0] > short.ttft_s[0]
    assert long.kv_bytes[0] > short.kv_bytes[0]
    assert long.tpot_s[0] >= short.tpot_s[0]


def test_int8_weights_halve_weight_memory_and_speed_up_decode() -> None:
    bf16, int8 = (
        _perf("llama-3.1-8b", "inferentia2", 1, 128, 128),
        _perf("llama-3.1-8b", "inferentia2", 1, 128, 128, "int8"),
    )
    assert int8.weights_bytes[0] == pytest.approx(bf16.weights_bytes[0] / 2)
    assert int8.tpot_s[0] < bf16.tpot_s[0]


def test_fp8_exists_only_where_the_chip_has_it() -> None:
    cat = load_catalog()
    chip = cat.chips["a100-80gb"]
    m = machine_arrays([(chip, None, load_calibration().for_family(chip.family)[0])], "fp8")
    assert np.isnan(m.unit_flops[0])
    h100 = cat.chips["h100"]
    m8 = machine_arrays([(h100, None, load_calibration().for_family("hopper")[0])], "fp8")
    m16 = machine_arrays([(h100, None, load_calibration().for_family("hopper")[0])], "bf16")
    assert m8.unit_flops[0] == pytest.approx(2 * m16.unit_flops[0], rel=0.01)


@pytest.mark.parametrize("model", ["llama-3.1-70b", "mixtral-8x22b", "llama-3.1-405b"])
def test_more_instances_never_lose_the_memory_to_fit(model: str) -> None:
    """If a model fits on n instances, it fits on 2n: adding chips never lowers capacity."""
    from silica.plan import estimate
    from silica.workload import Deployment, InferenceWorkload

    wl = InferenceWorkload(input_len=1024, output_len=256)
    for inst in ("p4d.24xlarge", "trn1.32xlarge", "p5.48xlarge"):
        fits = [estimate(model, wl, Deployment(inst, count=n)).feasible for n in (1, 2, 4, 8)]
        first = fits.index(True) if True in fits else len(fits)
        assert all(fits[first:]), (inst, fits)

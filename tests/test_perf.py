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
from silica.perf.inputs import Layout, Requests, Widths
from silica.perf.kernels import ModelCosts, decode_seconds
from silica.perf.machine import machine_arrays
from silica.perf.precision import precision, widths

MODELS = ["llama-3.1-8b", "mixtral-8x7b", "deepseek-v3", "gemma-2-9b", "qwen3-30b-a3b", "llama-3.1-70b"]
CHIPS = ["h100", "a100-80gb", "inferentia2", "trainium1", "trainium2", "l40s", "b200"]


def _machine(chip_id: str, n: int = 1):
    cat = load_catalog()
    chip = cat.chips[chip_id]
    params = load_calibration().resolve(chip.family).params
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
        Layout(tp=tp, pp=one, batch=np.asarray([float(batch)]), static_shapes=np.zeros(1, dtype=bool)),
        np.asarray([float(context)]),
        Widths(weight=2.0 * one, act=2.0 * one, kv=2.0 * one),
    ).seconds
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
        Layout(tp=one, pp=one, batch=batch * one, static_shapes=np.zeros(1, dtype=bool)),
        Requests(
            input_len=input_len * one, output_len=output_len * one, seq_len=(input_len + output_len) * one
        ),
        widths(prec, 1),
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
    m = machine_arrays([(chip, None, load_calibration().resolve(chip.family).params)], "fp8")
    assert np.isnan(m.unit_flops[0])
    h100 = cat.chips["h100"]
    m8 = machine_arrays([(h100, None, load_calibration().resolve("hopper").params)], "fp8")
    m16 = machine_arrays([(h100, None, load_calibration().resolve("hopper").params)], "bf16")
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


@pytest.mark.parametrize(
    ("model", "chip", "batch", "input_len"),
    [
        ("llama-3.1-8b", "h100", 1, 1024),  # memory-bound decode
        ("llama-3.1-8b", "h100", 256, 1024),  # compute-bound decode
        ("mixtral-8x7b", "trainium2", 8, 2048),
        ("gemma-2-9b", "inferentia2", 4, 512),  # sliding-window layers
    ],
)
def test_time_split_parts_add_up_to_the_phase_time(model: str, chip: str, batch: int, input_len: int) -> None:
    perf = _perf(model, chip, batch, input_len, 256)
    prefill = perf.prefill_split.parts_at(0)
    decode = perf.decode_split.parts_at(0)
    assert sum(prefill.values()) == pytest.approx(perf.prefill_s[0], rel=1e-9)
    assert sum(decode.values()) == pytest.approx(perf.tpot_s[0], rel=1e-9)
    assert all(v > 0 for v in (*prefill.values(), *decode.values()))


def test_memory_bound_decode_charges_weights_at_the_achieved_bandwidth() -> None:
    """At batch 1 a decode step streams the weights: the weights term is bytes / (peak bw x memory_eff)."""
    spec = load_model("llama-3.1-8b")
    m, _ = _machine("h100")
    perf = _perf("llama-3.1-8b", "h100", 1, 1024, 256)
    parts = perf.decode_split.parts_at(0)
    weight_bytes = float(ModelCosts.of(spec).weights_read(np.ones(1))[0]) * 2.0  # bf16, tp=1
    assert parts["weights"] == pytest.approx(weight_bytes / (m.unit_bw[0] * m.cal.mem_eff[0]), rel=1e-12)
    assert "compute" not in parts and parts["kv"] > 0
    # The prefill of 1,024 tokens is compute-bound: no memory term, all roofline time is compute.
    prefill = perf.prefill_split.parts_at(0)
    assert "weights" not in prefill and prefill["compute"] > 0


def test_training_step_split_adds_up_to_the_step_time() -> None:
    from silica.plan import estimate
    from silica.workload import Deployment, TrainingWorkload

    wl = TrainingWorkload(seq_len=4096, tokens=1e11)
    for on, count in (("trn1.32xlarge", 4), ("p5.48xlarge", 2)):
        r = estimate("llama-3.1-8b", wl, Deployment(on, count=count, tp=8, pp=2))
        (phase,) = r.time
        assert phase.phase == "training step"
        assert phase.ms == pytest.approx(r.step_s * 1e3, rel=1e-12)
        assert sum(phase.parts_ms.values()) == pytest.approx(phase.ms, rel=1e-9)
        assert {"compute", "all_reduce", "pipeline", "bubble", "optimizer"} <= set(phase.parts_ms)


def test_a_fixed_time_per_request_adds_to_served_ttft_only() -> None:
    """`request_overhead_us` is paid once per served request before its first token: it adds exactly
    to a continuous-batching TTFT, and not to a static batch's (what published tables time), TPOT,
    throughput or memory. The shipped calibration has none (published rows do not identify it)."""
    from dataclasses import replace

    cal = load_calibration()
    assert all(p.request_overhead_us == 0.0 for p in cal.params.values())
    chip = load_catalog().chips["h100"]
    base = cal.resolve(chip.family, "vllm").params
    one = np.ones(1)
    costs = ModelCosts.of(load_model("llama-3.1-8b"))
    lay = Layout(tp=one, pp=one, batch=8 * one, static_shapes=np.zeros(1, dtype=bool))
    req = Requests(input_len=512 * one, output_len=128 * one, seq_len=640 * one)

    def perf(us: float, continuous: bool):  # type: ignore[no-untyped-def]
        m = machine_arrays([(chip, None, replace(base, request_overhead_us=us))], "bf16")
        return inference_perf(
            costs, m, lay, req, widths(precision("bf16", "bf16"), 1), d_ff=14336.0, continuous=continuous
        )

    for continuous in (True, False):
        without, with_ = perf(0.0, continuous), perf(4000.0, continuous)
        added = 4e-3 if continuous else 0.0
        assert with_.ttft_s[0] - without.ttft_s[0] == pytest.approx(added, abs=1e-12)
        assert with_.ttft_floor_s[0] == without.ttft_floor_s[0]  # a floor holds no overhead
        assert with_.tpot_s[0] == without.tpot_s[0]
        assert with_.replica_output_tok_s[0] == without.replica_output_tok_s[0]
        assert with_.kv_bytes[0] == without.kv_bytes[0]

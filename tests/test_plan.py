"""The planner: estimate, compare, costs, break-even prices, and the reasons it gives."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from silica.catalog import is_reference_system, load_catalog
from silica.errors import InfeasibleError, InputError
from silica.perf.calibration import load_calibration
from silica.plan import compare, estimate
from silica.validate.benchmarks import read_benchmarks
from silica.validate.fit import best_published_mfu
from silica.workload import Deployment, InferenceWorkload, TrainingWorkload

CHAT = InferenceWorkload(input_len=1024, output_len=256)


@pytest.fixture(scope="module")
def chat_8b():
    return compare("llama-3.1-8b", CHAT)


def test_70b_does_not_fit_on_inf2_xlarge_and_says_why() -> None:
    result = estimate("llama-3.1-70b", CHAT, Deployment("inf2.xlarge"))
    assert not result.feasible
    assert any("memory" in r for r in result.reasons)
    assert result.ttft_ms is None


def test_compare_ranks_all_three_vendors_families_with_costs(chat_8b) -> None:
    priced = [r for r in chat_8b.results if r.feasible and r.usd_per_1m_output_tokens is not None]
    chips = {r.chip for r in priced}
    assert {"trainium1", "inferentia2"} <= chips
    assert chips & {"h100", "h200", "a100-80gb", "l40s"}
    costs = [r.usd_per_1m_output_tokens for r in priced]
    assert costs == sorted(costs)
    # Every instance type is considered; reference systems (DGX nodes, NVL72 racks) only when named.
    rentable = [i for i in load_catalog().instances.values() if not is_reference_system(i)]
    assert len(chat_8b.results) == len(rentable)


def test_unpriced_instances_get_a_breakeven_price_that_ties_the_cheapest(chat_8b) -> None:
    cheapest = chat_8b.best
    trn2 = next(r for r in chat_8b.results if r.instance == "trn2.48xlarge")
    assert trn2.usd_per_hour is None and trn2.usd_per_1m_output_tokens is None
    assert trn2.breakeven_usd_per_hour is not None
    # At the break-even price trn2 would cost exactly the cheapest option's $/1M tokens.
    per_1m = trn2.breakeven_usd_per_hour * trn2.count / (trn2.output_tokens_per_s * 3600) * 1e6
    assert per_1m == pytest.approx(cheapest.usd_per_1m_output_tokens, rel=1e-9)


def test_user_price_makes_an_unpriced_instance_rankable() -> None:
    catalog = load_catalog(overrides={"trn2.48xlarge": 30.0})
    result = estimate("llama-3.1-8b", CHAT, Deployment("trn2.48xlarge"), catalog=catalog)
    assert result.usd_per_hour == 30.0
    assert result.price is not None and result.price.option == "user"
    assert result.usd_per_1m_output_tokens is not None


@settings(max_examples=15, deadline=None)
@given(factor=st.floats(0.1, 10.0))
def test_cost_scales_linearly_with_price(factor: float) -> None:
    base = estimate(
        "llama-3.1-8b", CHAT, Deployment("p5.48xlarge"), catalog=load_catalog(overrides={"p5.48xlarge": 50.0})
    )
    scaled = estimate(
        "llama-3.1-8b",
        CHAT,
        Deployment("p5.48xlarge"),
        catalog=load_catalog(overrides={"p5.48xlarge": 50.0 * factor}),
    )
    assert scaled.usd_per_1m_output_tokens == pytest.approx(base.usd_per_1m_output_tokens * factor, rel=1e-9)
    assert scaled.output_tokens_per_s == pytest.approx(base.output_tokens_per_s)


def test_slos_are_respected_and_impossible_ones_are_refused() -> None:
    tight = InferenceWorkload(input_len=1024, output_len=256, ttft_slo_ms=500, tpot_slo_ms=30)
    for r in compare("llama-3.1-8b", tight).results:
        if r.feasible:
            assert r.ttft_ms <= 500 and r.tpot_ms <= 30
        else:
            assert r.reasons
    with pytest.raises(InfeasibleError, match="SLO"):
        compare("llama-3.1-8b", InferenceWorkload(input_len=1024, output_len=256, ttft_slo_ms=0.01))


def test_load_sets_instances_needed_and_monthly_cost() -> None:
    wl = InferenceWorkload(input_len=1024, output_len=256, tokens_per_month=5e10)
    r = estimate("llama-3.1-8b", wl, Deployment("p5.48xlarge"))
    needed = 5e10 / (730 * 3600)
    assert r.instances_for_load * r.output_tokens_per_s / r.count >= needed
    assert r.usd_per_month == pytest.approx(r.instances_for_load * 55.04 * 730, rel=1e-6)


def test_tp_the_model_cannot_take_is_an_input_error() -> None:
    with pytest.raises(InputError, match="heads"):
        estimate("qwen2.5-7b", CHAT, Deployment("p5.48xlarge", tp=8))  # 28 heads; GPUs split heads evenly
    with pytest.raises(InputError, match="divide"):
        estimate("llama-3.1-8b", CHAT, Deployment("p5.48xlarge", tp=16))


def test_contradictory_and_negative_workloads_are_refused() -> None:
    with pytest.raises(InputError):
        InferenceWorkload(input_len=0, output_len=10)
    with pytest.raises(InputError, match="contradicts"):
        InferenceWorkload(input_len=10, output_len=100, rate_req_per_s=1.0, tokens_per_month=1.0)


def test_training_compare_ranks_by_cost_to_train_within_the_deadline() -> None:
    wl = TrainingWorkload(seq_len=8192, tokens=2e12, deadline_days=60)
    result = compare("llama-3.1-70b", wl)
    priced = [r for r in result.results if r.feasible and r.usd_per_run is not None]
    assert priced, "some priced instance must be able to train a 70B model in 60 days"
    assert [r.usd_per_run for r in priced] == sorted(r.usd_per_run for r in priced)
    for r in priced:
        assert r.train_days <= 60
        assert 0.05 < r.mfu < 0.8
        # usd_per_run = hourly price x instances x hours
        assert r.usd_per_run == pytest.approx(r.usd_per_hour * r.train_days * 24, rel=1e-9)


def test_estimates_carry_bands_and_their_calibration_story() -> None:
    r = estimate("llama-3.1-8b", CHAT, Deployment("trn1.32xlarge"))
    d = r.to_dict()
    assert d["ttft_ms_low"] <= d["ttft_ms"] <= d["ttft_ms_high"]
    assert "fitted on neuron-v2" in r.calibration
    trn3 = estimate("llama-3.1-8b", CHAT, Deployment("trn3-gen1-ultraserver")).to_dict()
    assert "inherited" in trn3["calibration"]
    own = d["tpot_ms_high"] / d["tpot_ms_low"]
    inherited = trn3["tpot_ms_high"] / trn3["tpot_ms_low"]
    assert inherited > own  # a chip without measurements gets a wider band


def test_a_load_ranks_by_monthly_cost_and_sizes_the_fleet() -> None:
    wl = InferenceWorkload(
        input_len=1024, output_len=256, rate_req_per_s=10, ttft_slo_ms=2000, tpot_slo_ms=50
    )
    result = compare("llama-3.1-70b", wl)
    priced = [r for r in result.results if r.feasible and r.usd_per_month is not None]
    months = [r.usd_per_month for r in priced]
    assert months == sorted(months)
    for r in priced:
        # the instances the load needs deliver at least the requested output tokens
        assert r.instances_for_load / r.count * r.output_tokens_per_s >= 10 * 256 * (1 - 1e-9)


def test_encoders_are_ranked_by_prompt_tokens_and_refuse_output() -> None:
    with pytest.raises(InputError, match="encoder"):
        compare("bert-base-uncased", InferenceWorkload(input_len=128, output_len=16))
    result = compare("bert-base-uncased", InferenceWorkload(input_len=128, output_len=0, ttft_slo_ms=50))
    priced = [r for r in result.results if r.feasible and r.usd_per_1m_input_tokens is not None]
    assert [r.usd_per_1m_input_tokens for r in priced] == sorted(r.usd_per_1m_input_tokens for r in priced)
    assert all(r.tpot_ms is None and r.ttft_ms <= 50 for r in priced)


def test_lengths_beyond_the_model_context_are_refused() -> None:
    with pytest.raises(InputError, match="positions"):
        estimate("gpt2", InferenceWorkload(input_len=4000, output_len=200), Deployment("g6e.xlarge"))
    with pytest.raises(InputError, match="Output length 0"):
        estimate("llama-3.1-8b", InferenceWorkload(input_len=100, output_len=0), Deployment("g6e.xlarge"))


def test_a_fixed_layout_larger_than_the_deployment_is_an_input_error() -> None:
    with pytest.raises(InputError, match=r"tp x pp|more pipeline stages than"):
        estimate("llama-3.1-8b", CHAT, Deployment("p5.48xlarge", pp=64))


def test_training_mfu_stays_physical_and_prefers_fewer_instances_on_ties() -> None:
    for model, seq in (
        ("gpt2", 1024),
        ("llama-3.2-1b", 4096),
        ("llama-3.1-8b", 4096),
    ):  # gpt2: 1,024 positions
        for inst in ("trn1.32xlarge", "p5.48xlarge", "trn2.48xlarge"):
            r = estimate(model, TrainingWorkload(seq_len=seq, micro_batch=4), Deployment(inst))
            assert r.feasible and 0.05 < r.mfu < 0.85, (model, inst, r.mfu)
    tiny = compare("gpt2", TrainingWorkload(seq_len=1024, tokens=1e9))
    assert all(r.count <= 2 for r in tiny.results if r.feasible)  # a $10 run does not need a cluster


def test_each_question_has_its_own_result_type_and_json() -> None:
    from silica.plan import estimate
    from silica.results import InferenceEstimate, TrainingEstimate
    from silica.workload import Deployment, InferenceWorkload, TrainingWorkload

    inf = estimate(
        "llama-3.1-8b", InferenceWorkload(input_len=512, output_len=128), Deployment("p5.48xlarge")
    )
    train = estimate(
        "llama-3.1-8b", TrainingWorkload(seq_len=4096, tokens=1e10), Deployment("p5.48xlarge", count=2)
    )
    assert isinstance(inf, InferenceEstimate) and isinstance(train, TrainingEstimate)
    d_inf, d_train = inf.to_dict(), train.to_dict()
    assert d_inf["task"] == "inference" and d_train["task"] == "training"
    assert {"ttft_ms", "tpot_ms", "usd_per_1m_output_tokens", "ttft_ms_low"} <= set(d_inf)
    assert not {"step_s", "mfu", "train_days", "usd_per_run"} & set(d_inf)
    assert {"step_s", "mfu", "train_days", "usd_per_run", "usd_per_run_low"} <= set(d_train)
    assert not {"ttft_ms", "tpot_ms", "usd_per_1m_output_tokens"} & set(d_train)
    shared = {
        "model",
        "instance",
        "count",
        "chip",
        "price",
        "usd_per_hour",
        "memory_gib",
        "time",
        "assumptions",
    }
    assert shared <= set(d_inf) & set(d_train)


def test_a_model_that_fits_one_instance_is_served_as_replicas_not_a_pipeline(chat_8b) -> None:
    """Llama 3.1 8B fits every GPU or Neuron instance here: the unit deployed is one instance."""
    feasible = [r for r in chat_8b.results if r.feasible]
    assert feasible
    for r in feasible:
        assert (r.count, r.pp) == (1, 1), (r.instance, r.count, r.pp)


def test_a_model_too_big_for_one_instance_still_pipelines_across_instances() -> None:
    wl = InferenceWorkload(input_len=1024, output_len=256)
    r = compare("llama-3.1-405b", wl, instances=["p4d.24xlarge"]).results[0]
    assert r.feasible and r.count > 1 and r.pp == r.count


def test_a_training_mfu_beyond_every_published_measurement_says_it_extrapolates() -> None:
    wl = TrainingWorkload(seq_len=8192)
    r = estimate("llama-3.1-8b", wl, Deployment("trn2.48xlarge"))
    cal = load_calibration()
    best = cal.best_published_mfu["neuron-v2"]["bf16"]["dense"]["mfu"]
    notes = [a for a in r.assumptions if a.startswith("extrapolates")]
    assert (r.mfu is not None and r.mfu > best) == bool(notes), (r.mfu, best, notes)
    assert notes and f"{best:.1%}" in notes[0]


def test_a_training_mfu_within_the_published_range_carries_no_extrapolation_note() -> None:
    cal = load_calibration()
    best = cal.best_published_mfu["neuron-v2"]["bf16"]["dense"]["mfu"]
    assert cal.mfu_check("neuron-v2", "bf16", best * 0.9) is None
    assert cal.mfu_check("neuron-v3", "bf16", best * 1.1) is not None  # inherited ceiling
    assert "no published fp8" in (cal.mfu_check("neuron-v2", "fp8", 0.1) or "")


def test_a_dense_estimate_is_never_bounded_by_a_mixture_of_experts_row() -> None:
    """Hopper's only bf16 training rows are MoE (GPT-OSS 120B, about 20% MFU): a dense Llama at 49%
    is not "above the best published" of its kind; there is no dense bf16 row to compare with."""
    cal = load_calibration()
    moe = cal.best_published_mfu["hopper"]["bf16"]["moe"]
    dense_note = cal.mfu_check("hopper", "bf16", 0.49)
    assert dense_note is not None and "no published bf16 training measurement of a dense model" in dense_note
    moe_note = cal.mfu_check("hopper", "bf16", moe["mfu"] * 1.2, moe=True) or ""
    assert f"{moe['mfu']:.1%}" in moe_note and moe["row"] in moe_note and moe["engine"] in moe_note
    assert cal.mfu_check("hopper", "bf16", moe["mfu"] * 0.9, moe=True) is None


def test_the_mfu_anchors_are_the_bundled_measurements_best() -> None:
    """The shipped table is what `best_published_mfu` computes from the files calibration.json names."""
    cal = load_calibration()
    files = [f for f in cal.generated_by.split() if f.endswith(".csv")]
    root = Path(__file__).resolve().parents[1]
    paths = [(root / f).resolve() for f in files]
    if not all(p.exists() for p in paths):
        pytest.skip("a measurement file calibration.json names is not present")
    rows = [r for p in paths for r in read_benchmarks(p)]
    assert best_published_mfu(rows, load_catalog()) == cal.best_published_mfu

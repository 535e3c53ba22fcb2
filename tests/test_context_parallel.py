"""Context parallelism in training: cp ranks split every sequence (not more data-parallel ranks that
each pay the whole sequence), exchange keys and values around a ring over the right link, and reduce
gradients with the data-parallel ranks; rows with a `cp` column are read and predicted as run."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from silica.catalog import load_catalog
from silica.models import load_model
from silica.perf.calibration import load_calibration
from silica.perf.inputs import Layout, TrainingRun
from silica.perf.kernels import ModelCosts, TrainStep, train_step
from silica.perf.machine import machine_arrays
from silica.perf.precision import precision, widths
from silica.perf.stacks import load_stacks
from silica.validate.benchmarks import BUNDLED, read_benchmarks
from silica.validate.predict import predict_rows

LONG = BUNDLED / "nemo_long_sequence_cp_h100.csv"
PUBLISHED = Path(__file__).resolve().parents[1].parent / "shared" / "benchmarks" / "published.csv"


def _step(*, seq: float, tp: float, cp: float, dp: float, instances: str = "p5.48xlarge") -> TrainStep:
    cat = load_catalog()
    chip, inst = cat.chips["h100"], cat.instances[instances]
    m = machine_arrays([(chip, inst, load_calibration().resolve(chip.family).params)], "bf16")
    one = np.ones(1)
    lay = Layout(
        tp=tp * one, pp=one, batch=one, static_shapes=np.zeros(1, dtype=bool), dp=dp * one, cp=cp * one
    )
    run = TrainingRun(
        global_batch=max(1.0, 4 * 1024 * 1024 / seq) * one,
        seq_len=seq * one,
        zero_stage=1,
        peak_flops=np.full(1, 989e12),
    )
    c = ModelCosts.of(load_model("llama-2-7b"))
    return train_step(c, m, lay, run, widths(precision("bf16", "bf16"), 1, weight_bytes=2.0))


def test_cp_divides_the_sequence_not_multiplies_the_work() -> None:
    """Four ranks on one 128K sequence: as cp 4 each holds a quarter of it; as dp 4 (what ignoring cp
    amounted to) each holds a whole sequence of a 32-sequence batch. With cp the step is no slower
    per token and each rank's activations are a quarter."""
    with_cp = _step(seq=131072, tp=2, cp=4, dp=1)
    as_dp = _step(seq=131072, tp=2, cp=1, dp=4)
    assert float(with_cp.tokens_per_s_per_chip[0]) >= 0.9 * float(as_dp.tokens_per_s_per_chip[0])
    assert float(with_cp.memory_per_unit[0]) < float(as_dp.memory_per_unit[0])


def test_cp_one_has_no_ring_and_a_ring_over_the_network_costs_more() -> None:
    """cp 1 exchanges nothing; a cp group that leaves the instance (tp x cp > 8 GPUs) moves its keys
    and values at one GPU's share of the network, so its exposed time is at least that of NVLink's."""
    base = _step(seq=32768, tp=1, cp=1, dp=8)
    assert float(base.split.pipeline[0]) == 0.0
    short = 8192.0  # little attention to hide the exchange behind
    inside = _step(seq=short, tp=2, cp=4, dp=1)
    across = _step(seq=short, tp=4, cp=4, dp=1)
    assert float(across.split.pipeline[0]) >= float(inside.split.pipeline[0]) >= 0.0


def test_rows_with_cp_are_read_and_split_the_chips() -> None:
    rows = read_benchmarks(LONG)
    assert {r.cp for r in rows} >= {1, 2, 4, 8, 16, 32}
    for r in rows:  # data-parallel ranks are what tp x pp x cp leave of the chips
        assert r.chips % ((r.tp or 1) * (r.pp or 1) * (r.cp or 1)) == 0
    predictions = predict_rows(rows)
    assert all(p.skipped is None and p.predicted and np.isfinite(p.predicted) for p in predictions)


def test_long_context_rows_with_cp_within_20_percent_in_sample() -> None:
    """The done-when check of issue 25 on NeMo's long-sequence table (4K-1M tokens, cp 1-32), with the
    shipped calibration (fitted on it; leave-one-source-out figures are in docs/accuracy.md)."""
    errors = [abs(p.predicted - p.row.value) / p.row.value for p in predict_rows(read_benchmarks(LONG))]
    assert max(errors) <= 0.20, [f"{e:.1%}" for e in errors]


def test_nemo_counts_attention_in_full_and_validate_converts() -> None:
    """NeMo's published model TFLOP/s count every query-key pair (its pages' TFLOP/s over tokens/s
    give the full count); Megatron-Bridge's the causal half, as Silica's MFU does."""
    stacks = load_stacks()
    assert stacks["nemo"].attention_flops == "full"
    assert stacks["megatron-bridge"].attention_flops == "causal"
    if not PUBLISHED.exists():
        pytest.skip("../shared/benchmarks/published.csv not beside the checkout")
    rows = [
        r
        for r in read_benchmarks(PUBLISHED)
        if r.model == "llama-3-8b" and r.chip == "h100" and r.task == "training"
    ]
    by_metric = {r.metric: p.predicted for r, p in zip(rows, predict_rows(rows), strict=True)}
    ratio = by_metric["train_model_tflops_per_chip"] * 1e12 / by_metric["train_tok_s_per_chip"]
    measured = {r.metric: r.value for r in rows}
    published = measured["train_model_tflops_per_chip"] * 1e12 / measured["train_tok_s_per_chip"]
    assert ratio == pytest.approx(published, rel=0.02)


def test_training_attention_speed_comes_from_a_training_fit_only() -> None:
    """A training stack with an entry of its own (NeMo/Megatron on Hopper) runs attention at that
    entry's fitted speed; one without (NxD Training on Trainium1, pooled with serving rows whose
    engine materialises the scores) runs fused flash attention at matmul efficiency."""
    cal = load_calibration()
    own = cal.resolve("hopper", "nemo", "training")
    assert own.key == "hopper/megatron" and own.params == cal.resolve("hopper", "nemo").params
    pooled = cal.resolve("neuron-v2", "neuronx-distributed", "training")
    assert pooled.params.attention_eff == 1.0 and "fused flash attention" in pooled.note
    serving = cal.resolve("neuron-v2", "neuronx-distributed")
    assert serving.params.attention_eff < 1.0  # the serving stacks' own, untouched


def test_the_training_search_splits_long_sequences_and_checks_a_given_cp() -> None:
    from silica.errors import InputError
    from silica.plan import estimate
    from silica.workload import Deployment, InferenceWorkload, TrainingWorkload

    long = TrainingWorkload(seq_len=131072, global_batch=32)
    given = estimate("llama-3.1-8b", long, Deployment("p5.48xlarge", count=32, cp=4))
    assert given.feasible and given.cp == 4 and given.tp * given.pp * given.dp * 4 == given.chips
    short = estimate("llama-3.1-8b", TrainingWorkload(seq_len=4096), Deployment("p5.48xlarge", count=4))
    assert short.cp == 1  # 4K tokens: no rank would keep 8K of a sequence
    with pytest.raises(InputError, match="equal chunks"):
        estimate("llama-3.1-8b", TrainingWorkload(seq_len=4096 + 2), Deployment("p5.48xlarge", cp=4))
    with pytest.raises(InputError, match="context-parallel serving"):
        estimate(
            "llama-3.1-8b", InferenceWorkload(input_len=512, output_len=64), Deployment("p5.48xlarge", cp=2)
        )

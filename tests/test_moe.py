"""Mixture-of-experts physics: expert parallelism shards expert state, tokens travel over the right
link, small per-expert matmuls are less efficient, the busiest expert rank sets the pace."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest
from typer.testing import CliRunner

from silica.catalog import load_catalog
from silica.cli.app import app
from silica.models import load_model
from silica.perf import moe
from silica.perf.calibration import load_calibration
from silica.perf.inputs import Layout, TrainingRun
from silica.perf.kernels import ModelCosts, train_step
from silica.perf.machine import Machine, machine_arrays
from silica.perf.precision import precision, widths
from silica.plan import compare, estimate
from silica.validate.benchmarks import BenchmarkRow
from silica.validate.predict import predict_rows
from silica.workload import Deployment, TrainingWorkload

QWEN = "qwen3-30b-a3b"  # 128 experts, top-8, 48 MoE layers


def _h100_node(n: int = 1) -> Machine:
    cat = load_catalog()
    chip, inst = cat.chips["h100"], cat.instances["p5.48xlarge"]
    params = load_calibration().resolve(chip.family).params
    return machine_arrays([(chip, inst, params)] * n, "bf16")


def _step(
    model: str, *, tp: float, dp: float, ep: float, zero: int = 1, capacity: float | None = 1.0, mb: int = 1
):
    c = ModelCosts.of(load_model(model))
    m = _h100_node()
    one = np.ones(1)
    lay = Layout(
        tp=tp * one, pp=one, batch=mb * one, static_shapes=np.zeros(1, dtype=bool), dp=dp * one, ep=ep * one
    )
    run = TrainingRun(
        global_batch=512.0 * one,
        seq_len=4096.0 * one,
        zero_stage=zero,
        peak_flops=np.full(1, 989e12),
        expert_capacity=capacity,
    )
    return c, train_step(c, m, lay, run, widths(precision("bf16", "bf16"), 1, weight_bytes=2.0))


def test_expert_state_per_unit_shrinks_by_ep() -> None:
    """Without ZeRO, weights + gradients + Adam states of the routed experts divide by ep; the rest stays."""
    c, one = _step(QWEN, tp=1, dp=8, ep=1, zero=0)
    _, eight = _step(QWEN, tp=1, dp=8, ep=8, zero=0)
    per_param = 2.0 + 2.0 + 12.0  # bf16 weight, bf16 gradient, fp32 master + two moments
    expected = moe.routed_total_params(c) * per_param * (1 - 1 / 8)
    assert float(one.memory_per_unit[0] - eight.memory_per_unit[0]) == pytest.approx(expected, rel=1e-9)
    assert moe.routed_total_params(c) > 0.9 * c.total_params  # experts are most of this model


def test_dense_model_ignores_ep_layout() -> None:
    _, a = _step("llama-3.1-8b", tp=1, dp=8, ep=1)
    c, b = _step("llama-3.1-8b", tp=1, dp=8, ep=8)
    assert c.n_experts == 0
    assert float(a.step_s[0]) == float(b.step_s[0])
    assert float(a.memory_per_unit[0]) == float(b.memory_per_unit[0])


def _a2a(m: Machine, ep: float) -> float:
    c = ModelCosts.of(load_model(QWEN))
    one = np.ones(m.size)
    lay = Layout(tp=one, pp=one, batch=one, static_shapes=np.zeros(m.size, dtype=bool), ep=ep * one)
    return float(moe.all_to_all_seconds(c, m, lay, 4096.0 * one, 2.0 * one, 4.0)[0])


def test_all_to_all_is_zero_without_ep_and_uses_the_network_beyond_one_node() -> None:
    m = _h100_node()
    assert _a2a(m, 1) == 0.0
    inside, across = _a2a(m, 8), _a2a(m, 16)
    assert inside > 0 and across > inside  # the network per GPU is ~1/9 of NVLink per GPU
    slower_net = replace(m, net_bw=m.net_bw / 2)
    assert _a2a(slower_net, 8) == inside  # an 8-GPU group stays on NVLink
    assert _a2a(slower_net, 16) > 1.5 * across  # the 16-GPU group's time is the network's
    # The bytes: 4096 tokens x top-8 x d_model x 2 B, 7/8 of it leaving each rank, at NVLink speed.
    c = ModelCosts.of(load_model(QWEN))
    coll = float(m.cal.coll_s[0])
    wire = 4096 * 8 * c.d_model * 2.0 * 7 / 8 / float(m.link_bw[0] * m.cal.coll_bw_eff[0])
    assert inside == pytest.approx(4.0 * c.n_moe_layers * (coll + wire), rel=1e-9)
    # Between nodes a token goes once per remote node holding any of its 8 experts (DeepEP and
    # HybridEP forward it over NVLink there): with two nodes, 1 - (1/2)^8 of the tokens cross.
    nic = float(m.net_bw[0] / m.units_per_instance[0] * m.cal.coll_bw_eff[0])
    net = 4096 * c.d_model * 2.0 * (1 - 0.5**8) / nic
    assert across == pytest.approx(4.0 * c.n_moe_layers * (coll + net), rel=1e-9)


def test_grouped_gemm_is_less_efficient_at_few_tokens_per_expert() -> None:
    """ep 8 gathers 8 ranks' tokens per expert: the same FLOPs take less compute time (balanced routing)."""
    c, one = _step(QWEN, tp=1, dp=8, ep=1)
    _, eight = _step(QWEN, tp=1, dp=8, ep=8)
    tokens = np.asarray([4096.0])
    lay8 = Layout(
        tp=np.ones(1),
        pp=np.ones(1),
        batch=np.ones(1),
        static_shapes=np.zeros(1, dtype=bool),
        ep=np.full(1, 8.0),
    )
    assert float(moe.tokens_per_expert(c, tokens, lay8)[0]) == pytest.approx(4096 * 8 / 128 * 8)
    assert float(eight.split.compute_s[0][0]) < float(one.split.compute_s[0][0])


def test_busiest_expert_rank_sets_the_pace() -> None:
    _, balanced = _step(QWEN, tp=1, dp=8, ep=8, capacity=1.0)
    _, skewed = _step(QWEN, tp=1, dp=8, ep=8, capacity=None)  # the default capacity factor
    assert moe.CAPACITY_FACTOR > 1.0
    assert float(skewed.split.compute_s[0][0]) > float(balanced.split.compute_s[0][0])
    _, no_ep = _step(QWEN, tp=1, dp=8, ep=1, capacity=None)
    _, no_ep_balanced = _step(QWEN, tp=1, dp=8, ep=1, capacity=1.0)
    assert float(no_ep.step_s[0]) == float(no_ep_balanced.step_s[0])  # skew needs whole experts per rank


def test_router_flops() -> None:
    c = ModelCosts.of(load_model(QWEN))
    assert float(moe.router_flops(c, np.asarray(10.0))) == 2 * 10 * 2048 * 128 * 48


def test_estimate_honours_ep_and_shows_it() -> None:
    wl = TrainingWorkload(seq_len=4096, global_batch=1024, micro_batch=1)
    from silica.catalog import resolve_on

    placement = resolve_on(load_catalog(), "h100x16")
    results = {}
    for ep in (1, 8, 16):
        deployment = Deployment(placement.instance, placement.count, tp=1, pp=1, ep=ep)
        results[ep] = estimate(QWEN, wl, deployment, catalog=placement.catalog)
    # 30.5B parameters at 4 B (bf16 weight + gradient) per GPU exceed 80 GB; experts split 8 ways fit.
    assert not results[1].feasible and "memory" in results[1].reasons[0]
    assert results[8].feasible and results[8].ep == 8 and results[16].ep == 16
    assert results[8].memory_gib["total"] > results[16].memory_gib["total"]
    # ep 16 spans the two 8-GPU nodes: its all-to-all crosses InfiniBand (once per node) and takes longer.
    a2a = {ep: results[ep].time[0].parts_ms["all_to_all"] for ep in (8, 16)}
    assert a2a[16] > 1.2 * a2a[8]
    out = CliRunner().invoke(
        app,
        [
            "estimate",
            QWEN,
            "--on",
            "h100x16",
            "--task",
            "training",
            "--seq-len",
            "4096",
            "--global-batch",
            "1024",
            "--ep",
            "8",
            "--json",
        ],
    )
    assert out.exit_code == 0, out.output
    assert json.loads(out.output)["ep"] == 8
    text = CliRunner().invoke(
        app, ["estimate", QWEN, "--on", "h100x16", "--task", "training", "--seq-len", "4096", "--ep", "8"]
    )
    assert text.exit_code == 0 and "ep=8" in text.output


def test_compare_chooses_expert_parallelism_for_an_moe_model() -> None:
    wl = TrainingWorkload(seq_len=4096, global_batch=2048, tokens=1e11)
    result = compare("gpt-oss-120b", wl, instances=["p5.48xlarge"])
    best = result.results[0]
    assert best.feasible and best.ep is not None and best.ep > 1
    dense = compare("llama-3.1-8b", wl, instances=["p5.48xlarge"]).results[0]
    assert dense.ep is None


def test_validate_uses_the_rows_ep() -> None:
    def row(ep: int) -> BenchmarkRow:
        return BenchmarkRow(
            id="1", run="1", source="test", chip="h100", chips=16, instance="", task="training", model=QWEN,
            weight_dtype="bf16", compute_dtype="bf16", batch=1024, micro_batch=1, input_len=None,
            output_len=None, seq_len=4096, tp=1, pp=1, metric="train_tok_s_per_chip", value=1000.0, ep=ep,
            engine="megatron-bridge",
        )  # fmt: skip

    eight, sixteen = predict_rows([row(8), row(16)])
    assert eight.predicted and sixteen.predicted and eight.predicted != sixteen.predicted


def _serve(model: str, *, tp: float, ep: float, batch: float = 64.0):
    """One serving configuration on a 4-GPU GB200 domain at FP4, prompt 1000, output 1000."""
    from silica.perf.inference import inference_perf
    from silica.perf.inputs import Requests

    cat = load_catalog()
    chip, inst = cat.chips["gb200"], cat.instances["p6e-gb200.36xlarge"]
    m = machine_arrays([(chip, inst, load_calibration().resolve(chip.family, "trtllm").params)], "fp4")
    one = np.ones(1)
    lay = Layout(tp=tp * one, pp=one, batch=batch * one, static_shapes=np.zeros(1, dtype=bool), ep=ep * one)
    req = Requests(input_len=1000.0 * one, output_len=1000.0 * one, seq_len=2000.0 * one)
    c = ModelCosts.of(load_model(model))
    return c, inference_perf(
        c, m, lay, req, widths(precision("fp4", "fp4"), 1), d_ff=float(load_model(model).d_ff)
    )


def test_serving_with_ep_runs_attention_data_parallel() -> None:
    """ep = tp in serving: each rank holds every dense weight and 1/tp of the sequences' KV cache
    (an MLA latent is no longer replicated on every rank), and the tp all-reduces give way to a
    dispatch and a combine per MoE layer."""
    c, tp4 = _serve("deepseek-v3", tp=4, ep=1)
    _, dep4 = _serve("deepseek-v3", tp=4, ep=4)
    assert c.mla
    assert float(dep4.kv_bytes[0]) == pytest.approx(float(tp4.kv_bytes[0]) / 4, rel=1e-9)
    dense = (c.total_params - moe.routed_total_params(c)) * 0.5  # fp4 weights
    assert float(dep4.weights_bytes[0] - tp4.weights_bytes[0]) == pytest.approx(dense * (1 - 1 / 4), rel=1e-9)
    tp_parts, dep_parts = tp4.decode_split.parts_at(0), dep4.decode_split.parts_at(0)
    assert "all_reduce" in tp_parts and "all_to_all" not in tp_parts
    assert "all_to_all" in dep_parts and "all_reduce" not in dep_parts


def test_serving_search_tries_attention_data_parallel_and_says_so() -> None:
    runner = CliRunner()
    args = [
        "estimate",
        "deepseek-v3",
        "--on",
        "gb200x4",
        "--dtype",
        "fp4",
        "--input-len",
        "1000",
        "--output-len",
        "1000",
    ]
    dep = json.loads(runner.invoke(app, [*args, "--json"]).output)
    tp = json.loads(runner.invoke(app, [*args, "--ep", "1", "--json"]).output)
    # With the MLA cache no longer replicated four times, more sequences fit and throughput rises.
    assert dep["ep"] == 4 and tp["ep"] == 1
    assert dep["output_tokens_per_s"] > tp["output_tokens_per_s"]
    assert any("attention data-parallel" in a for a in dep["assumptions"])
    assert not any("attention data-parallel" in a for a in tp["assumptions"])


def test_interleaved_pipeline_shrinks_the_bubble_by_the_chunks_per_stage() -> None:
    """Narayanan et al. 2021: the 1F1B bubble of (pp - 1) micro-batch slots shrinks to (pp - 1) / vp,
    and each micro-batch crosses vp times as many chunk boundaries."""
    c = ModelCosts.of(load_model("llama-3.1-70b"))
    m = _h100_node()
    one = np.ones(1)
    lay = Layout(tp=8 * one, pp=4 * one, batch=one, static_shapes=np.zeros(1, dtype=bool), dp=one)
    w = widths(precision("bf16", "bf16"), 1, weight_bytes=2.0)

    def step(vp: float):
        run = TrainingRun(
            global_batch=16.0 * one, seq_len=4096.0 * one, zero_stage=1, peak_flops=np.full(1, 989e12),
            virtual_stages=vp,
        )  # fmt: skip
        return train_step(c, m, lay, run, w).split.parts_at(0)

    plain, interleaved = step(1.0), step(4.0)
    assert interleaved["bubble"] < plain["bubble"] / 3.5  # the per-micro-batch time grows a little too
    assert interleaved["pipeline"] == pytest.approx(4 * plain["pipeline"], rel=1e-9)

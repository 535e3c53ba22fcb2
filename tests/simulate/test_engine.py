"""The simulator against queueing theory and its own invariants."""

from __future__ import annotations

import math

import numpy as np
import pytest

from silica.errors import InputError
from silica.simulate import EngineSettings, Requests, StepTable, simulate, synthetic
from silica.simulate.deploy import plan_replica
from silica.simulate.disagg import kv_transfer, simulate_disaggregated
from silica.simulate.run import SimResult
from silica.workload import InferenceWorkload


def flat_table(prefill_s: float, decode_s: float, *, seqs: int = 64, kv_tokens: int = 10**9) -> StepTable:
    """A replica whose steps take constant time: what the closed forms assume."""
    return StepTable(
        label="flat",
        tokens=(1.0, 1e7),
        prefill=(prefill_s, prefill_s),
        contexts=(1.0, 1e7),
        decode=tuple((decode_s, decode_s) for _ in range(seqs)),
        kv_tokens=kv_tokens,
        kv_bytes_per_token=1e5,
        max_num_seqs=seqs,
        link_bytes_per_s=1e9,
        scaleup_bytes_per_s=1e11,
        link_latency_s=1e-4,
        link_efficiency=0.5,
    )


@pytest.fixture(scope="module")
def l40s() -> StepTable:
    return plan_replica("llama-3.1-8b", "g6e.xlarge", InferenceWorkload(input_len=1024, output_len=256)).table


def test_md1_waiting_time_matches_closed_form() -> None:
    # One server, deterministic service S (a 100-token prompt, one output token), Poisson arrivals:
    # M/D/1, mean wait = rho S / (2 (1 - rho)) (Pollaczek-Khinchine with zero service variance).
    s, rho = 0.1, 0.7
    reqs = synthetic(rate=rho / s, n=40_000, input_len=100, output_len=1, seed=3)
    r = simulate(reqs, flat_table(s, 0.01), settings=EngineSettings(max_num_seqs=1))
    expected_ms = 1e3 * rho * s / (2 * (1 - rho))
    assert r.queue.mean == pytest.approx(expected_ms, rel=0.08)
    assert r.utilisation == pytest.approx(rho, rel=0.03)


def test_unloaded_latency_is_prefill_plus_decode_steps() -> None:
    # Constant arrivals far apart: no queueing; TTFT = prefill, e2e = prefill + (out-1) steps.
    reqs = synthetic(rate=0.1, n=50, input_len=500, output_len=11, arrival="constant")
    r = simulate(reqs, flat_table(0.2, 0.03))
    assert r.ttft.p99 == pytest.approx(200.0)
    assert r.e2e.p50 == pytest.approx(200.0 + 10 * 30.0)
    assert r.tbt.p99 == pytest.approx(30.0)
    assert r.queue.p99 == pytest.approx(0.0, abs=1e-9)


def test_littles_law_and_monotone_percentiles(l40s: StepTable) -> None:
    reqs = synthetic(rate=3, n=3000, input_len=1024, output_len=256, seed=1, lengths="uniform")
    r = simulate(reqs, l40s)
    assert r.completed == r.requests
    assert r.little_l == pytest.approx(r.little_lambda_w, rel=0.02)
    for p in (r.ttft, r.tbt, r.e2e, r.queue, r.tpot):
        assert p.p50 <= p.p90 <= p.p99
    assert 0.0 < r.kv_mean <= r.kv_peak <= 1.0
    assert 0.0 < r.utilisation <= 1.0 + 1e-9


def test_tails_grow_with_rate(l40s: StepTable) -> None:
    p99 = [
        simulate(synthetic(rate=q, n=1500, input_len=1024, output_len=256, seed=2), l40s).ttft.p99
        for q in (1, 3, 6)
    ]
    assert p99[0] < p99[1] < p99[2]


def test_throughput_never_exceeds_the_deployment(l40s: StepTable) -> None:
    reqs = synthetic(rate=50, n=2000, input_len=1024, output_len=256, seed=4)
    for replicas in (1, 2):
        r = simulate(reqs, l40s, replicas=replicas)
        assert r.output_tok_s <= replicas * l40s.max_output_tok_s()
        assert r.throughput_req_s <= reqs.rate * 1.05
    light = simulate(synthetic(rate=0.5, n=300, input_len=1024, output_len=256, seed=4), l40s)
    assert light.throughput_req_s <= 0.5 * 1.1


def test_kv_pressure_preempts_and_still_finishes() -> None:
    reqs = synthetic(rate=20, n=400, input_len=200, output_len=200, seed=5)
    r = simulate(reqs, flat_table(0.01, 0.01, kv_tokens=3000))
    assert r.preemptions > 0
    assert r.completed == r.requests
    assert r.kv_peak <= 1.0


def test_same_seed_same_result(l40s: StepTable) -> None:
    def run(seed: int) -> dict[str, object]:
        reqs = synthetic(rate=4, n=500, input_len=1024, output_len=256, arrival="gamma", cv=2, seed=seed)
        return simulate(reqs, l40s, replicas=2, balancer="least-outstanding").to_dict()

    assert run(7) == run(7)
    assert run(7) != run(8)


def test_gamma_arrivals_have_the_stated_cv() -> None:
    for cv in (0.5, 1.0, 3.0):
        t = synthetic(rate=5, n=50_000, input_len=10, output_len=10, arrival="gamma", cv=cv, seed=1).arrival
        gaps = np.diff(t)
        assert gaps.std() / gaps.mean() == pytest.approx(cv, rel=0.05)
        assert 1 / gaps.mean() == pytest.approx(5, rel=0.05)


def test_burstier_arrivals_have_worse_tails(l40s: StepTable) -> None:
    smooth = simulate(synthetic(rate=3, n=2000, input_len=1024, output_len=256, arrival="constant"), l40s)
    bursty = simulate(synthetic(rate=3, n=2000, input_len=1024, output_len=256, arrival="gamma", cv=4), l40s)
    assert bursty.ttft.p99 > smooth.ttft.p99


def test_disaggregated_decode_is_not_stalled_by_prefill(l40s: StepTable) -> None:
    reqs = synthetic(rate=3, n=1500, input_len=1024, output_len=256, seed=6)
    agg = simulate(reqs, l40s, replicas=2)
    dis, kv = simulate_disaggregated(
        reqs, l40s, l40s, prefill_replicas=1, decode_replicas=1, decode_instances=1, balancer="round-robin"
    )
    assert dis.completed == dis.requests
    # Two replicas each stall their decodes for every prompt; the decode pool never does, so its
    # tail sits near its median even though it runs all the decodes on one replica.
    assert dis.tbt.p99 < agg.tbt.p99
    assert dis.tbt.p99 < 1.25 * dis.tbt.p50 < agg.tbt.p99
    seconds, _ = kv_transfer(l40s, np.array([1024.0]), 3.0, 1)
    expected = l40s.link_latency_s + 1024 * l40s.kv_bytes_per_token / (
        l40s.link_bytes_per_s * l40s.link_efficiency
    )
    assert seconds[0] == pytest.approx(expected)
    assert kv.mean_ms == pytest.approx(expected * 1e3)


def test_closed_loop_keeps_the_clients_busy() -> None:
    from silica.simulate.run import simulate_closed_loop

    one = simulate_closed_loop(
        flat_table(0.2, 0.02), concurrency=1, requests=20, input_len=100, output_len=51
    )
    assert one.ttft.p99 == pytest.approx(200.0)
    assert one.e2e.p50 == pytest.approx(200.0 + 50 * 20.0)
    many = simulate_closed_loop(
        flat_table(0.2, 0.02), concurrency=8, requests=400, input_len=100, output_len=51
    )
    assert many.completed == 400
    assert many.little_l == pytest.approx(8.0, rel=0.02)  # always 8 requests in the system
    with pytest.raises(InputError, match="Concurrency"):
        simulate_closed_loop(flat_table(0.2, 0.02), concurrency=0, requests=10, input_len=10, output_len=10)


def test_trace_replay(tmp_path, l40s: StepTable) -> None:  # type: ignore[no-untyped-def]
    from silica.simulate import from_trace

    path = tmp_path / "t.csv"
    path.write_text("timestamp,input_tokens,output_tokens\n0,100,10\n0.5,2000,50\n1.25,300,5\n")
    reqs = from_trace(path)
    assert reqs.arrival.tolist() == [0.0, 0.5, 1.25]
    r = simulate(reqs, l40s)
    assert r.completed == 3
    azure = tmp_path / "azure.csv"
    azure.write_text(
        "TIMESTAMP,ContextTokens,GeneratedTokens\n"
        "2023-11-16 18:15:46.6805900,374,44\n2023-11-16 18:15:50.9951690,396,109\n"
    )
    assert from_trace(azure).prompt.tolist() == [374.0, 396.0]


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        ({"rate": 0}, "rate"),
        ({"rate": math.inf}, "rate"),
        ({"n": 0}, "Requests"),
        ({"arrival": "weibull"}, "arrival"),
        ({"cv": 0}, "coefficient"),
        ({"lengths": "zipf"}, "length"),
        ({"input_len": 0}, "lengths"),
    ],
)
def test_bad_traffic_is_refused(kwargs: dict[str, object], words: str) -> None:
    args: dict[str, object] = {"rate": 1.0, "n": 10, "input_len": 10, "output_len": 10}
    args.update(kwargs)
    with pytest.raises(InputError, match=words):
        synthetic(**args)  # type: ignore[arg-type]


def test_bad_engine_settings_are_refused() -> None:
    reqs = Requests(np.zeros(1), np.ones(1), np.ones(1), "one")
    with pytest.raises(InputError, match="Replicas"):
        simulate(reqs, flat_table(0.1, 0.1), replicas=0)
    with pytest.raises(InputError, match="balancer"):
        simulate(reqs, flat_table(0.1, 0.1), replicas=2, balancer="random")
    with pytest.raises(InputError, match="sorted"):
        simulate(Requests(np.array([1.0, 0.0]), np.ones(2), np.ones(2), "unsorted"), flat_table(0.1, 0.1))
    with pytest.raises(InputError, match="batched tokens"):
        simulate(reqs, flat_table(0.1, 0.1), settings=EngineSettings(max_batched_tokens=0))


def test_engine_step_times_are_the_tables(l40s: StepTable) -> None:
    # The engine inlines StepTable.decode_s / mixed_s / prefill_s for speed: they must agree.
    # Request A decodes alone; B arrives mid-run, and its prompt rides one mixed step beside A.
    reqs = Requests(np.array([0.0, 1.0]), np.array([500.0, 300.0]), np.array([1000.0, 2.0]), "two")
    rec = simulate(reqs, l40s).records
    assert rec.first_token[0] == pytest.approx(l40s.prefill_s(500), rel=1e-12)
    k = int(rec.gap_n[0])  # A's run of decode steps up to B's arrival ...
    # ... each priced at the mid context of the run as planned up to A's last token (999 steps)
    assert rec.gap_s[0] == pytest.approx(l40s.decode_s(1, 500 + 999 / 2), rel=1e-12)
    assert rec.scheduled[1] >= 1.0
    mixed = rec.first_token[1] - rec.scheduled[1]
    assert mixed == pytest.approx(l40s.mixed_s(300, 1, 500 + k), rel=1e-12)
    assert rec.gap_s[1] == pytest.approx(mixed, rel=1e-12)


def test_a_fitted_tables_decoded_tokens_cost_their_host_time_in_mixed_steps() -> None:
    # Decode steps grow 1 ms per sequence, prefill 0.01 ms per token: a decoded token costs 0.99 ms
    # more than a prompt token, and a mixed step charges it (engine and StepTable.mixed_s alike).
    table = StepTable.from_measurements(
        "fitted", prefill=[(100, 0.010), (200, 0.011)], decode=[(1, 0.005), (5, 0.009)], kv_tokens=10**6
    )
    assert table.seq_step_s == pytest.approx(0.001 - 0.00001)
    assert table.mixed_s(100, 3, 0.0) == pytest.approx(table.prefill_s(103) + 3 * table.seq_step_s)
    reqs = Requests(np.array([0.0, 0.1]), np.array([100.0, 100.0]), np.array([400.0, 2.0]), "two")
    rec = simulate(reqs, table).records
    mixed = rec.first_token[1] - rec.scheduled[1]
    assert mixed == pytest.approx(table.mixed_s(100, 1, 0.0), rel=1e-12)
    # one measured batch: no slope, nothing added (the serial server's table)
    one = StepTable.from_measurements("serial", prefill=[(100, 0.01)], decode=[(1, 0.004)], kv_tokens=10**6)
    assert one.seq_step_s == 0.0


def test_step_noise_gives_mg1_waiting_and_keeps_the_mean() -> None:
    # A serial server whose one step per request takes S times a lognormal factor (mean 1, CV c):
    # M/G/1, mean wait = rho S (1 + c^2) / (2 (1 - rho)) (Pollaczek-Khinchine).
    s, rho, cv = 0.1, 0.6, 0.8
    reqs = synthetic(rate=rho / s, n=60_000, input_len=100, output_len=1, seed=4)
    noisy = EngineSettings(max_num_seqs=1, step_cv=cv, seed=1)
    r = simulate(reqs, flat_table(s, 0.01), settings=noisy)
    assert r.queue.mean == pytest.approx(1e3 * rho * s * (1 + cv**2) / (2 * (1 - rho)), rel=0.08)
    assert r.utilisation == pytest.approx(rho, rel=0.03)
    again = simulate(reqs, flat_table(s, 0.01), settings=noisy)
    assert again.queue.mean == r.queue.mean  # seeded
    with pytest.raises(InputError, match="coefficient of variation"):
        simulate(reqs, flat_table(s, 0.01), settings=EngineSettings(step_cv=-1.0))


def test_prefix_cache_hits_skip_their_prefill(l40s: StepTable) -> None:
    one = Requests(np.zeros(1), np.array([1000.0]), np.array([5.0]), "one")
    hit = simulate(one, l40s, settings=EngineSettings(prefix_hit=0.75)).records
    assert hit.first_token[0] == pytest.approx(l40s.prefill_s(250), rel=1e-12)
    reqs = synthetic(rate=5, n=1500, input_len=1024, output_len=256, seed=3)
    cold = simulate(reqs, l40s)
    warm = simulate(reqs, l40s, settings=EngineSettings(prefix_hit=0.5))
    assert warm.ttft.p90 < cold.ttft.p90
    assert warm.to_dict()["engine"]["prefix_hit"] == 0.5
    with pytest.raises(InputError, match="prefix-cache hit rate"):
        simulate(reqs, l40s, settings=EngineSettings(prefix_hit=1.0))


def test_swap_preemption_pays_the_copies_not_a_recompute() -> None:
    reqs = synthetic(rate=20, n=400, input_len=200, output_len=200, seed=5)
    table = flat_table(0.05, 0.01, kv_tokens=3000)  # 1e5 KV bytes per token

    def run(preemption: str, gbps: float = 0.0) -> SimResult:
        settings = EngineSettings(preemption=preemption, swap_bytes_per_s=gbps * 1e9)
        return simulate(reqs, table, settings=settings)

    fast, slow, recompute = run("swap", 1000.0), run("swap", 0.1), run("recompute")
    for r in (fast, slow, recompute):
        assert r.preemptions > 0 and r.completed == r.requests and r.kv_peak <= 1.0
    # A near-free copy beats prefilling the evicted context again; a slow link is worse than both.
    assert fast.e2e.mean < recompute.e2e.mean
    assert slow.e2e.mean > fast.e2e.mean
    assert fast.to_dict()["engine"]["preemption"] == "swap"
    with pytest.raises(InputError, match="host link"):
        run("swap", 0.0)
    with pytest.raises(InputError, match="preemption mode"):
        run("drop")


def test_a_fixed_time_per_request_delays_the_engine_not_its_steps() -> None:
    """`request_s` (the calibration's `request_overhead_us`): the front end holds each request that
    long before the engine sees it. TTFT and e2e grow by exactly that; the engine's queue, its time
    between tokens and its steps do not; Little's law still holds; a closed-loop client waits it
    out before each request reaches the engine."""
    from dataclasses import replace

    from silica.simulate.run import simulate_closed_loop

    front = 0.05
    reqs = synthetic(rate=2.0, n=2_000, input_len=100, output_len=11, seed=5)
    plain = simulate(reqs, flat_table(0.2, 0.03))
    slow = simulate(reqs, replace(flat_table(0.2, 0.03), request_s=front))
    assert slow.ttft.p50 - plain.ttft.p50 == pytest.approx(1e3 * front)
    assert slow.e2e.p99 - plain.e2e.p99 == pytest.approx(1e3 * front)
    assert slow.queue.p99 == pytest.approx(plain.queue.p99)
    assert slow.tbt.p50 == pytest.approx(plain.tbt.p50)
    assert slow.little_l == pytest.approx(slow.little_lambda_w, rel=0.02)
    one = simulate_closed_loop(
        replace(flat_table(0.2, 0.02), request_s=front),
        concurrency=1,
        requests=20,
        input_len=100,
        output_len=51,
    )
    assert one.ttft.p99 == pytest.approx(250.0)
    assert one.e2e.p50 == pytest.approx(250.0 + 50 * 20.0)
    assert one.throughput_req_s == pytest.approx(1 / (0.25 + 50 * 0.02), rel=0.01)
    many = simulate_closed_loop(
        replace(flat_table(0.2, 0.02), request_s=front),
        concurrency=8,
        requests=400,
        input_len=100,
        output_len=51,
    )
    assert many.completed == 400 and many.little_l == pytest.approx(8.0, rel=0.02)


def test_a_planned_replica_takes_the_calibrations_request_time() -> None:
    """The tabulated replica carries the calibration's per-request time (none shipped), and an
    unloaded request's simulated TTFT is its prefill plus that time."""
    from dataclasses import replace

    from silica.perf.calibration import load_calibration
    from silica.simulate.deploy import plan_replica

    cal = load_calibration()
    wl = InferenceWorkload(input_len=128, output_len=16)
    assert plan_replica("llama-3.1-8b", "g6e.xlarge", wl).table.request_s == 0.0
    family = plan_replica("llama-3.1-8b", "g6e.xlarge", wl).target.chip.family
    params = replace(cal.resolve(family).params, request_overhead_us=7000.0)
    planned = plan_replica("llama-3.1-8b", "g6e.xlarge", wl, calibration=cal.with_params(family, params))
    assert planned.table.request_s == pytest.approx(7e-3)
    r = simulate(synthetic(rate=0.2, n=20, input_len=128, output_len=16, arrival="constant"), planned.table)
    prefill_ms = 1e3 * planned.table.prefill_s(128.0)
    assert r.ttft.p50 == pytest.approx(prefill_ms + 7.0, rel=1e-6)

"""The simulator's outcomes: what each policy does to serving, lending, jobs and cost.

Small fleets built by hand (no files) so each rule can be checked on numbers one can follow.
"""

from __future__ import annotations

import time

import numpy as np
import pytest

from silica.errors import InputError
from silica.fleet.capacity import Pool
from silica.fleet.demand import (
    InferenceDemand,
    Lengths,
    bundled_shape,
    burst_factors,
    diurnal_shape,
    lengths_of,
    profile,
    replay_bundled,
)
from silica.fleet.jobs import TrainingJob
from silica.fleet.policies import Policy, allocate
from silica.fleet.scheduler import schedule
from silica.fleet.simulate import Fleet, run_policy, simulate

STEP = 300.0  # 5-minute steps keep these fleets quick


def pool(
    count: int = 100,
    purchase: str = "reserved",
    usd: float | None = 10.0,
    tokens: float = 1000.0,
    speed: float | None = 1.0,
    chips: int = 16,
    instance: str = "trn1.32xlarge",
) -> Pool:
    return Pool(instance, count, purchase, chips, 1, tokens, speed, usd, "test price")  # type: ignore[arg-type]


def demand(values: list[float] | np.ndarray) -> InferenceDemand:
    out = np.asarray(values, dtype=np.float64)
    return InferenceDemand("test", "test", STEP, out / 100, out * 5, out)


def day_demand(days: int = 2, peak: float = 80_000.0) -> InferenceDemand:
    return profile(
        diurnal_shape(3.0),
        steps=days * 288,
        step_s=STEP,
        peak_requests_per_s=peak / 100,
        lengths=Lengths(500, 100, "test"),
    )


# --- demand -----------------------------------------------------------------------------------------


def test_profile_reaches_the_stated_peak_within_the_horizon() -> None:
    d = profile(
        bundled_shape("servegen:m-small"),
        steps=7 * 1440,
        step_s=60,
        peak_requests_per_s=50,
        lengths=lengths_of("azure:conv"),
    )
    assert d.requests_per_s.max() == pytest.approx(50, rel=1e-3)
    assert d.mean_output_len == pytest.approx(lengths_of("azure:conv").output_len)
    # Diurnal: the built-in day peaks at 14:00 and is 3x its trough.
    day = profile(
        diurnal_shape(3.0, peak_hour=14),
        steps=1440,
        step_s=60,
        peak_requests_per_s=3,
        lengths=Lengths(1, 1, "x"),
    )
    assert int(np.argmax(day.requests_per_s)) // 60 in (13, 14)
    assert day.requests_per_s.max() / day.requests_per_s.min() == pytest.approx(3.0, rel=0.01)


def test_burstiness_keeps_volume_and_adds_variance() -> None:
    f = burst_factors("azure:conv")
    assert f.mean() == pytest.approx(1.0) and 0.05 < f.std() < 0.5
    smooth = profile(
        diurnal_shape(), steps=2880, step_s=60, peak_requests_per_s=10, lengths=Lengths(1, 1, "x")
    )
    bursty = profile(
        diurnal_shape(),
        steps=2880,
        step_s=60,
        peak_requests_per_s=10,
        lengths=Lengths(1, 1, "x"),
        burst="azure:conv",
        seed=1,
    )
    assert bursty.requests_per_s.sum() == pytest.approx(smooth.requests_per_s.sum(), rel=0.02)
    assert np.std(bursty.requests_per_s / smooth.requests_per_s) > 0.05


def test_replay_of_a_bundled_trace_keeps_every_request() -> None:
    one = replay_bundled("azure:conv", 60)
    five = replay_bundled("azure:conv", 300)
    assert one.requests_per_s.sum() * 60 == pytest.approx(19366)
    assert five.requests_per_s.sum() * 300 == pytest.approx(19366)
    with pytest.raises(InputError, match="whole minutes"):
        replay_bundled("azure:conv", 30)


# --- policies ---------------------------------------------------------------------------------------


def test_day_night_lends_more_than_static_on_the_same_demand() -> None:
    jobs = tuple(
        TrainingJob(f"j{i}", 320, 10.0, earliest_start_h=4.0 * i, deadline_h=4.0 * i + 40) for i in range(8)
    )
    fleet = Fleet("t", (pool(120),), day_demand(), jobs)
    sim = simulate(fleet, [Policy("static"), Policy("day_night")])
    static, dn = sim.run("static").metrics, sim.run("day_night").metrics
    assert static["lent_chip_hours"] == 0
    assert dn["lent_chip_hours"] > 0.1 * static["training_chip_hours"]
    assert dn["training_chip_hours"] > static["training_chip_hours"]
    assert dn["utilisation_busy"] > static["utilisation_busy"]
    assert dn["jobs_deadline_missed"] <= static["jobs_deadline_missed"]
    assert static["slo_attainment"] == 1.0  # sized for the peak, a static split never misses
    assert dn["slo_attainment"] > 0.99  # reclaiming takes 5 minutes; headroom covers most of it
    assert sim.comparison["vs_baseline"]["day_night"]["lent_chip_hours"] == dn["lent_chip_hours"]


def test_chips_are_conserved_every_step() -> None:
    fleet = Fleet(
        "t",
        (pool(120), pool(30, instance="inf2.48xlarge", chips=12, speed=None)),
        day_demand(),
        (TrainingJob("a", 500, 30.0),),
    )
    for name in ("static", "day_night", "autoscale"):
        run = run_policy(fleet, Policy(name), series_points=10_000)  # type: ignore[arg-type]
        s = run.series
        for inf, train, idle, total in zip(
            s["inference_chips"], s["training_chips"], s["idle_chips"], s["fleet_chips"], strict=True
        ):
            assert inf + train + idle == pytest.approx(total)


def test_day_night_reacts_late_by_the_reclaim_time() -> None:
    # Demand jumps from 10 to 50 replicas' worth at step 20: day/night serves the jump 2 steps late.
    d = demand([10_000.0] * 20 + [50_000.0] * 20)
    alloc = allocate(
        Policy("day_night", headroom=0, reclaim_minutes=10, cooldown_minutes=0),
        [pool(100)],
        d.output_tokens_per_s,
        STEP,
    )
    assert alloc.replicas[0, 19] == 10 and alloc.replicas[0, 21] == 10 and alloc.replicas[0, 22] == 50
    # Training loses the chips at the decision (step 20), not when serving gets them.
    assert alloc.train_cap[0, 19] == (100 - 10) * 16 and alloc.train_cap[0, 20] == (100 - 50) * 16
    static = allocate(Policy("static", headroom=0), [pool(100)], d.output_tokens_per_s, STEP)
    assert set(static.replicas[0].tolist()) == {50} and static.floor[0] == 50 * 16


def test_autoscale_bills_on_demand_only_while_it_runs() -> None:
    d = day_demand(peak=100_000.0)
    pools = (pool(40, usd=10.0), pool(80, purchase="on_demand", usd=20.0))
    always = run_policy(Fleet("t", pools, d), Policy("day_night")).metrics
    auto = run_policy(Fleet("t", pools, d), Policy("autoscale", base_quantile=0.5)).metrics
    assert auto["total_usd"] < always["total_usd"]
    hours = 48.0
    assert always["total_usd"] == pytest.approx((40 * 10 + 80 * 20) * hours)
    assert auto["slo_attainment"] > 0.97


def test_unpriced_pool_makes_cost_unknown_not_zero() -> None:
    run = run_policy(Fleet("t", (pool(100, usd=None),), day_demand()), Policy("static"))
    assert run.metrics["total_usd"] is None and run.metrics["usd_per_1m_output_tokens"] is None
    assert run.metrics["unpriced_pools"] == ["trn1.32xlarge"]


# --- the training scheduler -------------------------------------------------------------------------


def _cap(values: list[int]) -> np.ndarray:
    return np.array([values], dtype=np.int64)


def test_preemption_loses_work_since_the_last_checkpoint() -> None:
    # 100 chips for 36 steps (3 h), then none for 12 steps, then 100 again: a 4-hour job at 5-min steps.
    cap = _cap([100] * 36 + [0] * 12 + [100] * 60)
    job = TrainingJob("a", 100, 4.0)
    s = schedule([job], cap, np.array([0]), [1.0], [False], STEP, restart_minutes=10, checkpoint_minutes=60)
    # First run: 2 restart steps, 34 productive; checkpoints every 12 steps keep 24 (2 h of work).
    # Second run starts at step 48: 2 restart steps + 24 steps for the remaining 2 h -> done at 74.
    assert s.preemptions[0] == 1 and s.finish_step[0] == 48 + 2 + 24
    lost_steps = 36 - 24
    assert s.lost_chip_hours == pytest.approx(lost_steps * 100 * STEP / 3600)


def test_non_checkpointable_jobs_run_only_on_the_floor() -> None:
    cap = _cap([64] * 10 + [16] * 10 + [64] * 40)
    floor = np.array([16])
    jobs = [
        TrainingJob("big", 32, 1.0, checkpointable=False),
        TrainingJob("small", 16, 1.0, checkpointable=False),
    ]
    s = schedule(jobs, cap, floor, [1.0], [False], STEP, restart_minutes=0, checkpoint_minutes=0)
    assert s.first_start[0] == -1 and s.finish_step[0] == -1  # 32 chips never fit in a 16-chip floor
    assert s.first_start[1] == 0 and s.preemptions[1] == 0 and s.finish_step[1] == 12


def test_deadline_first_and_faster_pools_first() -> None:
    cap = np.array([[32] * 100, [32] * 100], dtype=np.int64)
    jobs = [TrainingJob("late", 32, 1.0, deadline_h=50), TrainingJob("soon", 32, 1.0, deadline_h=2)]
    s = schedule(
        jobs, cap, np.array([0, 0]), [1.0, 2.0], [False, False], STEP, restart_minutes=0, checkpoint_minutes=0
    )
    # "soon" goes first, to the faster pool (2x: one hour of work in 6 steps); "late" to the slower.
    assert s.finish_step[1] == 6 and s.finish_step[0] == 12
    assert s.used[1, 0] == 32 and s.used[0, 0] == 32


# --- speed: cost does not grow with chips -----------------------------------------------------------


def test_a_million_chips_for_a_week_simulates_in_seconds() -> None:
    """The issue's scale target, with a margin for slow CI: 1M chips x 7 days at 1-minute steps."""
    d = profile(
        bundled_shape("servegen:m-large"),
        steps=7 * 1440,
        step_s=60,
        peak_requests_per_s=4e5,
        lengths=lengths_of("azure:conv"),
        burst="azure:conv",
    )
    rng = np.random.default_rng(0)
    jobs = tuple(
        TrainingJob(
            f"j{i}",
            int(rng.integers(64, 32768)),
            float(rng.uniform(1, 24)),
            float(rng.uniform(0, 160)),
            None,
            bool(rng.random() < 0.8),
        )
        for i in range(2000)
    )
    big = Fleet("1M", (pool(62_500, tokens=2000.0),), d, jobs)
    assert big.chips == 1_000_000
    start = time.perf_counter()
    sim = simulate(big, [Policy("static"), Policy("day_night")])
    elapsed = time.perf_counter() - start
    assert elapsed < 30.0, f"{elapsed:.1f} s for two policies"
    assert sim.run("day_night").metrics["lent_chip_hours"] > 0

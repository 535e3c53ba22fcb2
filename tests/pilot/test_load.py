"""Load generation against a real streaming server on loopback that counts what it receives.

The server (tests/pilot/sse_server.py) logs the completion requests in flight at every change and
every prompt it gets, so each test checks the load the server saw, not what the runner says it sent.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from tests.pilot.conftest import DATA
from tests.pilot.sse_server import serving

from silica.errors import InputError
from silica.pilot.loadplan import LoadPlan
from silica.pilot.prompts import PromptMaker
from silica.pilot.runner import run_plan


def test_a_closed_loop_step_holds_n_in_flight_for_its_steady_window() -> None:
    n = 6
    plan = LoadPlan(
        input_len=8,
        output_len=3,  # `slow` sends 20 tokens/s: each request is ~0.15 s
        concurrency=(n,),
        requests_per_step=1,
        warmup_requests=0,
        duration_s=1.2,
        warmup_s=0.3,
        cooldown_s=0.3,
    )
    with serving() as srv:
        begin = time.perf_counter()
        base = f"http://127.0.0.1:{srv.port}"
        result = run_plan(base, "slow", plan, metrics_url=base + "/metrics", scrape_interval_s=0.1)
        first = next(t for t, k in srv.log if k > 0)
        assert first >= begin
        # The server's own count over the steady window (a little inside it, for the clock skew of
        # the runner's start against the first request's arrival).
        seen = srv.mean_in_flight(first + 0.35, first + 1.45)
        peak = max(k for _, k in srv.log)
    step = result.steps[0]
    assert result.stopped is None
    assert peak == n  # never more than asked
    assert seen >= 0.95 * n, seen
    assert step.mean_in_flight is not None and 0.95 * n <= step.mean_in_flight <= n + 1e-9
    assert step.mode == "closed" and step.concurrency == n
    assert step.excluded > 0  # warm-up and cool-down requests are not counted
    assert step.requests >= n * 1.0 / 0.2  # the steady window's requests, ~0.15 s each
    assert step.short_answers == 0
    # The engine's own running-requests gauge, scraped during the steady window, saw N too.
    assert step.engine is not None and step.engine["scrapes"] >= 5
    assert 0.9 * n <= step.engine["running_mean"] <= n and step.engine["running_max"] == n


@pytest.mark.parametrize("arrival", ["constant", "poisson"])
def test_an_open_loop_step_sends_at_the_asked_rate(arrival: str) -> None:
    rate = 25.0
    plan = LoadPlan(
        input_len=8,
        output_len=4,
        concurrency=(),
        rates=(rate,),
        arrival=arrival,
        requests_per_step=1,
        warmup_requests=0,
        duration_s=2.0,
        warmup_s=0.2,
        cooldown_s=0.2,
        seed=3,
    )
    with serving() as srv:
        result = run_plan(f"http://127.0.0.1:{srv.port}", "fast", plan)
        sent = srv.requests
    step = result.steps[0]
    assert step.mode == "open" and step.rate == rate
    assert step.achieved_rate is not None
    if arrival == "constant":
        assert abs(step.achieved_rate / rate - 1) <= 0.05, step.achieved_rate
    else:
        # Poisson counts vary by chance (sd ~14% for 50 arrivals): the runner must keep the schedule,
        # which the same seed reproduces.
        import random

        rng, at, scheduled = random.Random(f"{plan.seed}/arrivals/0"), 0.0, 0
        while (at := at + rng.expovariate(rate)) < 2.4:
            scheduled += 1 if 0.2 <= at < 2.2 else 0
        assert abs(step.requests - scheduled) <= max(1, 0.05 * scheduled), (step.requests, scheduled)
    assert sent == step.requests + step.excluded
    assert step.failed == 0


def test_prompts_are_distinct_and_share_no_prefix() -> None:
    plan = LoadPlan(input_len=24, output_len=2, concurrency=(4,), requests_per_step=40, warmup_requests=0)
    with serving() as srv:
        run_plan(f"http://127.0.0.1:{srv.port}", "fast", plan)
        prompts = list(srv.prompts)
    assert len(prompts) == 40
    assert len(set(prompts)) == 40
    # A prefix cache shares blocks of 16 tokens: no two prompts may share even their first 4 words.
    heads = [tuple(p.split()[:4]) for p in prompts]
    assert len(set(heads)) == 40
    assert all(len(p.split()) == 24 for p in prompts)


def test_a_prompt_length_sweep_sends_each_steps_own_length_at_the_sweep_concurrency() -> None:
    """The sweep's steps come after the others, closed loop at `sweep_concurrency`, each with prompts
    of its own length (words here, without a tokenizer), still distinct from every other step's."""
    plan = LoadPlan(
        input_len=24,
        output_len=2,
        concurrency=(2,),
        requests_per_step=6,
        warmup_requests=0,
        input_lens=(8, 40),
    )
    with serving() as srv:
        result = run_plan(f"http://127.0.0.1:{srv.port}", "fast", plan)
        prompts = list(srv.prompts)
    assert [(s.concurrency, s.input_len) for s in result.steps] == [(2, 24), (1, 8), (1, 40)]
    assert [len(p.split()) for p in prompts] == [24] * 6 + [8] * 6 + [40] * 6
    assert len({tuple(p.split()[:4]) for p in prompts}) == 18
    assert all(s.mode == "closed" and s.completed == 6 for s in result.steps)
    assert LoadPlan.from_dict(plan.to_dict(), "test") == plan
    from silica.pilot.loadplan import Deployed

    dep = Deployed("m", "g6e.xlarge", "l40s", "ada", "nvidia", "vllm", 1, 8, max_len=64, dtype="bf16")
    with pytest.raises(InputError, match="do not fit the kit's max model length 64"):
        LoadPlan(
            input_len=24, output_len=2, concurrency=(1,), requests_per_step=1, deployed=dep, input_lens=(63,)
        )


def test_the_same_seed_gives_the_same_prompts_and_another_seed_others() -> None:
    a, b, c = PromptMaker(30, seed=1), PromptMaker(30, seed=1), PromptMaker(30, seed=2)
    assert [a(0, i) for i in range(5)] == [b(0, i) for i in range(5)]
    assert not {a(0, i) for i in range(5)} & {c(0, i) for i in range(5)}


@pytest.mark.slow
def test_prompts_are_exact_in_tokens_with_a_tokenizer() -> None:
    from tests.pilot.tiny_server import _TEXT
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=400, special_tokens=["<unk>", "<s>"], initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
    )
    tok.train_from_iterator(_TEXT, trainer=trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>", bos_token="<s>")
    for n in (5, 37, 128):
        make = PromptMaker(n, seed=4, tokenizer=fast)
        texts = [make(0, i) for i in range(6)]
        assert all(len(fast.encode(t, add_special_tokens=False)) == n for t in texts)
        assert len(set(texts)) == 6


def test_a_short_answer_is_flagged_and_kept_out_of_tpot() -> None:
    plan = LoadPlan(input_len=4, output_len=16, concurrency=(2,), requests_per_step=4, warmup_requests=0)
    with serving() as srv:
        short = run_plan(f"http://127.0.0.1:{srv.port}", "short", plan).steps[0]
        full = run_plan(f"http://127.0.0.1:{srv.port}", "fast", plan).steps[0]
    assert short.completed == 4 and short.short_answers == 4
    assert short.tpot_ms["p50"] is None and short.itl_ms["p50"] is None
    assert short.ttft_ms["p50"] is not None  # the first token is on time whatever the length
    assert "shorter than the 16 tokens asked (median 8)" in short.errors[0]
    assert full.short_answers == 0 and full.tpot_ms["p50"] is not None


def test_plans_refuse_what_cannot_run_and_keep_the_new_fields() -> None:
    with pytest.raises(InputError, match="run for a time"):
        LoadPlan(input_len=4, output_len=4, concurrency=(), rates=(1.0,), requests_per_step=1)
    with pytest.raises(InputError, match="positive"):
        LoadPlan(4, 4, (), 1, rates=(0.0,), duration_s=1.0)
    with pytest.raises(InputError, match="arrival"):
        LoadPlan(4, 4, (1,), 1, arrival="bursty")
    plan = LoadPlan(4, 4, (1, 2), 1, rates=(0.5,), duration_s=30, warmup_s=5, cooldown_s=8, seed=9)
    again = LoadPlan.from_dict(plan.to_dict(), "test")
    assert again == plan


def test_engine_metrics_are_read_from_vllm_exposition() -> None:
    from silica.pilot.engine_metrics import parse_exposition, summarise

    text = """# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="m"} 3.0
vllm:num_requests_running{engine="1",model_name="m"} 2.0
vllm:num_requests_waiting{engine="0",model_name="m"} 1.0
vllm:kv_cache_usage_perc{engine="0",model_name="m"} 0.5
vllm:num_preemptions_total{engine="0",model_name="m"} 4.0
vllm:prefix_cache_queries_total{engine="0",model_name="m"} 1000.0
vllm:prefix_cache_hits_total{engine="0",model_name="m"} 10.0
vllm:generation_tokens_total{engine="0",model_name="m"} 99.0
"""
    a = parse_exposition(text)
    assert a == {"running": 5.0, "waiting": 1.0, "kv_cache_usage": 0.5, "preemptions": 4.0,
                 "prefix_cache_queries": 1000.0, "prefix_cache_hits": 10.0}  # fmt: skip
    b = {**a, "preemptions": 6.0, "prefix_cache_queries": 3000.0, "prefix_cache_hits": 30.0}
    s = summarise([(0.0, a), (1.0, b)])
    assert s is not None and s["preemptions"] == 2.0 and s["prefix_cache_hit_rate"] == 0.01
    assert s["running_mean"] == 5.0 and s["kv_cache_usage_max"] == 0.5


def test_engine_metrics_are_read_from_triton_tensorrt_llm_exposition() -> None:
    from silica.pilot.engine_metrics import parse_exposition

    text = (DATA / "triton-trtllm-metrics.prom").read_text()  # NVIDIA's documented example output
    # active, waiting and the KV fraction are told apart by a label, not by the family's name
    assert parse_exposition(text) == {"running": 0.0, "waiting": 1.0, "kv_cache_usage": 0.4875}
    busier = text.replace('request_type="active",version="1"} 0', 'request_type="active",version="1"} 7')
    assert parse_exposition(busier)["running"] == 7.0  # not the sum over request types (515)


def test_compare_explains_a_slow_step_from_the_engine_metrics() -> None:
    from silica.pilot.compare import explain_miss

    base = {"scrapes": 10, "running_mean": 8.0, "waiting_mean": 0.0, "preemptions": 0.0}
    assert explain_miss(base, 8).startswith("compute")
    assert "queueing (4.0 requests waiting" in explain_miss(
        {**base, "running_mean": 4.0, "waiting_mean": 4.0}, 8
    )
    assert "preemption (3 sequences" in explain_miss(
        {**base, "preemptions": 3.0, "kv_cache_usage_max": 0.99}, 8
    )
    assert explain_miss(None, 8) == "no engine metrics for this step"


def _dataset(tmp: Path) -> Path:
    """A ShareGPT-style file: (prompt, answer) word lengths (3, 5), (10, 2), (6, 7); one without a reply,
    one with role/content turns (4, 3), one too long for a max length of 40 (30 + 20)."""
    convs = [
        {"conversations": [{"from": "human", "value": "a b c"}, {"from": "gpt", "value": "1 2 3 4 5"}]},
        {"conversations": [{"from": "human", "value": " ".join("x" * 10)}, {"from": "gpt", "value": "y z"}]},
        {"conversations": [{"from": "human", "value": "q " * 6}, {"from": "gpt", "value": "r " * 7}]},
        {"conversations": [{"from": "human", "value": "alone"}]},
        {"messages": [{"role": "user", "content": "u v w t"}, {"role": "assistant", "content": "s s s"}]},
        {"conversations": [{"from": "human", "value": "l " * 30}, {"from": "gpt", "value": "m " * 20}]},
    ]
    path = tmp / "sharegpt.json"
    path.write_text(json.dumps(convs))
    return path


def test_a_dataset_gives_each_request_its_prompt_and_answer_lengths(tmp_path: Path) -> None:
    from silica.pilot.prompts import read_length_pairs

    pairs, skipped = read_length_pairs(_dataset(tmp_path), max_total=40)
    assert sorted(pairs) == [(3, 5), (4, 3), (6, 7), (10, 2)] and skipped == 2
    plan = LoadPlan(input_len=6, output_len=4, concurrency=(2,), requests_per_step=40, warmup_requests=0)
    with serving() as srv:
        result = run_plan(f"http://127.0.0.1:{srv.port}", "fast", plan, lengths=pairs)
        prompts = list(srv.prompts)
    words = {len(p.split()) for p in prompts}
    assert words == {3, 4, 6, 10}  # 40 seeded draws reach every pair
    assert len({tuple(p.split()[:3]) for p in prompts}) == 40  # the text is still a fresh draw
    [step] = result.steps
    assert step.short_answers == 0 and step.completed == 40  # each answer as long as it asked
    by_prompt = {3: 5, 4: 3, 6: 7, 10: 2}
    assert step.output_tokens == sum(by_prompt[len(p.split())] for p in prompts)
    with serving() as srv:  # the "short" model answers half of what each asked: every one is flagged
        short = run_plan(f"http://127.0.0.1:{srv.port}", "short", plan, lengths=pairs).steps[0]
    assert short.short_answers == short.completed == 40


def test_a_dataset_that_is_not_conversations_is_one_line(tmp_path: Path) -> None:
    from silica.errors import DataFileError
    from silica.pilot.prompts import read_length_pairs

    bad = tmp_path / "bad.json"
    bad.write_text('{"conversations": []}')
    with pytest.raises(DataFileError, match="not a JSON list of conversations"):
        read_length_pairs(bad)
    bad.write_text('[{"conversations": [{"from": "human", "value": "only"}]}]')
    with pytest.raises(DataFileError, match=r"no conversation with a user turn and a reply \(1 skipped\)"):
        read_length_pairs(bad)


def test_pilot_run_with_a_dataset_records_its_mean_lengths_and_where_they_came_from(tmp_path: Path) -> None:
    from tests.pilot.conftest import run

    out = tmp_path / "r.json"
    with serving() as srv:
        code, _, err = run(
            "pilot", "run", "--endpoint", f"http://127.0.0.1:{srv.port}", "--model", "fast",
            "--concurrency", "2", "--requests", "12", "--dataset", str(_dataset(tmp_path)),
            "--out", str(out), "--no-store", "--no-metrics",
        )  # fmt: skip
    assert code == 0, err
    plan = json.loads(out.read_text())["plan"]
    # the five usable pairs (no kit: no max length to skip the long one): means 10.6 and 7.4 words
    assert (plan["input_len"], plan["output_len"]) == (11, 7)
    assert "sharegpt.json (5 conversations; 1 skipped, without a reply); lengths in words" in plan["dataset"]
    with serving() as srv:  # a file that is not conversations: one line, exit 2, before any load
        code, _, err = run(
            "pilot", "run", "--endpoint", f"http://127.0.0.1:{srv.port}", "--model", "fast",
            "--dataset", str(out), "--out", str(tmp_path / "r2.json"), "--no-store",
        )  # fmt: skip
        sent = srv.requests
    assert code == 2 and "not a JSON list of conversations" in err and sent == 0

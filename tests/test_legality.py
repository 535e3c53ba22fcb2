"""Layout legality (`silica.legality`): one rule each for tp, pp, ep and vp, said the same way by every
caller (the deployment check, the planner's target checks, the serving and training searches)."""

from __future__ import annotations

import numpy as np
import pytest

from silica import legality
from silica.errors import InputError
from silica.models import load_model
from silica.plan.inference_search import search_inference
from silica.plan.targets import legal_tp, resolve_targets, tp_choices
from silica.plan.training_search import search_training
from silica.workload import Deployment, InferenceWorkload, TrainingWorkload


def test_ep_divides_the_experts_of_a_moe_model_only() -> None:
    legality.check_ep("moe", 8, 64)
    legality.check_ep("dense", 1, 0)  # ep 1 is no split
    with pytest.raises(InputError, match="is dense"):
        legality.check_ep("dense", 2, 0)
    with pytest.raises(InputError, match="more expert-parallel ranks"):
        legality.check_ep("moe", 128, 64)
    with pytest.raises(InputError, match=r"does not split .* 60 experts evenly") as err:
        legality.check_ep("moe", 7, 60)
    assert "1, 2, 3, 4, 5, 6, 10, 12, 15, 20, 30, 60" in str(err.value)
    got = legality.ep_splits_experts(64, np.array([1.0, 2.0, 3.0, 8.0, 128.0]))
    assert got.tolist() == [True, True, False, True, False]


def test_tp_splits_query_heads_and_divides_or_replicates_kv_heads() -> None:
    legality.check_tp_heads("m", 8, 32, 8)
    legality.check_tp_heads("m", 16, 32, 8)  # a multiple of the KV heads: replicated
    with pytest.raises(InputError, match="does not divide m's 32 attention heads"):
        legality.check_tp_heads("m", 3, 32, 8)
    with pytest.raises(InputError, match="neither divides nor is a multiple"):
        legality.check_tp_heads("m", 4, 12, 6)
    assert legality.legal_tp(8, 12, splits_heads=True) == [1, 2, 4]
    assert legality.legal_tp(8, 12, splits_heads=False) == [1, 2, 4, 8]


def test_stages_layers_units_and_vp() -> None:
    legality.check_pp("m", 32, 32)
    with pytest.raises(InputError, match="more pipeline stages than m's 32 layers"):
        legality.check_pp("m", 33, 32)
    with pytest.raises(InputError, match="33 instances would be 33 pipeline stages"):
        legality.check_chained_stages("m", 33, 32)
    with pytest.raises(InputError, match="tp x pp = 2 x 8 needs more than the 8 GPUs"):
        legality.check_stages_fit([2, 4], 8, 8, "GPUs", 1, "p5.48xlarge")
    legality.check_stages_fit([1, 2], 8, 8, "GPUs", 1, "p5.48xlarge")
    legality.check_vp(4, 2)
    legality.check_vp(1, 1)
    with pytest.raises(InputError, match="--pp 1 has one stage"):
        legality.check_vp(2, 1)
    assert legality.check_serving_ep("m", 4, [[1, 2, 4], [1, 2]]) == [[4], []]
    with pytest.raises(InputError, match="ep equals tp"):
        legality.check_serving_ep("m", 16, [[1, 2, 4, 8]])


def test_every_caller_says_a_rule_the_same_way() -> None:
    dense = load_model("llama-3.1-8b")
    gpu = resolve_targets(["p5.48xlarge"], task="inference")
    # ep on a dense model: the deployment check and the serving search give one message.
    with pytest.raises(InputError) as by_deployment:
        Deployment("p5.48xlarge", ep=2).check_fits(dense.id, dense.n_layers, dense.n_heads, dense.n_kv_heads)
    with pytest.raises(InputError) as by_search:
        search_inference(dense, InferenceWorkload(input_len=128, output_len=16), gpu, ep=2)
    assert str(by_deployment.value) == str(by_search.value)
    # The planner's tp options are the legality module's, and a fixed tp is refused in its words.
    assert legal_tp(dense, gpu[0]) == legality.legal_tp(8, dense.n_heads, splits_heads=True)
    with pytest.raises(InputError, match=r"tp=16 does not divide the 8 GPUs of p5\.48xlarge"):
        tp_choices(dense, gpu, 16)
    # vp without a pipeline: the training search refuses it by the same rule.
    train = resolve_targets(["p5.48xlarge"], task="training")
    with pytest.raises(InputError, match="--pp 1 has one stage"):
        search_training(dense, TrainingWorkload(seq_len=4096, virtual_stages=2), train, count=1, pp=1)

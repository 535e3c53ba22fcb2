"""Model scans with the real transformers modeling code (meta device) and tiny user factories."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from silica.errors import InputError, UnknownNameError
from silica.scan import ScanReport, scan_model
from silica.scan.build import shrink_config

FIXTURES = Path(__file__).parent / "fixtures"
FACTORIES = FIXTURES / "factories.py"

# (registry id, model_type, expected verdict per target: inferentia2, trainium1, trainium2, trainium3)
ARCHITECTURES = [
    ("llama-3.1-8b", "llama", ("ready", "ready", "ready", "ready")),
    ("mistral-7b-v0.1", "mistral", ("ready", "ready", "ready", "ready")),
    ("mixtral-8x7b", "mixtral", ("ready", "ready", "ready", "ready")),
    ("qwen2.5-7b", "qwen2", ("ready", "ready", "ready", "ready")),
    ("qwen3-8b", "qwen3", ("ready", "ready", "ready", "ready")),
    ("qwen3-30b-a3b", "qwen3_moe", ("ready", "ready", "ready", "ready")),
    # only NxDI community contrib code (Trn1) runs Gemma 2
    ("gemma-2-9b", "gemma2", ("needs-work", "needs-work", "needs-work", "needs-work")),
    ("phi-3-mini-4k", "phi3", ("ready", "ready", "ready", "needs-work")),
    ("gpt2", "gpt2", ("ready", "ready", "ready", "needs-work")),
    ("gpt-j-6b", "gptj", ("needs-work", "needs-work", "needs-work", "needs-work")),
    ("bert-base-uncased", "bert", ("ready", "ready", "ready", "needs-work")),
    ("roberta-base", "roberta", ("ready", "ready", "ready", "needs-work")),
    ("t5-3b", "t5", ("ready", "ready", "ready", "needs-work")),
    ("vit-base-patch16-224", "vit", ("ready", "ready", "ready", "needs-work")),
    ("whisper-large-v3", "whisper", ("ready", "ready", "ready", "ready")),
    # NxDI's DeepSeek code is sourced on Trn2 (contrib run) and NxDI's Trn2+ platforms only
    ("deepseek-v3", "deepseek_v3", ("needs-work", "needs-work", "ready", "ready")),
]


@pytest.mark.parametrize(
    ("model_id", "model_type", "expected"), ARCHITECTURES, ids=[a[1] for a in ARCHITECTURES]
)
def test_architecture(model_id: str, model_type: str, expected: tuple[str, ...]) -> None:
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    if model_type not in CONFIG_MAPPING:  # deepseek_v3 needs a recent transformers
        pytest.skip(f"transformers has no {model_type}")
    report = scan_model(model_id, layers=2)
    assert report.method == "torch.export"
    assert report.model_type == model_type
    assert len(report.ops) >= 15  # a real transformer graph, not an empty one
    assert [o.op for o in report.ops if o.status != "supported"] == []
    assert tuple(v.verdict for v in report.target_verdicts.values()) == expected
    assert all(o.source for o in report.ops)


def test_llama_is_all_supported_and_ready_on_trainium2() -> None:
    report = scan_model("llama-3.1-8b")
    data = json.loads(json.dumps(report.to_dict()))
    assert list(data)[:4] == ["target_verdicts", "ops", "findings", "effort_weeks"]
    assert data["target_verdicts"]["trainium2"] == "ready"
    assert {o["status"] for o in data["ops"]} == {"supported"}
    names = {o["op"] for o in data["ops"]}
    assert {"aten::mm", "aten::embedding", "aten::rsqrt", "aten::_softmax", "aten::sigmoid"} <= names
    trn2 = data["targets"]["trainium2"]
    assert "vLLM Neuron plugin" in trn2["libraries"]
    assert trn2["fallback"]["cpu_nodes"] == 0
    assert data["effort_weeks"] == 0.5
    assert data["status"] == "ok" and not report.failed
    assert report.seconds < 20


def test_moe_layers_survive_the_layer_cut() -> None:
    cfg = shrink_config({"model_type": "deepseek_v3", "num_hidden_layers": 61, "first_k_dense_replace": 3}, 2)
    assert cfg["num_hidden_layers"] == 2 and cfg["first_k_dense_replace"] == 1
    cfg = shrink_config({"num_hidden_layers": 4, "layer_types": ["a", "b", "a", "b"]}, 2)
    assert cfg["layer_types"] == ["a", "b"]


def test_unsupported_operator_is_named() -> None:
    report = scan_model(f"{FACTORIES}:histc_model")
    histc = next(o for o in report.ops if o.op == "aten::histc")
    assert histc.status == "unsupported" and histc.count == 1 and "pytorch/xla" in histc.source
    trn2 = report.target_verdicts["trainium2"]
    assert trn2.verdict == "needs-work"
    assert "aten::histc" in " ".join(trn2.work)
    assert trn2.fallback.cpu_ops == ("aten::histc",)
    assert trn2.fallback.cpu_partitions == 1 and trn2.fallback.viable


def test_mostly_unsupported_model_is_blocked() -> None:
    report = scan_model(f"{FACTORIES}:mostly_unsupported")
    assert {v.verdict for v in report.target_verdicts.values()} == {"blocked"}
    plan = report.target_verdicts["inferentia2"].fallback
    assert plan.supported_share < 0.5 and plan.cpu_partitions == 3


def test_user_mlp_is_ready_where_torch_neuronx_traces() -> None:
    report = scan_model(f"{FACTORIES}:mlp")
    got = {t: v.verdict for t, v in report.target_verdicts.items()}
    assert got == {
        "inferentia2": "ready",
        "trainium1": "ready",
        "trainium2": "ready",
        "trainium3": "needs-work",
    }
    assert report.target_verdicts["trainium1"].path == "trace"
    assert "aten::native_layer_norm" in {o.op for o in report.ops}


def test_graph_breaks_fall_back_to_dynamo() -> None:
    report = scan_model(f"{FACTORIES}:branchy")
    assert report.method == "dynamo"
    assert report.target_verdicts["trainium2"].fallback.graph_breaks == 1
    assert report.target_verdicts["trainium2"].verdict == "needs-work"
    assert {"export-failed", "graph-breaks"} <= {f.rule for f in report.findings}
    assert "aten::sigmoid" in {o.op for o in report.ops} or "aten::tanh" in {o.op for o in report.ops}


def test_integer_matmul_is_limited() -> None:
    report = scan_model(f"{FACTORIES}:int_matmul")
    mm = next(o for o in report.ops if o.op == "aten::mm")
    assert (mm.status, mm.condition) == ("limited", "int_operands")


def test_complex_blocks_inferentia2_but_not_trainium2() -> None:
    report = scan_model(f"{FACTORIES}:complex_model")
    assert report.verdict("inferentia2") == "blocked"
    assert report.verdict("trainium2") == "needs-work"
    assert any(f.rule == "dtype:complex64" for f in report.findings)


def test_dict_inputs_become_keyword_arguments() -> None:
    assert scan_model(f"{FACTORIES}:kwargs_inputs").method == "torch.export"


@pytest.mark.parametrize(
    ("subject", "rule"),
    [
        (f"{FACTORIES}:wrong_return", "factory-bad-return"),
        (f"{FACTORIES}:raises", "factory-error"),
        (f"{FACTORIES}:NOT_CALLABLE", "factory-missing"),
        (f"{FIXTURES / 'raises_on_import.py'}:anything", "factory-import-error"),
    ],
)
def test_bad_factories_are_findings(subject: str, rule: str) -> None:
    report = scan_model(subject)
    assert report.method == "none"
    assert report.status == "failed" and report.to_dict()["status"] == "failed"
    assert [f.rule for f in report.findings] == [rule]
    assert report.findings[0].message
    assert {v.verdict for v in report.target_verdicts.values()} == {"needs-work"}


def test_config_json_path(tmp_path: Path) -> None:
    config = {
        "model_type": "qwen2",
        "architectures": ["Qwen2ForCausalLM"],
        "hidden_size": 256,
        "intermediate_size": 512,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "num_hidden_layers": 24,
        "vocab_size": 1000,
        "_source": "test",
    }
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    report = scan_model(str(path))
    assert report.model_type == "qwen2" and report.method == "torch.export"
    assert report.verdict("trainium2") == "ready"


def test_config_transformers_rejects_is_a_finding(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": "llama", "hidden_size": "wide"}))
    report = scan_model(str(path))
    assert report.method == "none" and report.findings[0].rule in {"config-error", "build-error"}
    assert report.to_dict()["status"] == "failed"


def test_unknown_architecture_is_a_failed_scan(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": "no_such_arch", "hidden_size": 64}))
    report = scan_model(str(path))
    data = report.to_dict()
    assert data["status"] == "failed" and data["findings"][0]["rule"] == "config-error"
    assert any("placeholders" in a for a in data["assumptions"])


def test_graph_breaks_are_a_result_not_a_failure() -> None:
    assert scan_model(f"{FACTORIES}:branchy").status == "ok"


def test_bad_input_raises_input_errors(tmp_path: Path) -> None:
    with pytest.raises(UnknownNameError) as err:
        scan_model("llama-3.1-8bb")
    assert "llama-3.1-8b" in str(err.value)
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(InputError):
        scan_model(str(bad))
    with pytest.raises(InputError):
        scan_model(str(tmp_path / "nope.py") + ":f")
    with pytest.raises(InputError):
        scan_model("llama-3.1-8b", layers=0)


def test_report_is_a_scan_report() -> None:
    assert isinstance(scan_model(f"{FACTORIES}:mlp"), ScanReport)

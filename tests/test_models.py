"""The model registry against published parameter counts and architecture facts.

Expected numbers come from outside the parser: published counts stored in the bundled files
(`_total_params_published`, `_active_params_published`: model cards, papers, READMEs), counts taken
from the Hugging Face model classes, and architecture facts from the papers. Published counts are
rounded to two or three significant figures (7.3B, 46.7B), hence a 2% tolerance for them.
"""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path
from typing import Any

import pytest

import silica.models
from silica.errors import DataFileError, UnknownNameError
from silica.models import config_path, list_models, load_config, load_model, parse_config

TOLERANCE = 0.02
MODELS = list_models()
PUBLISHED_ACTIVE = [m for m in MODELS if load_config(m).get("_active_params_published") is not None]

# openai/gpt-oss README ("21B parameters with 3.6B active", "117B with 5.1B active") counts active
# weights without the input embedding; Qwen3, Mixtral, DeepSeek and Llama 4 count it.
ACTIVE_WITHOUT_INPUT_EMBEDDING = {"gpt-oss-20b", "gpt-oss-120b"}

# sum(p.numel() for p in cls(config).parameters()) with transformers 5.24 on the meta device, for
# architectures whose counts have pieces a 2% check would miss (biases, sinks, norms, towers).
HF_NUM_PARAMETERS = {
    "gpt2": 124_439_808,  # GPT2LMHeadModel (wte tied, wpe learned)
    "bert-base-uncased": 109_482_240,  # BertModel (with pooler)
    "roberta-base": 124_645_632,  # RobertaModel (with pooler)
    "vit-base-patch16-224": 86_567_656,  # ViTForImageClassification (1000 labels)
    "t5-3b": 2_851_598_336,  # T5ForConditionalGeneration
    "whisper-large-v3": 1_543_490_560,  # WhisperForConditionalGeneration
    "gpt-j-6b": 6_050_882_784,
    "falcon-180b": 178_557_088_768,
    "gemma-2-9b": 9_241_705_984,
    "qwen2.5-7b": 7_615_616_512,
    "qwen3-30b-a3b": 30_532_122_624,
    "nemotron-4-15b": 15_628_775_424,
    "phi-3-mini-4k": 3_821_079_552,
    "mixtral-8x7b": 46_702_792_704,
    "gpt-oss-20b": 20_914_757_184,
    # HF holds DeepSeek-V3's 58 x 256 routing score-correction biases as buffers; the checkpoint
    # stores them as weights, and so does Silica.
    "deepseek-v3": 671_026_404_352 + 58 * 256,
    "llama-4-scout-17b-16e": 108_641_793_536,  # Llama4ForConditionalGeneration: text + vision
    "llama-4-maverick-17b-128e": 401_583_781_376,
    "llama-3.2-1b": 1_235_814_400,
}


def _raw(model_id: str) -> dict[str, Any]:
    return load_config(model_id)


# Published counts, every bundled model.


@pytest.mark.parametrize("model_id", MODELS)
def test_total_params_match_published(model_id: str) -> None:
    config = _raw(model_id)
    expected = config["_total_params_published"]
    if expected is None:
        # flan-t5-xl: Google names it "3B" (nominal) and publishes no exact count. Its reference
        # entry carries an independent count of the T5 v1.1 XL checkpoint layout instead.
        assert model_id == "flan-t5-xl"
        expected = config["_total_params_computed"]
    assert load_model(model_id).total_params == pytest.approx(expected, rel=TOLERANCE)


@pytest.mark.parametrize("model_id", PUBLISHED_ACTIVE)
def test_active_params_match_published(model_id: str) -> None:
    spec = load_model(model_id)
    active = spec.active_params
    if model_id in ACTIVE_WITHOUT_INPUT_EMBEDDING:
        active -= spec.vocab_size * spec.d_model
    assert active == pytest.approx(_raw(model_id)["_active_params_published"], rel=TOLERANCE)


def test_published_counts_are_carried_into_the_spec() -> None:
    spec = load_model("mixtral-8x7b")
    assert (spec.published_total_params, spec.published_active_params) == (46_700_000_000, 12_900_000_000)
    assert load_model("flan-t5-xl").published_total_params is None


@pytest.mark.parametrize(("model_id", "expected"), sorted(HF_NUM_PARAMETERS.items()))
def test_total_params_equal_hugging_face_model_classes(model_id: str, expected: int) -> None:
    assert load_model(model_id).total_params == expected


def test_dense_models_use_every_weight_per_token() -> None:
    for model_id in MODELS:
        spec = load_model(model_id)
        if not spec.is_moe:
            assert spec.active_params == spec.total_params, model_id


def test_llama4_active_excludes_vision_tower() -> None:
    # Meta: Scout has 17B active of 109B total; the vision tower runs per image, not per token.
    spec = load_model("llama-4-scout-17b-16e")
    assert spec.active_params == pytest.approx(17e9, rel=TOLERANCE)
    assert spec.is_moe and spec.n_experts == 16 and spec.experts_per_token == 1


# Architecture facts.


def test_deepseek_v3_mla_and_moe() -> None:
    spec = load_model("deepseek-v3")
    # DeepSeek-V3 report: KV cache per token per layer = 512 latent + 64 decoupled RoPE key.
    assert spec.kv_values_per_token_per_layer == 576
    assert spec.is_mla and (spec.kv_lora_rank, spec.qk_rope_head_dim) == (512, 64)
    assert (spec.head_dim, spec.v_head_dim) == (128 + 64, 128)
    # 61 layers, the first 3 dense; 256 routed experts of width 2048, top 8, plus 1 shared.
    assert (spec.n_moe_layers, spec.n_experts, spec.experts_per_token) == (58, 256, 8)
    assert spec.n_shared_experts == 1
    assert spec.expert_params == 3 * 7168 * 2048
    assert spec.d_ff == 18432


def test_mixtral_experts() -> None:
    spec = load_model("mixtral-8x7b")
    # Mixtral paper: 8 SwiGLU experts (w1, w2, w3 of 4096 x 14336) per layer, 2 chosen per token.
    assert (spec.n_experts, spec.experts_per_token, spec.n_moe_layers) == (8, 2, 32)
    assert spec.expert_params == 3 * 4096 * 14336
    assert spec.d_ff == 0  # every layer is MoE


@pytest.mark.parametrize(
    ("model_id", "moe_layers", "d_ff", "shared"),
    [
        ("llama-4-scout-17b-16e", 48, 0, 1),  # every layer MoE
        ("llama-4-maverick-17b-128e", 24, 16384, 1),  # MoE every 2nd layer, dense ones 16384 wide
        ("qwen3-30b-a3b", 48, 0, 0),
        ("gpt-oss-20b", 24, 0, 0),
    ],
)
def test_moe_layer_layout(model_id: str, moe_layers: int, d_ff: int, shared: int) -> None:
    spec = load_model(model_id)
    assert (spec.n_moe_layers, spec.d_ff, spec.n_shared_experts) == (moe_layers, d_ff, shared)


@pytest.mark.parametrize(
    ("model_id", "heads", "kv_heads", "head_dim"),
    [
        ("llama-2-7b", 32, 32, 128),  # MHA
        ("llama-2-70b", 64, 8, 128),  # Llama 2 paper: GQA only for 70B
        ("llama-3-8b", 32, 8, 128),
        ("qwen2.5-7b", 28, 4, 128),
        ("gemma-2-9b", 16, 8, 256),
        ("falcon-180b", 232, 8, 64),
        ("gpt-oss-20b", 64, 8, 64),
        ("t5-3b", 32, 32, 128),
    ],
)
def test_attention_heads(model_id: str, heads: int, kv_heads: int, head_dim: int) -> None:
    spec = load_model(model_id)
    assert (spec.n_heads, spec.n_kv_heads, spec.head_dim) == (heads, kv_heads, head_dim)
    assert spec.kv_values_per_token_per_layer == 2 * kv_heads * head_dim


@pytest.mark.parametrize(
    ("model_id", "window", "sliding_layers"),
    [
        ("mistral-7b-v0.1", 4096, 32),  # Mistral 7B paper: W = 4096 on every layer
        ("mistral-7b-instruct-v0.2", 0, 0),  # v0.2 dropped the window
        ("gemma-2-9b", 4096, 21),  # Gemma 2 report: local and global layers alternate, local first
        ("gemma-2-27b", 4096, 23),
        ("gpt-oss-20b", 128, 12),  # gpt-oss model card: alternating banded (128) and dense layers
        ("gpt-oss-120b", 128, 18),
        ("qwen2.5-72b", 0, 0),  # use_sliding_window is false
        ("phi-3-mini-4k", 2047, 32),  # sliding_window 2047 in its config.json
        ("llama-4-scout-17b-16e", 8192, 36),  # chunked attention on 3 of every 4 layers
        ("llama-3-8b", 0, 0),
    ],
)
def test_sliding_window_layers(model_id: str, window: int, sliding_layers: int) -> None:
    spec = load_model(model_id)
    assert (spec.sliding_window, spec.n_sliding_layers) == (window, sliding_layers)


def test_qwen2_slides_above_max_window_layers_when_enabled() -> None:
    config = {**_raw("qwen2.5-72b"), "use_sliding_window": True, "sliding_window": 4096}
    spec = parse_config(config, "qwen-swa")
    assert (spec.sliding_window, spec.n_sliding_layers) == (4096, 80 - 70)  # max_window_layers 70


ENCODERS = {"bert-base-uncased", "bert-large-uncased", "roberta-base", "roberta-large"}
ENCODERS |= {"vit-base-patch16-224", "vit-large-patch16-224"}
ENCODER_DECODERS = {"t5-3b", "flan-t5-xl", "whisper-large-v3"}


@pytest.mark.parametrize("model_id", MODELS)
def test_kind(model_id: str) -> None:
    kind = "encoder" if model_id in ENCODERS else "decoder"
    assert load_model(model_id).kind == ("encoder-decoder" if model_id in ENCODER_DECODERS else kind)


def test_encoder_decoder_layers_count_both_stacks() -> None:
    assert load_model("t5-3b").n_layers == 24 + 24
    assert load_model("whisper-large-v3").n_layers == 32 + 32


@pytest.mark.parametrize(
    ("model_id", "embedding"),
    [
        ("llama-3-8b", 128256 * 4096),  # untied: the input table is only looked up
        ("llama-3.2-1b", 0),  # tied: the table is also the LM head's matmul
        ("gpt2", 1024 * 768),  # tied tokens; learned positions are a lookup
        ("bert-base-uncased", (30522 + 512 + 2) * 768),  # tokens, positions, token types
    ],
)
def test_embedding_params_are_lookup_only_weights(model_id: str, embedding: int) -> None:
    assert load_model(model_id).embedding_params == embedding


# Registry, provenance and errors.


def test_every_bundled_model_has_provenance() -> None:
    path = config_path(MODELS[0]).parent / "PROVENANCE.csv"
    with path.open(newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert sorted(row["id"] for row in rows) == MODELS
    for model_id in MODELS:
        spec = load_model(model_id)
        assert spec.source.strip(), model_id
        assert re.fullmatch(r"\d{4}-\d{2}(-\d{2})?", spec.as_of), model_id


def test_registry_lists_sorted_ids_and_caches() -> None:
    assert sorted(MODELS) == MODELS and "llama-3.1-8b" in MODELS and len(MODELS) == 47
    assert config_path("gpt2").name == "gpt2.json"
    assert load_model("gpt2") is load_model("gpt2")


def test_public_names() -> None:
    assert silica.models.__all__ == [
        "ModelKind",
        "ModelSpec",
        "config_path",
        "list_models",
        "load_config",
        "load_model",
        "parse_config",
        "supported_model_types",
    ]


def _write(path: Path, config: dict[str, Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(config), encoding="utf-8")
    return path


def _two_layer_llama() -> dict[str, Any]:
    raw = {k: v for k, v in _raw("llama-3.2-1b").items() if not k.startswith("_")}
    return {**raw, "num_hidden_layers": 2}


# Llama-3.2-1B shapes with 2 layers: tied 128256 x 2048 table, per layer q/o 2048^2, k/v 2048 x 512,
# SwiGLU 3 x 2048 x 8192 and two RMSNorms; one final RMSNorm.
TWO_LAYER_LLAMA = 128256 * 2048 + 2 * (2 * 2048**2 + 2 * 2048 * 512 + 3 * 2048 * 8192 + 2 * 2048) + 2048


def test_local_config_file_loads(tmp_path: Path) -> None:
    path = _write(tmp_path / "my-llama.json", _two_layer_llama())
    spec = load_model(str(path))
    assert (spec.id, spec.n_layers, spec.total_params) == ("my-llama", 2, TWO_LAYER_LLAMA)
    assert spec.source == str(path)
    assert load_config(str(path))["num_hidden_layers"] == 2


def test_hugging_face_folder_loads_by_folder_name(tmp_path: Path) -> None:
    _write(tmp_path / "Tiny-Llama" / "config.json", _two_layer_llama())
    spec = load_model(str(tmp_path / "Tiny-Llama"))
    assert (spec.id, spec.total_params) == ("Tiny-Llama", TWO_LAYER_LLAMA)


def test_unknown_id_suggests_the_closest() -> None:
    with pytest.raises(UnknownNameError) as err:
        load_model("llama-3.1-8")
    assert "llama-3.1-8b" in err.value.suggestions
    assert "llama-3.1-8b" in str(err.value) and "\n" not in str(err.value)
    with pytest.raises(UnknownNameError):
        config_path("no-such-model")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"model_type": "llama",', "not valid JSON"),
        ("[1, 2]", "not an object"),
    ],
)
def test_malformed_file_is_a_data_file_error(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "broken.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(DataFileError, match=message):
        load_model(str(path))


def test_missing_paths_are_data_file_errors(tmp_path: Path) -> None:
    with pytest.raises(DataFileError, match="not a file"):
        load_config(str(tmp_path / "absent.json"))
    with pytest.raises(DataFileError, match="not a file"):
        load_config(str(tmp_path))  # a folder without config.json


def _without(config: dict[str, Any], key: str) -> dict[str, Any]:
    return {k: v for k, v in config.items() if k != key}


@pytest.mark.parametrize(
    ("model_id", "change", "named"),
    [
        ("llama-3-8b", lambda c: _without(c, "hidden_size"), "hidden_size"),
        ("llama-3-8b", lambda c: {**c, "hidden_size": "4096"}, "hidden_size"),
        ("llama-3-8b", lambda c: {**c, "num_attention_heads": True}, "num_attention_heads"),
        ("llama-3-8b", lambda c: {**c, "model_type": "mamba"}, "mamba"),
        ("llama-3-8b", lambda c: _without(c, "model_type"), "model_type"),
        ("deepseek-v3", lambda c: _without(c, "kv_lora_rank"), "kv_lora_rank"),
        ("mixtral-8x7b", lambda c: {**c, "num_experts_per_tok": 9}, "num_experts_per_tok"),
        ("gpt-oss-20b", lambda c: {**c, "layer_types": ["full_attention"]}, "layer_types"),
        ("llama-4-scout-17b-16e", lambda c: _without(c, "vision_config"), "vision_config"),
        ("gemma-2-9b", lambda c: {**c, "_total_params_published": 9.24e9}, "_total_params_published"),
    ],
)
def test_invalid_config_names_the_key(model_id: str, change: Any, named: str, tmp_path: Path) -> None:
    path = _write(tmp_path / "bad.json", change(_raw(model_id)))
    with pytest.raises(DataFileError, match=re.escape(named)) as err:
        load_model(str(path))
    assert "\n" not in str(err.value) and "To fix:" in str(err.value)

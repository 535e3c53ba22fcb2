"""Count a model's parameters and read its attention geometry from a Hugging Face `config.json`.

Published sizes are rounded, some include a vision tower, some leave out the input embedding, and
none says which weights run per token; counting from the shapes answers all of that, and the tests
hold each count to the published one. Counts follow the Hugging Face module layout of each
architecture, so `total_params` equals `num_parameters()` of the checkpoint's model class.

Conventions the performance layer relies on:
- `active_params` is `total_params` less the routed experts a token does not visit, less weights off
  the per-token path (the Llama 4 vision tower runs once per image). It includes the input embedding:
  gpt-oss publishes its active count without it, Qwen3 and Mixtral with it.
- `embedding_params` counts weights read only by lookup: an untied input token embedding, learned
  position and token-type embeddings. A tied token embedding is left out because it is also the LM
  head's matmul, so `ModelSpec.matmul_params_per_token` keeps the head's FLOPs.

Decoder-only families live in `_decoders.py`; encoders and encoder-decoders, fewer, are here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from silica.errors import DataFileError
from silica.models._counting import ConfigReader, Geometry, attention, geometry, linear, mlp
from silica.models._decoders import DECODERS
from silica.models.spec import ModelKind, ModelSpec

__all__ = ["parse_config", "supported_model_types"]


# Encoders and encoder-decoders: every weight runs per token, so active == total.


def _dense_spec(
    c: ConfigReader, kind: ModelKind, g: Geometry, d_ff: int, total: int, embedding: int
) -> ModelSpec:
    return ModelSpec(
        id=c.model_id,
        model_type=c.text("model_type"),
        kind=kind,
        n_layers=g.n_layers,
        d_model=g.d,
        n_heads=g.n_heads,
        n_kv_heads=g.n_kv_heads,
        head_dim=g.head_dim,
        v_head_dim=g.head_dim,
        d_ff=d_ff,
        vocab_size=g.vocab,
        max_positions=g.max_positions,
        total_params=total,
        active_params=total,
        embedding_params=embedding,
    )


def _bert(c: ConfigReader) -> ModelSpec:
    g = geometry(c)
    d_ff = c.integer("intermediate_size", minimum=1)
    layer = attention(g.d, g.n_heads, g.n_heads, g.head_dim, True, True) + mlp(g.d, d_ff, True) + 2 * 2 * g.d
    lookups = (g.vocab + g.max_positions + c.integer("type_vocab_size", default=2)) * g.d
    pooler = linear(g.d, g.d, bias=True)  # BertModel/RobertaModel keep the [CLS] pooler by default
    total = lookups + 2 * g.d + g.n_layers * layer + pooler  # + embedding LayerNorm
    if c.text("model_type") == "roberta":  # RoBERTa numbers positions after padding_idx: 514 -> 512
        g = g._replace(max_positions=g.max_positions - c.integer("pad_token_id", default=1) - 1)
    return _dense_spec(c, "encoder", g, d_ff, total, lookups)


def _vit(c: ConfigReader) -> ModelSpec:
    d, d_ff = c.integer("hidden_size", minimum=1), c.integer("intermediate_size", minimum=1)
    heads, n = c.integer("num_attention_heads", minimum=1), c.integer("num_hidden_layers", minimum=1)
    patch, image = c.integer("patch_size", minimum=1), c.integer("image_size", default=224, minimum=1)
    tokens = (image // patch) ** 2 + 1  # patches plus [CLS] (ViT paper, eq. 1)
    g = Geometry(d, n, heads, heads, d // heads, vocab=0, max_positions=tokens)
    layer = attention(d, heads, heads, d // heads, c.flag("qkv_bias", True), True) + mlp(d, d_ff, True)
    labels = c.optional("num_labels") or len(c.raw.get("id2label") or {})
    # ViTForImageClassification has a classifier and no pooler; ViTModel has a pooler.
    head = linear(d, labels, bias=True) if labels else linear(d, d, bias=True)
    stem = linear(c.integer("num_channels", default=3) * patch * patch, d, bias=True)  # conv patch embedding
    lookups = tokens * d + d  # position embeddings + [CLS] token
    total = stem + lookups + n * (layer + 2 * 2 * d) + 2 * d + head
    return _dense_spec(c, "encoder", g, d_ff, total, lookups)


def _t5(c: ConfigReader) -> ModelSpec:
    d, d_kv = c.integer("d_model", minimum=1), c.integer("d_kv", minimum=1)
    heads, d_ff = c.integer("num_heads", minimum=1), c.integer("d_ff", minimum=1)
    n_enc = c.integer("num_layers", minimum=1)
    n_dec = c.integer("num_decoder_layers", default=n_enc)
    vocab, tied = c.integer("vocab_size", minimum=1), c.flag("tie_word_embeddings", True)
    gated = c.text("feed_forward_proj", "relu").startswith("gated-")  # T5 v1.1 / Flan: wi_0, wi_1, wo
    ff = (3 if gated else 2) * d * d_ff  # T5 linears have no bias
    attn = 4 * d * heads * d_kv
    enc_layer, dec_layer = attn + ff + 2 * d, 2 * attn + ff + 3 * d  # T5LayerNorm: weight only
    # Relative position bias: one table per stack, in its first block's self-attention (HF T5).
    relative_bias = 2 * c.integer("relative_attention_num_buckets", default=32) * heads
    embed = vocab * d
    total = embed + (0 if tied else embed) + n_enc * enc_layer + n_dec * dec_layer + relative_bias + 2 * d
    g = Geometry(d, n_enc + n_dec, heads, heads, d_kv, vocab, c.integer("n_positions", default=512))
    return _dense_spec(c, "encoder-decoder", g, d_ff, total, 0 if tied else embed)


def _whisper(c: ConfigReader) -> ModelSpec:
    d, vocab = c.integer("d_model", minimum=1), c.integer("vocab_size", minimum=1)
    n_enc, n_dec = c.integer("encoder_layers", minimum=1), c.integer("decoder_layers", minimum=1)
    heads = c.integer("decoder_attention_heads", minimum=1)
    enc_ff, dec_ff = c.integer("encoder_ffn_dim", minimum=1), c.integer("decoder_ffn_dim", minimum=1)
    attn = 4 * d * d + 3 * d  # HF Whisper: q, v and out have biases, k_proj has none
    enc_layer = attn + mlp(d, enc_ff, True) + 2 * 2 * d
    dec_layer = 2 * attn + mlp(d, dec_ff, True) + 3 * 2 * d  # self, cross; 3 LayerNorms
    conv = linear(c.integer("num_mel_bins", minimum=1) * 3, d, True) + linear(d * 3, d, True)  # 2 conv, k=3
    target = c.integer("max_target_positions", minimum=1)
    # Encoder positions are fixed sinusoids stored as a weight; both tables are read by lookup.
    positions = (c.integer("max_source_positions", minimum=1) + target) * d
    tied = c.flag("tie_word_embeddings", True)
    embed = vocab * d
    total = conv + positions + embed + (0 if tied else embed) + n_enc * enc_layer + n_dec * dec_layer + 4 * d
    g = Geometry(d, n_enc + n_dec, heads, heads, d // heads, vocab, target)
    return _dense_spec(c, "encoder-decoder", g, dec_ff, total, positions + (0 if tied else embed))


_FAMILIES: dict[str, Callable[[ConfigReader], ModelSpec]] = {
    **DECODERS,
    "bert": _bert,
    "roberta": _bert,
    "vit": _vit,
    "t5": _t5,
    "whisper": _whisper,
}


def supported_model_types() -> list[str]:
    return sorted(_FAMILIES)


def parse_config(config: Mapping[str, Any], model_id: str, source: str = "", as_of: str = "") -> ModelSpec:
    """Turn one config.json object into a `ModelSpec`; `_source`/`_notes`/published keys are optional."""
    if not isinstance(config, Mapping):
        raise DataFileError(
            f"Model config {model_id!r} is a JSON {type(config).__name__}, not an object.",
            "pass the object of a Hugging Face config.json.",
        )
    c = ConfigReader(config, model_id)
    model_type = c.text("model_type")
    family = _FAMILIES.get(model_type)
    if family is None:
        raise DataFileError(
            f"Model config {model_id!r} has model_type {model_type!r}, which Silica cannot count.",
            f"use a config of a supported model_type ({', '.join(supported_model_types())}).",
        )
    spec = family(c)
    notes = c.text("_notes", "")
    return replace(
        spec,
        source=source or c.text("_source", ""),
        as_of=as_of or c.text("_as_of", ""),
        published_total_params=c.optional("_total_params_published"),
        published_active_params=c.optional("_active_params_published"),
        notes=((notes,) if notes else ()) + spec.notes,
    )

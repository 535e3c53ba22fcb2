"""Typed reads of a config.json and the parameter counts of the layers every family shares.

Kept apart from the family counters so that each of those reads as a list of its own shapes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

from silica.errors import DataFileError

__all__ = ["ConfigReader", "Geometry", "attention", "gated_mlp", "geometry", "linear", "mlp"]

_MISSING = object()


class ConfigReader:
    """Typed reads from one config; a bad value fails naming the model, the key and the fix."""

    def __init__(self, raw: Mapping[str, Any], model_id: str, prefix: str = "") -> None:
        self.raw, self.model_id, self.prefix = raw, model_id, prefix

    def fail(self, key: str, want: str) -> DataFileError:
        value = self.raw.get(key, _MISSING)
        name = f'"{self.prefix}{key}"'
        if value is _MISSING or value is None:
            kind = self.raw.get("model_type")
            needs = f", which a {kind} config needs" if isinstance(kind, str) and key != "model_type" else ""
            return DataFileError(
                f"Model config {self.model_id!r} has no {name}{needs}.",
                f"add {name}: <{want}> to the config.json (copy it from the model's Hugging Face config).",
            )
        shown = repr(value) if len(repr(value)) <= 40 else repr(value)[:37] + "..."
        return DataFileError(
            f"Model config {self.model_id!r} has {name} = {shown} ({type(value).__name__}).",
            f"write {name} as {want} in the config.json.",
        )

    def _first(self, keys: tuple[str, ...]) -> tuple[str, Any]:
        for key in keys:  # aliases: GPT-2 style names (n_embd) next to Llama style (hidden_size)
            if self.raw.get(key) is not None:
                return key, self.raw[key]
        return keys[0], None

    def integer(self, *keys: str, default: int | None = None, minimum: int = 0) -> int:
        key, value = self._first(keys)
        if value is None and default is not None:
            return default
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise self.fail(key, f"an integer >= {minimum}")
        return value

    def optional(self, key: str) -> int | None:
        return None if self.raw.get(key) is None else self.integer(key)

    def flag(self, key: str, default: bool) -> bool:
        value = self.raw.get(key, default)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise self.fail(key, "true or false")
        return value

    def text(self, key: str, default: str | None = None) -> str:
        value = self.raw.get(key, default)
        if not isinstance(value, str):
            raise self.fail(key, "a string")
        return value

    def section(self, key: str) -> ConfigReader:
        value = self.raw.get(key)
        if not isinstance(value, Mapping):
            raise self.fail(key, "an object")
        return ConfigReader(value, self.model_id, f"{self.prefix}{key}.")

    def items(self, key: str, kind: type[int] | type[str]) -> list[Any] | None:
        value = self.raw.get(key)
        if value is None:
            return None
        if not isinstance(value, list) or not all(isinstance(v, kind) for v in value):
            raise self.fail(key, f"a list of {kind.__name__}")
        return value


# Shape helpers shared by every family.


def linear(n_in: int, n_out: int, bias: bool = False) -> int:
    return n_in * n_out + (n_out if bias else 0)


def attention(d: int, heads: int, kv_heads: int, head_dim: int, qkv_bias: bool, o_bias: bool) -> int:
    """q, k, v and output projections; GQA/MQA shrink k and v to `kv_heads`."""
    q = linear(d, heads * head_dim, qkv_bias)
    kv = 2 * linear(d, kv_heads * head_dim, qkv_bias)
    return q + kv + linear(heads * head_dim, d, o_bias)


def mlp(d: int, d_ff: int, bias: bool = False) -> int:
    """Two-matrix MLP (GELU, ReLU, squared ReLU): up and down."""
    return linear(d, d_ff, bias) + linear(d_ff, d, bias)


def gated_mlp(d: int, d_ff: int, bias: bool = False) -> int:
    """Gated MLP (SwiGLU, GeGLU): gate, up and down projections (Shazeer 2020, eq. 6)."""
    return 2 * linear(d, d_ff, bias) + linear(d_ff, d, bias)


class Geometry(NamedTuple):
    """What most counts and every ModelSpec need, read once per config."""

    d: int
    n_layers: int
    n_heads: int
    n_kv_heads: int
    head_dim: int
    vocab: int
    max_positions: int


def geometry(c: ConfigReader) -> Geometry:
    """The keys nearly every decoder has, under Llama names or their GPT-2 aliases."""
    d = c.integer("hidden_size", "n_embd", minimum=1)
    heads = c.integer("num_attention_heads", "n_head", minimum=1)
    given_head_dim = c.optional("head_dim")
    g = Geometry(
        d=d,
        n_layers=c.integer("num_hidden_layers", "n_layer", minimum=1),
        n_heads=heads,
        n_kv_heads=c.integer("num_key_value_heads", default=heads, minimum=1),  # HF: None means MHA
        head_dim=c.integer("head_dim", default=d // heads, minimum=1),  # HF: absent means d / heads
        vocab=c.integer("vocab_size", minimum=1),
        max_positions=c.integer("max_position_embeddings", "n_positions", minimum=1),
    )
    _check_shape(c, g, head_dim_given=given_head_dim is not None)
    return g


# Far above any published model (the largest have ~200 layers, d 25,600, 256 heads, 256k vocab, 10M
# context), low enough that a typo (1e12 layers) is caught before it becomes a trillion-layer estimate.
MAX_SHAPE = {
    "n_layers": 10_000,
    "d": 1_000_000,
    "n_heads": 65_536,
    "vocab": 100_000_000,
    "max_positions": 10**9,
}


def _check_shape(c: ConfigReader, g: Geometry, head_dim_given: bool) -> None:
    """A config whose shapes contradict each other describes no model; say which, before counting."""
    for name, limit in MAX_SHAPE.items():
        if getattr(g, name) > limit:
            raise DataFileError(
                f"{c.model_id}: {name} = {getattr(g, name):,} is beyond any real model (limit {limit:,}).",
                "check the config.json; a value this large is a typo.",
            )
    if not head_dim_given and g.d % g.n_heads:
        raise DataFileError(
            f"{c.model_id}: hidden size {g.d} does not split into {g.n_heads} attention heads.",
            "fix hidden_size or num_attention_heads, or give head_dim explicitly.",
        )
    if g.n_kv_heads > g.n_heads or g.n_heads % g.n_kv_heads:
        raise DataFileError(
            f"{c.model_id}: {g.n_kv_heads} key/value heads cannot serve {g.n_heads} query heads "
            "(grouped-query attention needs the query heads to be a whole multiple of the KV heads).",
            "fix num_key_value_heads.",
        )

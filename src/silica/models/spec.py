"""The shape of a model, reduced to what time, memory and cost depend on.

A `ModelSpec` is parsed once from a Hugging Face `config.json` (see `silica.models.parse`). Every
count here is for the whole model, unsharded; the performance layer divides by the parallelism.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

__all__ = ["ModelKind", "ModelSpec"]

ModelKind = Literal["decoder", "encoder", "encoder-decoder"]


@dataclass(frozen=True, slots=True)
class ModelSpec:
    """Architecture facts of one model.

    Counts are parameters (not bytes); the dtype is chosen by the deployment.
    For encoder-decoders, `n_layers` counts encoder plus decoder layers and the attention fields
    describe the decoder (the part that is autoregressive and holds a KV cache).
    """

    id: str
    model_type: str  # the config's `model_type`, e.g. "llama", "mixtral", "deepseek_v3"
    kind: ModelKind
    n_layers: int  # transformer blocks that run per token (encoder + decoder for enc-dec)
    d_model: int
    n_heads: int  # query heads
    n_kv_heads: int  # key/value heads (== n_heads for MHA, 1 for MQA); for MLA: n_heads
    head_dim: int  # query/key head width used for attention FLOPs (MLA: nope + rope dims)
    v_head_dim: int  # value head width (== head_dim except MLA)
    d_ff: int  # dense MLP width (0 if every layer is MoE)
    vocab_size: int
    max_positions: int
    total_params: int  # everything in the checkpoint of this architecture
    active_params: int  # parameters touched per token (MoE: top_k routed + shared experts)
    embedding_params: int  # input token (+ position) embeddings: read by lookup, not by matmul
    # Mixture of experts (all zero for dense models).
    n_experts: int = 0
    experts_per_token: int = 0
    n_shared_experts: int = 0
    n_moe_layers: int = 0
    expert_params: int = 0  # parameters of one routed expert (one layer)
    # Attention variants.
    kv_lora_rank: int = 0  # MLA latent width (0 if not MLA)
    qk_rope_head_dim: int = 0  # MLA decoupled rope key width
    sliding_window: int = 0  # tokens a sliding-window layer attends to (0: none)
    n_sliding_layers: int = 0  # how many of n_layers use the window
    # Provenance.
    source: str = ""
    as_of: str = ""
    published_total_params: int | None = None
    published_active_params: int | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def is_moe(self) -> bool:
        return self.n_experts > 0

    @property
    def is_mla(self) -> bool:
        return self.kv_lora_rank > 0

    @property
    def n_full_attention_layers(self) -> int:
        return self.n_layers - self.n_sliding_layers

    @property
    def kv_values_per_token_per_layer(self) -> int:
        """Cached values per token per layer: K and V per KV head, or MLA's latent plus rope key."""
        if self.is_mla:
            return self.kv_lora_rank + self.qk_rope_head_dim
        return self.n_kv_heads * (self.head_dim + self.v_head_dim)

    @property
    def matmul_params_per_token(self) -> int:
        """Active parameters that take part in a matmul per token (the input embedding is a lookup)."""
        return self.active_params - self.embedding_params

"""Parameter counts of decoder-only families; `parse.py` states the conventions they follow."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from silica.models._counting import ConfigReader, Geometry, attention, gated_mlp, geometry, linear, mlp
from silica.models.spec import ModelSpec

__all__ = ["DECODERS"]


@dataclass(frozen=True, slots=True)
class _Moe:
    """The MoE blocks of a model; all of them have the same shape."""

    n_layers: int
    n_experts: int
    top_k: int
    expert: int  # one routed expert
    router: int
    shared: int = 0  # all shared (always-on) experts of one block
    n_shared: int = 0


@dataclass(frozen=True, slots=True)
class _Decoder:
    """A decoder-only LM as per-block counts, summed the same way for every family."""

    model_type: str
    geo: Geometry
    block: int  # attention + norms, in every block
    dense_mlp: int  # MLP of one block that is not MoE
    d_ff: int
    tied: bool
    final_norm: int
    v_head_dim: int = 0  # 0: same as head_dim
    positions: int = 0  # learned absolute position embeddings
    head_bias: int = 0
    moe: _Moe | None = None
    window: tuple[int, int] = (0, 0)  # (tokens, layers that use it)
    mla: tuple[int, int] = (0, 0)  # (kv_lora_rank, qk_rope_head_dim)
    off_path: int = 0  # in the checkpoint but not run per text token (vision tower)
    notes: tuple[str, ...] = ()

    def spec(self, c: ConfigReader) -> ModelSpec:
        g, moe = self.geo, self.moe or _Moe(0, 0, 0, 0, 0)
        if moe.top_k > moe.n_experts:
            raise c.fail("num_experts_per_tok", f"an integer no larger than the {moe.n_experts} experts")
        embed = g.vocab * g.d
        total = (
            embed
            + self.positions
            + (0 if self.tied else embed)
            + self.head_bias
            + g.n_layers * self.block
            + (g.n_layers - moe.n_layers) * self.dense_mlp
            + moe.n_layers * (moe.n_experts * moe.expert + moe.router + moe.shared)
            + self.final_norm
            + self.off_path
        )
        idle = moe.n_layers * (moe.n_experts - moe.top_k) * moe.expert
        return ModelSpec(
            id=c.model_id,
            model_type=self.model_type,
            kind="decoder",
            n_layers=g.n_layers,
            d_model=g.d,
            n_heads=g.n_heads,
            n_kv_heads=g.n_kv_heads,
            head_dim=g.head_dim,
            v_head_dim=self.v_head_dim or g.head_dim,
            d_ff=self.d_ff if moe.n_layers < g.n_layers else 0,
            vocab_size=g.vocab,
            max_positions=g.max_positions,
            total_params=total,
            active_params=total - idle - self.off_path,
            embedding_params=self.positions + (0 if self.tied else embed),
            n_experts=moe.n_experts,
            experts_per_token=moe.top_k,
            n_shared_experts=moe.n_shared,
            n_moe_layers=moe.n_layers,
            expert_params=moe.expert,
            kv_lora_rank=self.mla[0],
            qk_rope_head_dim=self.mla[1],
            sliding_window=self.window[0],
            n_sliding_layers=self.window[1],
            notes=self.notes,
        )


def _window(c: ConfigReader, n_layers: int, rule_layers: int) -> tuple[int, int]:
    """`layer_types` when the config lists them (newer HF configs), else the family's rule."""
    window = c.optional("sliding_window") or 0
    types = c.items("layer_types", str)
    if types is not None and len(types) != n_layers:
        raise c.fail("layer_types", f"a list of {n_layers} strings, one per layer")
    if types is None:
        return (window, rule_layers) if window and rule_layers else (0, 0)
    n = sum(t == "sliding_attention" for t in types)
    if n and not window:
        raise c.fail("sliding_window", "the window in tokens (layer_types lists sliding layers)")
    return (window, n) if n else (0, 0)


# Decoder families.


def _llama_like(
    c: ConfigReader,
    *,
    qkv_bias: bool = False,
    o_bias: bool = False,
    extra_block: int = 0,
    window_layers: int | None = None,
    tied: bool = False,
    moe: _Moe | None = None,
) -> ModelSpec:
    """Pre-norm RMSNorm blocks with a gated MLP: Llama, Mistral, Mixtral, Phi-3, Qwen2/3, Gemma 2."""
    g = geometry(c)
    d_ff = c.integer("intermediate_size", minimum=1)
    return _Decoder(
        model_type=c.text("model_type"),
        geo=g,
        block=attention(g.d, g.n_heads, g.n_kv_heads, g.head_dim, qkv_bias, o_bias) + 2 * g.d + extra_block,
        dense_mlp=gated_mlp(g.d, d_ff, c.flag("mlp_bias", False)),
        d_ff=d_ff,
        tied=c.flag("tie_word_embeddings", tied),
        final_norm=g.d,
        moe=moe,
        # Mistral, Mixtral and Phi-3 apply `sliding_window` to every layer when it is set.
        window=_window(c, g.n_layers, g.n_layers if window_layers is None else window_layers),
    ).spec(c)


def _llama(c: ConfigReader) -> ModelSpec:
    bias = c.flag("attention_bias", False)  # Llama: one flag for q, k, v and o
    return _llama_like(c, qkv_bias=bias, o_bias=bias)


def _qwen_window(c: ConfigReader) -> int:
    """Qwen2/3 slide only if `use_sliding_window`, and then only layers >= `max_window_layers` (HF)."""
    n = c.integer("num_hidden_layers", minimum=1)
    return max(0, n - c.integer("max_window_layers", default=n)) if c.flag("use_sliding_window", False) else 0


def _qwen2(c: ConfigReader) -> ModelSpec:
    return _llama_like(c, qkv_bias=True, window_layers=_qwen_window(c))  # Qwen2: q/k/v bias, o without


def _qwen3(c: ConfigReader) -> ModelSpec:
    g = geometry(c)
    bias = c.flag("attention_bias", False)
    qk_norm = 2 * g.head_dim  # Qwen3: RMSNorm over each head's q and k
    moe = None
    if c.text("model_type") == "qwen3_moe":
        experts, step = c.integer("num_experts"), c.integer("decoder_sparse_step", default=1, minimum=1)
        dense_only = set(c.items("mlp_only_layers", int) or [])
        # HF Qwen3-MoE: a layer is sparse unless listed in mlp_only_layers or off the sparse step.
        n_moe = sum(i not in dense_only and (i + 1) % step == 0 for i in range(g.n_layers)) if experts else 0
        moe = _Moe(
            n_layers=n_moe,
            n_experts=experts,
            top_k=c.integer("num_experts_per_tok", minimum=1),
            expert=gated_mlp(g.d, c.integer("moe_intermediate_size", minimum=1)),
            router=g.d * experts,
        )
    return _llama_like(
        c, qkv_bias=bias, o_bias=bias, extra_block=qk_norm, window_layers=_qwen_window(c), moe=moe
    )


def _mixtral(c: ConfigReader) -> ModelSpec:
    g = geometry(c)
    experts = c.integer("num_local_experts", minimum=1)
    moe = _Moe(
        n_layers=g.n_layers,  # Mixtral: every layer is MoE
        n_experts=experts,
        top_k=c.integer("num_experts_per_tok", minimum=1),
        expert=gated_mlp(g.d, c.integer("intermediate_size", minimum=1)),
        router=g.d * experts,
    )
    return _llama_like(c, moe=moe)


def _gemma2(c: ConfigReader) -> ModelSpec:
    g = geometry(c)
    bias = c.flag("attention_bias", False)
    # Gemma 2: pre- and post-norms around attention and MLP (4 RMSNorms); local layers first, alternating.
    return _llama_like(
        c, qkv_bias=bias, o_bias=bias, extra_block=2 * g.d, window_layers=(g.n_layers + 1) // 2, tied=True
    )


def _nemotron(c: ConfigReader) -> ModelSpec:
    g = geometry(c)
    d_ff = c.integer("intermediate_size", minimum=1)
    bias = c.flag("attention_bias", False)
    layer_norm = 2 * g.d  # Nemotron: LayerNorm1P has weight and bias
    return _Decoder(
        model_type="nemotron",
        geo=g,
        block=attention(g.d, g.n_heads, g.n_kv_heads, g.head_dim, bias, bias) + 2 * layer_norm,
        dense_mlp=mlp(g.d, d_ff, c.flag("mlp_bias", False)),  # squared-ReLU MLP: up and down only
        d_ff=d_ff,
        tied=c.flag("tie_word_embeddings", False),
        final_norm=layer_norm,
    ).spec(c)


def _gpt_oss(c: ConfigReader) -> ModelSpec:
    g = geometry(c)
    experts = c.integer("num_local_experts", minimum=1)
    d_ff = c.integer("intermediate_size", minimum=1)
    sinks = g.n_heads  # gpt-oss: one learned attention-sink logit per head
    return _Decoder(
        model_type="gpt_oss",
        geo=g,
        block=attention(g.d, g.n_heads, g.n_kv_heads, g.head_dim, True, True) + sinks + 2 * g.d,
        dense_mlp=0,
        d_ff=0,
        tied=c.flag("tie_word_embeddings", False),
        final_norm=g.d,
        moe=_Moe(
            n_layers=g.n_layers,
            n_experts=experts,
            top_k=c.integer("num_experts_per_tok", "experts_per_token", minimum=1),
            expert=gated_mlp(g.d, d_ff, bias=True),  # gpt-oss experts and router carry biases
            router=linear(g.d, experts, bias=True),
        ),
        # openai/gpt-oss model.py: the window applies to even layers when layer_types is absent.
        window=_window(c, g.n_layers, (g.n_layers + 1) // 2),
    ).spec(c)


def _deepseek_v3(c: ConfigReader) -> ModelSpec:
    g = geometry(c)
    nope, rope = c.integer("qk_nope_head_dim", minimum=1), c.integer("qk_rope_head_dim", minimum=1)
    v_dim, kv_rank = c.integer("v_head_dim", minimum=1), c.integer("kv_lora_rank", minimum=1)
    q_rank = c.optional("q_lora_rank") or 0
    bias = c.flag("attention_bias", False)  # on q_a, kv_a and o projections only (HF DeepseekV3)
    h = g.n_heads
    # MLA (DeepSeek-V2 paper, eqs. 9-10, 12-14): low-rank q and kv, each with an RMSNorm on the latent.
    q_width = h * (nope + rope)
    # q_a_proj, q_a_layernorm, q_b_proj; without q_lora_rank (DeepSeek-V2-Lite) a single q_proj.
    q = linear(g.d, q_rank, bias) + q_rank + q_rank * q_width if q_rank else g.d * q_width
    kv = linear(g.d, kv_rank + rope, bias) + kv_rank + kv_rank * h * (nope + v_dim)  # kv_a (+rope k), kv_b
    attn = q + kv + linear(h * v_dim, g.d, bias)
    first_dense, freq = c.integer("first_k_dense_replace", default=0), c.integer("moe_layer_freq", default=1)
    experts, moe_ff = c.integer("n_routed_experts", minimum=1), c.integer("moe_intermediate_size", minimum=1)
    n_shared = c.integer("n_shared_experts", default=0)
    d_ff = c.integer("intermediate_size", minimum=1)
    # DeepSeek-V3 noaux_tc routing keeps a per-expert score-correction bias in the checkpoint.
    router = g.d * experts + (experts if c.text("topk_method", "") == "noaux_tc" else 0)
    return _Decoder(
        model_type="deepseek_v3",
        geo=g._replace(n_kv_heads=h, head_dim=nope + rope),  # ModelSpec: MLA counts n_heads as kv heads
        block=attn + 2 * g.d,
        dense_mlp=gated_mlp(g.d, d_ff),
        d_ff=d_ff,
        tied=c.flag("tie_word_embeddings", False),
        final_norm=g.d,
        v_head_dim=v_dim,
        moe=_Moe(
            n_layers=sum(i >= first_dense and i % freq == 0 for i in range(g.n_layers)),
            n_experts=experts,
            top_k=c.integer("num_experts_per_tok", minimum=1),
            expert=gated_mlp(g.d, moe_ff),
            router=router,
            shared=gated_mlp(g.d, moe_ff * n_shared),
            n_shared=n_shared,
        ),
        mla=(kv_rank, rope),
        notes=("The multi-token-prediction module (num_nextn_predict_layers) is not counted.",),
    ).spec(c)


def _llama4_vision(v: ConfigReader, text_d: int) -> int:
    """Llama 4 vision encoder, pixel-shuffle adapter and projector (HF Llama4VisionModel layout)."""
    d, d_ff = v.integer("hidden_size", minimum=1), v.integer("intermediate_size", minimum=1)
    n = v.integer("num_hidden_layers", minimum=1)
    patch, image = v.integer("patch_size", minimum=1), v.integer("image_size", minimum=1)
    layer = 4 * linear(d, d, bias=True) + mlp(d, d_ff, bias=True) + 2 * 2 * d  # biased MHA, 2 LayerNorms
    stem = v.integer("num_channels", default=3) * patch * patch * d  # unfold + linear patch embedding
    tokens = (image // patch) ** 2 + 1  # patches plus the class token
    tower = stem + d + tokens * d + 2 * 2 * d + n * layer  # + class embedding, positions, pre/post norms
    # Adapter MLP: fc1 takes the pixel-shuffled width, which HF sizes as intermediate_size.
    adapter = d_ff * v.integer("projector_input_dim") + v.integer("projector_output_dim") ** 2
    projector = linear(v.integer("vision_output_dim"), text_d, v.flag("multi_modal_projector_bias", False))
    return tower + adapter + projector


def _llama4(c: ConfigReader) -> ModelSpec:
    t = c.section("text_config")
    g = geometry(t)
    experts, d_ff = t.integer("num_local_experts", minimum=1), t.integer("intermediate_size", minimum=1)
    step = t.integer("interleave_moe_layer_step", default=1, minimum=1)
    moe_layers = t.items("moe_layers", int)
    if moe_layers is None:  # HF Llama4TextConfig default: every `step`-th layer, ending on the last
        moe_layers = list(range(step - 1, g.n_layers, step))
    uses_rope = t.items("no_rope_layers", int)  # 1 = RoPE (chunked) layer, 0 = global NoPE layer
    if uses_rope is None:
        interval = t.integer("no_rope_layer_interval", default=4, minimum=1)
        uses_rope = [int((i + 1) % interval != 0) for i in range(g.n_layers)]
    chunk = t.optional("attention_chunk_size") or 0
    dense_ff = t.integer("intermediate_size_mlp", default=d_ff)  # only the non-MoE layers use it
    vision = _llama4_vision(c.section("vision_config"), g.d)
    bias = t.flag("attention_bias", False)
    attn = attention(g.d, g.n_heads, g.n_kv_heads, g.head_dim, bias, bias)  # its L2 qk-norm has no weights
    return _Decoder(
        model_type="llama4",
        geo=g,
        block=attn + 2 * g.d,
        dense_mlp=gated_mlp(g.d, dense_ff),
        d_ff=dense_ff,
        tied=t.flag("tie_word_embeddings", False),
        final_norm=g.d,
        moe=_Moe(
            n_layers=len(moe_layers),
            n_experts=experts,
            top_k=t.integer("num_experts_per_tok", minimum=1),
            expert=gated_mlp(g.d, d_ff),
            router=g.d * experts,
            shared=gated_mlp(g.d, d_ff),  # Llama 4: one always-on shared expert of the expert width
            n_shared=1,
        ),
        # Chunked attention on RoPE layers holds at most one chunk of KV: a window of chunk tokens.
        window=(chunk, sum(uses_rope)) if chunk else (0, 0),
        off_path=vision,
        notes=(
            f"total_params includes the vision tower and projector ({vision:,}); active_params does not.",
            "Chunked local attention (RoPE layers) is reported as a sliding window of attention_chunk_size.",
        ),
    ).spec(t)


def _gpt2(c: ConfigReader) -> ModelSpec:
    g = geometry(c)
    d_ff = c.integer("n_inner", default=4 * g.d)  # HF GPT-2: n_inner null means 4 * n_embd
    return _Decoder(
        model_type="gpt2",
        geo=g,
        block=attention(g.d, g.n_heads, g.n_heads, g.head_dim, True, True) + 2 * 2 * g.d,  # 2 LayerNorms
        dense_mlp=mlp(g.d, d_ff, bias=True),
        d_ff=d_ff,
        tied=c.flag("tie_word_embeddings", True),
        final_norm=2 * g.d,
        positions=g.max_positions * g.d,  # learned absolute positions (wpe)
    ).spec(c)


def _gptj(c: ConfigReader) -> ModelSpec:
    g = geometry(c)
    d_ff = c.integer("n_inner", default=4 * g.d)
    tied = c.flag("tie_word_embeddings", False)
    return _Decoder(
        model_type="gptj",
        geo=g,
        block=attention(g.d, g.n_heads, g.n_heads, g.head_dim, False, False) + 2 * g.d,  # parallel, 1 LN
        dense_mlp=mlp(g.d, d_ff, bias=True),
        d_ff=d_ff,
        tied=tied,
        final_norm=2 * g.d,
        head_bias=0 if tied else g.vocab,  # GPT-J: lm_head has a bias
    ).spec(c)


def _falcon(c: ConfigReader) -> ModelSpec:
    g = geometry(c)
    new_arch = c.flag("new_decoder_architecture", False)
    if new_arch:  # Falcon-40B/180B: grouped KV heads, one LayerNorm each for attention and MLP
        kv = c.integer("num_kv_heads", default=g.n_heads, minimum=1)
        norms = c.integer("num_ln_in_parallel_attn", default=2)
    else:  # HF FalconConfig: multi_query (default true) means one KV head; serial blocks have 2 norms
        kv = 1 if c.flag("multi_query", True) else g.n_heads
        norms = 1 if c.flag("parallel_attn", True) else 2
    bias, d_ff = c.flag("bias", False), c.integer("ffn_hidden_size", default=4 * g.d)
    return _Decoder(
        model_type="falcon",
        geo=g._replace(n_kv_heads=kv),
        block=attention(g.d, g.n_heads, kv, g.head_dim, bias, bias) + norms * 2 * g.d,
        dense_mlp=mlp(g.d, d_ff, bias),
        d_ff=d_ff,
        tied=c.flag("tie_word_embeddings", True),
        final_norm=2 * g.d,
    ).spec(c)


DECODERS: dict[str, Callable[[ConfigReader], ModelSpec]] = {
    "llama": _llama,
    "mistral": _llama,
    "phi3": _llama,
    "mixtral": _mixtral,
    "qwen2": _qwen2,
    "qwen3": _qwen3,
    "qwen3_moe": _qwen3,
    "gemma2": _gemma2,
    "nemotron": _nemotron,
    "gpt_oss": _gpt_oss,
    "deepseek_v3": _deepseek_v3,
    "llama4": _llama4,
    "gpt2": _gpt2,
    "gptj": _gptj,
    "falcon": _falcon,
}

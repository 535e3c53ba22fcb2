"""The performance model's formulas, over arrays of configurations.

Roofline per phase (DESIGN.md): time = max(FLOPs / (peak x compute efficiency),
bytes / (bandwidth x memory efficiency)) + non-matmul traffic + per-layer overhead + communication.
Model facts are scalars (`ModelCosts`); everything else is a typed group of arrays with one entry per
configuration (`perf.inputs`, `perf.machine`). Every phase returns its time split (`TimeSplit`)
along with its total, so an estimate can say why it is as fast as it is. Units: seconds, bytes, FLOPs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from silica.models.spec import ModelSpec
from silica.perf import moe
from silica.perf.inputs import Layout, TimeSplit, TrainingRun, Widths
from silica.perf.machine import Machine

__all__ = [
    "ModelCosts",
    "PhaseSeconds",
    "TrainStep",
    "decode_seconds",
    "inference_memory",
    "mean_decode_seconds",
    "prefill_seconds",
    "train_step",
]

Array = NDArray[np.float64]
BoolArray = NDArray[np.bool_]


@dataclass(frozen=True, slots=True)
class ModelCosts:
    """Per-model constants the formulas need, derived once from a `ModelSpec`."""

    matmul_params: float  # active parameters that take part in a matmul per token
    total_params: float
    static_params: float  # parameters read every step regardless of routing (all but routed experts)
    expert_params: float  # one routed expert, one layer
    n_experts: float
    top_k: float
    n_moe_layers: float
    n_layers: float
    n_full_layers: float
    n_sliding_layers: float
    window: float
    d_model: float
    n_heads: float
    n_kv_heads: float
    qk_v_dims: float  # head_dim + v_head_dim: attention FLOPs per head per (query, key) pair / 2
    kv_values_per_layer: float  # cached values per token per layer
    mla: bool
    causal: bool

    @classmethod
    def of(cls, m: ModelSpec) -> ModelCosts:
        routed = float(m.n_moe_layers * m.n_experts * m.expert_params)
        return cls(
            matmul_params=float(m.matmul_params_per_token),
            total_params=float(m.total_params),
            static_params=float(m.total_params - m.embedding_params) - routed,
            expert_params=float(m.expert_params),
            n_experts=float(m.n_experts),
            top_k=float(m.experts_per_token),
            n_moe_layers=float(m.n_moe_layers),
            n_layers=float(m.n_layers),
            n_full_layers=float(m.n_full_attention_layers),
            n_sliding_layers=float(m.n_sliding_layers),
            window=float(m.sliding_window or 0),
            d_model=float(m.d_model),
            n_heads=float(m.n_heads),
            n_kv_heads=float(m.n_kv_heads),
            qk_v_dims=float(m.head_dim + m.v_head_dim),
            kv_values_per_layer=float(m.kv_values_per_token_per_layer),
            mla=m.is_mla,
            causal=m.kind != "encoder",
        )

    def weights_read(self, tokens: Array) -> Array:
        """Parameters streamed from HBM for one step over `tokens` tokens.

        Routed experts are read only if some token picks them: with uniform routing, a layer with E
        experts and top-k touches E * (1 - (1 - k/E)^tokens) distinct experts in expectation.
        """
        if self.n_experts == 0:
            return np.broadcast_to(self.static_params, np.shape(tokens)).astype(np.float64)
        return self.static_params + self.n_moe_layers * moe.experts_touched(self, tokens) * self.expert_params

    def attention_flops(self, queries: Array, context: Array, heads: Array) -> Array:
        """QK^T and AV FLOPs per query token attending to `context` keys, summed over layers."""
        sliding = np.minimum(context, self.window) if self.window else context
        per_pair = 2.0 * heads * self.qk_v_dims  # multiply-add over (head_dim + v_head_dim) per head
        return queries * per_pair * (self.n_full_layers * context + self.n_sliding_layers * sliding)

    def kv_bytes_per_token_per_unit(self, tp: Array, kv_bytes: Array) -> Array:
        """KV cache bytes one token adds on one tensor-parallel unit, over all layers.

        KV heads shard over tp; with more units than KV heads each unit keeps one head (replicated).
        MLA's compressed latent is shared by all heads, so every unit holds all of it.
        """
        share = 1.0 if self.mla else np.maximum(self.n_kv_heads / tp, 1.0) / self.n_kv_heads
        return self.n_layers * self.kv_values_per_layer * kv_bytes * share


def _padded_heads(c: ModelCosts, lay: Layout) -> Array:
    """Neuron pads attention heads up to a multiple of tp; GPUs require divisibility instead."""
    padded = np.ceil(c.n_heads / lay.tp) * lay.tp
    return np.where(lay.static_shapes, padded, c.n_heads)


def _dense_ranks(lay: Layout) -> Array:
    """Serving: the ranks one dense weight (attention, dense and shared MLPs) is split over.

    A serving layout with ep > 1 runs attention data-parallel over its ep = tp ranks (TensorRT-LLM
    `enable_attention_dp` with `--ep n --tp n`, SGLang `--enable-dp-attention`, vLLM
    `--data-parallel-size n --enable-expert-parallel`): each rank holds every dense weight and the
    KV cache of its own 1/tp of the sequences, and only the routed experts are split. Without it
    (ep = 1) every weight is split tp ways. Training reads `ep` differently (`perf.moe`).
    """
    return np.where(moe.ep_of(lay) > 1, 1.0, lay.tp)


def _kv_per_token_unit(c: ModelCosts, lay: Layout, kv_bytes: Array) -> Array:
    """Serving: KV bytes one sequence's token adds on a rank, averaged over the replica's ranks.

    Attention split by tp shards KV heads (an MLA latent is replicated on every rank); attention
    data-parallel keeps each sequence whole on one rank, so a rank holds 1/tp of the sequences.
    """
    by_sequence = c.kv_bytes_per_token_per_unit(np.ones_like(lay.tp), kv_bytes) / lay.tp
    return np.where(moe.ep_of(lay) > 1, by_sequence, c.kv_bytes_per_token_per_unit(lay.tp, kv_bytes))


def _weights_per_unit(c: ModelCosts, lay: Layout, read: Array, weight_bytes: Array) -> Array:
    """Serving: weight bytes a rank streams in one step that reads `read` parameters (dense ones
    split `_dense_ranks` ways, routed experts over all tp ranks)."""
    static = np.minimum(read, c.static_params)
    return (static / _dense_ranks(lay) + (read - static) / lay.tp) * weight_bytes


def _matmul_eff(m: Machine, tokens: Array) -> Array:
    """Small matmuls cannot fill the tensor engine: efficiency rises with the tokens per matmul.

    A matmul over M tokens fills M rows of the systolic array or tensor-core tile; below a tile's
    height the rest idles, so the time of a few-token matmul no longer shrinks with M.
    """
    return m.cal.eff_max * tokens / (tokens + m.cal.half_tokens)


def _matmul_seconds(
    c: ModelCosts,
    m: Machine,
    lay: Layout,
    tokens: Array,
    other_flops: Array,
    capacity: float,
    dense_share: Array | float = 1.0,
) -> Array:
    """Seconds per unit of one forward pass's matmuls over `tokens` tokens (all layers).

    Dense weights (attention, dense and shared MLPs, the routers) and `other_flops` (attention
    math) run at the efficiency of the rows one rank multiplies: `dense_share` of the tokens (1, or
    1/tp where serving runs attention data-parallel); routed experts run as a grouped GEMM whose matmuls
    see only the tokens routed to one expert, on the busiest expert rank (`perf.moe`).
    """
    routed = moe.routed_active_params(c)
    dense = 2.0 * tokens * (c.matmul_params - routed) + moe.router_flops(c, tokens) + other_flops
    seconds = dense / _matmul_eff(m, tokens * dense_share)
    if routed:
        expert = 2.0 * tokens * routed * moe.imbalance(lay, capacity)
        seconds = seconds + expert / _matmul_eff(m, moe.tokens_per_expert(c, tokens, lay))
    return seconds / (lay.tp * m.unit_flops)


def _tp_allreduce(m: Machine, tp: Array, n_collectives: Array | float, msg_bytes: Array) -> Array:
    """Ring all-reduce: latency + 2 (n-1)/n x bytes / achieved link bandwidth (Patarasuk & Yuan 2009).

    The ring runs over the tp ranks. NeuronCores of one chip are separate ranks too: their
    collectives go through the same collective engine and DMA rings as those between chips.
    """
    wire = 2.0 * (tp - 1.0) / tp * msg_bytes / (m.link_bw * m.cal.coll_bw_eff)
    return np.where(tp > 1, n_collectives * (m.cal.coll_s + wire), 0.0)


def _forward_overheads(
    c: ModelCosts, m: Machine, lay: Layout, tokens: Array, act_bytes: Array
) -> tuple[Array, Array, Array, Array]:
    """What a forward pass adds to its roofline: per-layer overhead, per-sequence host work, two
    tensor-parallel all-reduces per layer (after attention and after the MLP, Shoeybi et al. 2019)
    or, with attention data-parallel, a dispatch and a combine per MoE layer, and pipeline hand-offs.

    The per-sequence term is the serving engine's work for each sequence in the step (scheduling,
    sampling, KV block bookkeeping, streaming the token out): it grows with the batch, where the
    per-layer launch and synchronisation cost does not. Without it, large-batch throughput rows
    pull the per-layer constants up and make batch-1 decode too slow.
    """
    tp, pp = lay.tp, lay.pp
    hidden_bytes = tokens * c.d_model * act_bytes
    # Attention data-parallel: no tp all-reduce; each MoE layer dispatches tokens to their experts'
    # ranks and combines them back (two all-to-alls), each rank sending its 1/tp of the tokens.
    dp_attention = moe.ep_of(lay) > 1
    dispatch = np.where(dp_attention, moe.all_to_all_seconds(c, m, lay, tokens / tp, act_bytes, 2.0), 0.0)
    comm = np.where(dp_attention, 0.0, _tp_allreduce(m, tp, 2.0 * c.n_layers, hidden_bytes))
    stage_bw = np.where(tp * pp > m.units_per_instance, m.net_bw, m.link_bw)  # EFA once stages span instances
    stages = np.where(pp > 1, (pp - 1.0) * (m.cal.coll_s + hidden_bytes / stage_bw), 0.0)
    # Attention data-parallel ranks each schedule their own 1/tp of the sequences.
    sequences = lay.batch * _dense_ranks(lay) / tp
    layers = c.n_layers * m.cal.layer_s + c.n_moe_layers * m.cal.moe_layer_s
    return layers + sequences * m.cal.seq_s, comm, dispatch, stages


def _grad_allreduce(m: Machine, ranks: Array, stride: Array, grad_bytes: Array) -> Array:
    """Data-parallel gradient all-reduce over `ranks` ranks spaced `stride` units apart: hierarchical.

    NCCL reduces inside each scale-up domain first (NVLink, NeuronLink), then across domains on the
    1/g share each rank holds, then gathers inside the domain again (hierarchical all-reduce, Jia et
    al. 2018, "Highly Scalable Deep Learning Training System with Mixed-Precision", §4.2; NCCL's
    rings and trees cross nodes once per rail). Every rank drives its own NIC, so the traffic
    between domains sees all of a domain's network bandwidth, not one GPU's share of it. `g`, the
    group's ranks inside one domain, is the domain's units over the stride (Megatron orders tp
    innermost, so data-parallel peers sit `tp` units apart), at least 1 and at most `ranks`.
    """
    per_domain = np.clip(m.units_per_instance / stride, 1.0, np.maximum(ranks, 1.0))
    domains = np.maximum(ranks / per_domain, 1.0)
    intra = 2.0 * (per_domain - 1.0) / per_domain * grad_bytes / (m.link_bw * m.cal.coll_bw_eff)
    nic = m.net_bw / m.units_per_instance * m.cal.coll_bw_eff
    inter = np.where(domains > 1.0, 2.0 * (domains - 1.0) / domains * grad_bytes / per_domain / nic, 0.0)
    return np.where(ranks > 1, intra + inter + m.cal.coll_s * np.log2(np.maximum(ranks, 2.0)), 0.0)


@dataclass(frozen=True, slots=True)
class PhaseSeconds:
    """A phase's time for every configuration, what it is spent on, and its physical floor.

    `floor` is the time no implementation can beat: the phase's FLOPs at the chip's peak or its
    bytes at peak HBM bandwidth, whichever is longer (no efficiency below 1, no overhead). A band
    around `seconds` never reaches below it (`perf.calibration.clip_band`).
    """

    seconds: Array
    split: TimeSplit
    floor: Array


def _cp_of(lay: Layout) -> Array:
    """The context-parallel degree of a layout (1 where unset)."""
    return np.ones_like(lay.tp) if lay.cp is None else lay.cp


def prefill_seconds(c: ModelCosts, m: Machine, lay: Layout, length: Array, w: Widths) -> PhaseSeconds:
    """Time to process `lay.batch` prompts of `length` tokens (time to first token, unloaded).

    Serving context parallelism (`lay.cp` > 1; vLLM prefill context parallel, SGLang prefill CP,
    vLLM Neuron DCP prefill: `data/stacks.yaml` `context_parallel`): each of cp ranks, a full
    tp group each, takes 1/cp of every prompt's tokens in every layer. The engines split the prompt
    zigzag (each rank a chunk from the front and its mirror from the back), so every rank does 1/cp
    of the causal attention; its matmuls run at the efficiency of its 1/cp of the tokens, and it
    still reads all of its tp share of the weights. Keys and values go round the ring of cp ranks
    (`_context_ring`, once per layer: no backward pass), hidden behind the attention of the chunk
    already held where it fits.
    """
    tp = lay.tp
    cp = _cp_of(lay)
    tokens = lay.batch * length
    rank_tokens = tokens / cp
    heads = _padded_heads(c, lay)
    context = length / 2.0 if c.causal else length  # causal: a query sees half the prompt on average
    attention = c.attention_flops(rank_tokens, context, heads) / m.cal.attn_eff
    t_compute = _matmul_seconds(
        c, m, lay, rank_tokens, attention, moe.CAPACITY_FACTOR, _dense_ranks(lay) / tp
    )
    weights = _weights_per_unit(c, lay, c.weights_read(rank_tokens), w.weight)
    kv = rank_tokens * _kv_per_token_unit(c, lay, w.kv)
    stream_rate = m.unit_bw * m.cal.mem_eff
    t_memory = (weights + kv) / stream_rate
    layer, comm, a2a, stages = _forward_overheads(c, m, lay, rank_tokens, w.act)
    # The exposed ring goes with the stage hand-offs, as in training (`train_step`).
    stages = stages + _context_ring(c, m, lay, cp, rank_tokens, np.ones_like(cp), attention, w)
    split = TimeSplit((t_compute,), weights, (kv,), stream_rate, comm, stages, layer, all_to_all=a2a)
    flops = _forward_flops(c, tokens, context) / cp
    floor = np.maximum(flops / (tp * m.unit_flops), (weights + kv) / m.unit_bw)
    return PhaseSeconds(np.maximum(t_compute, t_memory) + (layer + comm + a2a + stages), split, floor)


def _forward_flops(c: ModelCosts, tokens: Array, context: Array) -> Array:
    """FLOPs one forward pass over `tokens` tokens must do: 2 per active parameter per token, the
    routers, and attention over `context` keys with the model's own heads (no padding)."""
    heads = np.asarray(c.n_heads)
    return (
        2.0 * tokens * c.matmul_params
        + moe.router_flops(c, tokens)
        + c.attention_flops(tokens, context, heads)
    )


def decode_seconds(c: ModelCosts, m: Machine, lay: Layout, context: Array, w: Widths) -> PhaseSeconds:
    """Time for one decode step that extends `lay.batch` sequences whose KV cache holds `context` tokens."""
    return mean_decode_seconds(c, m, lay, [context], w)


def mean_decode_seconds(
    c: ModelCosts, m: Machine, lay: Layout, contexts: Sequence[Array], w: Widths
) -> PhaseSeconds:
    """Mean decode step time over several context lengths; what does not depend on context is
    computed once (this is the planner's innermost loop).

    With serving context parallelism (`lay.cp` > 1) the KV cache is sharded over the cp ranks
    along the sequence (vLLM and SGLang decode context parallel, vLLM Neuron DCP decode:
    `data/stacks.yaml` `context_parallel`): each rank reads and attends over 1/cp of every
    sequence's cache, then the ranks exchange partial outputs and log-sum-exps once per layer
    (`_cp_combine`). Every rank runs the step's matmuls on the whole batch.
    """
    tp, batch = lay.tp, lay.batch
    cp = _cp_of(lay)
    heads = _padded_heads(c, lay)
    compute_rate = tp * cp * m.unit_flops * _matmul_eff(m, batch)
    matmul_s = _matmul_seconds(
        c, m, lay, batch, np.zeros_like(batch), moe.CAPACITY_FACTOR, _dense_ranks(lay) / tp
    )
    weights = _weights_per_unit(c, lay, c.weights_read(batch), w.weight)
    kv_per_token = batch * _kv_per_token_unit(c, lay, w.kv) / cp
    stream_rate = m.unit_bw * m.cal.mem_eff
    total = np.zeros_like(batch)
    floor = np.zeros_like(batch)
    computes, kvs = [], []
    for context in contexts:
        # Decode attention reads the KV cache once per step (counted in the stream below); the
        # materialised-score penalty `attn_eff` belongs to context encoding only.
        t_compute = matmul_s + c.attention_flops(batch, context, heads) / compute_rate
        sliding = np.minimum(context, c.window) if c.window else context
        kv_tokens = (c.n_full_layers * context + c.n_sliding_layers * sliding) / c.n_layers
        kv = kv_per_token * kv_tokens
        total = total + np.maximum(t_compute, (weights + kv) / stream_rate)
        # Each rank does the whole batch's matmuls and its 1/cp of the attention.
        flops = _forward_flops(c, batch, context) - c.attention_flops(
            batch, context, np.asarray(c.n_heads)
        ) * (1.0 - 1.0 / cp)
        floor = floor + np.maximum(flops / (tp * m.unit_flops), (weights + kv) / m.unit_bw)
        computes.append(t_compute)
        kvs.append(kv)
    layer, comm, a2a, stages = _forward_overheads(c, m, lay, batch, w.act)
    comm = comm + _cp_combine(c, m, lay, cp, batch, w.act)
    split = TimeSplit(tuple(computes), weights, tuple(kvs), stream_rate, comm, stages, layer, all_to_all=a2a)
    return PhaseSeconds(total / len(contexts) + (layer + comm + a2a + stages), split, floor / len(contexts))


def _cp_combine(c: ModelCosts, m: Machine, lay: Layout, cp: Array, batch: Array, act_bytes: Array) -> Array:
    """Decode with the KV cache sharded over cp ranks: per layer, one exchange of every rank's partial
    attention output (batch x heads/tp x v_head_dim, about d_model / tp values) and its log-sum-exp
    among the cp ranks, an all-gather (SGLang DCP: one packed all-to-all), so (cp - 1) / cp of it
    crosses the link. Over the scale-up links while tp x cp fits an instance, else at one unit's
    share of the instance's network bandwidth (as `_context_ring`).
    """
    msg = batch * (c.d_model / lay.tp + c.n_heads / lay.tp) * act_bytes
    bw = np.where(lay.tp * cp > m.units_per_instance, m.net_bw / m.units_per_instance, m.link_bw)
    wire = (cp - 1.0) / cp * msg * cp / (bw * m.cal.coll_bw_eff)
    return np.where(cp > 1, c.n_layers * (m.cal.coll_s + wire), 0.0)


# Tokens a serving engine prefills at once (chunked prefill); bounds the activation workspace.
PREFILL_CHUNK_TOKENS = 8192.0


def inference_memory(
    c: ModelCosts, lay: Layout, context: Array, w: Widths, d_ff: float
) -> tuple[Array, Array, Array]:
    """Bytes per unit for weights, KV cache and activations.

    With pp stages each holding 1/pp of the layers and pp micro-batches in flight, the KV cache per
    unit is batch x context x (all layers' KV per unit) whatever pp is. Serving context
    parallelism shards it over the cp ranks (1/cp of each sequence per rank; `mean_decode_seconds`).
    """
    tp, batch = lay.tp, lay.batch
    cp = _cp_of(lay)  # serving context parallelism shards every sequence's KV cache over cp ranks
    routed = moe.routed_total_params(c)
    weights = ((c.total_params - routed) / _dense_ranks(lay) + routed / tp) * w.weight / lay.pp
    # Sliding-window (and chunked) layers keep only their window of the context.
    sliding = np.minimum(context, c.window) if c.window else context
    kept = (c.n_full_layers * context + c.n_sliding_layers * sliding) / c.n_layers
    kv = batch * kept * _kv_per_token_unit(c, lay, w.kv) / cp
    chunk = np.minimum(batch * context / cp, PREFILL_CHUNK_TOKENS)
    activations = chunk * (4.0 * c.d_model + 2.0 * d_ff / tp) * w.act
    return weights, kv, activations


@dataclass(frozen=True, slots=True)
class TrainStep:
    step_s: Array
    tokens_per_s_per_chip: Array
    model_flops_per_token: float
    attention_flops_per_token: Array  # training FLOPs of causal attention a token adds (in `mfu`)
    mfu: Array
    memory_per_unit: Array
    split: TimeSplit  # of step_s


# Adam with mixed precision: fp32 master weights, first and second moments (Rajbhandari et al. 2020, ZeRO §3).
OPTIMIZER_BYTES_PER_PARAM = 12.0
GRAD_BYTES_PER_PARAM = 2.0
# Activation bytes per token per layer per hidden unit with selective recompute and sequence
# parallelism: 34 s b h / t (Korthikanti et al. 2022, "Reducing Activation Recomputation", eq. 2).
ACTIVATION_BYTES_FACTOR = 34.0
# Share of the gradient all-reduce hidden behind the backward pass (backward is 2/3 of compute).
BACKWARD_SHARE = 2.0 / 3.0


def _context_ring(
    c: ModelCosts,
    m: Machine,
    lay: Layout,
    cp: Array,
    rank_tokens: Array,
    passes: Array,
    attention: Array,
    w: Widths,
) -> Array:
    """Exposed time of context-parallel attention's key/value exchange, per micro-batch.

    Ring attention (Liu et al. 2023, "Ring Attention with Blockwise Transformers"; Megatron-Core /
    Transformer Engine `cp_comm_type="p2p"`): in each layer every rank passes its chunk's keys and
    values to the next rank cp - 1 times, in the forward pass and in every recomputed forward,
    and keys, values and their gradients in the backward pass, so `passes` chunk transfers per
    ring step. Each transfer overlaps the attention of the chunk already held; only what attention
    cannot hide is exposed. The cp group's ranks sit tp units apart (Megatron orders tp, then cp):
    over the scale-up links while tp x cp fits an instance, else at one unit's share of the
    instance's network bandwidth.
    """
    layers = c.n_layers / lay.pp
    chunk = rank_tokens * c.kv_bytes_per_token_per_unit(lay.tp, w.act) / c.n_layers
    bw = np.where(lay.tp * cp > m.units_per_instance, m.net_bw / m.units_per_instance, m.link_bw)
    wire = passes * layers * (cp - 1.0) * (m.cal.coll_s + chunk / (bw * m.cal.coll_bw_eff))
    attention_s = passes / lay.pp * attention / (_matmul_eff(m, rank_tokens) * lay.tp * m.unit_flops)
    return np.where(cp > 1, np.maximum(wire - attention_s, 0.0), 0.0)


def train_step(c: ModelCosts, m: Machine, lay: Layout, run: TrainingRun, w: Widths) -> TrainStep:
    """One optimizer step of data-, tensor-, context- and pipeline-parallel training (1F1B schedule).

    `lay.batch` is the micro-batch per data-parallel rank. `run.full_recompute` marks layouts that
    keep only each layer's input and recompute the rest in the backward pass: one more forward
    (4 passes instead of 3) for far less activation memory. With context parallelism (`lay.cp`)
    each of cp ranks holds 1/cp of every sequence in every layer: its matmuls, activations and
    hand-offs are over seq_len / cp tokens, its queries attend to the whole (causal) sequence, and
    the cp ranks are data-parallel peers for the gradients (Megatron-Core reduces over dp x cp).
    """
    tp, pp, micro_batch, seq_len = lay.tp, lay.pp, lay.batch, run.seq_len
    dp = np.ones_like(tp) if lay.dp is None else lay.dp
    cp = np.ones_like(tp) if lay.cp is None else lay.cp
    zero_stage, units_per_node = run.zero_stage, m.units_per_instance
    full = np.zeros_like(tp, dtype=bool) if run.full_recompute is None else run.full_recompute
    passes = np.where(full, 4.0, 3.0)
    units = tp * pp * dp * cp
    chips = units / m.units_per_chip
    heads = _padded_heads(c, lay)
    # The tokens of one micro-batch on one rank: 1/cp of each of its sequences.
    mb_tokens = micro_batch * seq_len / cp
    n_micro = np.maximum(run.global_batch / (dp * micro_batch), 1.0)
    stream_rate = m.unit_bw * m.cal.mem_eff
    # Forward FLOPs of one micro-batch on one stage; backward is twice the forward (Kaplan et al. 2020).
    # Training stacks run fused flash attention (Megatron/NeMo, NxD Training's NKI kernel) at the
    # matmul efficiency times `attn_eff`, as prefill does: a flash-attention kernel, its backward
    # pass above all, runs well below a large GEMM (NeMo's long-sequence table on H100 levels off
    # near a quarter of the 16-bit peak once attention is most of the work). The training stacks'
    # own entries fit it; where their rows cannot see it (short sequences) it stays at the
    # family's pooled value, which prefill rows set. Under
    # fp8 or fp4 training only the linear layers' GEMMs run narrow: Transformer Engine's fused
    # attention stays in 16 bits unless FP8 attention is asked for (TE `DotProductAttention`,
    # NeMo's `fp8_dot_product_attention` off by default), so attention runs at the 16-bit peak.
    slower = m.unit_flops / m.unit_flops_16
    # Causal attention: a query sees half the sequence on average, and the load-balanced split of
    # Megatron-Core's context parallelism (each rank two mirrored chunks) keeps that true per rank.
    attention = (
        c.attention_flops(mb_tokens, seq_len / 2.0, heads)
        * np.where(slower > 1.0, slower, 1.0)
        / m.cal.attn_eff
    )
    # Routed experts run as a grouped GEMM over the tokens each expert receives, and the busiest
    # expert rank sets the pace (`perf.moe`); the rest (attention, dense and shared MLPs, the
    # routers) runs over the micro-batch's tokens. A dense model has no routed part.
    capacity = moe.CAPACITY_FACTOR if run.expert_capacity is None else run.expert_capacity
    t_compute = passes / pp * _matmul_seconds(c, m, lay, mb_tokens, attention, capacity)
    # A rank streams its dense shard (1/(tp pp)) and its experts' shard (1/(ep pp) with whole experts).
    shard = moe.expert_shard(lay)
    read = c.weights_read(mb_tokens)
    per_rank_read = c.static_params / (tp * pp) + (read - c.static_params) / (shard * pp)
    weight_bytes = passes * per_rank_read * w.weight
    t_weights = weight_bytes / stream_rate
    layers = c.n_layers / pp
    tp_comm = _tp_allreduce(m, tp, 4.0 * layers, mb_tokens * c.d_model * w.act)
    # Dispatch and combine per MoE layer in the forward pass, again in each recomputed forward, and
    # twice in the backward pass; each rank sends its 1/tp of the tokens (sequence parallelism).
    a2a = moe.all_to_all_seconds(c, m, lay, mb_tokens / tp, w.act, 2.0 * (passes - 1.0))
    # Stage hand-offs: activations forward, gradients back; over EFA once stages span instances.
    stage_bw = np.where(tp * pp > units_per_node, m.net_bw / units_per_node, m.link_bw)
    # An interleaved schedule hands each micro-batch across `vp` times as many chunk boundaries.
    vp = run.virtual_stages
    handoff = np.where(pp > 1, 2.0 * vp * (m.cal.coll_s + mb_tokens * c.d_model * w.act / stage_bw), 0.0)
    ring = _context_ring(c, m, lay, cp, mb_tokens, passes, attention, w)
    # Non-matmul work (norms, activations, dropout, residuals) streams the layer activations: written
    # in the forward pass and read back in the backward pass, 2 x 34 s b h / t bytes a layer.
    # MoE layers save (and stream) more per token than a dense MLP: permuted copies, gate/up outputs.
    act_per_token_layer = ACTIVATION_BYTES_FACTOR * c.d_model + moe.moe_activation_bytes(c)
    elementwise = 2.0 * act_per_token_layer * mb_tokens * layers / tp / stream_rate
    layer_s = passes * (layers * m.cal.layer_s + c.n_moe_layers / pp * m.cal.moe_layer_s)
    per_micro = np.maximum(t_compute, t_weights) + elementwise + layer_s + tp_comm + a2a + handoff + ring
    # 1F1B: pp - 1 micro-batch slots of bubble; interleaved over vp chunks per stage, (pp - 1) / vp
    # (Narayanan et al. 2021, "Efficient Large-Scale Language Model Training on GPU Clusters", §2.2).
    bubble = (pp - 1.0) / vp * per_micro
    pipeline = n_micro * per_micro + bubble
    # Dense parameters shard over tp x pp and reduce over dp; routed experts shard over their
    # `shard` x pp ranks and reduce over the expert-data-parallel ranks, tp x dp / ep with ep > 1
    # (Megatron-Core's expert data parallelism).
    experts = moe.routed_total_params(c)
    dense_unit = (c.total_params - experts) / (tp * pp)
    expert_unit = experts / (shard * pp)
    # Context-parallel ranks hold the same weights: they reduce gradients (and ZeRO shards the
    # optimizer) over dp x cp ranks, Megatron-Core's data-parallel-with-context-parallel group.
    dcp = dp * cp
    edp = np.where(moe.ep_of(lay) > 1, tp * dcp / moe.ep_of(lay), dcp)
    # Dense peers sit tp units apart; expert-data-parallel peers ep apart (expert tp is 1).
    t_dp = _grad_allreduce(m, dcp, tp, dense_unit * GRAD_BYTES_PER_PARAM)
    if experts:
        t_dp = t_dp + _grad_allreduce(m, edp, moe.ep_of(lay), expert_unit * GRAD_BYTES_PER_PARAM)
    exposed_dp = np.maximum(t_dp - BACKWARD_SHARE * n_micro * per_micro, 0.0)
    # Adam update: read and write fp32 master weights and both moments, read the gradient, on this
    # rank's shard (ZeRO), then write the bf16 weights.
    zero_dp, zero_edp = (np.where(zero_stage >= 1, n, 1.0) for n in (dcp, edp))
    per_param = GRAD_BYTES_PER_PARAM + w.weight
    optimizer_s = (
        dense_unit * (2.0 * OPTIMIZER_BYTES_PER_PARAM / zero_dp + per_param)
        + expert_unit * (2.0 * OPTIMIZER_BYTES_PER_PARAM / zero_edp + per_param)
    ) / stream_rate
    step = pipeline + exposed_dp + optimizer_s
    split = TimeSplit(
        compute_s=(t_compute,),
        weight_bytes=weight_bytes,
        kv_bytes=(),
        stream_rate=stream_rate,
        all_reduce=tp_comm,
        pipeline=handoff + ring,
        overhead=layer_s,
        all_to_all=a2a,
        repeat=n_micro,
        activations=elementwise,
        bubble=bubble,
        gradient_sync=exposed_dp,
        optimizer=optimizer_s,
    )
    tokens = run.global_batch * seq_len
    # MFU convention of Chowdhery et al. 2022 (PaLM, appendix B): 6N per token plus attention.
    model_flops_per_token = 6.0 * c.matmul_params
    attn_per_token = 3.0 * c.attention_flops(
        np.asarray(1.0), np.asarray(seq_len / 2.0), np.asarray(c.n_heads)
    )
    tok_s_chip = tokens / step / chips
    mfu = tok_s_chip * (model_flops_per_token + attn_per_token) / run.peak_flops

    def sharded(per_param: float, stage: int) -> Array:
        """Bytes per unit of one per-parameter state that ZeRO shards from `stage` on."""
        dense = dense_unit / np.where(zero_stage >= stage, dcp, 1.0)
        return per_param * (dense + expert_unit / np.where(zero_stage >= stage, edp, 1.0))

    optimizer = sharded(OPTIMIZER_BYTES_PER_PARAM, 1)
    grads = sharded(GRAD_BYTES_PER_PARAM, 2)
    weights = sharded(1.0, 3) * w.weight
    in_flight = np.minimum(pp, n_micro)
    selective = act_per_token_layer * mb_tokens * layers / tp * in_flight
    # Full recompute keeps 2 s b h per layer plus one layer's working set (Korthikanti et al. 2022, §4).
    kept = 2.0 * mb_tokens * c.d_model * layers * in_flight + act_per_token_layer * mb_tokens / tp
    activations = np.where(full, kept, selective)
    return TrainStep(
        step_s=step,
        tokens_per_s_per_chip=tok_s_chip,
        model_flops_per_token=model_flops_per_token,
        attention_flops_per_token=np.broadcast_to(attn_per_token, np.shape(mfu)),
        mfu=mfu,
        memory_per_unit=optimizer + grads + weights + activations,
        split=split,
    )

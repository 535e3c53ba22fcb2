"""Mixture-of-experts terms: expert parallelism, all-to-all, grouped GEMMs, router, load imbalance.

The dense formulas in `perf.kernels` treat a routed expert like any other matmul over all the step's
tokens. A real MoE layer is different in four ways, each a function here:
- Expert parallelism (`ep`): each rank holds E/ep whole experts (expert tensor parallelism 1, as
  Megatron-Bridge's MoE recipes set `expert_tensor_parallel_size = 1`); with ep = 1 the experts are
  split by tp like the dense parts. Expert weights, gradients and optimizer states shard by ep.
- Tokens travel to their experts and back: a dispatch and a combine all-to-all per MoE layer in the
  forward pass and two more in the backward pass (Lepikhin et al. 2020, GShard §2.2).
- A grouped GEMM runs one small matmul per local expert: its M dimension is the tokens routed to one
  expert (tokens x top_k / experts), far fewer than the tokens of the step.
- The router scores every token against every expert, and the busiest expert rank sets the pace.

Everything is over arrays, one entry per configuration (see `perf.inputs`). Units: seconds, bytes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from silica.perf.inputs import Layout
from silica.perf.machine import Machine

if TYPE_CHECKING:
    from silica.perf.kernels import ModelCosts

__all__ = [
    "CAPACITY_FACTOR",
    "all_to_all_seconds",
    "expert_ff",
    "expert_shard",
    "experts_touched",
    "imbalance",
    "moe_activation_bytes",
    "routed_active_params",
    "routed_total_params",
    "router_flops",
    "tokens_per_expert",
]

Array = NDArray[np.float64]

# The busiest expert rank's share of tokens over the mean, with expert parallelism. Switch
# Transformer trains at capacity factor 1.25 (Fedus et al. 2021, "Switch Transformers", §2.2 and
# Table 1: 1.0 and 1.25); a dropless run with an auxiliary balance loss (Megatron-Core's default
# `moe_expert_capacity_factor=None`) lets its busiest rank take about as much. NVIDIA's published
# MoE training tables force-balance routing (Megatron-Bridge performance summary, footnote), so
# rows from them are predicted at 1.0.
CAPACITY_FACTOR = 1.25
# Bytes per token of a dense MLP's saved activations, in units of d_model: input 2, fc1 output 8,
# GeLU output 8, dropout mask 1 (Korthikanti et al. 2022, §4.1: 19 s b h of the 34 s b h).
DENSE_MLP_ACTIVATION_FACTOR = 19.0


def ep_of(lay: Layout) -> Array:
    """The expert-parallel degree per configuration (1 where the layout gives none)."""
    return np.ones_like(lay.tp) if lay.ep is None else lay.ep


def expert_ff(c: ModelCosts) -> float:
    """One routed expert's hidden width: a gated (SwiGLU) expert has three d_model x ff matrices."""
    return c.expert_params / (3.0 * c.d_model) if c.d_model else 0.0


def routed_total_params(c: ModelCosts) -> float:
    """Parameters of all routed experts of all MoE layers (what expert parallelism shards)."""
    return c.n_moe_layers * c.n_experts * c.expert_params


def routed_active_params(c: ModelCosts) -> float:
    """Routed-expert parameters one token multiplies through (top_k experts per MoE layer)."""
    return c.n_moe_layers * c.top_k * c.expert_params


def expert_shard(lay: Layout) -> Array:
    """Ranks one expert's weights are split over: the ep group with whole experts, else tp."""
    ep = ep_of(lay)
    return np.where(ep > 1, ep, lay.tp)


def imbalance(lay: Layout, capacity: Array | float) -> Array:
    """The busiest expert rank's work over the mean: `capacity` with ep > 1, else 1 (every rank
    then holds a slice of every expert, so routing skew does not reach one rank more than another)."""
    return np.where(ep_of(lay) > 1, capacity, 1.0)


def experts_touched(c: ModelCosts, tokens: Array) -> Array:
    """Expected distinct routed experts of one MoE layer that `tokens` tokens pick between them.

    With uniform routing each token picks top_k of E experts, so an expert is missed by one token
    with probability 1 - k/E and by all of them with (1 - k/E)^tokens: E (1 - (1 - k/E)^tokens)
    experts are touched. One token touches k; a large step touches all E. Only touched experts
    are read from memory and only they run a matmul in the grouped GEMM.
    """
    if c.n_experts == 0:
        return np.zeros_like(np.asarray(tokens, dtype=np.float64))
    return c.n_experts * (1.0 - (1.0 - c.top_k / c.n_experts) ** np.maximum(tokens, 0.0))


def tokens_per_expert(c: ModelCosts, tokens: Array, lay: Layout) -> Array:
    """The M dimension of one local expert's matmul in the grouped GEMM.

    `tokens` are the tokens one tensor-parallel group steps at once. With ep > tp the ep group
    gathers the tokens of ep / tp such groups (sequence parallelism leaves 1/tp of them on each
    rank); with ep <= tp every rank sees the group's tokens. Those tokens' tokens x top_k routed
    copies are spread over the experts they touch (`experts_touched`), not over all E: an expert
    that runs at all runs over at least one token, so at batch 1 each of the k chosen experts is a
    one-token matmul and the E - k others cost nothing (a grouped GEMM skips empty groups).
    """
    if c.n_experts == 0:
        return tokens
    group = tokens * np.maximum(ep_of(lay) / lay.tp, 1.0)
    return group * c.top_k / np.maximum(experts_touched(c, group), c.top_k)


def router_flops(c: ModelCosts, tokens: Array) -> Array:
    """Forward FLOPs of the routers: a d_model x E matmul per token per MoE layer."""
    return 2.0 * tokens * c.d_model * c.n_experts * c.n_moe_layers


def moe_activation_bytes(c: ModelCosts) -> float:
    """Saved-activation bytes per token, averaged over layers, that MoE layers add to 34 s b h.

    A dense MLP saves 19 h bytes a token (Korthikanti et al. 2022). A routed MLP saves its router
    input (2 h), and per routed copy (top_k of them) the permuted input (2 h), the gate and up
    projections (2 x 2 ff), the activation output (2 ff) and the expert output (2 h), in 16 bits.
    """
    if c.n_experts == 0 or c.n_layers == 0:
        return 0.0
    d, ff = c.d_model, expert_ff(c)
    routed = 2.0 * d + c.top_k * (4.0 * d + 6.0 * ff)
    return max(routed - DENSE_MLP_ACTIVATION_FACTOR * d, 0.0) * c.n_moe_layers / c.n_layers


def all_to_all_seconds(
    c: ModelCosts, m: Machine, lay: Layout, tokens_per_rank: Array, act_bytes: Array, n: Array | float
) -> Array:
    """`n` all-to-alls over the ep group per MoE layer on one pipeline stage.

    Each moves tokens_per_rank x top_k x d_model x act bytes from every rank, of which (ep-1)/ep
    leaves it. The ep group is ep consecutive ranks (Megatron orders tp, then ep, innermost), so it
    stays inside the scale-up domain (NVLink, NeuronLink) when ep fits an instance; beyond that the
    traffic to other instances crosses the scale-out network (EFA, InfiniBand), whose per-instance
    bandwidth the instance's units share. That traffic goes once per destination instance, not once
    per expert: the dispatchers the published recipes use (DeepEP, HybridEP: Megatron-Bridge
    `moe_flex_dispatcher_backend` in its DeepSeek-V3 and GPT-OSS recipes) send a token to one rank
    of each instance holding any of its top_k experts and forward it over the scale-up links there
    (DeepEP README, "internode" kernels). With D instances in the group and uniform routing, a token
    reaches (D-1)(1-(1-1/D)^top_k) remote instances. On- and off-instance traffic flow at once, so
    the slower of the two sets the time; plus the collective latency per all-to-all.
    """
    ep = ep_of(lay)
    if c.n_experts == 0:
        return np.zeros_like(ep)
    token_bytes = tokens_per_rank * c.d_model * act_bytes
    payload = token_bytes * c.top_k
    local = np.minimum(ep, m.units_per_instance)
    on_instance = payload * (local - 1.0) / ep / (m.link_bw * m.cal.coll_bw_eff)
    net_per_unit = m.net_bw / m.units_per_instance * m.cal.coll_bw_eff
    domains = ep / local
    off_bytes = token_bytes * (domains - 1.0) * (1.0 - (1.0 - 1.0 / domains) ** c.top_k)
    off_instance = np.where(ep > local, off_bytes / net_per_unit, 0.0)
    layers = c.n_moe_layers / lay.pp
    one = m.cal.coll_s + np.maximum(on_instance, off_instance)
    return np.where(ep > 1, n * layers * one, 0.0)

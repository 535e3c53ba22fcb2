"""Inference performance of arrays of configurations: TTFT, TPOT, throughput and memory.

This is the one path that `estimate`, `compare` and `validate` all go through.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
from numpy.typing import NDArray

from silica.perf.inputs import Layout, Requests, TimeSplit, Widths
from silica.perf.kernels import ModelCosts, inference_memory, mean_decode_seconds, prefill_seconds
from silica.perf.machine import Machine

__all__ = ["DECODE_SAMPLES", "InferencePerf", "inference_perf", "neuron_bucket"]

Array = NDArray[np.float64]
BoolArray = NDArray[np.bool_]

# Decode time grows with context; TPOT is the mean step time over the generation, sampled at
# this many evenly spaced points (the midpoint rule).
DECODE_SAMPLES = 4
# Smallest compiled bucket of the Neuron decoder libraries (transformers-neuronx / NxD Inference).
NEURON_MIN_BUCKET = 128.0
# Share of free device memory a serving engine gives the KV cache: TensorRT-LLM's default
# `kv_cache_free_gpu_mem_fraction` (0.9, TensorRT-LLM docs, "KV cache memory").
KV_SHARE_OF_FREE_MEMORY = 0.9


def neuron_bucket(tokens: Array, seq_len: Array) -> Array:
    """Neuron compiles static shapes: a length runs as the next power-of-two bucket, capped at seq_len."""
    bucket = 2.0 ** np.ceil(np.log2(np.maximum(tokens, NEURON_MIN_BUCKET)))
    return np.minimum(bucket, np.maximum(seq_len, tokens))


@dataclass(frozen=True, slots=True)
class InferencePerf:
    ttft_s: Array
    prefill_s: Array  # prefill of the whole batch
    tpot_s: Array
    replica_output_tok_s: Array  # one model replica (tp x pp units) at this static batch
    weights_bytes: Array  # per unit
    kv_bytes: Array  # per unit
    activation_bytes: Array  # per unit
    capacity_bytes: Array  # per unit
    prefill_split: TimeSplit  # of prefill_s
    decode_split: TimeSplit  # of tpot_s, the mean decode step
    # Physical bounds (peak FLOPs or peak HBM bandwidth, no overhead; `PhaseSeconds.floor`): no
    # measurement can be faster, so no band may reach past them.
    ttft_floor_s: Array
    tpot_floor_s: Array
    replica_output_tok_s_ceiling: Array

    @property
    def used_bytes(self) -> Array:
        return self.weights_bytes + self.kv_bytes + self.activation_bytes

    @property
    def fits(self) -> BoolArray:
        # The KV cache may take only a share of what weights and activations leave free.
        free = self.capacity_bytes - self.weights_bytes - self.activation_bytes
        return (free > 0) & (self.kv_bytes <= KV_SHARE_OF_FREE_MEMORY * free)


def inference_perf(
    c: ModelCosts,
    m: Machine,
    lay: Layout,
    req: Requests,
    w: Widths,
    *,
    d_ff: float,
    continuous: bool = False,
) -> InferencePerf:
    """Evaluate every configuration at once. `lay.static_shapes` marks Neuron rows (buckets, head padding).

    Static batching (`continuous=False`, how the published tables measure): TTFT is the prefill of
    the whole batch. Continuous batching (how a serving engine runs): a new request's prompt is
    prefilled on its own and joins the running batch, so its TTFT is one prompt's prefill plus the
    decode step it waits for, plus the request's fixed time outside the forward passes (front end,
    admission, streaming the first token: `request_overhead_us`, which does not occupy the engine's
    steps and so leaves throughput alone). Throughput is the same either way: every prompt is
    prefilled once.
    """
    static_shapes = lay.static_shapes
    input_len, output_len, seq_len = req.input_len, req.output_len, req.seq_len
    prompt = np.where(static_shapes, neuron_bucket(input_len, seq_len), input_len)
    prefill = prefill_seconds(c, m, lay, prompt, w)
    neuron = bool(static_shapes.any())  # skip bucketing work when no configuration is on Neuron
    contexts = []
    for k in range(DECODE_SAMPLES):
        context = input_len + (k + 0.5) / DECODE_SAMPLES * np.maximum(output_len, 1.0)
        contexts.append(
            np.where(static_shapes, neuron_bucket(context, seq_len), context) if neuron else context
        )
    decode = mean_decode_seconds(c, m, lay, contexts, w)
    tpot = decode.seconds
    # pp micro-batches of `batch` sequences in flight, each prefilled once, then decoded.
    generated = lay.pp * lay.batch * output_len
    throughput = np.where(output_len > 0, generated / (prefill.seconds + output_len * tpot), 0.0)
    fastest = prefill.floor + output_len * decode.floor
    ceiling = np.where(output_len > 0, generated / np.where(fastest > 0, fastest, np.inf), 0.0)
    if continuous:
        one = replace(lay, batch=np.ones_like(lay.batch))
        alone = prefill_seconds(c, m, one, prompt, w)
        ttft, ttft_floor = alone.seconds + tpot + m.cal.request_s, alone.floor + decode.floor
    else:
        ttft, ttft_floor = prefill.seconds, prefill.floor
    allocated = np.where(static_shapes, np.maximum(seq_len, input_len + output_len), input_len + output_len)
    weights, kv, act = inference_memory(c, lay, allocated, w, d_ff)
    return InferencePerf(
        ttft_s=ttft,
        prefill_s=prefill.seconds,
        tpot_s=tpot,
        replica_output_tok_s=throughput,
        weights_bytes=weights,
        kv_bytes=kv,
        activation_bytes=act,
        capacity_bytes=m.unit_mem,
        prefill_split=prefill.split,
        decode_split=decode.split,
        ttft_floor_s=ttft_floor,
        tpot_floor_s=decode.floor,
        replica_output_tok_s_ceiling=ceiling,
    )

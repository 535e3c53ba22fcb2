"""Engine step times for one replica, tabulated once from the calibrated performance model.

A request-level simulation takes hundreds of thousands of engine steps; calling the estimator for
each would cost milliseconds per step. So the formulas of `perf.kernels` are evaluated once per
deployment over a grid (prefill tokens; decode batch x mean context), and the simulator interpolates
in those tables. A step that mixes a prefill chunk with decodes (chunked prefill) runs all its new
tokens through the weights once, so it costs the prefill of (chunk + decodes) tokens plus the decodes'
KV-cache reads beyond an empty context: `mixed = P(chunk + b) + D(b, c) - D(b, c0)`.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
from numpy.typing import NDArray

from silica.errors import InputError
from silica.models.spec import ModelSpec
from silica.perf.inference import KV_SHARE_OF_FREE_MEMORY, neuron_bucket
from silica.perf.inputs import Layout
from silica.perf.kernels import ModelCosts, decode_seconds, inference_memory, prefill_seconds
from silica.perf.machine import machine_arrays
from silica.perf.precision import precision, widths
from silica.plan.targets import Target

__all__ = ["StepTable", "step_table"]

Array = NDArray[np.float64]
_bisect = bisect.bisect_left
CONTEXT_POINTS = 40  # mean-context grid points (log-spaced); decode time is near-linear in context
PREFILL_POINTS = 48  # prefill token-count grid points (log-spaced)


@dataclass(frozen=True, slots=True)
class StepTable:
    """Step times of one replica (seconds) and its KV-cache capacity (tokens).

    `decode[b-1]` is the decode step time of `b` sequences at each `contexts` point; `prefill` is the
    prefill time of one pass over each `tokens` point. `kv_tokens` is the tokens of KV cache the
    replica holds (90% of the memory weights and activations leave free, the engines' default share).
    `kv_bytes_per_token` is one token's whole KV cache (all layers, all heads), what a disaggregated
    deployment ships from a prefill to a decode replica. `pipeline` is the stages per replica.
    `request_s` is a request's fixed time outside the engine's steps (the front end's HTTP handling
    and tokenisation, `request_overhead_us` of the calibration): it delays when the engine sees the
    request, adds to TTFT and end-to-end latency, and takes no step time.
    """

    label: str
    tokens: tuple[float, ...]
    prefill: tuple[float, ...]
    contexts: tuple[float, ...]
    decode: tuple[tuple[float, ...], ...]
    kv_tokens: int
    kv_bytes_per_token: float
    max_num_seqs: int
    link_bytes_per_s: float  # instance-to-instance network (EFA/ENA), nan when unpublished
    scaleup_bytes_per_s: float  # chip-to-chip inside an instance (NVLink, NeuronLink)
    link_latency_s: float
    link_efficiency: float  # achieved share of link bandwidth (the family's collective efficiency)
    pipeline: int = 1
    request_s: float = 0.0
    # Host time per running sequence in a step that also prefills (logits, sampling and output
    # handling of each decoded token, which a prefill token skips): 0 for tables from the catalog
    # model, whose prefill line already prices a token; fitted by `from_measurements`.
    seq_step_s: float = 0.0

    def prefill_s(self, tokens: float) -> float:
        """One forward pass over `tokens` new tokens (linear interpolation, linear extrapolation)."""
        xs, ys = self.tokens, self.prefill
        i = _bisect(xs, tokens)
        if i <= 0:
            return ys[0]
        if i >= len(xs):
            i = len(xs) - 1
        x0, x1 = xs[i - 1], xs[i]
        return ys[i - 1] + (ys[i] - ys[i - 1]) * (tokens - x0) / (x1 - x0)

    def decode_s(self, batch: int, context: float) -> float:
        """One decode step of `batch` sequences whose KV caches hold `context` tokens on average."""
        row = self.decode[batch - 1 if batch <= self.max_num_seqs else self.max_num_seqs - 1]
        xs = self.contexts
        i = _bisect(xs, context)
        if i <= 0:
            return row[0]
        if i >= len(xs):
            i = len(xs) - 1
        x0 = xs[i - 1]
        return row[i - 1] + (row[i] - row[i - 1]) * (context - x0) / (xs[i] - x0)

    def mixed_s(self, chunk: float, batch: int, context: float) -> float:
        """A step that prefills `chunk` tokens alongside `batch` decodes (chunked prefill)."""
        if batch == 0:
            return self.prefill_s(chunk)
        if chunk <= 0:
            return self.decode_s(batch, context)
        kv_read = self.decode_s(batch, context) - self.decode[min(batch, self.max_num_seqs) - 1][0]
        return self.prefill_s(chunk + batch) + max(kv_read, 0.0) + self.seq_step_s * batch

    @classmethod
    def from_measurements(
        cls,
        label: str,
        *,
        prefill: Sequence[tuple[float, float]],
        decode: Sequence[tuple[int, float]],
        kv_tokens: int,
        max_num_seqs: int | None = None,
    ) -> StepTable:
        """A table fitted to a real server's closed-loop measurements instead of the catalog model.

        `prefill`: (prompt tokens, seconds to the first token) at a few prompt sizes, one request at a
        time; `decode`: (running sequences, seconds per decode step) at a few closed-loop concurrencies.
        Between points the times are interpolated linearly; past the largest batch the decode time
        grows along its last segment (flat with one point). Decode time is taken as independent of
        context: the measurements are made at the context the load runs at. `max_num_seqs` is what the
        server runs at once (1 for a server that serialises requests); by default the largest
        measured batch. No network figures: a fitted table serves aggregated simulation only. No
        `request_s`: a measured time to first token already holds the request's fixed time.

        `seq_step_s`: what one more running sequence adds to a decode step (the decode line's slope
        over the measured batches) less what one more prompt token adds to a prefill (the prefill
        line's slope). A decoded token pays the LM head, sampling and output handling that a prompt
        token does not, and pays them in a mixed step too, which is priced as a prefill of the chunk
        and the decodes' tokens; on a CPU server with a small model that difference is most of a
        decode step's growth with the batch.
        """
        pre = sorted((float(t), float(s)) for t, s in prefill)
        dec = sorted((int(b), float(s)) for b, s in decode)
        if not pre or not dec:
            raise InputError(
                "A measured step table needs at least one prefill and one decode point.",
                "measure one request's time to first token and one decode step time.",
            )
        if any(not (t > 0 and s > 0 and math.isfinite(s)) for t, s in pre) or any(
            not (b >= 1 and s > 0 and math.isfinite(s)) for b, s in dec
        ):
            raise InputError(
                "Measured step times must be positive seconds at prompt sizes and batches of 1 or more.",
                "drop failed or empty measurements before fitting.",
            )
        n = max_num_seqs if max_num_seqs is not None else dec[-1][0]
        if n < 1 or kv_tokens < 1:
            raise InputError(
                f"max running sequences and KV tokens must be 1 or more, got {n} and {kv_tokens}.",
                "pass the server's limits.",
            )
        if len(pre) == 1:
            pre.append((pre[0][0] + 1.0, pre[0][1]))
        bs = np.asarray([b for b, _ in dec], dtype=np.float64)
        ys = np.asarray([s for _, s in dec], dtype=np.float64)
        want = np.arange(1, n + 1, dtype=np.float64)
        steps = np.interp(want, bs, ys)
        if len(dec) > 1 and bs[-1] > bs[-2]:
            slope = (ys[-1] - ys[-2]) / (bs[-1] - bs[-2])
            steps = np.where(want > bs[-1], ys[-1] + slope * (want - bs[-1]), steps)
        nan = math.nan
        seq_step = 0.0
        if len(dec) > 1 and bs[-1] > bs[0]:
            per_seq = float((ys[-1] - ys[0]) / (bs[-1] - bs[0]))
            per_tok = (pre[-1][1] - pre[0][1]) / (pre[-1][0] - pre[0][0]) if pre[-1][0] > pre[0][0] else 0.0
            seq_step = max(per_seq - max(per_tok, 0.0), 0.0)
        return cls(
            label=label,
            tokens=tuple(t for t, _ in pre),
            prefill=tuple(s for _, s in pre),
            contexts=(0.0, 1.0),
            decode=tuple((float(s), float(s)) for s in steps),
            kv_tokens=int(kv_tokens),
            kv_bytes_per_token=nan,
            max_num_seqs=n,
            link_bytes_per_s=nan,
            scaleup_bytes_per_s=nan,
            link_latency_s=nan,
            link_efficiency=nan,
            seq_step_s=seq_step,
        )

    def max_output_tok_s(self) -> float:
        """An upper bound on one replica's generated tokens per second: the best decode batch at the
        smallest tabulated context, ignoring prefill (times `pipeline` micro-batches in flight)."""
        best = max((b + 1) / row[0] for b, row in enumerate(self.decode))
        return best * self.pipeline


def step_table(
    model: ModelSpec,
    target: Target,
    *,
    tp: int,
    pp: int = 1,
    ep: int = 1,
    max_num_seqs: int = 256,
    max_tokens: int = 32768,
    weight_dtype: str = "bf16",
    compute_dtype: str = "bf16",
) -> StepTable:
    """Tabulate one replica's step times from the calibrated model (one vectorised evaluation)."""
    if max_num_seqs < 1:
        raise InputError(
            f"max running sequences must be 1 or more, got {max_num_seqs}.", "pass --max-num-seqs >= 1."
        )
    prec = precision(weight_dtype, compute_dtype)  # type: ignore[arg-type]
    costs = ModelCosts.of(model)
    base = machine_arrays([(target.chip, target.instance, target.params)], prec.flops_dtype)
    static = target.is_neuron
    top = float(max(max_tokens, 16))
    tokens = np.unique(np.round(np.geomspace(1.0, top, PREFILL_POINTS)))
    contexts = np.unique(np.round(np.geomspace(16.0, top, CONTEXT_POINTS)))
    if static:
        # Neuron runs a length as its power-of-two bucket: a step function. Tabulate both sides of
        # every bucket edge (2^k runs as 2^k, 2^k + 1 as 2^(k+1)) so interpolation keeps the steps
        # instead of drawing a line across a jump (2,048 tokens priced halfway to the 4,096 bucket).
        edges = 2.0 ** np.arange(0, math.ceil(math.log2(top)) + 1)
        edges = np.concatenate((edges, edges + 1.0))
        tokens = np.unique(np.concatenate((tokens, edges[edges <= top])))
        contexts = np.unique(np.concatenate((contexts, edges[(edges >= 16.0) & (edges <= top)])))

    def layout(batch: Array) -> Layout:
        n = batch.shape[0]
        return Layout(
            tp=np.full(n, float(tp)),
            pp=np.full(n, float(pp)),
            batch=batch,
            static_shapes=np.full(n, static),
            ep=np.full(n, float(ep)),
        )

    def machine(n: int):  # type: ignore[no-untyped-def]
        return base.take(np.zeros(n, dtype=np.intp))

    seq_len = np.full(tokens.shape, top)
    prompt = neuron_bucket(tokens, seq_len) if static else tokens
    with np.errstate(all="ignore"):
        pre = prefill_seconds(
            costs, machine(len(tokens)), layout(np.ones_like(tokens)), prompt, widths(prec, len(tokens))
        )
        batches = np.repeat(np.arange(1, max_num_seqs + 1, dtype=np.float64), len(contexts))
        ctx = np.tile(contexts, max_num_seqs)
        ctx_run = neuron_bucket(ctx, np.full(ctx.shape, top)) if static else ctx
        dec = decode_seconds(costs, machine(len(ctx)), layout(batches), ctx_run, widths(prec, len(ctx)))
        one = np.ones(1)
        d_ff = float(model.d_ff or model.expert_params / max(model.d_model, 1) / 3)
        weights, kv1, act = inference_memory(costs, layout(one), one, widths(prec, 1), d_ff)
    if not (np.all(np.isfinite(pre.seconds)) and np.all(np.isfinite(dec.seconds))):
        raise InputError(
            f"{target.instance.id} has no published figure the step-time model needs at {prec.flops_dtype}.",
            "choose another instance or --dtype.",
        )
    free = float(base.unit_mem[0] - weights[0] - act[0])
    kv_tokens = int(KV_SHARE_OF_FREE_MEMORY * free / float(kv1[0])) if free > 0 else 0
    if kv_tokens < 1:
        raise InputError(
            f"{model.id} does not fit on {target.instance.id} at tp={tp}: weights leave no room for a KV cache.",
            "choose a larger instance or a higher --tp.",
        )
    full_kv = float(costs.kv_bytes_per_token_per_unit(np.ones(1), np.full(1, prec.kv_bytes))[0])
    table = dec.seconds.reshape(max_num_seqs, len(contexts))
    link = float(base.net_bw[0])
    return StepTable(
        label=f"{target.instance.id} tp={tp}" + (f" pp={pp}" if pp > 1 else ""),
        tokens=tuple(float(x) for x in tokens),
        prefill=tuple(float(x) for x in pre.seconds),
        contexts=tuple(float(x) for x in contexts),
        decode=tuple(tuple(float(x) for x in row) for row in table),
        kv_tokens=kv_tokens,
        kv_bytes_per_token=full_kv,
        max_num_seqs=max_num_seqs,
        link_bytes_per_s=link,
        scaleup_bytes_per_s=float(base.link_bw[0]),
        link_latency_s=float(base.cal.coll_s[0]),
        link_efficiency=float(base.cal.coll_bw_eff[0]),
        pipeline=pp,
        request_s=float(base.cal.request_s[0]),
    )


def with_max_num_seqs(table: StepTable, max_num_seqs: int) -> StepTable:
    """The same table limited to fewer running sequences (no re-evaluation)."""
    n = max(1, min(max_num_seqs, len(table.decode)))
    return replace(table, decode=table.decode[:n], max_num_seqs=n)


def fits_one_sequence(table: StepTable, prompt: float, output: float) -> bool:
    return table.kv_tokens >= math.ceil(prompt + output)

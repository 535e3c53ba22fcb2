"""Which metric names mean what: the telemetry Silica reads, per exporter, with where each is documented.

Production signals come from three kinds of exporter that teams already run. Each names the same idea
differently (vLLM's `vllm:generation_tokens_total` and SGLang's `sglang:generation_tokens_total` are the
same counter), so the analysis works on canonical *signals* and this table maps names onto them. A name
not listed here is not guessed at: a series from a known prefix with an unknown name is reported as
"unknown exporter version", never silently read as zero.

Sources (read 2026-12-01):
- DCGM exporter: github.com/NVIDIA/dcgm-exporter etc/default-counters.csv and etc/dcp-metrics-included.csv
  (DCGM_FI_PROF_SM_ACTIVE is commented out there; it appears only when a team enables it).
- neuron-monitor: aws-neuron-sdk tools/neuron-sys-tools/neuron-monitor-user-guide.rst (JSON output) and
  the metric names its companion script neuron-monitor-prometheus.py exports.
- vLLM: vllm-project/vllm docs/design/metrics.md and docs/usage/metrics.md (v1 metrics;
  `vllm:time_per_output_token_seconds` is the older name of `vllm:inter_token_latency_seconds`, and
  `vllm:gpu_cache_usage_perc` the v0 name of `vllm:kv_cache_usage_perc`).
  NxD Inference serves through vLLM's OpenAI server (vLLM on Neuron), so it exposes the same `vllm:` names.
- SGLang: sgl-project/sglang docs/references/production_metrics.md.
- TGI: huggingface/text-generation-inference docs/source/reference/metrics.md (no TTFT histogram;
  generated and prompt tokens are the `_sum` of the per-request length histograms).
- TensorRT-LLM's own OpenAI server (`trtllm-serve`, `/prometheus/metrics`): NVIDIA/TensorRT-LLM
  tensorrt_llm/metrics/collector.py, class MetricsCollector, whose docstring lists the families it
  creates (trtllm_request_success_total, trtllm_e2e_request_latency_seconds,
  trtllm_time_to_first_token_seconds, trtllm_time_per_output_token_seconds (per request),
  trtllm_request_queue_time_seconds, trtllm_kv_cache_hit_rate, trtllm_kv_cache_utilization = used /
  max KV blocks), and examples/serve/prometheus_metrics.py (METRIC_PREFIX = "trtllm_"); read
  2026-12-03 through the GitHub code index. It exports no token counters in that list.
- Triton Inference Server with the TensorRT-LLM backend (port 8002): NVIDIA's Triton user guide,
  "TensorRT-LLM Backend", section "Triton Metrics" (the example in tests/data/pilot/SOURCES.md): the
  backend keeps several quantities in one gauge family told apart by a label, so those names carry
  one label matcher, `family{label="value"}`: nv_trt_llm_request_metrics{request_type="active"|
  "waiting"} and nv_trt_llm_kv_cache_block_metrics{kv_cache_block_type="fraction"}. Its latency
  figures are cumulative microsecond counters (nv_inference_queue_duration_us ...), not per-token
  histograms, so Triton gives no TTFT/TPOT here.
- neuron-monitor has no request-level figures: on Neuron those come from the serving engine (vLLM on
  Neuron exports the `vllm:` names above).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["EXPORTERS", "SIGNALS", "Signal", "family_of", "known_names", "signal_of"]

Kind = Literal["counter", "gauge", "histogram"]


@dataclass(frozen=True, slots=True)
class Signal:
    """One canonical signal and the exporter metric names that carry it.

    `scale` turns the exporter's unit into Silica's (DCGM reports utilisation in percent and framebuffer
    in MiB; Silica works in fractions and bytes). For histograms the names are the family name; the
    samples are `<name>_bucket`, `<name>_sum` and `<name>_count`.
    """

    key: str
    kind: Kind
    unit: str
    names: tuple[tuple[str, str, float], ...]  # (exporter, metric name, scale)
    help: str


def _signal(
    key: str, kind: Kind, unit: str, help: str, *names: tuple[str, str] | tuple[str, str, float]
) -> Signal:
    """One table row: (exporter, metric name[, scale]) per name; the scale is 1 unless given."""
    return Signal(key, kind, unit, tuple((n[0], n[1], n[2] if len(n) == 3 else 1.0) for n in names), help)


# One row per signal: key, kind, unit, what it means, then the exporters' names for it.
SIGNALS: tuple[Signal, ...] = (
    _signal(
        "generation_tokens",
        "counter",
        "tokens",
        "output tokens generated",
        ("vllm", "vllm:generation_tokens_total"),
        ("sglang", "sglang:generation_tokens_total"),
        ("tgi", "tgi_request_generated_tokens_sum"),
    ),
    _signal(
        "prompt_tokens",
        "counter",
        "tokens",
        "prompt tokens prefilled",
        ("vllm", "vllm:prompt_tokens_total"),
        ("sglang", "sglang:prompt_tokens_total"),
        ("tgi", "tgi_request_input_length_sum"),
    ),
    _signal(
        "requests_running",
        "gauge",
        "requests",
        "requests in the running batch",
        ("vllm", "vllm:num_requests_running"),
        ("sglang", "sglang:num_running_reqs"),
        ("tgi", "tgi_batch_current_size"),
        ("triton", 'nv_trt_llm_request_metrics{request_type="active"}'),
    ),
    _signal(
        "requests_waiting",
        "gauge",
        "requests",
        "requests queued",
        ("vllm", "vllm:num_requests_waiting"),
        ("sglang", "sglang:num_queue_reqs"),
        ("tgi", "tgi_queue_size"),
        ("triton", 'nv_trt_llm_request_metrics{request_type="waiting"}'),
    ),
    _signal(
        "prompt_len",
        "histogram",
        "tokens",
        "prompt tokens per request",
        ("vllm", "vllm:request_prompt_tokens"),
    ),
    _signal(
        "output_len",
        "histogram",
        "tokens",
        "generated tokens per request",
        ("vllm", "vllm:request_generation_tokens"),
    ),
    _signal(
        "ttft",
        "histogram",
        "s",
        "time to first token",
        ("vllm", "vllm:time_to_first_token_seconds"),
        ("sglang", "sglang:time_to_first_token_seconds"),
        ("trtllm", "trtllm_time_to_first_token_seconds"),
    ),
    _signal(
        "tpot",
        "histogram",
        "s",
        "time per output token",
        ("vllm", "vllm:inter_token_latency_seconds"),
        ("vllm", "vllm:time_per_output_token_seconds"),
        ("sglang", "sglang:inter_token_latency_seconds"),
        ("tgi", "tgi_request_mean_time_per_token_duration"),
        ("trtllm", "trtllm_time_per_output_token_seconds"),
    ),
    _signal(
        "e2e",
        "histogram",
        "s",
        "end-to-end request latency",
        ("vllm", "vllm:e2e_request_latency_seconds"),
        ("trtllm", "trtllm_e2e_request_latency_seconds"),
    ),
    _signal(
        "queue_time",
        "histogram",
        "s",
        "time a request waited before it ran",
        ("vllm", "vllm:request_queue_time_seconds"),
        ("trtllm", "trtllm_request_queue_time_seconds"),
    ),
    _signal(
        "kv_cache_usage",
        "gauge",
        "fraction",
        "KV-cache blocks in use",
        ("vllm", "vllm:kv_cache_usage_perc"),
        ("vllm", "vllm:gpu_cache_usage_perc"),
        ("sglang", "sglang:token_usage"),
        ("trtllm", "trtllm_kv_cache_utilization"),
        ("triton", 'nv_trt_llm_kv_cache_block_metrics{kv_cache_block_type="fraction"}'),
    ),
    _signal(
        "preemptions",
        "counter",
        "requests",
        "requests preempted (KV cache full)",
        ("vllm", "vllm:num_preemptions_total"),
    ),
    _signal(
        "prefix_cache_queries",
        "counter",
        "tokens",
        "prompt tokens looked up in the prefix cache",
        ("vllm", "vllm:prefix_cache_queries_total"),
    ),
    _signal(
        "prefix_cache_hits",
        "counter",
        "tokens",
        "prompt tokens served from the prefix cache",
        ("vllm", "vllm:prefix_cache_hits_total"),
    ),
    _signal(
        "chip_utilisation",
        "gauge",
        "fraction",
        "GPU / NeuronCore busy fraction",
        ("dcgm", "DCGM_FI_DEV_GPU_UTIL", 0.01),
        ("neuron-monitor", "neuroncore_utilization_ratio"),
    ),
    _signal("sm_active", "gauge", "fraction", "SM active ratio", ("dcgm", "DCGM_FI_PROF_SM_ACTIVE")),
    _signal(
        "tensor_active",
        "gauge",
        "fraction",
        "tensor pipe active ratio",
        ("dcgm", "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE"),
    ),
    _signal(
        "memory_used",
        "gauge",
        "bytes",
        "accelerator memory used",
        ("dcgm", "DCGM_FI_DEV_FB_USED", 1048576.0),
        ("neuron-monitor", "neuron_runtime_memory_used_bytes"),
    ),
    _signal("power", "gauge", "W", "board power draw", ("dcgm", "DCGM_FI_DEV_POWER_USAGE")),
    _signal(
        "execution_errors",
        "counter",
        "errors",
        "Neuron runtime execution errors",
        ("neuron-monitor", "execution_errors_total"),
    ),
)

# The name prefixes that identify an exporter, to tell "unknown version" from "unrelated metric".
EXPORTERS: dict[str, tuple[str, ...]] = {
    "dcgm": ("DCGM_FI_",),
    "neuron-monitor": ("neuroncore_", "neuron_runtime_", "execution_"),
    "vllm": ("vllm:",),
    "sglang": ("sglang:",),
    "tgi": ("tgi_",),
    "trtllm": ("trtllm_",),
    "triton": ("nv_trt_llm_",),
}

# Series that say which hardware host a sample came from, by exporter (DCGM labels each GPU with
# `Hostname`; neuron-monitor-prometheus.py labels with `instance_id`; Prometheus adds `instance`).
HOST_LABELS = ("Hostname", "instance_id", "instance")
CHIP_LABELS = ("gpu", "neuroncore")


def family_of(name: str) -> tuple[str, tuple[str, str] | None]:
    """A table name split into its metric family and its one label matcher (None without one):
    `nv_trt_llm_request_metrics{request_type="active"}` -> (`nv_trt_llm_request_metrics`,
    (`request_type`, `active`))."""
    family, brace, rest = name.partition("{")
    if not brace:
        return name, None
    label, _, value = rest.rstrip("}").partition("=")
    return family, (label.strip(), value.strip().strip('"'))


def _index() -> dict[str, list[tuple[tuple[str, str] | None, Signal, str, float]]]:
    out: dict[str, list[tuple[tuple[str, str] | None, Signal, str, float]]] = {}
    for signal in SIGNALS:
        for exporter, name, scale in signal.names:
            family, match = family_of(name)
            out.setdefault(family, []).append((match, signal, exporter, scale))
    return out


_BY_NAME = _index()


def signal_of(name: str, labels: tuple[tuple[str, str], ...] = ()) -> tuple[Signal, str, float] | None:
    """The signal, exporter and scale a metric family name carries (with these labels, for a family
    whose members mean different things), or None when Silica does not read it."""
    have = dict(labels)
    for match, signal, exporter, scale in _BY_NAME.get(name, ()):
        if match is None or have.get(match[0]) == match[1]:
            return signal, exporter, scale
    return None


def known_names() -> frozenset[str]:
    """Every sample name Silica reads, with the `_bucket`/`_sum`/`_count` samples of the histograms."""
    out: set[str] = set()
    for signal in SIGNALS:
        for _exporter, name, _scale in signal.names:
            family, _ = family_of(name)
            if signal.kind == "histogram":
                out.update({f"{family}_bucket", f"{family}_sum", f"{family}_count"})
            else:
                out.add(family)
    return frozenset(out)

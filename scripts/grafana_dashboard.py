"""Write src/silica/data/grafana/silica-monitor.json: plan against actual over DCGM, neuron-monitor and
engine metrics, for Grafana (dashboard JSON model, schemaVersion 39).

    python scripts/grafana_dashboard.py          # rewrites the file; tests/monitor/test_exporter.py
                                                 # validates it against Grafana's published schema
Every metric a query names is one that `silica monitor exporter` serves (silica_plan_*) or one of the
exporter names in silica.monitor.signals, each documented by its exporter.
"""

from __future__ import annotations

import json
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "src" / "silica" / "data" / "grafana" / "silica-monitor.json"
DS = {"type": "prometheus", "uid": "${datasource}"}
D = 'deployment=~"$deployment"'
GPU_HOSTS = f"count by (deployment) (count by (deployment, Hostname) (DCGM_FI_DEV_GPU_UTIL{{{D}}}))"
NEURON_HOSTS = (
    f"count by (deployment) (count by (deployment, instance_id) (neuroncore_utilization_ratio{{{D}}}))"
)


def target(ref: str, expr: str, legend: str) -> dict[str, object]:
    return {"refId": ref, "datasource": DS, "expr": expr, "legendFormat": legend}


def panel(
    pid: int, title: str, unit: str, targets: list[dict[str, object]], x: int, y: int, description: str
) -> dict[str, object]:
    return {
        "id": pid,
        "type": "timeseries",
        "title": title,
        "description": description,
        "datasource": DS,
        "gridPos": {"h": 8, "w": 12, "x": x, "y": y},
        "targets": targets,
        "fieldConfig": {"defaults": {"unit": unit}, "overrides": []},
        "options": {"legend": {"displayMode": "list", "placement": "bottom", "showLegend": True}},
    }


def quantile(q: str, family: str) -> str:
    return f"histogram_quantile({q}, sum by (le, deployment) (rate({family}_bucket{{{D}}}[5m])))"


def dashboard() -> dict[str, object]:
    plan_per_instance = f'silica_plan_output_tokens_per_second_per_instance{{bound="expected",{D}}}'
    panels = [
        panel(
            1,
            "Output tokens/s: actual vs planned capacity",
            "short",
            [
                target(
                    "A",
                    f"sum by (deployment) (rate(vllm:generation_tokens_total{{{D}}}[5m]))",
                    "{{deployment}} vLLM actual",
                ),
                target(
                    "B",
                    f"sum by (deployment) (rate(sglang:generation_tokens_total{{{D}}}[5m]))",
                    "{{deployment}} SGLang actual",
                ),
                target(
                    "C",
                    f"sum by (deployment) (rate(tgi_request_generated_tokens_sum{{{D}}}[5m]))",
                    "{{deployment}} TGI actual",
                ),
                target(
                    "D",
                    f"{plan_per_instance} * on (deployment) group_left {GPU_HOSTS}",
                    "{{deployment}} planned capacity (GPU hosts seen)",
                ),
                target(
                    "E",
                    f"{plan_per_instance} * on (deployment) group_left {NEURON_HOSTS}",
                    "{{deployment}} planned capacity (Neuron hosts seen)",
                ),
            ],
            0,
            0,
            "Delivered output tokens/s per deployment against Silica's predicted tokens/s for the hosts that report hardware metrics.",
        ),
        panel(
            2,
            "TPOT p50 / p99: actual vs plan band",
            "s",
            [
                target("A", quantile("0.5", "vllm:inter_token_latency_seconds"), "{{deployment}} p50"),
                target("B", quantile("0.99", "vllm:inter_token_latency_seconds"), "{{deployment}} p99"),
                target(
                    "C", quantile("0.5", "sglang:inter_token_latency_seconds"), "{{deployment}} SGLang p50"
                ),
                target(
                    "D", quantile("0.5", "tgi_request_mean_time_per_token_duration"), "{{deployment}} TGI p50"
                ),
                target("E", f"silica_plan_tpot_seconds{{{D}}}", "{{deployment}} plan {{bound}}"),
            ],
            12,
            0,
            "Time per output token from the engines' histograms against Silica's prediction and its band.",
        ),
        panel(
            3,
            "TTFT p50 / p99: actual vs plan band",
            "s",
            [
                target("A", quantile("0.5", "vllm:time_to_first_token_seconds"), "{{deployment}} p50"),
                target("B", quantile("0.99", "vllm:time_to_first_token_seconds"), "{{deployment}} p99"),
                target(
                    "C", quantile("0.5", "sglang:time_to_first_token_seconds"), "{{deployment}} SGLang p50"
                ),
                target("D", f"silica_plan_ttft_seconds{{{D}}}", "{{deployment}} plan {{bound}}"),
            ],
            0,
            8,
            "Time to first token (TGI exposes no TTFT histogram).",
        ),
        panel(
            4,
            "Chip utilisation",
            "percentunit",
            [
                target(
                    "A", f"avg by (deployment) (DCGM_FI_DEV_GPU_UTIL{{{D}}}) / 100", "{{deployment}} GPU util"
                ),
                target(
                    "B", f"avg by (deployment) (DCGM_FI_PROF_SM_ACTIVE{{{D}}})", "{{deployment}} SM active"
                ),
                target(
                    "C",
                    f"avg by (deployment) (DCGM_FI_PROF_PIPE_TENSOR_ACTIVE{{{D}}})",
                    "{{deployment}} tensor active",
                ),
                target(
                    "D",
                    f"avg by (deployment) (neuroncore_utilization_ratio{{{D}}})",
                    "{{deployment}} NeuronCore util",
                ),
            ],
            12,
            8,
            "DCGM exporter (GPU_UTIL in percent, PROF ratios when enabled) and neuron-monitor-prometheus.py.",
        ),
        panel(
            5,
            "Cost per 1M output tokens: actual vs plan",
            "currencyUSD",
            [
                target(
                    "A",
                    f"(silica_plan_cost_usd_per_hour{{{D}}} / on (deployment) silica_plan_instances{{{D}}}) * on (deployment) group_left {GPU_HOSTS} / 3600 / on (deployment) sum by (deployment) (rate(vllm:generation_tokens_total{{{D}}}[5m])) * 1e6",
                    "{{deployment}} actual (GPU)",
                ),
                target(
                    "B",
                    f"(silica_plan_cost_usd_per_hour{{{D}}} / on (deployment) silica_plan_instances{{{D}}}) * on (deployment) group_left {NEURON_HOSTS} / 3600 / on (deployment) sum by (deployment) (rate(vllm:generation_tokens_total{{{D}}}[5m])) * 1e6",
                    "{{deployment}} actual (Neuron)",
                ),
                target(
                    "C", f"silica_plan_usd_per_1m_output_tokens{{{D}}}", "{{deployment}} plan at full batch"
                ),
            ],
            0,
            16,
            "Instance price (from the plan) x hosts seen / tokens generated, against the plan's $/1M at full batch.",
        ),
        panel(
            6,
            "Accelerator memory used",
            "bytes",
            [
                target(
                    "A",
                    f"sum by (deployment) (DCGM_FI_DEV_FB_USED{{{D}}}) * 1048576",
                    "{{deployment}} GPU framebuffer",
                ),
                target(
                    "B",
                    f'sum by (deployment) (neuron_runtime_memory_used_bytes{{memory_location="neuron_device",{D}}})',
                    "{{deployment}} Neuron device",
                ),
            ],
            12,
            16,
            "DCGM reports MiB; neuron-monitor reports bytes.",
        ),
        panel(
            7,
            "Queue and batch",
            "short",
            [
                target(
                    "A",
                    f"sum by (deployment) (vllm:num_requests_running{{{D}}})",
                    "{{deployment}} vLLM running",
                ),
                target(
                    "B",
                    f"sum by (deployment) (vllm:num_requests_waiting{{{D}}})",
                    "{{deployment}} vLLM waiting",
                ),
                target(
                    "C", f"sum by (deployment) (sglang:num_queue_reqs{{{D}}})", "{{deployment}} SGLang queued"
                ),
                target("D", f"sum by (deployment) (tgi_queue_size{{{D}}})", "{{deployment}} TGI queued"),
            ],
            0,
            24,
            "Requests running and waiting in the engines.",
        ),
        panel(
            8,
            "Power and Neuron execution errors",
            "short",
            [
                target(
                    "A", f"sum by (deployment) (DCGM_FI_DEV_POWER_USAGE{{{D}}})", "{{deployment}} GPU power W"
                ),
                target(
                    "B",
                    f"sum by (deployment, error_type) (rate(execution_errors_total{{{D}}}[5m]))",
                    "{{deployment}} Neuron {{error_type}} errors/s",
                ),
            ],
            12,
            24,
            "Board power (DCGM) and Neuron runtime execution errors (neuron-monitor).",
        ),
    ]
    return {
        "uid": "silica-monitor",
        "title": "Silica: plan against production",
        "description": "Silica's plan (silica monitor exporter) overlaid on DCGM exporter, neuron-monitor and vLLM/SGLang/TGI metrics.",
        "tags": ["silica", "llm", "capacity"],
        "timezone": "utc",
        "editable": True,
        "graphTooltip": 1,
        "time": {"from": "now-6h", "to": "now"},
        "refresh": "1m",
        "schemaVersion": 39,
        "version": 1,
        "templating": {
            "list": [
                {"type": "datasource", "name": "datasource", "label": "Prometheus", "query": "prometheus"},
                {
                    "type": "query",
                    "name": "deployment",
                    "label": "Deployment",
                    "datasource": DS,
                    "query": "label_values(silica_plan_info, deployment)",
                    "multi": True,
                    "includeAll": True,
                    "allValue": ".*",
                    "refresh": 2,
                },
            ]
        },
        "annotations": {"list": []},
        "panels": panels,
    }


def main() -> None:
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(dashboard(), indent=2) + "\n", encoding="utf-8")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()

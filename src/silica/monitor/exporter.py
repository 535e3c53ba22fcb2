"""Silica's plan as Prometheus metrics, so a team's dashboards overlay plan and actual.

Served with prometheus_client (a custom collector on its own registry, so only plan metrics appear),
on 127.0.0.1 by default: the plan holds prices and sizes a team may not want on the network. Names
follow Prometheus conventions (base units: seconds, `_per_second`; prometheus.io/docs/practices/naming).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from silica.cost import usd_per_hour
from silica.monitor.plan import Planned

__all__ = ["EXPORTED", "PlanCollector", "exposition", "registry", "serve"]

LABELS = ["deployment", "instance_type", "model"]
BOUNDS = ["deployment", "instance_type", "model", "bound"]

# name -> (help, label names): the test checks the Grafana dashboard against this list.
EXPORTED: dict[str, tuple[str, list[str]]] = {
    "silica_plan_info": ("The plan a deployment is compared with (value 1).", [*LABELS, "family", "source"]),
    "silica_plan_instances": ("Instances the plan's figures are for.", LABELS),
    "silica_plan_output_tokens_per_second": (
        "Predicted output tokens/s of the planned instances at full batch; bound=expected|low|high.",
        BOUNDS,
    ),
    "silica_plan_output_tokens_per_second_per_instance": (
        "Predicted output tokens/s of one instance; bound=expected|low|high.",
        BOUNDS,
    ),
    "silica_plan_ttft_seconds": ("Predicted time to first token; bound=expected|low|high.", BOUNDS),
    "silica_plan_tpot_seconds": ("Predicted time per output token; bound=expected|low|high.", BOUNDS),
    "silica_plan_cost_usd_per_hour": ("Price of the planned instances per hour.", LABELS),
    "silica_plan_usd_per_1m_output_tokens": ("Predicted cost per 1M output tokens at full batch.", LABELS),
}


class PlanCollector:
    """A prometheus_client collector that reports the planned figures on every scrape."""

    def __init__(self, plans: Sequence[Planned]) -> None:
        self.plans = tuple(plans)

    def describe(self) -> list[Any]:
        return []

    def collect(self) -> Iterator[Any]:
        from prometheus_client.core import GaugeMetricFamily

        fams = {
            name: GaugeMetricFamily(name, text, labels=labels) for name, (text, labels) in EXPORTED.items()
        }
        for p in self.plans:
            base = [p.name, p.instance, p.model]
            fams["silica_plan_info"].add_metric([*base, p.family, p.source], 1.0)
            fams["silica_plan_instances"].add_metric(base, float(p.count))
            per = 1.0 / p.count
            for bound, tps, ttft, tpot in (
                ("expected", p.output_tokens_per_s, p.ttft_ms, p.tpot_ms),
                ("low", p.output_tokens_per_s_low, p.ttft_ms_low, p.tpot_ms_low),
                ("high", p.output_tokens_per_s_high, p.ttft_ms_high, p.tpot_ms_high),
            ):
                if tps is not None:
                    fams["silica_plan_output_tokens_per_second"].add_metric([*base, bound], tps)
                    fams["silica_plan_output_tokens_per_second_per_instance"].add_metric(
                        [*base, bound], tps * per
                    )
                if ttft is not None:
                    fams["silica_plan_ttft_seconds"].add_metric([*base, bound], ttft / 1000.0)
                if tpot is not None:
                    fams["silica_plan_tpot_seconds"].add_metric([*base, bound], tpot / 1000.0)
            cost = usd_per_hour(p.usd_per_instance_hour, p.count)
            if cost is not None:
                fams["silica_plan_cost_usd_per_hour"].add_metric(base, cost)
            if p.usd_per_1m_output_tokens is not None:
                fams["silica_plan_usd_per_1m_output_tokens"].add_metric(base, p.usd_per_1m_output_tokens)
        yield from fams.values()


def registry(plans: Sequence[Planned]) -> Any:
    from prometheus_client import CollectorRegistry

    reg = CollectorRegistry(auto_describe=False)
    reg.register(PlanCollector(plans))
    return reg


def exposition(plans: Sequence[Planned]) -> str:
    """The metrics as Prometheus text, as a scrape would see them."""
    from prometheus_client import generate_latest

    return str(generate_latest(registry(plans)).decode("utf-8"))


def serve(plans: Sequence[Planned], host: str = "127.0.0.1", port: int = 9464) -> Any:
    """Start serving /metrics in a background thread; returns (server, thread) from prometheus_client."""
    from prometheus_client import start_http_server

    return start_http_server(port, addr=host, registry=registry(plans))

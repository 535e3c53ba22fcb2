"""`silica monitor report|exporter`: production telemetry against the plan, and the plan as metrics."""

from __future__ import annotations

import re
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import typer

from silica.cli._common import handle_errors, print_json

_PLAN = typer.Option(
    ...,
    "--plan",
    help="A saved estimate/compare/advise/fleet plan JSON result, as PATH or DEPLOYMENT=PATH (repeatable).",
)
_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, "w": 604800.0}


def parse_duration(value: str, option: str) -> float:
    """`90`, `90s`, `5m`, `1h`, `2d`, `1w` -> seconds."""
    from silica.errors import InputError

    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smhdw]?)\s*", value)
    if not m or float(m.group(1)) <= 0:
        raise InputError(
            f"{option} {value!r} is not a duration.", f"write e.g. {option} 1h (s, m, h, d or w)."
        )
    return float(m.group(1)) * _UNITS[m.group(2) or "s"]


def parse_time(value: str, option: str, now: float) -> float:
    """ISO 8601 (`2026-11-30T08:00:00Z`), epoch seconds, `now` or `now-6h`."""
    from silica.errors import InputError
    from silica.limits import check

    text = value.strip()
    if text == "now":
        return now
    if text.startswith("now-"):
        return check("timestamp_s", now - parse_duration(text[4:], option), option)
    try:
        return check("timestamp_s", float(text), option)  # inf, -1e308, milliseconds: one line
    except ValueError:
        pass
    try:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise InputError(
            f"{option} {value!r} is not a time.",
            "write ISO 8601 (2026-11-30T08:00:00Z), epoch seconds or now-6h.",
        ) from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)  # telemetry is kept in UTC; say so in the help
    return check("timestamp_s", parsed.timestamp(), option)


def _plans(values: list[str]) -> list[Any]:
    from silica.monitor import load_plan, parse_plan_arg

    out = []
    for value in values:
        name, path = parse_plan_arg(value)
        out.extend(load_plan(path, name))
    return out


def register(app: typer.Typer) -> None:
    monitor_app = typer.Typer(
        name="monitor",
        help="Production against plan: DCGM, neuron-monitor and engine metrics, from files or Prometheus.",
        no_args_is_help=True,
    )

    @monitor_app.command("report")
    @handle_errors
    def report_cmd(
        plan: list[str] = _PLAN,
        sources: list[str] = typer.Option(
            [],
            "--from",
            help="Telemetry file (OpenMetrics/Prometheus text with timestamps, or neuron-monitor JSON lines), as PATH or DEPLOYMENT=PATH (repeatable).",
        ),
        prometheus: str | None = typer.Option(
            None, "--prometheus", help="Query this Prometheus server, e.g. http://127.0.0.1:9090."
        ),
        since: str | None = typer.Option(
            None,
            "--since",
            help="Start (UTC): ISO 8601, epoch seconds or now-6h. Default: first sample (files), now-1h (Prometheus).",
        ),
        until: str | None = typer.Option(
            None, "--until", help="End (UTC), same forms. Default: last sample (files), now (Prometheus)."
        ),
        window: str = typer.Option(
            "1h", "--window", help="Length of each window checked for drift and stored."
        ),
        step: str | None = typer.Option(None, "--step", help="Chart resolution (default: about 100 points)."),
        label: str = typer.Option(
            "deployment", "--label", help="The series label whose value names the deployment."
        ),
        target_utilisation: float = typer.Option(
            0.8, "--target-utilisation", help="Share of planned capacity to size for when right-sizing."
        ),
        ttft_slo_ms: float | None = typer.Option(None, "--ttft-slo-ms", help="TTFT SLO checked against p99."),
        tpot_slo_ms: float | None = typer.Option(None, "--tpot-slo-ms", help="TPOT SLO checked against p99."),
        timeout: float = typer.Option(10.0, "--timeout", help="Seconds to wait for Prometheus."),
        as_json: bool = typer.Option(False, "--json", help="Print the library result as JSON."),
        html: Path | None = typer.Option(
            None, "--html", help="Write a self-contained HTML report (opens offline)."
        ),
        md: Path | None = typer.Option(None, "--md", help="Write a Markdown report."),
        no_store: bool = typer.Option(
            False, "--no-store", help="Do not keep the window summaries in the store."
        ),
    ) -> None:
        """Compare what production delivered with the plan: tokens/s, utilisation, TTFT/TPOT, cost, drift, advice."""
        from silica.errors import InputError
        from silica.monitor import build_report, merge, parse_plan_arg, query_prometheus, read_file

        if bool(sources) == bool(prometheus):
            raise InputError(
                "Give telemetry either with --from FILE or with --prometheus URL.",
                "pass exactly one of them.",
            )
        if not timeout > 0:
            raise InputError("--timeout must be positive.", "for example --timeout 10.")
        now = time.time()
        t0 = parse_time(since, "--since", now) if since else None
        t1 = parse_time(until, "--until", now) if until else None
        plans = _plans(plan)
        inputs = tuple(parse_plan_arg(v)[1] for v in [*plan, *sources])
        reports = _targets(html, md, inputs)
        if prometheus:
            t1 = now if t1 is None else t1
            t0 = t1 - 3600.0 if t0 is None else t0
            tel = query_prometheus(prometheus, t0, t1, timeout_s=timeout)
        else:
            parts = []
            for value in sources:
                name, path = parse_plan_arg(value)
                parts.append(read_file(path, deployment=name, start=t0))
            tel = merge(parts)
            t0 = tel.start if t0 is None else t0
            t1 = tel.end if t1 is None else t1
        assert t0 is not None and t1 is not None
        result = build_report(
            tel,
            plans,
            since=t0,
            until=t1,
            window_s=parse_duration(window, "--window"),
            step_s=parse_duration(step, "--step") if step else None,
            label=label,
            target_utilisation=target_utilisation,
            ttft_slo_ms=ttft_slo_ms,
            tpot_slo_ms=tpot_slo_ms,
        )
        _write_reports(result, reports)
        if not no_store:
            _store(result)
        if as_json:
            print_json(result)
        else:
            _print(result)

    @monitor_app.command("exporter")
    @handle_errors
    def exporter_cmd(
        plan: list[str] = _PLAN,
        host: str = typer.Option("127.0.0.1", "--host", help="Address to listen on (loopback by default)."),
        port: int = typer.Option(9464, "--port", help="Port for /metrics."),
        once: bool = typer.Option(False, "--once", help="Print the metrics once (Prometheus text) and exit."),
    ) -> None:
        """Serve the plan as Prometheus metrics (predicted tokens/s, TTFT, TPOT, band edges, cost per hour)."""
        from silica.errors import InputError
        from silica.monitor.exporter import exposition, serve

        plans = _plans(plan)
        if once:
            sys.stdout.write(exposition(plans))
            return
        if not 0 < port < 65536:
            raise InputError(f"--port {port} is not a TCP port.", "pick one in 1-65535.")
        try:
            server, _thread = serve(plans, host, port)
        except OSError as err:
            raise InputError(
                f"Cannot listen on {host}:{port}: {err.strerror or err}.", "pick a free --port."
            ) from None
        sys.stderr.write(
            f"serving the plan of {len(plans)} deployment(s) on http://{host}:{port}/metrics (Ctrl-C stops)\n"
        )
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            server.shutdown()
            server.server_close()

    @monitor_app.command(
        "rules",
        epilog="Examples:\n\n  silica monitor rules --plan plan.json --out silica-rules.yml\n\n"
        "  silica monitor rules --plan plan.json --ttft-slo-ms 800 --tpot-slo-ms 60 | promtool check rules /dev/stdin",
    )
    @handle_errors
    def rules_cmd(
        plan: list[str] = _PLAN,
        out: Path | None = typer.Option(None, "--out", help="Write the rule file here (default: stdout)."),
        ttft_slo_ms: float | None = typer.Option(
            None, "--ttft-slo-ms", help="Alert when TTFT p99 is above it."
        ),
        tpot_slo_ms: float | None = typer.Option(
            None, "--tpot-slo-ms", help="Alert when TPOT p99 is above it."
        ),
    ) -> None:
        """Prometheus recording and alerting rules for the planned deployments (check with promtool)."""
        from silica._files import write_text
        from silica.monitor.rules import prometheus_rules

        text = prometheus_rules(_plans(plan), ttft_slo_ms=ttft_slo_ms, tpot_slo_ms=tpot_slo_ms)
        if out is None:
            sys.stdout.write(text)
            return
        write_text(out, text)
        typer.echo(f"wrote {out}")

    @monitor_app.command(
        "dashboard",
        epilog="Examples:\n\n  silica monitor dashboard --out silica-dashboard.json\n\n"
        "  silica monitor dashboard > dashboard.json   # import it in Grafana",
    )
    @handle_errors
    def dashboard_cmd(
        out: Path | None = typer.Option(
            None, "--out", help="Write the dashboard JSON here (default: stdout)."
        ),
    ) -> None:
        """A Grafana dashboard: the plan overlays plus vLLM's and DCGM's signals (import it in Grafana)."""
        import json

        from silica._files import write_text
        from silica.monitor.dashboard import engine_dashboard

        text = json.dumps(engine_dashboard(), indent=2) + "\n"
        if out is None:
            sys.stdout.write(text)
            return
        write_text(out, text)
        typer.echo(f"wrote {out}")

    app.add_typer(monitor_app)


def _targets(html: Path | None, md: Path | None, inputs: tuple[Path, ...]) -> list[tuple[Path, str]]:
    from silica._files import check_outputs

    # Never over an input, nor one report over the other (`/dev/null` twice is fine: written in place).
    check_outputs([("--html", html), ("--md", md)], inputs=inputs)
    return [(path, kind) for path, kind in ((html, "html"), (md, "md")) if path is not None]


def _write_reports(result: Any, targets: list[tuple[Path, str]]) -> None:
    from silica._files import write_text
    from silica.report.monitor import monitor_html, monitor_markdown

    for path, kind in targets:
        write_text(path, monitor_html(result) if kind == "html" else monitor_markdown(result))
        sys.stderr.write(f"wrote {path}\n")


def _store(result: Any) -> None:
    from silica.cli._store import store_records

    store_records([("monitor", name, payload) for name, payload in result.summaries()])


def _print(result: Any) -> None:
    from rich.table import Table

    from silica.cli._common import console

    table = Table(title="Production against plan")
    for col in (
        "deployment",
        "verdict",
        "tokens/s",
        "util",
        "TTFT p50/p99 ms",
        "TPOT p50/p99 ms",
        "$/1M actual",
        "$/1M plan",
    ):
        table.add_column(col)
    for d in result.deployments:
        o = d.overall
        table.add_row(
            d.name,
            d.verdict,
            _f(o.output_tokens_per_s, ",.0f"),
            _f(o.utilisation, ".0%"),
            _lat(o.ttft),
            _lat(o.tpot),
            _f(o.usd_per_1m_output_tokens, ",.3f"),
            _f(d.plan.usd_per_1m_output_tokens, ",.3f"),
        )
    out = console()
    out.print(table)
    for d in result.deployments:
        for drift in d.drift:
            out.print(f"drift: {drift.describe()}")
        for line in (*d.gaps, *d.resets, *d.missing):
            out.print(f"gap: {line}")
        for line in d.ttft_notes:
            out.print(f"ttft: {line}")
        measured = d.overall.chip_j_per_output_token
        if measured is not None:
            planned = d.plan.chip_j_per_output_token
            versus = (
                f" vs plan {planned:.3f} (chips only)"
                if planned is not None
                else " (the plan has no energy figure)"
            )
            out.print(
                f"energy: {d.name} {measured:.3f} J per output token measured (chip power "
                f"{d.overall.chip_power_w:,.0f} W / {d.overall.output_tokens_per_s:,.0f} tokens/s){versus}"
            )
    for a in result.advice:
        out.print(f"advice ({a.kind}): {a.text}")
    for note in result.notes:
        out.print(f"note: {note}")


def _f(value: float | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def _lat(latency: Any) -> str:
    if latency is None:
        return "-"
    return f"{_f(latency.p50_ms, '.0f')}/{_f(latency.p99_ms, '.0f')}"

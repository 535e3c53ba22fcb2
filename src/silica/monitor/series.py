"""Telemetry as plain time series, and the readers that build it from files.

Two file formats, each read as documented by its producer:
- Prometheus text exposition or OpenMetrics with a timestamp on every sample (what
  `promtool tsdb dump`, a recording scraper or an OpenMetrics backfill file holds), parsed with
  prometheus_client's own parsers, never a hand-written one;
- neuron-monitor's JSON lines (one complete report per line, aws-neuron-sdk neuron-monitor user guide),
  turned into the series that its companion script neuron-monitor-prometheus.py would export, so the
  analysis reads one set of names whichever way the data came.

Problems that do not stop the analysis (a file cut mid-line, samples out of order, a counter reset) are
kept as notes and printed in the report; problems that would make a figure wrong stop with one line.
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from silica.errors import DataFileError
from silica.monitor.signals import EXPORTERS, known_names

__all__ = ["Series", "Telemetry", "merge", "read_exposition", "read_file", "read_neuron_monitor"]

Labels = tuple[tuple[str, str], ...]


@dataclass(frozen=True, slots=True)
class Series:
    """One metric sample name with one label set: timestamps (epoch seconds, increasing) and values."""

    name: str
    labels: Labels
    times: tuple[float, ...]
    values: tuple[float, ...]

    def label(self, key: str) -> str | None:
        return dict(self.labels).get(key)


@dataclass(frozen=True)
class Telemetry:
    """Every series read from one or more sources, and what was odd about them."""

    series: tuple[Series, ...]
    sources: tuple[str, ...]
    notes: tuple[str, ...] = field(default=())

    @property
    def start(self) -> float | None:
        return min((s.times[0] for s in self.series if s.times), default=None)

    @property
    def end(self) -> float | None:
        return max((s.times[-1] for s in self.series if s.times), default=None)


def merge(parts: Iterable[Telemetry]) -> Telemetry:
    parts = list(parts)
    return Telemetry(
        tuple(s for p in parts for s in p.series),
        tuple(src for p in parts for src in p.sources),
        tuple(n for p in parts for n in p.notes),
    )


def read_file(path: Path, *, deployment: str | None = None, start: float | None = None) -> Telemetry:
    """Read one telemetry file, choosing the reader from its content (JSON lines or exposition text).

    `deployment` labels every series that has no `deployment` label (one file per deployment);
    `start` is the epoch time of the first neuron-monitor report (its JSON carries periods, not times).
    """
    from silica._files import read_bytes

    # Size cap while reading, directories and devices refused by name.
    raw = read_bytes(path, "telemetry file", "a telemetry file (--from)")
    if b"\0" in raw[:4096]:
        raise DataFileError(
            f"{path} is a binary file, not telemetry.",
            "pass Prometheus/OpenMetrics text or neuron-monitor JSON lines.",
        )
    text = raw.decode("utf-8", errors="replace")
    try:
        if text.lstrip().startswith("{"):
            tel = read_neuron_monitor(text, source=str(path), start=start)
        else:
            tel = read_exposition(text, source=str(path))
    except RecursionError:
        raise DataFileError(
            f"{path}: a JSON line nests deeper than neuron-monitor ever writes.",
            "pass neuron-monitor's JSON lines as it wrote them.",
        ) from None
    return _with_deployment(tel, deployment) if deployment else tel


def read_exposition(text: str, *, source: str) -> Telemetry:
    """Prometheus text format or OpenMetrics (ends with `# EOF`), every sample with a timestamp.

    Both are parsed with prometheus_client's text-format parser. Its OpenMetrics parser (0.26) keeps
    only the first sample of each timestamp in a histogram that holds several timestamps, which is
    every recorded histogram, so it cannot read a replay; the text-format parser reads the same lines
    but takes timestamps as milliseconds, where OpenMetrics writes seconds, so those are scaled back.
    """
    from prometheus_client.parser import text_string_to_metric_families as parse

    from silica.limits import check

    openmetrics = text.rstrip().endswith("# EOF")
    ts_scale = 1000.0 if openmetrics else 1.0
    known = known_names()
    points: dict[tuple[str, Labels], list[tuple[float, float]]] = defaultdict(list)
    unknown: set[str] = set()
    try:
        for family in parse(text):
            for sample in family.samples:
                if sample.name not in known:
                    if _exporter_of(sample.name) and not sample.name.endswith("_created"):
                        unknown.add(sample.name)
                    continue
                if sample.timestamp is None:
                    raise DataFileError(
                        f"{source}: sample {sample.name} has no timestamp, so its time is unknown.",
                        "record samples with timestamps (OpenMetrics, or `promtool tsdb dump`), "
                        "or query the Prometheus server with --prometheus.",
                    )
                labels = tuple(sorted((str(k), str(v)) for k, v in sample.labels.items()))
                # A timestamp in the other unit (milliseconds in OpenMetrics, seconds in the text
                # format) lands 1000x off: one line naming the sample, not a window of years.
                at = check("timestamp_s", float(sample.timestamp) * ts_scale, f"{source}: {sample.name} time")
                points[(sample.name, labels)].append((at, float(sample.value)))
    except DataFileError:
        raise
    except (ValueError, TypeError, KeyError, IndexError) as err:
        kind = "OpenMetrics" if openmetrics else "Prometheus text exposition"
        raise DataFileError(
            f"{source} is not valid {kind}: {err}.",
            "pass the file as an exporter or `promtool tsdb dump` wrote it.",
        ) from None
    return _build(points, source, _unknown_note(source, unknown, bool(points)))


def read_neuron_monitor(text: str, *, source: str, start: float | None) -> Telemetry:
    """neuron-monitor JSON lines -> the series neuron-monitor-prometheus.py exports.

    Each report holds the metric groups of one period ("period": seconds actually captured); reports
    carry no wall-clock time, so report i is placed at `start` plus the periods of reports 0..i.
    """
    if start is None:
        raise DataFileError(
            f"{source} is neuron-monitor JSON, whose reports carry periods but no clock time.",
            "give the time of its first report with --since (ISO 8601 or epoch seconds).",
        )
    notes: list[str] = []
    lines = text.split("\n")
    complete = text.endswith("\n")
    points: dict[tuple[str, Labels], list[tuple[float, float]]] = defaultdict(list)
    errors: dict[Labels, float] = defaultdict(float)
    t = start
    from silica._files import json_decoder

    decoder = json_decoder(source)  # huge integers, NaN and overflowing floats: one line
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            report = decoder.decode(line)
        except json.JSONDecodeError:
            if number == len(lines) and not complete:
                notes.append(f"{source}: line {number} is cut mid-line (the file ends inside it); ignored.")
                break
            raise DataFileError(
                f"{source}: line {number} is not JSON.",
                "pass neuron-monitor's output as it printed it: one JSON report per line.",
            ) from None
        if not isinstance(report, dict) or "neuron_runtime_data" not in report:
            raise DataFileError(
                f"{source}: line {number} has no 'neuron_runtime_data': not neuron-monitor output, "
                "or a version Silica does not know.",
                "pass the JSON that `neuron-monitor` prints (aws-neuron-tools 2.x).",
            )
        t += _period(report, source, number)
        info = report.get("instance_info") or {}
        host = (
            ("instance_id", str(info.get("instance_id", ""))),
            ("instance_type", str(info.get("instance_type", ""))),
        )
        for runtime in report.get("neuron_runtime_data") or []:
            rep = runtime.get("report") or {}
            tag = (("runtime_tag", str(runtime.get("neuron_runtime_tag", runtime.get("pid", "")))),)
            cores = (rep.get("neuroncore_counters") or {}).get("neuroncores_in_use") or {}
            for core, data in cores.items():
                util = _number(data.get("neuroncore_utilization"), source, number)
                if util is not None:
                    labels = tuple(sorted((*host, *tag, ("neuroncore", str(core)))))
                    points[("neuroncore_utilization_ratio", labels)].append((t, util / 100.0))
            used = (rep.get("memory_used") or {}).get("neuron_runtime_used_bytes") or {}
            device = _number(used.get("neuron_device"), source, number)
            if device is not None:
                labels = tuple(sorted((*host, *tag, ("memory_location", "neuron_device"))))
                points[("neuron_runtime_memory_used_bytes", labels)].append((t, device))
            summary = (rep.get("execution_stats") or {}).get("error_summary") or {}
            for kind, count in summary.items():
                value = _number(count, source, number)
                labels = tuple(sorted((*host, *tag, ("error_type", str(kind)))))
                errors[labels] += value or 0.0  # per-period counts; the exported counter is their sum
                points[("execution_errors_total", labels)].append((t, errors[labels]))
    if not points:
        raise DataFileError(
            f"{source} holds no NeuronCore, memory or execution data.",
            "run neuron-monitor with the neuroncore_counters, memory_used and execution_stats groups.",
        )
    return _build(points, source, notes)


def _period(report: Mapping[str, object], source: str, number: int) -> float:
    for runtime in report.get("neuron_runtime_data") or []:  # type: ignore[attr-defined]
        for group in (runtime.get("report") or {}).values():
            if isinstance(group, dict) and isinstance(group.get("period"), int | float):
                return float(group["period"])
    for group in (report.get("system_data") or {}).values():  # type: ignore[attr-defined]
        if isinstance(group, dict) and isinstance(group.get("period"), int | float):
            return float(group["period"])
    raise DataFileError(
        f"{source}: report on line {number} has no metric group with a 'period'.",
        "enable at least the neuroncore_counters group in neuron-monitor's configuration.",
    )


def _number(value: object, source: str, number: int) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise DataFileError(
            f"{source}: line {number} has a non-numeric value {value!r}.", "fix or drop the line."
        )
    return float(value)


def _exporter_of(name: str) -> str | None:
    for exporter, prefixes in EXPORTERS.items():
        if name.startswith(prefixes):
            return exporter
    return None


def _unknown_note(source: str, unknown: set[str], any_known: bool) -> list[str]:
    if not unknown:
        return []
    exporters = sorted({_exporter_of(n) or "" for n in unknown})
    sample = ", ".join(sorted(unknown)[:4]) + (" ..." if len(unknown) > 4 else "")
    if not any_known:
        raise DataFileError(
            f"{source}: metrics from an unknown {'/'.join(exporters)} version ({sample}); "
            "none of them is a name Silica reads.",
            "see docs/monitor.md for the metric names read per exporter, or upgrade Silica.",
        )
    return [f"{source}: {len(unknown)} {'/'.join(exporters)} metrics not read by Silica ({sample})."]


def _build(
    points: Mapping[tuple[str, Labels], list[tuple[float, float]]], source: str, notes: list[str]
) -> Telemetry:
    series: list[Series] = []
    notes = list(notes)
    for (name, labels), pts in points.items():
        ordered = sorted(pts, key=lambda p: p[0])
        if ordered != pts:
            notes.append(
                f"{source}: {name}{_fmt_labels(labels)} has samples out of time order "
                "(clock skew between writers?); sorted by timestamp."
            )
        times: list[float] = []
        values: list[float] = []
        for ts, value in ordered:
            if not math.isfinite(value):
                continue  # NaN marks a stale series in Prometheus; it is no measurement
            if times and ts == times[-1]:
                if value != values[-1]:
                    notes.append(f"{source}: {name} has two values at one timestamp; kept the first.")
                continue
            times.append(ts)
            values.append(value)
        if times:
            series.append(Series(name, labels, tuple(times), tuple(values)))
    if not series:
        raise DataFileError(
            f"{source} holds no metric that Silica reads.",
            "pass DCGM exporter, neuron-monitor or vLLM/SGLang/TGI metrics (see docs/monitor.md).",
        )
    return Telemetry(tuple(sorted(series, key=lambda s: (s.name, s.labels))), (source,), tuple(notes))


def _with_deployment(tel: Telemetry, deployment: str) -> Telemetry:
    out = []
    for s in tel.series:
        if s.label("deployment") is None:
            s = Series(s.name, tuple(sorted((*s.labels, ("deployment", deployment)))), s.times, s.values)
        out.append(s)
    return Telemetry(tuple(out), tel.sources, tel.notes)


def _fmt_labels(labels: Labels) -> str:
    return "{" + ",".join(f'{k}="{v}"' for k, v in labels) + "}" if labels else ""


def build_series(
    points: Mapping[tuple[str, Labels], list[tuple[float, float]]], source: str, notes: list[str]
) -> Telemetry:
    """The same tidying for series fetched from a Prometheus server (sorted, NaN dropped, notes kept)."""
    return _build(points, source, notes)

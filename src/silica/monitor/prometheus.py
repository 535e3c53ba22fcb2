"""Read raw samples from a Prometheus server's HTTP API over a time range.

Silica asks for the raw samples (an instant query of a range selector, `{__name__=~"..."}[Nms]`) rather
than `query_range`, which resamples at a step: the figures then come from exactly the samples a file
of the same scrapes holds, and the file and server reports agree to the digit. Long ranges are read in
chunks so one answer stays small. API: prometheus.io/docs/prometheus/latest/querying/api/ (read
2026-12-01): `GET /api/v1/query?query=...&time=...` -> `{"status": "success", "data": {"resultType":
"matrix", "result": [{"metric": {...}, "values": [[t, "v"], ...]}]}}`.
"""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Any

from silica.errors import InputError
from silica.monitor.series import Labels, Telemetry, build_series
from silica.monitor.signals import known_names

__all__ = ["CHUNK_S", "query_prometheus"]

CHUNK_S = 6 * 3600.0  # one query per six hours of samples


def query_prometheus(url: str, since: float, until: float, *, timeout_s: float = 10.0) -> Telemetry:
    """Every sample of the metrics Silica reads, from `since` to `until` (epoch seconds, inclusive)."""
    import httpx

    if not url.startswith(("http://", "https://")):
        raise InputError(f"--prometheus {url!r} is not an http(s) URL.", "pass e.g. http://127.0.0.1:9090.")
    if until <= since:
        raise InputError("--until is not after --since.", "give a time range that moves forward.")
    names = sorted(known_names())
    selector = '{__name__=~"' + "|".join(names) + '"}'
    points: dict[tuple[str, Labels], list[tuple[float, float]]] = defaultdict(list)
    notes: list[str] = []
    end = until
    with httpx.Client(base_url=url.rstrip("/"), timeout=timeout_s) as client:
        while end > since:
            begin = max(since, end - CHUNK_S)
            # Range selectors include both ends in Prometheus 2.x and only the right one in 3.x; one
            # millisecond more keeps `begin` in either, and samples outside [since, until] are dropped.
            span_ms = math.ceil((end - begin) * 1000) + 1
            data = _get(client, url, {"query": f"{selector}[{span_ms}ms]", "time": f"{end:.3f}"}, timeout_s)
            for item in data:
                metric = dict(item.get("metric") or {})
                name = str(metric.pop("__name__", ""))
                labels = tuple(sorted((str(k), str(v)) for k, v in metric.items()))
                for ts, value in item.get("values") or []:
                    t = float(ts)
                    if since <= t <= until:
                        points[(name, labels)].append((t, float(value)))
            end = begin
    if not points:
        raise InputError(
            f"Prometheus at {url} holds no sample of the metrics Silica reads between the two times.",
            "check --since/--until and that Prometheus scrapes the DCGM exporter, neuron-monitor or the engine.",
        )
    return build_series(points, f"prometheus {url}", notes)


def _get(client: Any, url: str, params: dict[str, str], timeout_s: float) -> list[dict[str, Any]]:
    import httpx

    try:
        response = client.get("/api/v1/query", params=params)
    except httpx.TimeoutException:
        raise InputError(
            f"Prometheus at {url} did not answer within {timeout_s:g} s.",
            "check that it is up and not overloaded, or raise --timeout.",
        ) from None
    except httpx.HTTPError as err:
        raise InputError(
            f"Cannot reach Prometheus at {url}: {err.__class__.__name__}: {err}.",
            "check the --prometheus URL and that the server is running.",
        ) from None
    try:
        body = response.json()
    except ValueError:
        raise InputError(
            f"{url} answered HTTP {response.status_code} with no Prometheus JSON: not a Prometheus API?",
            "pass the server's base URL, e.g. http://127.0.0.1:9090.",
        ) from None
    if response.status_code != 200 or body.get("status") != "success":
        raise InputError(
            f"Prometheus at {url} refused the query: {body.get('errorType', response.status_code)}: "
            f"{body.get('error', '')}.",
            "narrow --since/--until, or check the server's query limits.",
        )
    data = body.get("data") or {}
    if data.get("resultType") != "matrix":
        raise InputError(
            f"Prometheus at {url} answered a {data.get('resultType')!r}, not a matrix.",
            "upgrade Prometheus to 2.x or later.",
        )
    result = data.get("result") or []
    return list(result)

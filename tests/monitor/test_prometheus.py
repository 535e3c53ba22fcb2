"""Against a real Prometheus: the scenario is backfilled with promtool into a fresh TSDB, Prometheus
serves it on a loopback port, and `silica monitor report --prometheus` must give the figures of the
file report and of the hand arithmetic in `scenario.Hand`."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import threading
import time
from collections.abc import Iterator

import httpx
import pytest
from tests.monitor import scenario
from tests.monitor.conftest import Replay, run

PROMETHEUS = os.environ.get("SILICA_TEST_PROMETHEUS") or shutil.which("prometheus")
PROMTOOL = shutil.which("promtool", path=os.path.dirname(PROMETHEUS) if PROMETHEUS else None) or shutil.which(
    "promtool"
)
pytestmark = pytest.mark.skipif(
    not (PROMETHEUS and PROMTOOL) and os.environ.get("CI") != "true",
    reason="prometheus/promtool not installed (.ci/services.sh installs them)",
)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def prometheus(replay: Replay, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    assert PROMETHEUS and PROMTOOL, "prometheus and promtool are required under CI"
    tmp = tmp_path_factory.mktemp("prometheus")
    tsdb = tmp / "data"
    tsdb.mkdir()
    subprocess.run(
        [PROMTOOL, "tsdb", "create-blocks-from", "openmetrics", str(replay.openmetrics), str(tsdb)],
        check=True,
        capture_output=True,
        timeout=60,
    )
    config = tmp / "prometheus.yml"
    config.write_text("global:\n  scrape_interval: 1h\nscrape_configs: []\n")
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    log = (tmp / "prometheus.log").open("w")
    proc = subprocess.Popen(
        [
            PROMETHEUS,
            f"--config.file={config}",
            f"--storage.tsdb.path={tsdb}",
            f"--web.listen-address=127.0.0.1:{port}",
            "--storage.tsdb.retention.time=30d",
        ],
        stdout=subprocess.DEVNULL,
        stderr=log,
    )
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{url}/-/ready", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if proc.poll() is not None:
                raise RuntimeError((tmp / "prometheus.log").read_text()[-2000:])
            time.sleep(0.2)
        else:
            raise RuntimeError("Prometheus did not become ready in 30 s")
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


def _report(replay: Replay, *source: str) -> dict:  # type: ignore[type-arg]
    code, out, err = run(
        "monitor",
        "report",
        "--plan",
        f"chat-gpu={replay.gpu_plan}",
        "--plan",
        f"chat-neuron={replay.neuron_plan}",
        *source,
        "--since",
        str(replay.since),
        "--until",
        str(replay.until),
        "--window",
        "1h",
        "--json",
        "--no-store",
    )
    assert code == 0, err
    return json.loads(out)


def test_prometheus_and_file_reports_match_the_hand_arithmetic(replay: Replay, prometheus: str) -> None:
    from_server = _report(replay, "--prometheus", prometheus)
    from_file = _report(replay, "--from", str(replay.openmetrics))
    hand = scenario.Hand()
    for rep in (from_server, from_file):
        gpu, neuron = rep["deployments"]
        o = gpu["overall"]
        assert o["output_tokens"] == pytest.approx(hand.gpu_tokens)
        assert o["output_tokens_per_s"] == pytest.approx(hand.gpu_tokens_per_s)
        assert o["utilisation"] == pytest.approx(hand.gpu_utilisation)
        assert o["instance_hours"] == pytest.approx(hand.gpu_instance_hours)
        price = replay.gpu["price"]["usd_per_hour"]
        assert o["usd"] == pytest.approx(hand.gpu_instance_hours * price)
        assert o["usd_per_1m_output_tokens"] == pytest.approx(hand.gpu_instance_hours * price / 2.88)
        p50, p90, p99 = scenario.tpot_quantiles(replay.gpu["tpot_ms"] / 1000)
        assert (o["tpot"]["p50_ms"], o["tpot"]["p90_ms"], o["tpot"]["p99_ms"]) == pytest.approx(
            (p50, p90, p99)
        )
        assert o["tpot"]["mean_ms"] == pytest.approx(replay.gpu["tpot_ms"])
        assert o["ttft"]["p50_ms"] == pytest.approx(0.75 * replay.gpu["ttft_ms"])
        assert neuron["overall"]["output_tokens_per_s"] == pytest.approx(hand.neuron_tokens_per_s)
        assert neuron["overall"]["utilisation"] == pytest.approx(hand.neuron_utilisation)
        assert any("gpu-d" in g and "(10 min)" in g for g in gpu["gaps"])
    # The two sources hold the same samples, so every figure agrees, not only those checked by hand.
    assert from_server["deployments"] == from_file["deployments"]


def test_a_prometheus_that_is_down_is_one_line(replay: Replay) -> None:
    code, _, err = run(
        "monitor",
        "report",
        "--plan",
        str(replay.gpu_plan),
        "--prometheus",
        f"http://127.0.0.1:{_free_port()}",
        "--no-store",
    )
    assert code == 2
    assert "Cannot reach Prometheus" in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_a_slow_prometheus_times_out_with_one_line(replay: Replay) -> None:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:  # accept and never answer
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(server.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        started = time.monotonic()
        code, _, err = run(
            "monitor",
            "report",
            "--plan",
            str(replay.gpu_plan),
            "--prometheus",
            f"http://127.0.0.1:{server.getsockname()[1]}",
            "--timeout",
            "0.5",
            "--no-store",
        )
        assert time.monotonic() - started < 10
        assert code == 2 and "did not answer within 0.5 s" in err and "Traceback" not in err
    finally:
        stop.set()
        thread.join()
        for conn in held:
            conn.close()
        server.close()

"""`silica pilot run --dcgm-url`: GPU power scraped from a DCGM exporter during each step, measured
J per output token in the result (silica.pilot.power), against a loopback exporter serving the
recorded DCGM fixture."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from tests.pilot.conftest import run
from tests.pilot.sse_server import serving

from silica.pilot.loadplan import LoadPlan
from silica.pilot.power import DcgmMeter, parse_dcgm
from silica.pilot.runner import run_plan

FIXTURE = Path(__file__).resolve().parents[1] / "data" / "monitor" / "dcgm-exporter.prom"
FIRST = "1796112000000"  # the fixture's first scrape: two H100s at 412.5 W each


def _snapshot() -> str:
    """The fixture's first scrape, without timestamps, as a live exporter serves it."""
    lines = [
        line for line in FIXTURE.read_text().splitlines() if line.startswith("#") or line.endswith(FIRST)
    ]
    return "\n".join(line.removesuffix(" " + FIRST) for line in lines) + "\n"


@contextmanager
def exporter(text: str, counter_mj_per_scrape: float | None = None) -> Iterator[dict[str, int]]:
    """A loopback DCGM exporter; with `counter_mj_per_scrape`, each GPU's energy counter grows by
    that much per scrape. Yields {"port", "scrapes"}."""
    state = {"port": 0, "scrapes": 0}

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            state["scrapes"] += 1
            body = text
            if counter_mj_per_scrape is not None:
                for gpu in ("0", "1"):
                    body += (
                        f'DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{{gpu="{gpu}",UUID="GPU-{gpu}"}} '
                        f"{1e9 + state['scrapes'] * counter_mj_per_scrape}\n"
                    )
            data = body.encode()
            self.send_response(200)
            self.send_header("content-type", "text/plain; version=0.0.4")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    state["port"] = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()


def test_parse_reads_power_per_gpu_from_the_fixture() -> None:
    power, energy = parse_dcgm(_snapshot())
    assert sorted(power.values()) == [412.5, 412.5] and len(power) == 2 and energy == {}


def test_run_records_mean_power_and_j_per_token_per_step() -> None:
    plan = LoadPlan(input_len=4, output_len=64, concurrency=(1, 2), requests_per_step=4, warmup_requests=0)
    with exporter(_snapshot()) as dcgm, serving() as srv:
        meter = DcgmMeter(f"http://127.0.0.1:{dcgm['port']}/metrics", interval_s=0.05)
        result = run_plan(f"http://127.0.0.1:{srv.port}", "m", plan, dcgm=meter)
    assert len(result.steps) == 2
    for step in result.steps:
        p = step.measured_power
        assert p is not None and p["gpus"] == 2 and p["samples"] >= 2 and p["failed_scrapes"] == 0
        assert p["mean_gpu_power_w"] == pytest.approx(825.0)
        assert p["energy_basis"].startswith("mean DCGM_FI_DEV_POWER_USAGE")
        assert p["j_per_output_token"] == pytest.approx(825.0 * step.duration_s / step.output_tokens)
    assert "measured_power" in json.dumps(result.to_dict())


def test_energy_counter_is_preferred_when_the_exporter_serves_it() -> None:
    plan = LoadPlan(input_len=4, output_len=64, concurrency=(1,), requests_per_step=3, warmup_requests=0)
    with exporter(_snapshot(), counter_mj_per_scrape=500.0) as dcgm, serving() as srv:
        meter = DcgmMeter(f"http://127.0.0.1:{dcgm['port']}/metrics", interval_s=0.05)
        result = run_plan(f"http://127.0.0.1:{srv.port}", "m", plan, dcgm=meter)
    p = result.steps[0].measured_power
    assert p is not None and "TOTAL_ENERGY_CONSUMPTION difference" in p["energy_basis"]
    # two GPUs x 500 mJ per scrape, between the step's first and last scrape
    assert p["energy_j"] == pytest.approx((p["samples"] - 1) * 1.0)
    assert p["j_per_output_token"] == pytest.approx(p["energy_j"] / result.steps[0].output_tokens)


def test_cli_flag_records_power_and_refuses_a_bad_exporter_in_one_line(tmp_path: Path) -> None:
    from tests.pilot.tiny_server import free_port

    out = tmp_path / "r.json"
    with exporter(_snapshot()) as dcgm, serving() as srv:
        args = ["pilot", "run", "--endpoint", f"http://127.0.0.1:{srv.port}", "--model", "m"]
        args += ["--concurrency", "1", "--requests", "2", "--out", str(out), "--no-store"]
        code, _, err = run(*args, "--dcgm-url", f"http://127.0.0.1:{dcgm['port']}/metrics")
        assert code == 0, err
        assert json.loads(out.read_text())["steps"][0]["measured_power"]["gpus"] == 2
        dead = run(*args, "--dcgm-url", f"http://127.0.0.1:{free_port()}/metrics")
        with exporter("# no GPUs here\n") as empty:
            bare = run(*args, "--dcgm-url", f"http://127.0.0.1:{empty['port']}/metrics")
    for code, _, err in (dead, bare):
        assert code == 2 and err.count("\n") == 1 and err.startswith("error:")
    assert "did not answer" in dead[2] and "serves no DCGM_FI_DEV_POWER_USAGE" in bare[2]

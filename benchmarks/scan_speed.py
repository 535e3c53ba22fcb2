"""Time `silica scan`: a registry model scan and a code scan of a generated 10,000-file repository.

    python benchmarks/scan_speed.py [--model llama-3.1-8b] [--files 10000]

Targets from issue 4: a registry model in at most 20 s and a 10,000-file code scan in at most 10 s, on
2 CPU cores. The model figure is the whole CLI command in a fresh process (imports of torch and
transformers included); the code figure is the library call. Exits non-zero when a target is missed.
"""

from __future__ import annotations

import argparse
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

MODEL_LIMIT_S = 20.0
_CLI = "import sys; from silica.cli.app import main; sys.argv[0] = 'silica'; main()"
CODE_LIMIT_S = 10.0

PLAIN = '''"""Module {i}: data plumbing with no accelerator code."""

import json
import os


def load_{i}(path):
    with open(path) as f:
        rows = json.load(f)
    return [r for r in rows if r.get("id", 0) % {m} == 0]


class Store{i}:
    def __init__(self, root):
        self.root = os.path.abspath(root)

    def path(self, name):
        return os.path.join(self.root, name + ".json")
'''

TORCH = """import torch
import torch.nn as nn
import torch.nn.functional as F


class Block{i}(nn.Module):
    def __init__(self, d=256):
        super().__init__()
        self.q = nn.Linear(d, d)
        self.k = nn.Linear(d, d)
        self.v = nn.Linear(d, d)

    def forward(self, x):
        q, k, v = self.q(x), self.k(x), self.v(x)
        return F.scaled_dot_product_attention(q, k, v)
"""

GPU = """import torch
from flash_attn import flash_attn_func


def attend_{i}(q, k, v):
    if q.abs().max().item() > 1e4:
        q = q.double()
    torch.cuda.synchronize()
    return flash_attn_func(q.cuda(), k.to("cuda"), v)
"""

KERNEL = "#include <cuda_runtime.h>\n\n__global__ void kernel_{i}(float* x) {{ x[threadIdx.x] *= 2.0f; }}\n"


def make_repo(root: Path, files: int, seed: int = 0) -> None:
    """A repository of `files` files: mostly plain Python, some torch, a few GPU-only files and kernels."""
    rng = random.Random(seed)
    (root / "requirements.txt").write_text("torch>=2.3\nflash-attn==2.5.8\nnumpy\n")
    (root / "pyproject.toml").write_text('[project]\nname = "bench"\ndependencies = ["torch", "xformers"]\n')
    made = 2
    i = 0
    while made < files:
        package = root / f"pkg{i // 100:03d}"
        package.mkdir(exist_ok=True)
        roll = rng.random()
        if roll < 0.60:
            (package / f"mod{i}.py").write_text(PLAIN.format(i=i, m=rng.randint(2, 9)))
        elif roll < 0.85:
            (package / f"block{i}.py").write_text(TORCH.format(i=i))
        elif roll < 0.88:
            (package / f"gpu{i}.py").write_text(GPU.format(i=i))
        elif roll < 0.90:
            (package / f"kernel{i}.cu").write_text(KERNEL.format(i=i))
        elif roll < 0.95:
            (package / f"notes{i}.md").write_text(f"# Notes {i}\n\nNothing to see.\n")
        else:
            (package / f"data{i}.json").write_text(f'{{"id": {i}}}\n')
        made += 1
        i += 1


def time_model(model: str) -> float:
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-c", _CLI, "scan", model, "--json"],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="llama-3.1-8b")
    parser.add_argument("--files", type=int, default=10_000)
    args = parser.parse_args()

    from silica.scan import scan_code, scan_model

    model_cli = time_model(args.model)
    in_process = scan_model(args.model)
    print(
        f"model scan {args.model}: {model_cli:.2f} s (CLI, fresh process); "
        f"{in_process.seconds:.2f} s in process"
    )
    print(f"  verdicts {in_process.to_dict()['target_verdicts']}, {len(in_process.ops)} operators")

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        start = time.perf_counter()
        make_repo(root, args.files)
        made = time.perf_counter() - start
        start = time.perf_counter()
        report = scan_code(root)
        scanned = time.perf_counter() - start
    print(f"code scan: {report.files_scanned} files in {scanned:.2f} s (generated in {made:.1f} s)")
    print(f"  {len(report.findings)} findings, verdicts {report.to_dict()['target_verdicts']}")

    ok = model_cli <= MODEL_LIMIT_S and scanned <= CODE_LIMIT_S
    print(f"targets: model <= {MODEL_LIMIT_S:g} s, code <= {CODE_LIMIT_S:g} s: {'met' if ok else 'MISSED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

"""Derive the small demand files bundled in `silica/fleet/data` from the public traces.

The raw traces are megabytes and stay outside the package; what a fleet simulation needs from them
is small: ServeGen's 14-day rate shape and the per-minute request and token counts of the one-hour
Azure and Mooncake traces. This module is the recipe (see data/PROVENANCE.md); a test re-derives the
files from ../shared/traces and checks that the bundled copies are exactly what it writes.

    python -m silica.fleet.derive ../shared/traces src/silica/fleet/data
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from silica.fleet.traces import RequestTrace, load_azure_llm, load_mooncake, load_servegen

__all__ = ["REQUEST_TRACES", "SERVEGEN_MODELS", "derive_request_minutes", "derive_servegen_shapes"]

SERVEGEN_FILE = "servegen_alibaba/servegen_aggregate_rate_per_10min.csv"
SERVEGEN_MODELS = ("m-large", "m-mid", "m-small")  # the three with 14 days; the others have one day
REQUEST_TRACES: dict[str, tuple[str, str]] = {
    "azure:code": ("azure", "azure_llm_2023/AzureLLMInferenceTrace_code.csv"),
    "azure:conv": ("azure", "azure_llm_2023/AzureLLMInferenceTrace_conv.csv"),
    "mooncake:conversation": ("mooncake", "mooncake_fast25/conversation_trace.jsonl"),
    "mooncake:synthetic": ("mooncake", "mooncake_fast25/synthetic_trace.jsonl"),
}


def derive_servegen_shapes(traces_dir: Path) -> str:
    """CSV text: window start (s from midnight of day 0) and each model's rate relative to its peak."""
    shapes = [load_servegen(Path(traces_dir) / SERVEGEN_FILE, m) for m in SERVEGEN_MODELS]
    times = shapes[0].t_s
    for shape in shapes[1:]:
        if not np.array_equal(shape.t_s, times):
            raise ValueError(f"{shape.name} has other windows than {shapes[0].name}")
    lines = ["t_s," + ",".join(SERVEGEN_MODELS)]
    for i, t in enumerate(times):
        lines.append(f"{int(t)}," + ",".join(f"{s.rate[i]:.4f}" for s in shapes))
    return "\n".join(lines) + "\n"


def _load(kind: str, path: Path) -> RequestTrace:
    return load_azure_llm(path) if kind == "azure" else load_mooncake(path)


def derive_request_minutes(traces_dir: Path) -> str:
    """CSV text: for each one-hour trace and minute from its first request, requests and token sums."""
    lines = ["trace,minute,requests,input_tokens,output_tokens"]
    for name, (kind, rel) in REQUEST_TRACES.items():
        trace = _load(kind, Path(traces_dir) / rel)
        minute = (trace.t_s // 60.0).astype(np.int64)
        n = int(minute[-1]) + 1
        requests = np.bincount(minute, minlength=n)
        inp = np.bincount(minute, weights=trace.input_tokens, minlength=n)
        out = np.bincount(minute, weights=trace.output_tokens, minlength=n)
        for m in range(n):
            lines.append(f"{name},{m},{requests[m]},{int(inp[m])},{int(out[m])}")
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> None:
    traces_dir, out_dir = Path(argv[0]), Path(argv[1])
    (out_dir / "servegen_shapes.csv").write_text(derive_servegen_shapes(traces_dir), encoding="utf-8")
    (out_dir / "request_minutes.csv").write_text(derive_request_minutes(traces_dir), encoding="utf-8")


if __name__ == "__main__":
    main(sys.argv[1:])

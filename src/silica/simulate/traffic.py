"""Request streams for the simulator: arrival processes, length distributions and trace replay.

Arrivals: Poisson (exponential gaps), gamma gaps with a stated coefficient of variation (CV > 1 is
burstier than Poisson, CV < 1 smoother; CV 1 is Poisson), constant gaps, or the timestamps of a
trace. Lengths: fixed, or drawn from a distribution with the given mean. Traces are read by the
loaders in `silica.fleet.traces` (the user CSV and the Azure and Mooncake formats), so every
malformed cell is reported with its file and line.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from silica.errors import InputError

__all__ = ["ARRIVALS", "LENGTHS", "Requests", "from_trace", "synthetic"]

Array = NDArray[np.float64]
ARRIVALS = ("poisson", "gamma", "constant")
LENGTHS = ("fixed", "uniform", "exponential")
MAX_REQUESTS = 10_000_000


@dataclass(frozen=True, slots=True)
class Requests:
    """Requests to replay: arrival second, prompt tokens and generated tokens, sorted by arrival."""

    arrival: Array
    prompt: Array
    output: Array
    source: str

    def __len__(self) -> int:
        return int(self.arrival.shape[0])

    @property
    def rate(self) -> float:
        """The mean arrival rate (requests per second) over the stream's span."""
        span = float(self.arrival[-1] - self.arrival[0]) if len(self) > 1 else 0.0
        return (len(self) - 1) / span if span > 0 else float("inf")

    def scaled(self, factor: float) -> Requests:
        """The same requests arriving `factor` times as fast (a trace replayed at another rate)."""
        return Requests(self.arrival / factor, self.prompt, self.output, f"{self.source}, x{factor:g} rate")


def _lengths(kind: str, mean: int, n: int, rng: np.random.Generator, what: str) -> Array:
    if kind == "fixed":
        return np.full(n, float(mean))
    if kind == "uniform":  # mean +- 50%
        return np.maximum(np.round(rng.uniform(0.5 * mean, 1.5 * mean, n)), 1.0)
    if kind == "exponential":
        return np.maximum(np.round(rng.exponential(mean, n)), 1.0)
    raise InputError(f"Unknown {what} length distribution {kind!r}.", f"use one of {', '.join(LENGTHS)}.")


def synthetic(
    *,
    rate: float,
    n: int,
    input_len: int,
    output_len: int,
    arrival: str = "poisson",
    cv: float = 1.0,
    lengths: str = "fixed",
    seed: int = 0,
) -> Requests:
    """`n` requests at `rate` per second from an arrival process, with lengths of the given means."""
    if not (rate > 0 and np.isfinite(rate)):
        raise InputError(
            f"The request rate must be a finite positive number, got {rate}.", "pass --rate above 0."
        )
    if not 1 <= n <= MAX_REQUESTS:
        raise InputError(
            f"Requests must be between 1 and {MAX_REQUESTS:,}, got {n}.", "pass --requests in that range."
        )
    if input_len < 1 or output_len < 1:
        raise InputError(
            f"Prompt and output lengths must be 1 or more, got {input_len} and {output_len}.",
            "pass --input-len and --output-len of 1 or more.",
        )
    if not (cv > 0 and np.isfinite(cv)):
        raise InputError(
            f"The coefficient of variation must be above 0, got {cv}.", "pass --cv above 0 (1 = Poisson)."
        )
    rng = np.random.default_rng(seed)
    if arrival == "poisson":
        gaps = rng.exponential(1.0 / rate, n)
    elif arrival == "gamma":
        shape = 1.0 / cv**2  # gamma gaps: CV = 1/sqrt(shape), mean = shape * scale
        gaps = rng.gamma(shape, 1.0 / (rate * shape), n)
    elif arrival == "constant":
        gaps = np.full(n, 1.0 / rate)
    else:
        raise InputError(f"Unknown arrival process {arrival!r}.", f"use one of {', '.join(ARRIVALS)}.")
    t = np.cumsum(gaps) - gaps[0]
    label = f"{arrival} arrivals at {rate:g}/s" + (f" (CV {cv:g})" if arrival == "gamma" else "")
    return Requests(
        arrival=t,
        prompt=_lengths(lengths, input_len, n, rng, "prompt"),
        output=_lengths(lengths, output_len, n, rng, "output"),
        source=f"{label}, {lengths} lengths (mean {input_len} in, {output_len} out), seed {seed}",
    )


def from_trace(path: Path, *, limit: int | None = None) -> Requests:
    """Replay a request trace: a CSV of timestamp,input_tokens,output_tokens, an Azure LLM
    inference trace CSV (TIMESTAMP,ContextTokens,GeneratedTokens) or a Mooncake JSON-lines trace."""
    from silica.fleet import traces

    path = Path(path)
    if path.suffix == ".jsonl":
        trace = traces.load_mooncake(path)
    else:
        from silica._files import read_head
        from silica.errors import SilicaError

        try:  # the first line says which format; the loader then reads the file through the same layer
            head = read_head(path, 4096, "trace CSV", "a CSV of timestamps and token counts").decode(
                "utf-8", "replace"
            )
        except SilicaError:
            head = ""  # the loader reports the unreadable path with its fix
        trace = traces.load_azure_llm(path) if "TIMESTAMP" in head else traces.load_request_csv(path)
    keep = slice(None) if limit is None else slice(0, limit)
    t = trace.t_s[keep] - trace.t_s[0]
    if len(t) == 0:
        raise InputError(f"The trace {path} holds no requests.", "pass a trace with at least one request.")
    return Requests(
        arrival=np.asarray(t, dtype=np.float64),
        prompt=np.maximum(np.asarray(trace.input_tokens[keep], dtype=np.float64), 1.0),
        output=np.maximum(np.asarray(trace.output_tokens[keep], dtype=np.float64), 1.0),
        source=trace.source,
    )

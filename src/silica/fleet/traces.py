"""Loaders for the public traces a fleet is simulated on, and for a user's own request trace.

Each loader reads one upstream format exactly as published and returns plain arrays, so demand
building (`demand.py`) never sees a file format. Every malformed cell is reported with its file,
line and field; request timestamps must be sorted, because a replay of an unsorted trace would
silently mean something else than the user intended.

    Azure LLM inference 2023 (Splitwise, ISCA'24): TIMESTAMP,ContextTokens,GeneratedTokens, 1 hour
    Mooncake FAST'25 (Kimi):  JSON lines {timestamp ms, input_length, output_length, hash_ids}, 1 hour
    ServeGen (Alibaba Bailian): 10-minute request-rate windows over 14 days (the diurnal shape)
    Philly (ATC'19, as shipped with Sia): one row per training job: submit time, duration, GPUs
    user CSV: timestamp (seconds or ISO date-time),input_tokens,output_tokens
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from silica.errors import DataFileError

__all__ = [
    "PhillyJobs",
    "RateShape",
    "RequestTrace",
    "load_azure_llm",
    "load_mooncake",
    "load_philly",
    "load_request_csv",
    "load_servegen",
]

USER_COLUMNS = ("timestamp", "input_tokens", "output_tokens")


@dataclass(frozen=True, slots=True)
class RequestTrace:
    """Requests with arrival time (seconds from the first one) and token counts."""

    name: str
    source: str
    t_s: NDArray[np.float64]
    input_tokens: NDArray[np.float64]
    output_tokens: NDArray[np.float64]

    @property
    def span_s(self) -> float:
        return float(self.t_s[-1] - self.t_s[0]) if len(self.t_s) else 0.0

    def summary(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "source": self.source,
            "requests": len(self.t_s),
            "span_s": self.span_s,
            "mean_input_tokens": float(self.input_tokens.mean()),
            "mean_output_tokens": float(self.output_tokens.mean()),
            "p50_input_tokens": float(np.median(self.input_tokens)),
            "p50_output_tokens": float(np.median(self.output_tokens)),
        }


@dataclass(frozen=True, slots=True)
class RateShape:
    """A request-rate shape over time: window starts (seconds from midnight of day 0), relative rate."""

    name: str
    source: str
    t_s: NDArray[np.float64]
    rate: NDArray[np.float64]  # relative: the maximum is 1.0
    window_s: float


@dataclass(frozen=True, slots=True)
class PhillyJobs:
    """Training jobs as submitted: seconds from the first submission, run time and GPU count."""

    source: str
    submit_s: NDArray[np.float64]
    duration_s: NDArray[np.float64]
    gpus: NDArray[np.int64]
    first_submit: datetime


def _open(path: Path) -> Iterator[str]:
    from silica._files import check_size, file_kind, read_head

    if file_kind(path) not in ("regular", "fifo"):  # directories and devices: one line naming them
        read_head(path, 0, "trace file", "the trace file")
    check_size(Path(path), "trace file")  # the limit is SILICA_MAX_FILE_MB
    try:
        with Path(path).open(encoding="utf-8", newline="") as handle:
            yield from handle
    except OSError as err:
        raise DataFileError(
            f"Cannot read {path}: {err.strerror}.", "check the path and permissions."
        ) from err
    except UnicodeDecodeError as err:
        raise DataFileError(
            f"{path}: not a UTF-8 text file (it has the byte {err.object[err.start]:#04x}).",
            "give the trace as CSV or JSON-lines text, not a binary or compressed file.",
        ) from None


def _bad(path: Path, line: int, field: str, problem: str, fix: str) -> DataFileError:
    return DataFileError(f"{path}, line {line}, field {field!r}: {problem}.", fix)


def _number(path: Path, line: int, field: str, text: str, minimum: float = 0.0) -> float:
    try:
        value = float(text)
    except (TypeError, ValueError):
        raise _bad(path, line, field, f"{text!r} is not a number", "correct or remove that row.") from None
    if not math.isfinite(value) or value < minimum:
        raise _bad(path, line, field, f"{text!r} is out of range (>= {minimum:g})", "correct that row.")
    return value


def _datetime(path: Path, line: int, field: str, text: str) -> datetime:
    # Azure writes 7 fractional digits ("18:17:03.9799600"); Python parses at most 6.
    head, dot, frac = text.strip().partition(".")
    try:
        stamp = datetime.fromisoformat(head.replace("T", " "))
        if dot:
            if not frac.isdigit():
                raise ValueError(frac)
            stamp = stamp.replace(microsecond=int(frac[:6].ljust(6, "0")))
    except ValueError:
        raise _bad(
            path, line, field, f"{text!r} is not a date-time", "write it as YYYY-MM-DD HH:MM:SS[.ffffff]."
        ) from None
    # Timezones are not stated by any of the traces: read them as UTC so no DST shift enters.
    return stamp if stamp.tzinfo is not None else stamp.replace(tzinfo=UTC)


def _check_sorted(path: Path, lines: list[int], t: NDArray[np.float64], field: str) -> None:
    back = np.flatnonzero(np.diff(t) < 0)
    if len(back):
        i = int(back[0])
        raise _bad(
            path,
            lines[i + 1],
            field,
            f"timestamp {t[i + 1]:.3f} s is earlier than the one on line {lines[i]} ({t[i]:.3f} s); "
            "timestamps must be sorted",
            "sort the trace by timestamp before simulating it.",
        )


def _shown(header: list[str]) -> str:
    """A header as found, short and on one line (a binary file's first line can be anything)."""
    if not header:
        return "nothing"
    text = ", ".join(repr(c) if not c.isprintable() else c for c in header[:6])
    text += ", ..." if len(header) > 6 else ""
    return text if len(text) <= 120 else text[:117] + "..."


def _csv_rows(path: Path, columns: tuple[str, ...]) -> Iterator[tuple[int, dict[str, str]]]:
    reader = csv.DictReader(_open(path))
    try:
        header = [c.strip() for c in reader.fieldnames or []]
        missing = [c for c in columns if c not in header]
        if missing:
            raise DataFileError(
                f"{path}, line 1: missing column {missing[0]!r} (found {_shown(header)}).",
                f"the header must name {', '.join(columns)}.",
            )
        for raw in reader:
            if None in raw:
                raise DataFileError(f"{path}, line {reader.line_num}: more cells than header columns.", None)
            yield reader.line_num, {str(k).strip(): (v or "").strip() for k, v in raw.items()}
    except csv.Error as err:
        raise DataFileError(
            f"{path}, line {reader.line_num}: not valid CSV ({err}).", "fix that line."
        ) from None


def _request_trace(
    path: Path, name: str, source: str, lines: list[int], t: list[float], inp: list[float], out: list[float]
) -> RequestTrace:
    if not t:
        raise DataFileError(f"{path}: the trace has no requests.", "give a file with at least one row.")
    times = np.asarray(t, dtype=np.float64)
    _check_sorted(path, lines, times, "timestamp")
    return RequestTrace(
        name=name,
        source=source,
        t_s=times - times[0],
        input_tokens=np.asarray(inp, dtype=np.float64),
        output_tokens=np.asarray(out, dtype=np.float64),
    )


def load_azure_llm(path: Path) -> RequestTrace:
    """Azure LLM inference trace 2023 (code or conv): one hour of requests with token counts."""
    path = Path(path)
    lines: list[int] = []
    t: list[float] = []
    inp: list[float] = []
    out: list[float] = []
    for line, row in _csv_rows(path, ("TIMESTAMP", "ContextTokens", "GeneratedTokens")):
        lines.append(line)
        t.append(_datetime(path, line, "TIMESTAMP", row["TIMESTAMP"]).timestamp())
        inp.append(_number(path, line, "ContextTokens", row["ContextTokens"], 1.0))
        out.append(_number(path, line, "GeneratedTokens", row["GeneratedTokens"]))
    source = f"Azure LLM inference trace 2023 ({path.name}; Patel et al., Splitwise, ISCA 2024; CC-BY-4.0)"
    return _request_trace(path, f"azure:{path.stem.rsplit('_', 1)[-1]}", source, lines, t, inp, out)


def load_mooncake(path: Path) -> RequestTrace:
    """Mooncake FAST'25 trace (conversation or synthetic): JSON lines, timestamps in milliseconds."""
    path = Path(path)
    lines: list[int] = []
    t: list[float] = []
    inp: list[float] = []
    out: list[float] = []
    from silica._files import json_decoder

    decoder = json_decoder(path)  # huge integers, NaN and overflowing floats: one line
    for line, text in enumerate(_open(path), start=1):
        if not text.strip():
            continue
        try:
            row = decoder.decode(text)
        except json.JSONDecodeError as err:
            raise DataFileError(
                f"{path}, line {line}: not valid JSON ({err.msg}).", "fix that line."
            ) from None
        if not isinstance(row, dict):
            raise DataFileError(f"{path}, line {line}: expected a JSON object.", "fix that line.")
        for field in ("timestamp", "input_length", "output_length"):
            if field not in row:
                raise _bad(
                    path, line, field, "missing", "every line needs timestamp, input_length, output_length."
                )
        lines.append(line)
        t.append(_number(path, line, "timestamp", row["timestamp"]) / 1000.0)
        inp.append(_number(path, line, "input_length", row["input_length"], 1.0))
        out.append(_number(path, line, "output_length", row["output_length"]))
    source = f"Mooncake FAST'25 trace ({path.name}; kvcache-ai/Mooncake; Apache-2.0)"
    return _request_trace(path, f"mooncake:{path.stem.removesuffix('_trace')}", source, lines, t, inp, out)


def load_request_csv(path: Path) -> RequestTrace:
    """A user's trace: timestamp (seconds, or an ISO date-time), input_tokens, output_tokens."""
    path = Path(path)
    lines: list[int] = []
    t: list[float] = []
    inp: list[float] = []
    out: list[float] = []
    for line, row in _csv_rows(path, USER_COLUMNS):
        extra = sorted(set(row) - set(USER_COLUMNS))
        if extra:
            raise DataFileError(
                f"{path}, line 1: unknown column {extra[0]!r}.", f"use only {', '.join(USER_COLUMNS)}."
            )
        text = row["timestamp"]
        try:
            seconds = float(text)
        except ValueError:
            seconds = _datetime(path, line, "timestamp", text).timestamp()
        if not math.isfinite(seconds):
            raise _bad(path, line, "timestamp", f"{text!r} is not finite", "correct that row.")
        lines.append(line)
        t.append(seconds)
        inp.append(_number(path, line, "input_tokens", row["input_tokens"], 1.0))
        out.append(_number(path, line, "output_tokens", row["output_tokens"]))
    return _request_trace(path, f"csv:{path.name}", f"user trace {path}", lines, t, inp, out)


def load_servegen(path: Path, model: str) -> RateShape:
    """ServeGen's per-10-minute aggregate request rate for one model, scaled so its peak is 1."""
    path = Path(path)
    columns = ("model", "t_seconds_from_midnight_day0", "sum_client_rate")
    lines: list[int] = []
    t: list[float] = []
    rate: list[float] = []
    known: set[str] = set()
    for line, row in _csv_rows(path, columns):
        known.add(row["model"])
        if row["model"] != model:
            continue
        lines.append(line)
        t.append(_number(path, line, columns[1], row[columns[1]]))
        rate.append(_number(path, line, columns[2], row[columns[2]]))
    if not t:
        raise DataFileError(f"{path}: no rows for ServeGen model {model!r}.", f"use one of {sorted(known)}.")
    times = np.asarray(t, dtype=np.float64)
    _check_sorted(path, lines, times, columns[1])
    values = np.asarray(rate, dtype=np.float64)
    if values.max() <= 0:
        raise DataFileError(f"{path}: ServeGen model {model!r} has no positive rate.", None)
    source = f"ServeGen ({path.name}, model {model}; Xiang et al., arXiv 2505.09999; Apache-2.0)"
    return RateShape(f"servegen:{model}", source, times, values / values.max(), 600.0)


def load_philly(path: Path) -> PhillyJobs:
    """Philly training jobs (Sia's philly.csv). The upstream table is not in submit order: sorted here."""
    path = Path(path)
    submit: list[float] = []
    duration: list[float] = []
    gpus: list[int] = []
    for line, row in _csv_rows(path, ("timestamp", "duration", "num_gpus")):
        submit.append(_datetime(path, line, "timestamp", row["timestamp"]).timestamp())
        duration.append(_number(path, line, "duration", row["duration"]))
        count = _number(path, line, "num_gpus", row["num_gpus"], 1.0)
        if count != int(count):
            raise _bad(path, line, "num_gpus", f"{row['num_gpus']!r} is not a whole number", "fix that row.")
        gpus.append(int(count))
    if not submit:
        raise DataFileError(f"{path}: no jobs.", "give a file with at least one row.")
    order = np.argsort(np.asarray(submit), kind="stable")
    times = np.asarray(submit, dtype=np.float64)[order]
    return PhillyJobs(
        source=f"Philly DNN training trace ({path.name}; Jeon et al., ATC'19, via the Sia artifact; CC-BY-4.0)",
        submit_s=times - times[0],
        duration_s=np.asarray(duration, dtype=np.float64)[order],
        gpus=np.asarray(gpus, dtype=np.int64)[order],
        first_submit=datetime.fromtimestamp(float(times[0]), tz=UTC),
    )

"""Trace loaders against the public traces (facts from their READMEs), and their error messages."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest

from silica.errors import DataFileError, InputError
from silica.fleet import derive
from silica.fleet.demand import DATA_DIR
from silica.fleet.jobs import from_philly
from silica.fleet.traces import (
    load_azure_llm,
    load_mooncake,
    load_philly,
    load_request_csv,
    load_servegen,
)

# --- the real traces: counts, medians and shapes their READMEs state ------------------------------


def test_azure_trace_matches_its_readme(traces: Path) -> None:
    code = load_azure_llm(traces / "azure_llm_2023/AzureLLMInferenceTrace_code.csv")
    conv = load_azure_llm(traces / "azure_llm_2023/AzureLLMInferenceTrace_conv.csv")
    assert (len(code.t_s), len(conv.t_s)) == (8819, 19366)
    # README: medians code prompt 1469 / output 13; conv prompt 1020 / output 129; ~58-59 minutes.
    assert (np.median(code.input_tokens), np.median(code.output_tokens)) == (1469, 13)
    assert (np.median(conv.input_tokens), np.median(conv.output_tokens)) == (1020, 129)
    assert 57 * 60 < code.span_s < 59 * 60 and 58 * 60 < conv.span_s < 60 * 60
    assert code.name == "azure:code" and "CC-BY-4.0" in code.source


def test_mooncake_trace_matches_its_readme(traces: Path) -> None:
    conv = load_mooncake(traces / "mooncake_fast25/conversation_trace.jsonl")
    synth = load_mooncake(traces / "mooncake_fast25/synthetic_trace.jsonl")
    assert (len(conv.t_s), len(synth.t_s)) == (12031, 3993)
    # Upstream table: average input 12,035 / output 343 (conversation), 15,325 / 149 (synthetic).
    assert round(conv.input_tokens.mean()) == 12035 and round(conv.output_tokens.mean()) == 343
    assert round(synth.input_tokens.mean()) == 15325 and round(synth.output_tokens.mean()) == 149
    assert conv.span_s < 3600  # sampled from one hour


def test_servegen_shape_has_the_stated_day_night_pattern(traces: Path) -> None:
    path = traces / "servegen_alibaba/servegen_aggregate_rate_per_10min.csv"
    small = load_servegen(path, "m-small")
    assert len(small.t_s) == 14 * 144 and small.rate.max() == 1.0
    hourly = small.rate.reshape(14, 24, 6).mean(axis=(0, 2))
    # README: m-small trough 03-06h, peak 20-21h, peak/trough about 2.2x (hourly means).
    assert int(np.argmax(hourly)) in (20, 21)
    assert 2 <= int(np.argmin(hourly)) <= 6
    assert 1.8 < hourly.max() / hourly.min() < 2.6
    with pytest.raises(DataFileError, match="m-tiny"):
        load_servegen(path, "m-tiny")


def test_philly_jobs_match_the_readme_and_are_sorted(traces: Path) -> None:
    jobs = load_philly(traces / "philly_jobs_sia/philly.csv")
    assert len(jobs.gpus) == 82247 and int(jobs.gpus.max()) == 128
    assert 0.92 < np.mean(jobs.gpus == 1) < 0.94  # "93% are 1-GPU jobs"
    assert np.all(np.diff(jobs.submit_s) >= 0)  # the upstream table is not in submit order
    assert jobs.first_submit.date().isoformat() == "2017-09-04"
    week = from_philly(jobs, start=datetime(2017, 10, 9, tzinfo=UTC), days=7, deadline_slack=3.0)
    assert 3000 < len(week) < 20000
    assert all(0 <= j.earliest_start_h < 168 for j in week)
    assert all(j.deadline_h == pytest.approx(j.earliest_start_h + 3 * j.hours) for j in week[:50])
    with pytest.raises(InputError, match="No Philly jobs"):
        from_philly(jobs, start=datetime(2018, 6, 1, tzinfo=UTC), days=7)


def test_bundled_demand_files_are_exactly_derived_from_the_traces(traces: Path) -> None:
    """The package ships derivatives, not copies; re-deriving them must give the same bytes."""
    assert (DATA_DIR / "servegen_shapes.csv").read_text() == derive.derive_servegen_shapes(traces)
    assert (DATA_DIR / "request_minutes.csv").read_text() == derive.derive_request_minutes(traces)
    provenance = (DATA_DIR / "PROVENANCE.md").read_text()
    for needle in ("Apache-2.0", "CC-BY-4.0", "f891d1189eb", "b469a113ced", "3b5a5941339"):
        assert needle in provenance


# --- a user's own trace, and what goes wrong with one ---------------------------------------------


def _csv(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "trace.csv"
    path.write_text("timestamp,input_tokens,output_tokens\n" + body)
    return path


def test_user_csv_accepts_seconds_and_iso_times(tmp_path: Path) -> None:
    a = load_request_csv(_csv(tmp_path, "10,100,20\n10.5,200,40\n70,300,60\n"))
    assert a.t_s.tolist() == [0.0, 0.5, 60.0] and a.output_tokens.sum() == 120
    b = load_request_csv(_csv(tmp_path, "2024-01-01 00:00:00,100,20\n2024-01-01T00:01:00.5,100,20\n"))
    assert b.t_s.tolist() == [0.0, 60.5]


@pytest.mark.parametrize(
    ("body", "needle"),
    [
        (
            "0,100,10\n5,100,10\n3,100,10\n",
            "line 4, field 'timestamp': timestamp 3.000 s is earlier than the one on line 3",
        ),
        ("0,100,10\nyesterday,100,10\n", "line 3, field 'timestamp': 'yesterday' is not a date-time"),
        ("0,100,10\n1,many,10\n", "line 3, field 'input_tokens': 'many' is not a number"),
        ("0,100,10\n1,100,-4\n", "line 3, field 'output_tokens': '-4' is out of range"),
        ("0,100,10,7\n", "line 2: more cells than header columns"),
    ],
)
def test_bad_user_traces_name_the_line_and_field(tmp_path: Path, body: str, needle: str) -> None:
    with pytest.raises(DataFileError) as err:
        load_request_csv(_csv(tmp_path, body))
    assert needle in str(err.value)


def test_missing_column_and_unknown_column(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text("time,input_tokens,output_tokens\n0,1,1\n")
    with pytest.raises(DataFileError, match="missing column 'timestamp'"):
        load_request_csv(path)
    path.write_text("timestamp,input_tokens,output_tokens,user\n0,1,1,a\n")
    with pytest.raises(DataFileError, match="unknown column 'user'"):
        load_request_csv(path)


def test_malformed_mooncake_and_azure_lines(tmp_path: Path) -> None:
    jl = tmp_path / "m.jsonl"
    jl.write_text(
        '{"timestamp": 0, "input_length": 5, "output_length": 1}\n{"timestamp": 1, "input_length": 5\n'
    )
    with pytest.raises(DataFileError, match="line 2: not valid JSON"):
        load_mooncake(jl)
    az = tmp_path / "a.csv"
    az.write_text("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:17:03.97996xx,1,1\n")
    with pytest.raises(DataFileError, match="line 2, field 'TIMESTAMP'"):
        load_azure_llm(az)

"""Issue 24, class V (validation): each quantity's declared range, applied where the quantity enters.

Calibration parameters, a systems file's chip counts, `--layers`, a kit's prompt length, an imported
pilot result's times, a validate row's metric for its task, duplicate keys and repeated single-value
flags, SILICA_* environment values, and monitor times: each nonsense value is one `error:` line naming
the user's field (exit 2, nothing touched).
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.hostile.conftest import BENCH, ROOT, Sandbox, assert_one_line_error

CAL = json.loads((ROOT / "src" / "silica" / "data" / "calibration.json").read_text())
PILOT = ROOT / "tests" / "data" / "pilot" / "vllm_bench_serve.json"
E = ["estimate", "llama-3.1-8b", "--on", "g6e.xlarge"]


def _calibration(family: str, name: str, value: Any) -> bytes:
    cal = json.loads(json.dumps(CAL))
    cal["families"][family][name] = value
    return json.dumps(cal).encode()


def _systems(chips: Any) -> bytes:
    return (
        "systems:\n  - id: my-pod\n    chip: h100\n"
        f"    chips: {chips}\n    network_gbps: 3200\n    usd_per_hour: 98.0\n"
    ).encode()


def _pilot(key: str, value: float) -> bytes:
    data = json.loads(PILOT.read_text())
    data[key] = value
    return json.dumps(data).encode()


TRAINING_ROW = "h100,8,p5.48xlarge,training,llama-3.1-8b,bf16,bf16,8,,,4096,8,tpot_ms,4.0,made-up-row\n"

# (id, argv, files, environment, a word the line must hold: the user's field)
CASES: list[tuple[str, list[str], dict[str, bytes], dict[str, str], str]] = [
    *[
        (f"calibration {name}={value!r}", [*E, "--calibration", "cal.json"],
         {"cal.json": _calibration("ada", name, value)}, {}, name)
        for name in ("memory_eff", "layer_overhead_us", "compute_half_tokens")
        for value in (0, -1, 1e308, "fast")
        if not (name == "layer_overhead_us" and value == 0)  # no overhead: a (bold) physical claim
    ],
    *[
        (f"systems chips {chips}", ["estimate", "llama-3.1-8b", "--on", "my-pod", "--systems", "sys.yaml"],
         {"sys.yaml": _systems(chips)}, {}, "chips")
        for chips in (0, -8, 10**12, "many")
    ],
    ("--layers 1000000", ["scan", "cfg.json", "--layers", "1000000"], {}, {}, "--layers"),
    ("kit prompt 1e9 tokens", ["pilot", "plan", "llama-3.1-8b", "--on", "g6e.xlarge", "--out", "kit",
                               "--input-len", "1000000000"], {}, {}, "input length"),
    ("kit load plan with 10^9-token prompts", ["pilot", "run", "--plan", "kit", "--endpoint", "http://127.0.0.1:9",
                                              "--model", "m", "--out", "r.json"], {"kit": b""}, {}, "input_len"),
    ("kit 0 output tokens", ["pilot", "plan", "llama-3.1-8b", "--on", "g6e.xlarge", "--out", "kit",
                             "--output-len", "0"], {}, {}, "output length"),
    *[
        (f"pilot import {key}={value}", ["pilot", "import", "r.json"], {"r.json": _pilot(key, value)}, {}, "ttft")
        for key in ("median_ttft_ms", "mean_ttft_ms")
        for value in (-5.0, 1e300)
    ],
    ("tpot on a training row", ["validate", "t.csv"], {"t.csv": (BENCH.splitlines()[0] + "\n" + TRAINING_ROW).encode()},
     {}, "tpot_ms"),
    ("duplicate key in an inventory", ["advise", "dup.yaml", "--no-store"], {"dup.yaml": b""}, {}, "twice"),
    ("duplicate key in a fleet file", ["fleet", "simulate", "dupf.yaml"], {"dupf.yaml": b""}, {}, "twice"),
    ("duplicate key in a calibration file", [*E, "--calibration", "dupc.json"], {"dupc.json": b""}, {}, "twice"),
    ("duplicate key in a model config", ["estimate", "dupm.json", "--on", "g6e.xlarge"], {"dupm.json": b""}, {}, "twice"),
    ("--tp twice", [*E, "--tp", "1", "--tp", "2"], {}, {}, "--tp"),
    ("--on twice", ["estimate", "llama-3.1-8b", "--on", "g6e.xlarge", "--on", "p5.48xlarge"], {}, {}, "--on"),
    ("SILICA_MAX_ROWS=1e308", ["validate", "bench.csv"], {}, {"SILICA_MAX_ROWS": "1e308"}, "SILICA_MAX_ROWS"),
    ("SILICA_MAX_FILE_MB=-1", ["validate", "bench.csv"], {}, {"SILICA_MAX_FILE_MB": "-1"}, "SILICA_MAX_FILE_MB"),
    ("SILICA_MAX_FILE_MB=1e308", ["validate", "bench.csv"], {}, {"SILICA_MAX_FILE_MB": "1e308"}, "SILICA_MAX_FILE_MB"),
    ("SILICA_MAX_ROWS=2.5", ["validate", "bench.csv"], {}, {"SILICA_MAX_ROWS": "2.5"}, "SILICA_MAX_ROWS"),
    ("SILICA_REGION with a newline", E, {}, {"SILICA_REGION": "us-east-1\nus-west-2"}, "SILICA_REGION"),
    ("SILICA_DB_URL of 10,000 characters", ["history"], {}, {"SILICA_DB_URL": "sqlite:///" + "d" * 10_000}, "SILICA_DB_URL"),
    ("SILICA_CONFIG with a control character", E, {}, {"SILICA_CONFIG": "conf\x07.toml"}, "SILICA_CONFIG"),
    ("SILICA_REGION nonsense", E, {}, {"SILICA_REGION": "mars-north-1"}, "SILICA_REGION"),
    ("SILICA_PRICE_OPTION nonsense", E, {}, {"SILICA_PRICE_OPTION": "free"}, "SILICA_PRICE_OPTION"),
    ("SILICA_PRICES a directory", E, {"pdir/x": b""}, {"SILICA_PRICES": "pdir"}, "SILICA_PRICES"),
    ("--until inf", ["monitor", "report", "--plan", "chat=plan.json", "--from", "vllm.prom", "--until", "inf"],
     {}, {}, "--until"),
    ("--since -1e308", ["monitor", "report", "--plan", "chat=plan.json", "--from", "vllm.prom",
                        "--since", "-1e308"], {}, {}, "--since"),
    ("--since in ms", ["monitor", "report", "--plan", "chat=plan.json", "--from", "vllm.prom",
                       "--since", "1796157369000"], {}, {}, "millisecond"),
    ("ms timestamps in a .prom file", ["monitor", "report", "--plan", "chat=plan.json", "--from", "ms.prom"],
     {"ms.prom": b""}, {}, "millisecond"),
    ("second timestamps in a text .prom file", ["monitor", "report", "--plan", "chat=plan.json", "--from", "s.prom"],
     {"s.prom": b""}, {}, "below"),
]  # fmt: skip


def _fill(box: Sandbox, files: dict[str, bytes]) -> None:
    """Files that are made from the sandbox's own good inputs (duplicate keys, ms timestamps)."""
    for name, content in files.items():
        if name == "dup.yaml":
            text = (box.work / "inv.yaml").read_text()
            first = re.search(r"^(\w+):.*$", text, re.MULTILINE)
            assert first is not None
            content = (text + "\n" + first.group(0) + "\n").encode()
        elif name == "dupf.yaml":
            content = ((box.work / "fleet.yaml").read_text() + "hours: 3\n").encode()
        elif name in ("dupc.json", "dupm.json"):  # a key pasted twice: the last would win silently
            good = json.dumps(CAL) if name == "dupc.json" else (box.work / "cfg.json").read_text()
            content = good.replace("{", '{"as_of": "2020-01-01", ', 1).encode()
            if name == "dupc.json":  # as_of is a key of the calibration file already
                assert '"as_of"' in json.dumps(CAL)
            else:
                content = good.replace("{", '{"vocab_size": 7, ', 1).encode()
        elif name == "kit":  # a kit whose load_plan.json was edited to 10^9-token prompts
            made = box.run(["pilot", "plan", "llama-3.1-8b", "--on", "g6e.xlarge", "--out", "kit"])
            assert made.exit_code == 0, made.stderr
            plan = json.loads((box.work / "kit" / "load_plan.json").read_text())
            plan["input_len"] = 10**9
            (box.work / "kit" / "load_plan.json").write_text(json.dumps(plan))
            continue
        elif name == "ms.prom":  # OpenMetrics (ends with # EOF) counts seconds; these are milliseconds
            content = ((box.work / "vllm.prom").read_text() + "# EOF\n").encode()
        elif name == "s.prom":  # the text format counts milliseconds; these are seconds
            text = (box.work / "vllm.prom").read_text()
            content = re.sub(r" (\d{10})000$", r" \1", text, flags=re.MULTILINE).encode()
        box.write(name, content)


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_out_of_range_is_one_line_naming_the_field(sandbox: Sandbox, case: Any) -> None:
    _, args, files, env, word = case
    _fill(sandbox, files)
    for var, value in env.items():
        sandbox.monkeypatch.setenv(var, value)
    before = sandbox.snapshot()
    line = assert_one_line_error(sandbox, sandbox.run(args), before)
    assert word.lower() in line.lower(), line


def test_monitor_time_errors_say_different_things(sandbox: Sandbox) -> None:
    """Each wrong time says what is wrong with it, not one shared "--until is not after --since"."""
    base = ["monitor", "report", "--plan", "chat=plan.json", "--from", "vllm.prom"]
    cases = {
        "finite": ["--until", "inf"],
        "below": ["--since", "-1e308"],
        "milliseconds": ["--since", "1796157369000"],
        "above": ["--until", "1e15"],
    }
    lines = {}
    for word, flag in cases.items():
        line = assert_one_line_error(sandbox, sandbox.run([*base, *flag]), sandbox.snapshot())
        assert word in line and flag[0] in line and "is not after" not in line, line
        lines[word] = line
    assert len(set(lines.values())) == len(cases)


def test_the_shipped_calibration_is_inside_the_declared_ranges() -> None:
    from silica.limits import QUANTITIES
    from silica.perf.calibration import PARAM_KINDS, PARAM_NAMES, load_calibration

    assert set(PARAM_KINDS) == set(PARAM_NAMES)  # a new parameter gets its declared range too
    assert set(PARAM_KINDS.values()) <= set(QUANTITIES)
    assert load_calibration(None).params  # the bundled file passes the same check a user's does


# ------------------------------------------------------------------ every result is checked first


@settings(max_examples=150, deadline=None, database=None, derandomize=True)
@given(
    name=st.sampled_from(
        ["ttft_ms", "tpot_ms", "output_tokens_per_s", "usd_per_1m_output_tokens", "usd_per_hour"]
    ),
    value=st.one_of(st.floats(), st.floats(min_value=-1e308, max_value=1e308)),
)
def test_any_figure_in_an_estimate_is_sane_or_refused(name: str, value: float) -> None:
    """An estimate holding any number in a headline figure is built only when the number is finite
    and physically possible; otherwise one line naming the figure, never a printed absurdity."""
    import dataclasses
    import math

    from silica import api
    from silica.errors import ImplausibleResultError
    from silica.limits import RESULT_RANGES
    from silica.results import InferenceEstimate

    if not _ESTIMATE:
        _ESTIMATE.append(api.estimate("llama-3.1-8b", "g6e.xlarge", input_len=512, output_len=128).data)
    base = _ESTIMATE[0]
    assert isinstance(base, InferenceEstimate)
    kind = InferenceEstimate.SANE[name]
    try:
        changed = dataclasses.replace(base, **{name: value})
    except ImplausibleResultError as err:
        assert name in str(err) and "\n" not in str(err)
        assert not RESULT_RANGES[kind].contains(value)
        return
    assert math.isfinite(getattr(changed, name)) and RESULT_RANGES[kind].contains(value)


_ESTIMATE: list[Any] = []


def test_an_absurd_result_is_one_line_not_printed(sandbox: Sandbox) -> None:
    """Wired through to the CLI: with the rate range shrunk to nothing, every estimate is absurd,
    and the command says so in one line (exit 2) instead of printing a table."""
    from silica.limits import RESULT_RANGES, Quantity

    sandbox.monkeypatch.setitem(RESULT_RANGES, "rate", Quantity(0.0, 1e-9, "tokens per second", "test"))
    before = sandbox.snapshot()
    line = assert_one_line_error(sandbox, sandbox.run(E), before)
    assert "implausible" in line and "tokens_per_s" in line, line


@settings(max_examples=200, deadline=None, database=None, derandomize=True)
@given(raw=st.text(max_size=40) | st.text(min_size=4090, max_size=4200))
def test_any_environment_value_is_admitted_or_one_line(raw: str) -> None:
    """Any string in a SILICA_* variable: a stripped, printable, bounded value, or one line naming
    the variable; a numeric one is in its declared range."""
    from silica._files import env_number, env_value
    from silica.errors import SilicaError
    from silica.limits import QUANTITIES

    env = {"SILICA_X": raw}
    try:
        got = env_value("SILICA_X", env)
    except SilicaError as err:
        assert "SILICA_X" in str(err) and "\n" not in str(err)
        return
    assert got is None or (got == raw.strip() and got.isprintable() and 0 < len(got) <= 4096)
    try:
        number = env_number("SILICA_X", "file_mb", env)
    except SilicaError as err:
        assert "SILICA_X" in str(err) and "\n" not in str(err)
        return
    assert number is None or QUANTITIES["file_mb"].contains(number)


def test_no_module_reads_a_silica_variable_by_itself() -> None:
    """SILICA_* values enter through `_files.env_value` (bounded, printable, ranged); a grep finds
    any module that reads one from os.environ directly (the crash-log folder is the one exception:
    the code that reports a crash must not raise)."""
    reads = re.compile(r"(environ(\.get)?\(|environ\[|getenv\(|\.get\(|\[)\s*(\"SILICA_|ENV_)")
    allowed = {"_files.py", "_guard.py"}
    found = [
        f"{path.relative_to(ROOT)}:{n}"
        for path in sorted((ROOT / "src" / "silica").rglob("*.py"))
        if path.name not in allowed
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if reads.search(line)
    ]
    assert not found, found

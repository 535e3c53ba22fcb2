"""Issue 24: one reading layer, one writing layer, safe kits and a safe-by-default server, by class.

Each class is tested where its one fix lives, with properties (any byte string, any file kind, any
shell metacharacter) as well as the cases the issue reported:

- W, writing: `-`, /dev/null, /dev/full, FIFOs written in place or refused in one line; every output
  checked against every input the command reads, indirect ones included, and its sibling files.
- R, reading: every file kind into every file-reading command; any bytes into every decoder; no module
  outside the reading layer opens user input (a grep).
- K, kits: shell metacharacters and newlines through every generated file.
- S, server: Host and Origin checks without a token, no-store, health without paths.
"""

from __future__ import annotations

import json
import math
import os
import re
import shlex
import stat
import tempfile
import threading
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.configuration import set_hypothesis_home_dir
from tests.hostile.conftest import ROOT, Sandbox, assert_one_line_error

from silica import _files
from silica.errors import SilicaError

set_hypothesis_home_dir(tempfile.mkdtemp(prefix="silica-hypothesis-"))  # nothing under the repo

PILOT_REPORT = ROOT / "tests" / "data" / "pilot" / "guidellm_benchmarks.json"


def _fuzz(examples: int) -> settings:
    return settings(
        max_examples=examples,
        deadline=None,
        database=None,
        derandomize=True,  # the same examples on every run: CI cannot pass or fail by luck
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    )


def _one_line(err: SilicaError) -> None:
    assert "\n" not in str(err) and str(err).strip(), repr(str(err))


# ---------------------------------------------------------------------------------- W: writing layer

# Commands that write one output (placeholder OUT), each with the input it reads from the sandbox.
WRITERS: dict[str, list[str]] = {
    "validate --out": ["validate", "bench.csv", "--out", "OUT"],
    "pilot import --out": ["pilot", "import", "report.json", "--out", "OUT"],
    "monitor report --md": [
        "monitor",
        "report",
        "--plan",
        "chat=plan.json",
        "--from",
        "vllm.prom",
        "--md",
        "OUT",
    ],
}


def _with_report(box: Sandbox) -> None:
    box.write("report.json", PILOT_REPORT.read_bytes())


@pytest.mark.parametrize("name", list(WRITERS))
def test_w_dev_null_survives_every_out(sandbox: Sandbox, name: str) -> None:
    _with_report(sandbox)
    before = os.stat("/dev/null")
    result = sandbox.run([a.replace("OUT", "/dev/null") for a in WRITERS[name]])
    assert result.exit_code == 0, result.stderr
    after = os.stat("/dev/null")
    assert stat.S_ISCHR(after.st_mode) and after.st_ino == before.st_ino  # the node, not a new file


@pytest.mark.parametrize("name", list(WRITERS))
def test_w_dash_is_stdout(sandbox: Sandbox, name: str) -> None:
    _with_report(sandbox)
    result = sandbox.run([a.replace("OUT", "-") for a in WRITERS[name]])
    assert result.exit_code == 0, result.stderr
    assert not (sandbox.work / "-").exists() and result.stdout.strip()


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full here")
@pytest.mark.parametrize("name", list(WRITERS))
def test_w_dev_full_is_one_line(sandbox: Sandbox, name: str) -> None:
    _with_report(sandbox)
    before = sandbox.snapshot()
    result = sandbox.run([a.replace("OUT", "/dev/full") for a in WRITERS[name]])
    line = assert_one_line_error(sandbox, result, before)
    assert "No space left" in line
    assert stat.S_ISCHR(os.stat("/dev/full").st_mode)


def test_w_a_fifo_output_is_written_in_place(sandbox: Sandbox) -> None:
    fifo = sandbox.work / "out.fifo"
    os.mkfifo(fifo)
    got: list[bytes] = []

    def drain() -> None:
        with open(fifo, "rb") as handle:
            got.append(handle.read())

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    result = sandbox.run(["validate", "bench.csv", "--out", "out.fifo"])
    reader.join(30)
    assert result.exit_code == 0, result.stderr
    assert stat.S_ISFIFO(os.stat(fifo).st_mode) and got and got[0].startswith(b"id,")


def _kit(box: Sandbox) -> Path:
    result = box.run(["pilot", "plan", "llama-3.1-8b", "--on", "inf2.xlarge", "--out", "kit"])
    assert result.exit_code == 0, result.stderr
    return box.work / "kit"


def _inventory_with(box: Sandbox, extra_pricing: str = "") -> None:
    text = (ROOT / "examples" / "inventory.yaml").read_text()
    if extra_pricing:
        text = text.replace(
            "pricing: {option: on_demand}", "pricing: {option: on_demand" + extra_pricing + "}"
        )
    box.write("inv2.yaml", text.encode())
    box.write("scans/ranker.scan.json", (ROOT / "examples" / "scans" / "ranker.scan.json").read_bytes())


FLEET_WITH_TRACE = """\
name: replay
hours: 1
inference:
  model: llama-3.1-8b
  ttft_slo_ms: 1000
  tpot_slo_ms: 50
  demand:
    trace: trace.csv
    input_len: 512
    output_len: 128
pools:
  - instance: p4d.24xlarge
    count: 1
"""

# (name, how to prepare the sandbox, command, the input that must survive)
INDIRECT: list[tuple[str, Any, list[str], str]] = [
    (
        "advise --md over the inventory's scan file",
        lambda b: _inventory_with(b),
        ["advise", "inv2.yaml", "--md", "scans/ranker.scan.json", "--no-store"],
        "scans/ranker.scan.json",
    ),
    (
        "advise --html over the inventory's prices file",
        lambda b: (
            _inventory_with(b, ", prices: my_prices.csv")
            or b.write("my_prices.csv", (ROOT / "src" / "silica" / "data" / "prices.csv").read_bytes())
        ),
        ["advise", "inv2.yaml", "--html", "my_prices.csv", "--no-store"],
        "my_prices.csv",
    ),
    (
        "fleet simulate --html over the trace",
        lambda b: b.write("f2.yaml", FLEET_WITH_TRACE.encode()) and b.write("trace.csv", b"t\n"),
        ["fleet", "simulate", "f2.yaml", "--html", "trace.csv"],
        "trace.csv",
    ),
    (
        "pilot import x.json --out x.json",
        _with_report,
        ["pilot", "import", "report.json", "--out", "report.json"],
        "report.json",
    ),
    (
        "pilot compare --html over the kit's prediction",
        lambda b: _kit(b) and _with_report(b),
        ["pilot", "compare", "report.json", "--plan", "kit", "--html", "kit/prediction.json", "--no-store"],
        "kit/prediction.json",
    ),
    (
        "pilot run --out over the kit's load plan (before any request)",
        _kit,
        [
            "pilot",
            "run",
            "--endpoint",
            "http://127.0.0.1:9",
            "--model",
            "m",
            "--plan",
            "kit",
            "--out",
            "kit/load_plan.json",
        ],
        "kit/load_plan.json",
    ),
    (
        "pilot run --out bench.json would replace the user's bench.csv beside it",
        lambda b: None,
        ["pilot", "run", "--endpoint", "http://127.0.0.1:9", "--model", "m", "--out", "bench.json"],
        "bench.csv",
    ),
    (
        "pilot run --out a folder (refused before the load test)",
        lambda b: b.write("results", None),
        ["pilot", "run", "--endpoint", "http://127.0.0.1:9", "--model", "m", "--out", "results"],
        "results",
    ),
    (
        "advise --html and --md the same file",
        lambda b: None,
        ["advise", "inv.yaml", "--html", "same.txt", "--md", "same.txt", "--no-store"],
        "inv.yaml",
    ),
]


@pytest.mark.parametrize("case", INDIRECT, ids=[c[0] for c in INDIRECT])
def test_w_no_output_over_an_indirect_input_or_sibling(sandbox: Sandbox, case: Any) -> None:
    _, prepare, args, keep = case
    prepare(sandbox)
    before = sandbox.snapshot()
    result = sandbox.run(args)
    line = assert_one_line_error(sandbox, result, before)
    assert "127.0.0.1:9" not in line  # refused before any request reached the endpoint
    assert (sandbox.work / keep).exists()


def test_w_pilot_run_replaces_its_own_earlier_csv(sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch) -> None:
    """The sibling guard refuses a user's file, not the CSV an earlier run wrote."""
    from silica.cli.pilot_cmd import _csv_beside
    from silica.pilot.runner import CSV_COLUMNS

    sandbox.write("r.csv", b"concurrency,requests,completed,failed,duration_s\n1,2,2,0,1.0\n")  # older runs
    assert _csv_beside(sandbox.work / "r.json") == sandbox.work / "r.csv"
    sandbox.write("r.csv", (",".join(CSV_COLUMNS) + "\nclosed,1,,,,2,2,0,0,1.0\n").encode())
    assert _csv_beside(sandbox.work / "r.json") == sandbox.work / "r.csv"
    sandbox.write("bench.json", b"{}")
    with pytest.raises(SilicaError, match="not a pilot result CSV"):
        _csv_beside(sandbox.work / "bench.json")
    assert _csv_beside(Path("-")) is None and _csv_beside(Path("/dev/null")) is None


def test_w_scan_factory_writes_no_bytecode(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    from silica.scan.build import load_factory

    (tmp_path / "helper.py").write_text("import torch\nWIDTH = 4\n")
    (tmp_path / "net.py").write_text(
        "import torch\nimport helper\n\n"
        "def factory():\n"
        "    return torch.nn.Linear(helper.WIDTH, 2), (torch.zeros(1, helper.WIDTH),)\n"
    )
    load_factory(tmp_path / "net.py", "factory")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["helper.py", "net.py"]


@_fuzz(60)
@given(data=st.binary(max_size=300))
def test_w_any_text_to_any_writable_target(tmp_path_factory: pytest.TempPathFactory, data: bytes) -> None:
    """write_text: a new file gets exactly the text; /dev/null stays a device; no temporary is left."""
    folder = tmp_path_factory.mktemp("w")
    text = data.decode("utf-8", errors="replace")
    _files.write_text(folder / "o.txt", text, newline="")
    assert (folder / "o.txt").read_bytes().decode("utf-8") == text
    _files.write_text("/dev/null", text)
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)
    assert [p.name for p in folder.iterdir()] == ["o.txt"]


# ---------------------------------------------------------------------------------- R: reading layer


def _kinds(box: Sandbox) -> dict[str, str]:
    """A path of each kind a hostile user can name, made in the sandbox where it must be."""
    box.write("folder", None)
    loop = box.work / "loop"
    if not loop.is_symlink():
        os.symlink("loop", loop)
    return {
        "directory": "folder",
        "dev-zero": "/dev/zero",
        "dev-urandom": "/dev/urandom",
        "dev-null": "/dev/null",
        "missing": "nope.json",
        "symlink-loop": "loop",
        "long-name": "n" * 300 + ".json",
        "long-path": "/".join(["d" * 200] * 30),
    }


READERS: dict[str, list[str]] = {
    "validate": ["validate", "IN"],
    "calibrate": ["calibrate", "IN", "--out", "fit.json"],
    "advise": ["advise", "IN", "--no-store"],
    "fleet simulate": ["fleet", "simulate", "IN"],
    "pilot import": ["pilot", "import", "IN"],
    "pilot compare": ["pilot", "compare", "IN", "--no-store"],
    "monitor --plan": ["monitor", "report", "--plan", "chat=IN", "--from", "vllm.prom"],
    "monitor --from": ["monitor", "report", "--plan", "chat=plan.json", "--from", "IN"],
    "estimate config": ["estimate", "IN", "--on", "p5.48xlarge"],
    "catalog import-prices": ["catalog", "import-prices", "IN", "--out", "p.csv"],
}
KINDS = [
    "directory",
    "dev-zero",
    "dev-urandom",
    "dev-null",
    "missing",
    "symlink-loop",
    "long-name",
    "long-path",
]


@pytest.mark.timeout(60)
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("reader", list(READERS))
def test_r_every_file_kind_into_every_reader(sandbox: Sandbox, reader: str, kind: str) -> None:
    path = _kinds(sandbox)[kind]
    before = sandbox.snapshot()
    result = sandbox.run([a.replace("IN", path) for a in READERS[reader]])
    assert_one_line_error(sandbox, result, before)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("reader", ["validate", "pilot import", "monitor --from"])
def test_r_a_fifo_that_never_ends_is_cut_at_the_cap(
    sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch, reader: str
) -> None:
    monkeypatch.setenv(_files.ENV_MAX_FILE_MB, "1")
    fifo = sandbox.root / "endless"  # outside the folder the snapshot hashes (it would read it too)
    os.mkfifo(fifo)

    def feed() -> None:
        try:
            with open(fifo, "wb") as handle:
                while True:
                    handle.write(b"a" * 65536)
        except OSError:  # the reader stopped at the cap and closed: a broken pipe
            pass

    threading.Thread(target=feed, daemon=True).start()
    before = sandbox.snapshot()
    result = sandbox.run([a.replace("IN", str(fifo)) for a in READERS[reader]])
    line = assert_one_line_error(sandbox, result, before)
    assert "limit" in line


HUGE_INT = "1" + "0" * 5000
HOSTILE_JSON = {
    "5000-digit integer": '{"hidden_size": ' + HUGE_INT + "}",
    "5000-digit negative": '{"a": [-' + HUGE_INT + "]}",
    "float overflow": '{"a": 1e999}',
    "NaN": '{"a": NaN}',
    "deep array": "[" * 100_000 + "]" * 100_000,
    "deep object": '{"a":' * 5000 + "1" + "}" * 5000,
}


@pytest.mark.parametrize("text", list(HOSTILE_JSON.values()), ids=list(HOSTILE_JSON))
@pytest.mark.parametrize(
    "reader", ["estimate config", "pilot import", "pilot compare", "monitor --plan", "calibration"]
)
def test_r_hostile_json_numbers_and_depth(sandbox: Sandbox, reader: str, text: str) -> None:
    sandbox.write("h.json", text.encode())
    args = (
        ["estimate", "llama-3.1-8b", "--on", "p5.48xlarge", "--calibration", "h.json"]
        if reader == "calibration"
        else [a.replace("IN", "h.json") for a in READERS[reader]]
    )
    before = sandbox.snapshot()
    assert_one_line_error(sandbox, sandbox.run(args), before)


def test_r_a_5000_digit_instance_count_is_one_line(sandbox: Sandbox) -> None:
    before = sandbox.snapshot()
    result = sandbox.run(["estimate", "llama-3.1-8b", "--on", "p5.48xlargex" + "9" * 5000])
    assert_one_line_error(sandbox, result, before)


@_fuzz(150)
@given(data=st.binary(max_size=400))
def test_r_any_bytes_into_every_decoder(tmp_path_factory: pytest.TempPathFactory, data: bytes) -> None:
    """read_text + JSON, TOML, YAML and CSV: a value or one SilicaError line, never another exception."""
    from silica._yaml import load_located

    path = tmp_path_factory.mktemp("r") / "f"
    path.write_bytes(data)
    for decode in (
        lambda: _files.parse_json(_files.read_text(path), path),
        lambda: _files.parse_toml(_files.read_text(path), path),
        lambda: load_located(path),
        lambda: list(__import__("csv").reader(_files.csv_text(path))),
    ):
        try:
            decode()
        except SilicaError as err:
            _one_line(err)


json_scalars = st.one_of(
    st.integers(min_value=-(10**60), max_value=10**60).map(str),
    st.sampled_from(["NaN", "Infinity", "-Infinity", "1e999", "-1e999", "1e-999", "0", "-0.0"]),
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
)


@_fuzz(200)
@given(number=json_scalars, depth=st.integers(min_value=0, max_value=200))
def test_r_any_number_at_any_depth_into_parse_json(number: str, depth: int) -> None:
    text = "[" * depth + number + "]" * depth
    try:
        value = _files.parse_json(text, "x.json")
    except SilicaError as err:
        _one_line(err)
        return
    assert depth <= _files.MAX_NESTING
    leaf = value
    for _ in range(depth):
        leaf = leaf[0]
    assert not isinstance(leaf, int) or len(str(abs(leaf))) <= _files.MAX_INT_DIGITS


@_fuzz(100)
@given(depth=st.integers(min_value=1, max_value=5000))
def test_r_toml_depth(depth: int) -> None:
    try:
        _files.parse_toml("a = " + "[" * depth + "1" + "]" * depth, "pyproject.toml")
    except SilicaError as err:
        _one_line(err)
        assert depth > _files.MAX_NESTING


def test_r_no_module_opens_user_input_by_itself() -> None:
    """Every user file enters through silica._files (or _yaml, which calls it). Package data, the
    store's own files, the server's upload folders and the kit writer's outputs are the exceptions,
    each named here with why."""
    allowed = {
        # package data shipped with Silica (resources.files / DATA_DIR), not user input
        "models/registry.py",
        "fleet/demand.py",
        "fleet/derive.py",  # maintainer script: writes the bundled data from shared traces
        "pilot/engines.py",
        "perf/stacks.py",
        "perf/calibration.py",
        "scan/source.py",
        "scan/knowledge.py",
        # the reading layer itself, and its streaming readers (refuse non-regular kinds first)
        "_files.py",
        "catalog/_offer.py",
        "fleet/traces.py",
        "scan/code_scan.py",
        # the server's own upload folder (bytes already capped by the upload layer)
        "serve/actions.py",
        "report/svg.py",  # `_open(`: an SVG element, not a file
        "cli/_guard.py",  # the crash log and devnull at exit
    }
    pattern = re.compile(r"(?<![\w.])open\(|\.read_text\(|\.read_bytes\(|\.open\(|json\.load\(|tomllib\.load")
    offenders = []
    src = ROOT / "src" / "silica"
    for path in sorted(src.rglob("*.py")):
        rel = str(path.relative_to(src))
        if rel in allowed:
            continue
        for n, line in enumerate(path.read_text().splitlines(), 1):
            code = line.split("#", 1)[0]
            if pattern.search(code) and "resources.files" not in code and "_files" not in code:
                offenders.append(f"{rel}:{n}: {line.strip()}")
    assert not offenders, "read user input through silica._files:\n" + "\n".join(offenders)


# ---------------------------------------------------------------------------------------- K: kits

SHELL_NASTY = [
    "x; touch PWNED $(id)",
    "a`id`b",
    'it\'s "quoted"',
    "$HOME && rm -rf /",
    "name\nevil: 1",
    "tab\there",
    "-- --port 1",
    "a|b>c<d&e",
    "#comment",
    "{model}",
]


@pytest.fixture(scope="module")
def kit_maker() -> Any:
    from silica.pilot.kit import make_kit

    return make_kit


def _check_kit(files: dict[str, str], model: str) -> None:
    # launch.sh: comments are one line each; the one command has the model as one word.
    lines = files["launch.sh"].splitlines()
    commands = [ln for ln in lines if ln and not ln.startswith("#")]
    assert commands[0] == "set -euo pipefail" and len(commands) == 2, commands
    words = shlex.split(commands[1])
    assert model in words, (model, words)
    # sky.yaml: the expected keys only; its `run` command has the model as one word.
    sky = yaml.safe_load(files["sky.yaml"])
    assert set(sky) == {"name", "resources", "envs", "setup", "run"}
    assert model in shlex.split(sky["run"])
    # k8s.yaml: the container command holds the model as one argument.
    deployment, service = yaml.safe_load_all(files["k8s.yaml"])
    assert model in deployment["spec"]["template"]["spec"]["containers"][0]["command"]
    assert service["kind"] == "Service"
    for name in ("load_plan.json", "prediction.json"):
        json.loads(files[name])


@pytest.mark.parametrize("model", SHELL_NASTY)
def test_k_shell_metacharacters_stay_one_argument_or_are_refused(kit_maker: Any, model: str) -> None:
    try:
        kit = kit_maker("llama-3.1-8b", "inf2.xlarge", serve_model=model)
    except SilicaError as err:
        _one_line(err)
        assert not model.isprintable() or not model.strip()  # only control characters, or no name at all
        return
    _check_kit(kit.files, model)


@_fuzz(40)
@given(
    model=st.text(
        alphabet=st.sampled_from(list(" ;&|$`'\"\\(){}<>#*?~!-=/.:aZ9\t\n\r")), min_size=1, max_size=24
    )
)
def test_k_any_metacharacter_string(kit_maker: Any, model: str) -> None:
    test_k_shell_metacharacters_stay_one_argument_or_are_refused(kit_maker, model)


# -------------------------------------------------------------------------------------- S: server


@pytest.fixture
def web(tmp_path: Path) -> Any:
    starlette_testclient = pytest.importorskip("starlette.testclient")
    from silica.serve import ServeSettings, create_app

    app = create_app(ServeSettings(store_url=f"sqlite:///{tmp_path / 's.db'}"))
    return starlette_testclient.TestClient(app, base_url="http://127.0.0.1:8000")


@pytest.mark.parametrize("host", ["evil.example", "attacker.com:8000", "127.0.0.1.nip.io", "0x7f.example"])
def test_s_rebinding_host_is_refused_without_a_token(web: Any, host: str) -> None:
    got = web.get("/api/v1/history", headers={"host": host})
    assert got.status_code == 403 and "loopback" in got.text


@pytest.mark.parametrize("host", ["127.0.0.1:8000", "localhost:8000", "[::1]:8000", "app.localhost"])
def test_s_loopback_hosts_pass(web: Any, host: str) -> None:
    assert web.get("/api/v1/health", headers={"host": host}).status_code == 200


@pytest.mark.parametrize("origin", ["https://evil.example", "null", "http://127.0.0.1.evil.example"])
def test_s_cross_site_post_is_refused(web: Any, origin: str) -> None:
    got = web.post(
        "/api/v1/estimate", json={"model": "llama-3.1-8b", "on": "g6e.xlarge"}, headers={"origin": origin}
    )
    assert got.status_code == 403


def test_s_same_origin_post_passes_and_private_answers_are_not_cached(web: Any) -> None:
    got = web.get("/api/v1/history", headers={"origin": "http://127.0.0.1:8000"})
    assert got.status_code == 200 and got.headers["cache-control"] == "no-store"
    posted = web.post(
        "/api/v1/estimate",
        json={"model": "llama-3.1-8b", "on": "g6e.xlarge"},
        headers={"origin": "http://127.0.0.1:8000"},
    )
    assert posted.status_code != 403


def test_s_health_shows_no_path_or_url(web: Any, tmp_path: Path) -> None:
    body = web.get("/api/v1/health").json()
    assert body == {"status": "ok", "database": "sqlite"}
    assert str(tmp_path) not in json.dumps(body)


@pytest.mark.parametrize("depth", [100, 100_000])
def test_s_deep_json_is_4xx(web: Any, depth: int) -> None:
    body = '{"config": ' + "[" * depth + "]" * depth + "}"
    got = web.post("/api/v1/scan", content=body, headers={"content-type": "application/json"})
    assert 400 <= got.status_code < 500, got.text[:300]


# ------------------------------------------------------------------------------- V: validation layer

NONSENSE: dict[str, list[str]] = {
    "price 1e308": ["estimate", "llama-3.1-8b", "--on", "p5.48xlarge", "--price", "p5.48xlarge=1e308"],
    "two --price for one instance": [
        "compare", "llama-3.1-8b", "--instance", "p5.48xlarge",
        "--price", "p5.48xlarge=10", "--price", "p5.48xlarge=20",
    ],
    "--set max_payback_months=0": ["advise", "inv.yaml", "--set", "max_payback_months=0", "--no-store"],
    "--set max_payback_months=-1": ["advise", "inv.yaml", "--set", "max_payback_months=-1", "--no-store"],
    "--set max_payback_months=1e308": ["advise", "inv.yaml", "--set", "max_payback_months=1e308", "--no-store"],
    "--set twice": ["advise", "inv.yaml", "--set", "max_payback_months=3", "--set", "max_payback_months=4"],
    "--until inf": ["monitor", "report", "--plan", "chat=plan.json", "--from", "vllm.prom", "--until", "inf"],
    "--since -1e308": ["monitor", "report", "--plan", "chat=plan.json", "--from", "vllm.prom", "--since", "-1e308"],
    "--since in milliseconds": [
        "monitor", "report", "--plan", "chat=plan.json", "--from", "vllm.prom", "--since", "1796157369000",
    ],
    "--vp 2 --pp 1": [
        "estimate", "llama-3.1-8b", "--on", "p5.48xlarge", "--task", "training",
        "--seq-len", "4096", "--tokens", "1e9", "--vp", "2", "--pp", "1",
    ],
    "tp beyond the chips": ["estimate", "llama-3.1-8b", "--on", "p5.48xlarge", "--tp", "16"],
    "training past the model's positions": [
        "estimate", "gpt-j-6b", "--on", "p5.48xlarge", "--task", "training", "--seq-len", "4096", "--tokens", "1e9",
    ],
}  # fmt: skip


@pytest.mark.parametrize("args", list(NONSENSE.values()), ids=list(NONSENSE))
def test_v_nonsense_is_refused_naming_the_field(sandbox: Sandbox, args: list[str]) -> None:
    sandbox.write("scans/ranker.scan.json", (ROOT / "examples" / "scans" / "ranker.scan.json").read_bytes())
    before = sandbox.snapshot()
    line = assert_one_line_error(sandbox, sandbox.run(args), before)
    flags = [a for a in args if a.startswith("--") and a not in ("--no-store", "--plan", "--from", "--on")]
    assert any(f in line for f in flags), (flags, line)  # the user's field, not an internal name


@_fuzz(300)
@given(
    kind=st.sampled_from(sorted(__import__("silica.limits").limits.QUANTITIES)),
    value=st.one_of(st.floats(), st.integers(min_value=-(10**40), max_value=10**40)),
)
def test_v_any_number_into_every_quantity(kind: str, value: float) -> None:
    """A value is returned only when finite and inside the declared range; else one line naming it."""
    from silica.limits import QUANTITIES, check

    q = QUANTITIES[kind]
    try:
        got = check(kind, value, "--field")
    except SilicaError as err:
        _one_line(err)
        assert "--field" in str(err)
        assert not q.contains(float(value))
        return
    assert math.isfinite(got) and q.contains(got)


@_fuzz(100)
@given(usd=st.one_of(st.floats(), st.text(max_size=12)), twice=st.booleans())
def test_v_any_price_flag(usd: Any, twice: bool) -> None:
    from silica.catalog import parse_price_overrides

    items = [f"p5.48xlarge={usd}"] * (2 if twice else 1)
    try:
        out = parse_price_overrides(items, ["p5.48xlarge"])
    except SilicaError as err:
        _one_line(err)
        return
    assert not twice and 0 < out["p5.48xlarge"] <= 10_000


# ----------------------------------------------------------------------------------- F: store faults


def _damaged_store(box: Sandbox, how: str) -> None:
    import sqlite3

    path = box.root / "store.db"
    if how == "foreign file":
        path.write_bytes(b"this is not a database, it is a shopping list\n" * 10)
        return
    result = box.run(["estimate", "llama-3.1-8b", "--on", "p5.48xlarge"])  # creates the store
    from silica import store

    store.record("estimate", "seed", {"ok": 1})
    store.close_all()
    assert result.exit_code == 0, result.stderr
    with sqlite3.connect(path) as db:
        if how == "unknown revision":
            db.execute("UPDATE alembic_version SET version_num = 'ffffffffffff'")
        elif how == "non-JSON payload":
            db.execute("UPDATE silica_records SET payload = '{not json'")
        elif how == "payload not an object":
            db.execute("UPDATE silica_records SET payload = '[1, 2]'")
        elif how == "bad timestamp":
            db.execute("UPDATE silica_records SET created_at = 'yesterday-ish'")


@pytest.mark.parametrize(
    "how", ["foreign file", "unknown revision", "non-JSON payload", "payload not an object", "bad timestamp"]
)
@pytest.mark.parametrize("args", [["history"], ["history", "--id", "1"]], ids=["history", "history --id"])
def test_f_a_damaged_store_is_one_line_with_a_fix(sandbox: Sandbox, how: str, args: list[str]) -> None:
    _damaged_store(sandbox, how)
    before = sandbox.snapshot()
    line = assert_one_line_error(sandbox, sandbox.run(args), before)
    assert "To fix:" in line


@pytest.mark.parametrize(
    "url", ["postgresql://u:secret@db:notaport/x", "sqlite:///" + "d" * 5000 + "/s.db", "nonsense://", "::"]
)
def test_f_a_bad_store_url_is_one_line_and_hides_the_password(sandbox: Sandbox, url: str) -> None:
    sandbox.monkeypatch.setenv("SILICA_DB_URL", url)
    before = sandbox.snapshot()
    line = assert_one_line_error(sandbox, sandbox.run(["history"]), before)
    assert "secret" not in line


@_fuzz(200)
@given(name=st.text(max_size=40))
def test_s_markdown_names_are_literal(name: str) -> None:
    """Any name in a Markdown report: one line, no raw HTML, no unescaped Markdown syntax."""
    from silica.report.markdown import md_name

    shown = md_name(name)
    assert "\n" not in shown and "\r" not in shown and "<" not in shown
    plain = re.sub(r"\\(.)", "", shown.replace("&lt;", "").replace("&amp;", ""))
    assert not set(plain) & set("`*_[]{}()#+!|~>")


def test_s_advise_markdown_escapes_a_hostile_workload_name(sandbox: Sandbox) -> None:
    text = (ROOT / "examples" / "inventory.yaml").read_text()
    first = re.search(r"- name: (\S+)", text)
    assert first is not None
    evil = "a|b <img src=x onerror=alert(1)> ## [x](javascript:alert(1))"
    sandbox.write(
        "evil.yaml", text.replace(f"- name: {first.group(1)}", f"- name: {json.dumps(evil)}", 1).encode()
    )
    sandbox.write("scans/ranker.scan.json", (ROOT / "examples" / "scans" / "ranker.scan.json").read_bytes())
    result = sandbox.run(["advise", "evil.yaml", "--md", "r.md", "--no-store"])
    assert result.exit_code == 0, result.stderr
    report = (sandbox.work / "r.md").read_text()
    assert "<img" not in report and "](javascript" not in report
    rows = [ln for ln in report.splitlines() if ln.startswith("| ")]
    header = rows[0].count(" | ")
    assert all(r.replace("\\|", "").count(" | ") == header for r in rows[:3])


@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "dev-null", "long-name", "symlink-loop"])
def test_r_scan_names_the_kind_of_what_it_was_given(sandbox: Sandbox, kind: str) -> None:
    paths = _kinds(sandbox)
    if kind == "fifo":
        os.mkfifo(sandbox.root / "pipe")
        paths["fifo"] = str(sandbox.root / "pipe")
    before = sandbox.snapshot()
    line = assert_one_line_error(sandbox, sandbox.run(["scan", paths[kind]]), before)
    assert "does not exist" not in line or kind == "symlink-loop", line


@pytest.mark.parametrize(
    "args,name",
    [
        (["validate", "IN"], "bench.csv"),
        (["estimate", "llama-3.1-8b", "--on", "p5.48xlarge", "--prices", "IN"], "prices.csv"),
    ],
    ids=["measurements CSV", "prices CSV"],
)
def test_v_a_duplicate_csv_column_is_refused(sandbox: Sandbox, args: list[str], name: str) -> None:
    text = (sandbox.work / name).read_text()
    head, _, rest = text.partition("\n")
    first = head.split(",")[0]
    sandbox.write("dup.csv", f"{head},{first.upper()}\n{rest}".encode())
    before = sandbox.snapshot()
    line = assert_one_line_error(sandbox, sandbox.run([a.replace("IN", "dup.csv") for a in args]), before)
    assert "appears twice" in line


def test_s_own_pages_post_with_a_null_origin_only_from_the_same_origin(web: Any) -> None:
    """The pages are sent with no-referrer, so the browser posts their forms with `Origin: null`; only
    its own `Sec-Fetch-Site: same-origin` lets such a post through (a sandboxed frame elsewhere says
    cross-site)."""
    body = {"model": "llama-3.1-8b", "on": "g6e.xlarge"}
    own = web.post("/api/v1/estimate", json=body, headers={"origin": "null", "sec-fetch-site": "same-origin"})
    assert own.status_code == 200, own.text
    for site in ("cross-site", "same-site", "none"):
        got = web.post("/api/v1/estimate", json=body, headers={"origin": "null", "sec-fetch-site": site})
        assert got.status_code == 403, site

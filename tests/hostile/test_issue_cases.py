"""The cases issue 15 lists, each with what its one line must say (a true reason, not any reason)."""

from __future__ import annotations

import json

import pytest
from tests.hostile.conftest import BENCH, Sandbox, assert_one_line_error
from tests.hostile.test_bad_files import BOMB, DEEP

HEADER = BENCH.splitlines()[0]
LLAMA = {
    "model_type": "llama",
    "hidden_size": 4096,
    "intermediate_size": 14336,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "vocab_size": 128256,
    "max_position_embeddings": 8192,
}
E = ["estimate", "llama-3.1-8b", "--on", "p5.48xlarge"]
SAME = "is also an input file"

# (id, argv, files, environment, what the line must contain)
CASES: list[tuple[str, list[str], dict[str, bytes], dict[str, str], str]] = [
    ("validate-out-is-input", ["validate", "bench.csv", "--out", "bench.csv"], {}, {}, SAME),
    ("calibrate-out-is-input", ["calibrate", "bench.csv", "--out", "bench.csv"], {}, {}, SAME),
    ("advise-md-is-inventory", ["advise", "inv.yaml", "--md", "inv.yaml", "--no-store"], {}, {}, SAME),
    ("fleet-html-is-fleet-file", ["fleet", "simulate", "fleet.yaml", "--html", "fleet.yaml"], {}, {}, SAME),
    (
        "import-prices-out-is-source",
        ["catalog", "import-prices", "offer.json", "--out", "offer.json"],
        {},
        {},
        SAME,
    ),
    ("yaml-bomb-inventory", ["advise", "b.yaml", "--no-store"], {"b.yaml": BOMB}, {}, "aliases"),
    ("yaml-bomb-fleet", ["fleet", "simulate", "b.yaml"], {"b.yaml": BOMB}, {}, "aliases"),
    ("big-inventory", ["advise", "inv.yaml", "--no-store"], {}, {"SILICA_MAX_FILE_MB": "0.001"}, "MB limit"),
    (
        "many-rows-validate",
        ["validate", "r.csv"],
        {"r.csv": (BENCH + BENCH.splitlines()[1] + "\n").encode()},
        {"SILICA_MAX_ROWS": "1"},
        "SILICA_MAX_ROWS",
    ),
    ("binary-prices", [*E, "--prices", "p.csv"], {"p.csv": b"\x89PNG\r\n\x1a\n\xff"}, {}, "not UTF-8 text"),
    (
        "deep-json-estimate",
        ["estimate", "c.json", "--on", "p5.48xlarge"],
        {"c.json": b"[" * DEEP + b"]" * DEEP},
        {},
        "deeper than 64 levels",
    ),
    (
        "deep-json-scan",
        ["scan", "c.json"],
        {"c.json": b"[" * DEEP + b"]" * DEEP},
        {},
        "deeper than 64 levels",
    ),
    (
        "calibration-families-5",
        [*E, "--calibration", "c.json"],
        {"c.json": b'{"families": 5}'},
        {},
        "needs a 'families' object",
    ),
    (
        "measured-0",
        ["validate", "r.csv"],
        {"r.csv": BENCH.replace(",4.0,", ",0,").encode()},
        {},
        "not a positive finite number",
    ),
    (
        "history-limit-huge",
        ["history", "--limit", "99999999999999999999999"],
        {},
        {},
        "1<=x<=100000",
    ),
    (
        "on-99999999999-instances",
        ["estimate", "llama-3.1-8b", "--on", "p5.48xlargex99999999999"],
        {},
        {},
        "over the limit of 100,000",
    ),
    ("rate-1e308", [*E, "--rate", "1e308"], {}, {}, "request rate 1e+308 is over the limit"),
    ("batch-1e9", [*E, "--batch", "1000000000"], {}, {}, "Batch 1,000,000,000 is over the limit"),
    (
        "hidden-4095",
        ["estimate", "c.json", "--on", "p5.48xlarge"],
        {"c.json": json.dumps({**LLAMA, "hidden_size": 4095}).encode()},
        {},
        "does not split into 32 attention heads",
    ),
    (
        "3-kv-heads",
        ["estimate", "c.json", "--on", "p5.48xlarge"],
        {"c.json": json.dumps({**LLAMA, "num_key_value_heads": 3}).encode()},
        {},
        "3 key/value heads cannot serve 32",
    ),
    ("pp-beyond-layers", [*E, "--pp", "64"], {}, {}, "pp"),
    (
        "instances-beyond-layers",
        ["estimate", "llama-3.1-8b", "--on", "p5.48xlargex1000"],
        {},
        {},
        "more than llama-3.1-8b's 32 layers",
    ),
    ("tp-splits-heads", [*E, "--tp", "3"], {}, {}, "does not divide"),
    (
        "validate-input-len-1e11",
        ["validate", "r.csv"],
        {"r.csv": BENCH.replace(",1024,", ",100000000000,").encode()},
        {},
        "input_len",
    ),
    (
        "calibrate-header-only",
        ["calibrate", "r.csv", "--out", "fit.json"],
        {"r.csv": (HEADER + "\n").encode()},
        {},
        "no measurement rows",
    ),
    ("fleet-1e12-instances", ["fleet", "simulate", "f.yaml"], {}, {}, "less than or equal to 1000000"),
    (
        "sweep-workers-0",
        ["fleet", "sweep", "fleet.yaml", "--workers", "0", "--no-store"],
        {},
        {},
        "--workers must be 1 to",
    ),
    (
        "sweep-workers-minus-1",
        ["fleet", "sweep", "fleet.yaml", "--workers", "-1", "--no-store"],
        {},
        {},
        "--workers must be 1 to",
    ),
    (
        "calibrate-out-unwritable",
        ["calibrate", "bench.csv", "--out", "no/dir/fit.json"],
        {},
        {},
        "does not exist",
    ),
    (
        "policy-statik",
        ["fleet", "simulate", "fleet.yaml", "--policy", "statik"],
        {},
        {},
        "Did you mean 'static'",
    ),
    ("inventory-to-fleet", ["fleet", "simulate", "inv.yaml"], {}, {}, "looks like an inventory"),
    (
        "wrong-shape-import",
        ["catalog", "import-prices", "o.json", "--out", "o.csv"],
        {"o.json": b'{"foo": 1}'},
        {},
        "not a Price List offer file",
    ),
    ("scan-python-file", ["scan", "script.py"], {}, {}, "script.py:NAME"),
    ("db-in-new-dir", ["history"], {}, {"SILICA_DB_URL": "sqlite:///new/dir/s.db"}, "does not exist"),
]


@pytest.mark.parametrize(("argv", "files", "env", "needle"), [pytest.param(*c[1:], id=c[0]) for c in CASES])
def test_issue_case(
    sandbox: Sandbox, argv: list[str], files: dict[str, bytes], env: dict[str, str], needle: str
) -> None:
    for name, content in files.items():
        sandbox.write(name, content)
    if argv[:3] == ["fleet", "simulate", "f.yaml"]:
        sandbox.write(
            "f.yaml", (sandbox.work / "fleet.yaml").read_bytes().replace(b"count: 2", b"count: 1000000000000")
        )
    for key, value in env.items():
        sandbox.monkeypatch.setenv(key, value)
    before = sandbox.snapshot()
    line = assert_one_line_error(sandbox, sandbox.run(argv), before)
    assert needle in line, line
    assert not (sandbox.work / "new").exists()

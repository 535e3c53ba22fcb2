"""Bad values to every subcommand's arguments and options: one line, exit 2, no file changed.

Each case: (id, argv, files to create in the folder first, outputs the case may change). The id is the
comment-level name of the case: "<command>/<what is wrong>". Good inputs (inv.yaml, fleet.yaml,
bench.csv, cfg.json, plan.json, offer.json, ...) are already in the folder (see conftest.py).
"""

from __future__ import annotations

import json
import os

import pytest
from tests.hostile.conftest import BENCH, ROOT, SMALL_FLEET, Sandbox, assert_one_line_error

E = ["estimate", "llama-3.1-8b", "--on", "p5.48xlarge"]
T = ["estimate", "llama-3.1-8b", "--on", "trn1.32xlarge", "--task", "training"]
C = ["compare", "llama-3.1-8b", "--instance", "p5.48xlarge"]
CALIBRATION = (ROOT / "src" / "silica" / "data" / "calibration.json").read_bytes()
MON = ["monitor", "report", "--plan", "plan.json", "--from", "vllm.prom", "--no-store"]
HEADER, ROW = BENCH.splitlines()
COLS = HEADER.split(",")


def bench(**cells: str) -> bytes:
    """The good benchmark row with some cells replaced."""
    row = dict(zip(COLS, ROW.split(","), strict=True))
    row.update(cells)
    return (HEADER + "\n" + ",".join(row[c] for c in COLS) + "\n").encode()


def config(**fields: object) -> bytes:
    """A Llama-shaped config.json with some fields replaced (None removes the field)."""
    base: dict[str, object] = {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "hidden_size": 4096,
        "intermediate_size": 14336,
        "num_hidden_layers": 32,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "vocab_size": 128256,
        "max_position_embeddings": 131072,
        "torch_dtype": "bfloat16",
    }
    for key, value in fields.items():
        if value is None:
            base.pop(key, None)
        else:
            base[key] = value
    return json.dumps(base).encode()


def fleet(old: str, new: str) -> bytes:
    assert old in SMALL_FLEET
    return SMALL_FLEET.replace(old, new).encode()


Case = tuple[str, list[str], dict[str, bytes | None], tuple[str, ...]]
CASES: list[Case] = []


def case(
    cid: str, argv: list[str], files: dict[str, bytes | None] | None = None, outputs: tuple[str, ...] = ()
) -> None:
    CASES.append((cid, argv, files or {}, outputs))


# --- estimate: numbers that cannot be, names that do not exist ---------------------------------------
for opt, values in {
    "--batch": ["0", "-1", "1000000000", "abc", "1.5"],
    "--input-len": ["0", "-5", "100000000000", "x"],
    "--output-len": ["0", "-1", "100000000000"],
    "--rate": ["0", "-1", "nan", "inf", "1e308"],
    "--tokens-per-month": ["-1", "nan", "inf", "0"],
    "--ttft-slo-ms": ["0", "-1", "nan", "inf"],
    "--tpot-slo-ms": ["0", "-3", "nan"],
    "--dtype": ["bogus", "fp33", "", "int3"],
    "--weight-dtype": ["bogus", "fp32x", "bf8"],
    "--seq-len": ["0", "-1", "100000000000"],
    "--tp": ["0", "-1", "3", "1000000"],
    "--pp": ["0", "-2", "99999"],
    "--option": ["bogus", "reserved"],
    "--region": ["mars-north-1", ""],
}.items():
    for v in values:
        case(f"estimate/{opt[2:]}={v or 'empty'}", [*E, opt, v])
for on in [
    "p5.48xlargex99999999999",
    "p5.48xlargex0",
    "p5.48xlargex-1",
    "h100x0",
    "h100x99999999999",
    "h100x1.5",
    "bogus",
    "",
    "x8",
    "p5.48xlargexabc",
    "p5.48xlarge x2",
    "trn1.32xlargex5000000",
]:
    case(f"estimate/on={on or 'empty'}", ["estimate", "llama-3.1-8b", "--on", on])
for price in [
    "p5.48xlarge",
    "p5.48xlarge=",
    "p5.48xlarge=-1",
    "p5.48xlarge=nan",
    "p5.48xlarge=inf",
    "bogus.xl=1",
    "=5",
    "p5.48xlarge=1e400",
    "p5.48xlarge=abc",
]:
    case(f"estimate/price={price or 'empty'}", [*E, "--price", price])
for opt, v in [
    ("--tokens", "-1"),
    ("--tokens", "nan"),
    ("--tokens", "inf"),
    ("--global-batch", "0"),
    ("--global-batch", "-4"),
    ("--micro-batch", "0"),
    ("--micro-batch", "-1"),
    ("--vp", "0"),
    ("--vp", "-2"),
    ("--vp", "100000"),
    ("--vp", "two"),
    ("--deadline-days", "0"),
    ("--deadline-days", "-1"),
    ("--deadline-days", "nan"),
    ("--seq-len", "0"),
    ("--seq-len", "100000000000"),
]:
    case(f"estimate-training/{opt[2:]}={v}", [*T, opt, v])
for model in ["llama-3.1-8", "", "../../etc/passwd", "no/such-repo", "gpt-j-6b.json"]:
    case(f"estimate/model={model or 'empty'}", ["estimate", model, "--on", "p5.48xlarge"])
case("estimate/task=bogus", [*E, "--task", "bogus"])
# configs whose shapes cannot be a model
for cid, fields in {
    "hidden-4095-over-32-heads": {"hidden_size": 4095},
    "3-kv-heads-for-32": {"num_key_value_heads": 3},
    "kv-heads-over-heads": {"num_key_value_heads": 64},
    "zero-layers": {"num_hidden_layers": 0},
    "negative-layers": {"num_hidden_layers": -2},
    "zero-heads": {"num_attention_heads": 0},
    "zero-hidden": {"hidden_size": 0},
    "zero-vocab": {"vocab_size": 0},
    "zero-intermediate": {"intermediate_size": 0},
    "hidden-is-text": {"hidden_size": "big"},
    "hidden-is-float": {"hidden_size": 4096.5},
    "hidden-1e30": {"hidden_size": 1e30},
    "layers-1e12": {"num_hidden_layers": 10**12},
    "hidden-is-bool": {"hidden_size": True},
    "no-hidden": {"hidden_size": None},
    "no-model-type": {"model_type": None, "architectures": None},
    "unknown-model-type": {"model_type": "not-a-model", "architectures": ["NopeForCausalLM"]},
    "zero-positions": {"max_position_embeddings": 0},
}.items():
    case(
        f"estimate/config-{cid}",
        ["estimate", "bad/config.json", "--on", "p5.48xlarge"],
        {"bad/config.json": config(**fields)},
    )
case(
    "estimate/input-len-beyond-model",
    ["estimate", "bad/config.json", "--on", "p5.48xlarge", "--input-len", "200000"],
    {"bad/config.json": config(max_position_embeddings=4096)},
)
case("estimate/tp-not-dividing-kv-heads", [*E, "--tp", "16"])  # 8 KV heads: tp 16 would split a head
# Expert parallelism: only for MoE models, must split the experts evenly, must fit the ranks.
Q = ["estimate", "qwen3-30b-a3b", "--on", "h100x16", "--task", "training", "--seq-len", "4096"]
case("estimate/ep-on-a-dense-model", [*E, "--ep", "8"])
case("estimate/ep-zero", [*Q, "--ep", "0"])
case("estimate/ep-negative", [*Q, "--ep", "-4"])
case("estimate/ep-not-a-number", [*Q, "--ep", "eight"])
case("estimate/ep-more-than-experts", [*Q, "--ep", "256"])  # 128 experts
case("estimate/ep-not-dividing-experts", [*Q, "--ep", "3"])
case("estimate/ep-huge", [*Q, "--ep", "1000000"])
case("estimate/ep-not-dividing-ranks", [*Q, "--ep", "64"])  # 16 GPUs: no tp x dp of 16 holds 64
case(
    "estimate/ep-not-equal-to-serving-tp",  # serving with ep runs attention data-parallel: ep = tp
    ["estimate", "qwen3-30b-a3b", "--on", "p5.48xlarge", "--tp", "2", "--ep", "4"],
)
case(
    "estimate/ep-below-serving-tp",
    ["estimate", "qwen3-30b-a3b", "--on", "p5.48xlarge", "--tp", "8", "--ep", "4"],
)

# --- engines: unknown names, and stacks that cannot run where they are asked to -------------------------
case("estimate/--engine unknown", [*E, "--engine", "tensorflow-serving"])
case("estimate/--engine empty", [*E, "--engine", ""])
case("estimate/--engine Neuron stack on a GPU", [*E, "--engine", "nxdi"])
case(
    "estimate/--engine GPU stack on Neuron",
    ["estimate", "llama-3.1-8b", "--on", "inf2.48xlarge", "--engine", "trtllm"],
)
case("estimate/--engine serving stack for training", [*T, "--engine", "vllm-neuron"])
case("estimate/--engine training stack for serving", [*E, "--engine", "nemo"])
case("compare/--engine runs nowhere for this task", ["compare", "llama-3.1-8b", "--engine", "nemo"])
case("compare/--engine on an instance it cannot run on", [*C, "--engine", "vllm-neuron"])

# --- compare -------------------------------------------------------------------------------------------
for opt, v in [
    ("--batch", "0"),
    ("--batch", "-1"),
    ("--rate", "nan"),
    ("--rate", "-1"),
    ("--rate", "1e308"),
    ("--input-len", "100000000000"),
    ("--output-len", "0"),
    ("--dtype", "bogus"),
    ("--instance", "bogus.xl"),
    ("--option", "bogus"),
    ("--region", "mars-1"),
    ("--ttft-slo-ms", "-1"),
    ("--tpot-slo-ms", "nan"),
    ("--price", "p5.48xlarge=-2"),
    ("--weight-dtype", "bogus"),
]:
    case(f"compare/{opt[2:]}={v}", [*C, opt, v])
case("compare/model-unknown", ["compare", "not-a-model"])

# --- catalog / models / config -------------------------------------------------------------------------
for argv in (
    ["catalog", "chips", "--output", "bogus"],
    ["catalog", "instances", "--output", "xml"],
    ["catalog", "instances", "--option", "bogus"],
    ["catalog", "instances", "--region", "mars-1"],
    ["models", "--output", "bogus"],
    ["config", "--output", "yaml"],
):
    case("/".join(a.strip("-") for a in argv), argv)
case("catalog/import-prices-out-is-source", ["catalog", "import-prices", "offer.json", "--out", "offer.json"])
case(
    "catalog/import-prices-out-is-dir",
    ["catalog", "import-prices", "offer.json", "--out", "sub"],
    {"sub": None},
)
case(
    "catalog/import-prices-out-missing-dir",
    ["catalog", "import-prices", "offer.json", "--out", "no/dir/p.csv"],
)
case(
    "catalog/import-prices-out-links-to-source",
    ["catalog", "import-prices", "offer.json", "--out", "link.csv"],
    {"@link.csv": b"offer.json"},
)
for cid, body in {
    "object-no-kind": b'{"foo": 1}\n',
    "empty-list": b"[]\n",
    "list-of-numbers": b"[1, 2]\n",
    "products-is-list": b'{"formatVersion": "v1.0", "products": [1, 2]}\n',
    "pricelist-numbers": b'{"PriceList": [1, 2]}\n',
    "string": b'"prices"\n',
    "csv-no-header": b"1,2,3\n4,5,6\n",
}.items():
    case(
        f"catalog/import-prices-wrong-shape-{cid}",
        ["catalog", "import-prices", "in.json", "--out", "o.csv"],
        {"in.json": body},
    )
for cid, body in {
    "object": b'{"foo": 1}\n',
    "list": b"[1]\n",
    "types-not-list": b'{"InstanceTypes": 5}\n',
    "type-entries-numbers": b'{"InstanceTypes": [1, 2]}\n',
}.items():
    case(
        f"catalog/check-instances-wrong-shape-{cid}",
        ["catalog", "check-instances", "in.json"],
        {"in.json": body},
    )
for cid, body in {
    "binary": b"\x00\x01\x02",
    "not-toml": b"region = = 1\n",
    "bad-region": b'region = "mars-1"\n',
    "bad-option": b'price_option = "bogus"\n',
    "deep": b"a = " + b"[" * 5000 + b"]" * 5000 + b"\n",
}.items():
    case(f"config/config-toml-{cid}", ["config"], {"@xdg:silica/config.toml": body})
for cmd in (["config"], ["catalog", "instances"]):
    for var, value in (
        ("SILICA_REGION", "mars-1"),
        ("SILICA_PRICE_OPTION", "bogus"),
        ("SILICA_PRICES", "missing.csv"),
    ):
        case(f"{cmd[-1]}/env-{var}={value}", cmd, {f"@env:{var}": value.encode()})
for var, value in (
    ("SILICA_MAX_FILE_MB", "lots"),
    ("SILICA_MAX_FILE_MB", "-1"),
    ("SILICA_MAX_ROWS", "-5"),
    ("SILICA_MAX_ROWS", "many"),
):
    case(f"validate/env-{var}={value}", ["validate", "bench.csv"], {f"@env:{var}": value.encode()})

# --- validate / calibrate ------------------------------------------------------------------------------
for cid, cells in {
    "value-0": {"value": "0"},
    "value-negative": {"value": "-4"},
    "value-nan": {"value": "nan"},
    "value-inf": {"value": "inf"},
    "value-1e308": {"value": "1e308"},
    "value-text": {"value": "fast"},
    "value-empty": {"value": ""},
    "batch-0": {"batch": "0"},
    "batch-negative": {"batch": "-1"},
    "tp-1e6-on-8-chips": {"tp": "1000000"},
    "tp-0": {"tp": "0"},
    "input-len-1e11": {"input_len": "100000000000"},
    "chips-0": {"chips": "0"},
    "chips-negative": {"chips": "-8"},
    "chips-1e12": {"chips": "1000000000000"},
    "output-len-1e11": {"output_len": "100000000000"},
    "input-len-negative": {"input_len": "-1"},
    "chips-1.5": {"chips": "1.5"},
    "batch-1e400": {"batch": "1e400"},
}.items():
    case(f"validate/row-{cid}", ["validate", "rows.csv"], {"rows.csv": bench(**cells)})
    case(
        f"calibrate/row-{cid}",
        ["calibrate", "rows.csv", "--out", "fit.json"],
        {"rows.csv": bench(**cells)},
        ("fit.json",),
    )
case("validate/header-only", ["validate", "rows.csv"], {"rows.csv": (HEADER + "\n").encode()})
case("validate/missing-column", ["validate", "rows.csv"], {"rows.csv": b"chip,value\nh100,1\n"})
case(
    "validate/rows-over-limit",
    ["validate", "rows.csv"],
    {"rows.csv": (HEADER + "\n" + (ROW + "\n") * 30).encode(), "@env:SILICA_MAX_ROWS": b"10"},
)
case(
    "validate/file-over-size-limit",
    ["validate", "rows.csv"],
    {"rows.csv": (HEADER + "\n" + (ROW + "\n") * 30).encode(), "@env:SILICA_MAX_FILE_MB": b"0.001"},
)
case("validate/out-is-input", ["validate", "bench.csv", "--out", "bench.csv"])
case(
    "validate/out-is-input-via-dotdot", ["validate", "bench.csv", "--out", "sub/../bench.csv"], {"sub": None}
)
case(
    "validate/out-links-to-input", ["validate", "bench.csv", "--out", "link.csv"], {"@link.csv": b"bench.csv"}
)
case(
    "validate/out-is-calibration",
    ["validate", "bench.csv", "--calibration", "cal.json", "--out", "cal.json"],
    {"cal.json": CALIBRATION},
)
case("validate/out-is-dir", ["validate", "bench.csv", "--out", "sub"], {"sub": None})
case("validate/out-in-missing-dir", ["validate", "bench.csv", "--out", "no/such/dir/p.csv"])
case("validate/out-under-a-file", ["validate", "bench.csv", "--out", "bench.csv/p.csv"])
case(
    "calibrate/header-only",
    ["calibrate", "rows.csv", "--out", "fit.json"],
    {"rows.csv": (HEADER + "\n").encode()},
)
case(
    "calibrate/all-nan",
    ["calibrate", "rows.csv", "--out", "fit.json"],
    {"rows.csv": (HEADER + "\n" + (ROW.replace(",4.0,", ",nan,") + "\n") * 3).encode()},
)
case("calibrate/out-is-input", ["calibrate", "bench.csv", "--out", "bench.csv"])
case(
    "calibrate/out-is-second-input",
    ["calibrate", "bench.csv", "b2.csv", "--out", "b2.csv"],
    {"b2.csv": BENCH.encode()},
)
case(
    "calibrate/out-links-to-input",
    ["calibrate", "bench.csv", "--out", "link.json"],
    {"@link.json": b"bench.csv"},
)
case("calibrate/out-is-dir", ["calibrate", "bench.csv", "--out", "sub"], {"sub": None})
case("calibrate/out-in-missing-dir", ["calibrate", "bench.csv", "--out", "no/dir/fit.json"])
case("calibrate/out-under-a-file", ["calibrate", "bench.csv", "--out", "bench.csv/fit.json"])
case("calibrate/no-out", ["calibrate", "bench.csv"])
# A file whose rows fit no family writes an empty calibration by design (tests/test_cli_core.py).

# --- scan (CLI-level input errors only) ----------------------------------------------------------------
case("scan/python-file-without-name", ["scan", "script.py"])
case("scan/missing-python-file", ["scan", "missing.py:Net"])
# "script.py:NoSuchNet" is a result by design (a model that cannot be built is a scan finding, exit 0).
case("scan/layers-0", ["scan", "cfg.json", "--layers", "0"])
case("scan/layers-negative", ["scan", "cfg.json", "--layers", "-1"])
case("scan/unknown-model", ["scan", "llama-3.1-8"])
case("scan/empty-subject", ["scan", ""])

# --- advise / claims ------------------------------------------------------------------------------------
case("advise/md-is-inventory", ["advise", "inv.yaml", "--md", "inv.yaml", "--no-store"])
case("advise/html-is-inventory", ["advise", "inv.yaml", "--html", "inv.yaml", "--no-store"])
case(
    "advise/html-links-to-inventory",
    ["advise", "inv.yaml", "--html", "l.html", "--no-store"],
    {"@l.html": b"inv.yaml"},
)
case("advise/html-is-dir", ["advise", "inv.yaml", "--html", "sub", "--no-store"], {"sub": None})
case("advise/md-in-missing-dir", ["advise", "inv.yaml", "--md", "no/dir/a.md", "--no-store"])
case("advise/html-and-md-same", ["advise", "inv.yaml", "--html", "a.out", "--md", "a.out", "--no-store"])
for s in ["bogus=1", "x", "=3", "min_savings_pct=nan", "min_savings_pct=abc"]:
    case(f"advise/set={s}", ["advise", "inv.yaml", "--set", s, "--no-store"])
INV_HEAD = "workloads:\n"
for cid, body in {
    "workloads-number": "workloads: 5\n",
    "workloads-empty": "workloads: []\n",
    "1001-workloads": INV_HEAD + "".join(f"  - {{name: w{i}, model: llama-3.1-8b}}\n" for i in range(1_001)),
    "top-level-list": "- 1\n- 2\n",
    "unknown-key": "workloadz: []\n",
}.items():
    case(f"advise/inventory-{cid}", ["advise", "i.yaml", "--no-store"], {"i.yaml": body.encode()})
case("advise/fleet-file-as-inventory", ["advise", "fleet.yaml", "--no-store"])
case("claims/id-unknown", ["claims", "--id", "no-such-claim", "--no-store"])
case("claims/html-is-dir", ["claims", "--html", "sub", "--no-store"], {"sub": None})
case("claims/md-in-missing-dir", ["claims", "--md", "no/dir/c.md", "--no-store"])

# --- history --------------------------------------------------------------------------------------------
for opt, v in [
    ("--limit", "99999999999999999999999"),
    ("--limit", "0"),
    ("--limit", "-1"),
    ("--limit", "abc"),
    ("--id", "0"),
    ("--id", "-1"),
    ("--id", "99999999999999999999"),
    ("--id", "12345"),
    ("--output", "bogus"),
    ("--kind", ""),
]:
    case(f"history/{opt[2:]}={v or 'empty'}", ["history", opt, v])
case("history/db-in-missing-dir", ["history"], {"@env:SILICA_DB_URL": b"sqlite:///new/dir/s.db"})
case("history/db-url-garbage", ["history"], {"@env:SILICA_DB_URL": b"not a url"})
case("history/db-is-binary-file", ["history"], {"@env:SILICA_DB_URL": b"sqlite:///cfg.json"})

# --- fleet ----------------------------------------------------------------------------------------------
F = ["fleet", "simulate", "fleet.yaml"]
case("fleet-simulate/policy-typo-statik", [*F, "--policy", "statik"])
case("fleet-simulate/policy-empty", [*F, "--policy", ""])
case("fleet-simulate/html-is-fleet-file", [*F, "--html", "fleet.yaml"])
case("fleet-simulate/html-links-to-fleet-file", [*F, "--html", "l.html"], {"@l.html": b"fleet.yaml"})
case("fleet-simulate/html-is-dir", [*F, "--html", "sub"], {"sub": None})
case("fleet-simulate/html-in-missing-dir", [*F, "--html", "no/dir/r.html"])
case("fleet-simulate/inventory-as-fleet", ["fleet", "simulate", "inv.yaml"])
case("fleet-plan/inventory-as-fleet", ["fleet", "plan", "inv.yaml"])
for cid, (old, new) in {
    "count-1e12": ("count: 2", "count: 1000000000000"),
    "count-0": ("count: 2", "count: 0"),
    "count-negative": ("count: 2", "count: -3"),
    "count-float": ("count: 2", "count: 2.5"),
    "count-text": ("count: 2", "count: many"),
    "hours-1e9": ("hours: 2", "hours: 1000000000"),
    "hours-0": ("hours: 2", "hours: 0"),
    "hours-nan": ("hours: 2", "hours: .nan"),
    "step-0": ("step_minutes: 10", "step_minutes: 0"),
    "step-negative": ("step_minutes: 10", "step_minutes: -1"),
    "peak-inf": ("peak_output_tokens_per_s: 1000", "peak_output_tokens_per_s: .inf"),
    "peak-negative": ("peak_output_tokens_per_s: 1000", "peak_output_tokens_per_s: -1"),
    "unknown-instance": ("instance: p4d.24xlarge", "instance: p4d.24xlargee"),
    "unknown-model": ("model: llama-3.1-8b", "model: llama-3.1-8"),
    "policy-typo": ("region: us-east-1", "region: us-east-1\npolicy: statik"),
    "slo-negative": ("ttft_slo_ms: 1000", "ttft_slo_ms: -1"),
    "unknown-key": ("region: us-east-1", "region: us-east-1\nregoin: x"),
    "input-len-1e11": ("input_len: 512", "input_len: 100000000000"),
    "purchase-bogus": ("purchase: on_demand", "purchase: bogus"),
    "shape-bogus": ("shape: flat", "shape: flatt"),
}.items():
    case(f"fleet-simulate/{cid}", ["fleet", "simulate", "f.yaml"], {"f.yaml": fleet(old, new)})
P = ["fleet", "plan", "fleet.yaml"]
for opt, v in [
    ("--target", "0"),
    ("--target", "2"),
    ("--target", "nan"),
    ("--target", "-1"),
    ("--max-instances", "0"),
    ("--max-instances", "-1"),
    ("--max-instances", "1000000000000"),
    ("--instances", "bogus.xl"),
    ("--instances", ","),
    ("--policy", "statik"),
    ("--price", "p4d.24xlarge=-1"),
    ("--price", "p4d.24xlarge"),
    ("--site-mw", "0"),
    ("--site-mw", "-1"),
    ("--site-mw", "nan"),
    ("--pue", "0.5"),
]:
    case(f"fleet-plan/{opt[2:]}={v}", [*P, opt, v])
for opt, v in [("--site-mw", "0"), ("--site-mw", "inf"), ("--site-mw", "0.000001"), ("--pue", "nan")]:
    case(f"fleet-simulate/{opt[2:]}={v}", [*F, opt, v])
# --- energy options of estimate and compare (issue 28) ----------------------------------------------
for opt, v in [
    ("--pue", "0"),
    ("--pue", "0.9"),
    ("--pue", "nan"),
    ("--usd-per-mwh", "-1"),
    ("--usd-per-mwh", "inf"),
]:
    case(f"estimate/{opt[2:]}={v}", [*E, opt, v])
for v in ["speed", "", "Energy2"]:
    case(
        f"compare/rank={v or 'empty'}", ["compare", "llama-3.1-8b", "--instance", "p5.48xlarge", "--rank", v]
    )
S = ["fleet", "sweep", "fleet.yaml", "--no-store"]
for opt, v in [
    ("--workers", "0"),
    ("--workers", "-1"),
    ("--workers", "100000000"),
    ("--executor", "bogus"),
    ("--policy", "statik"),
]:
    case(f"fleet-sweep/{opt[2:]}={v}", [*S, opt, v])

# --- monitor --------------------------------------------------------------------------------------------
for opt, v in [
    ("--window", "0"),
    ("--window", "bogus"),
    ("--window", "-1h"),
    ("--window", "1e400h"),
    ("--step", "0"),
    ("--step", "-5m"),
    ("--since", "yesterday-ish"),
    ("--until", "not-a-time"),
    ("--since", "now+1h"),
    ("--timeout", "0"),
    ("--timeout", "nan"),
    ("--timeout", "-1"),
    ("--ttft-slo-ms", "-1"),
    ("--tpot-slo-ms", "nan"),
    ("--target-utilisation", "2"),
    ("--target-utilisation", "nan"),
    ("--target-utilisation", "0"),
]:
    case(f"monitor-report/{opt[2:]}={v}", [*MON, opt, v])
case(
    "monitor-report/until-before-since",
    [*MON, "--since", "2026-01-02T00:00:00Z", "--until", "2026-01-01T00:00:00Z"],
)
case("monitor-report/html-is-plan", [*MON, "--html", "plan.json"])
case("monitor-report/md-is-telemetry", [*MON, "--md", "vllm.prom"])
case("monitor-report/html-is-dir", [*MON, "--html", "sub"], {"sub": None})
case("monitor-report/both-sources", [*MON, "--prometheus", "http://127.0.0.1:1"])
case("monitor-report/no-source", ["monitor", "report", "--plan", "plan.json", "--no-store"])
case(
    "monitor-report/prometheus-not-url",
    ["monitor", "report", "--plan", "plan.json", "--prometheus", "not a url", "--no-store"],
)
for v in ["0", "70000", "-1"]:
    case(f"monitor-exporter/port={v}", ["monitor", "exporter", "--plan", "plan.json", "--port", v])
case("monitor-exporter/no-plan", ["monitor", "exporter", "--once"])
case("monitor-exporter/plan-missing", ["monitor", "exporter", "--plan", "missing.json", "--once"])


# --- the commands built in the pilot/serve/readiness round ------------------------------------------
P = ["pilot", "plan", "llama-3.1-8b", "--on", "g6e.xlarge", "--out", "kit"]
for opt, v in [
    ("--on", "bogus.xlarge"),
    ("--on", "inf2.xlargex0"),
    ("--engine", "bogus"),
    ("--engine", "vllm-neuron"),  # a Neuron engine on an NVIDIA instance
    ("--engine", "trtllm-neuron"),
    ("--input-len", "0"),
    ("--output-len", "-1"),
    ("--concurrency", "0"),
    ("--concurrency", "a,b"),
    ("--concurrency", "-4"),
    ("--requests", "0"),
    ("--dtype", "fp33"),
    ("--tpot-slo-ms", "nan"),
]:
    case(
        f"pilot-plan/{opt[2:]}={v}",
        [*P[:-2], opt, v, "--out", "kit"] if opt != "--on" else [*P[:3], "--on", v, "--out", "kit"],
    )
case("pilot-plan/out-is-a-file", [*P[:-1], "plan.json"])
case("pilot-plan/model-unknown", ["pilot", "plan", "llama-9b", "--on", "g6e.xlarge", "--out", "kit"])
R = ["pilot", "run", "--model", "m", "--no-store"]
case(
    "pilot-run/endpoint-dead",
    [*R, "--endpoint", "http://127.0.0.1:1", "--out", "r.json"],
    outputs=("r.json",),
)
case("pilot-run/endpoint-not-url", [*R, "--endpoint", "not a url", "--out", "r.json"])
case("pilot-run/endpoint-other-scheme", [*R, "--endpoint", "ftp://127.0.0.1:21", "--out", "r.json"])
case("pilot-run/plan-missing", [*R, "--endpoint", "http://127.0.0.1:1", "--plan", "nokit"])
case("pilot-run/concurrency=0", [*R, "--endpoint", "http://127.0.0.1:1", "--concurrency", "0"])
case("pilot-run/out-is-plan", [*R, "--endpoint", "http://127.0.0.1:1", "--out", "plan.json"])
for name, content in [
    ("binary", b"\x00\x01\x02"),
    ("not-json", b"hello"),
    ("wrong-shape", b'{"a": 1}'),
    ("list", b"[1, 2, 3]"),
]:
    case(f"pilot-import/{name}", ["pilot", "import", "x.json"], {"x.json": content})
    case(f"pilot-compare/{name}", ["pilot", "compare", "x.json", "--no-store"], {"x.json": content})
    case(f"calibrate/from-pilot-{name}", ["calibrate", "--from-pilot", "x.json"], {"x.json": content})
    case(f"calibrate/from-monitor-{name}", ["calibrate", "--from-monitor", "x.json"], {"x.json": content})
case("pilot-import/missing", ["pilot", "import", "nope.json"])
# genai-perf and AIPerf exports cut short or with a block of the wrong kind (from the real example files)
for tool, name in [
    ("genai-perf", "genai_perf_profile_export_genai_perf.json"),
    ("aiperf", "aiperf_profile_export_aiperf.json"),
]:
    real = (ROOT / "tests" / "data" / "pilot" / name).read_bytes()
    doc = json.loads(real)
    for what, broken in [
        ("truncated", real[: len(real) // 2]),
        (
            "ttft-in-seconds",
            json.dumps({**doc, "time_to_first_token": {**doc["time_to_first_token"], "unit": "s"}}),
        ),
        ("ttft-a-list", json.dumps({**doc, "time_to_first_token": [1, 2]})),
        ("config-a-list", json.dumps({**doc, "input_config": [1]})),
        (
            "no-figures",
            json.dumps(
                {"time_to_first_token": {}, "input_config": doc["input_config"]}
                | ({"aiperf_version": "0.13.0"} if tool == "aiperf" else {})
            ),
        ),
    ]:
        data = broken if isinstance(broken, bytes) else broken.encode()
        case(f"pilot-import/{tool}-{what}", ["pilot", "import", "x.json"], {"x.json": data})
case("pilot-compare/html-is-input", ["pilot", "compare", "plan.json", "--html", "plan.json", "--no-store"])
for opt, v in [("--port", "70000"), ("--port", "abc"), ("--max-upload-mb", "0")]:
    case(f"serve/{opt[2:]}={v}", ["serve", opt, v])
case("serve/public-host-without-token", ["serve", "--host", "0.0.0.0"])
case("serve/token-file-missing", ["serve", "--host", "0.0.0.0", "--token-file", "nope.txt"])
case("serve/log-level-bogus", ["serve", "--log-level", "loud"])
case("scan/task-bogus", ["scan", "cfg.json", "--task", "cooking"])
case("scan/output-bogus", ["scan", "cfg.json", "--output", "pdf"])

# --- simulate (request-level) and serving context parallelism, added with issues 25 and 29 ------------
S = ["simulate", "llama-3.1-8b", "--on", "g6e.xlarge", "--requests", "50"]
for v in ("0", "-1", "nan", "inf", "abc"):
    case(f"simulate/rate={v}", [*S, "--rate", v])
case("simulate/requests-zero", [*S[:-1], "0"])
case("simulate/html-is-dir", [*S, "--html", "sub"], {"sub": None})
case("simulate/html-in-missing-dir", [*S, "--html", "no/dir/r.html"])
case(
    "simulate/html-over-its-trace",
    [*S, "--trace", "t.csv", "--html", "t.csv"],
    {"t.csv": b"arrival_s,input_len,output_len\n0,10,5\n"},
)
case("estimate/cp-inference-on-an-engine-without-it", [*E, "--cp", "2", "--engine", "trtllm"])
case("estimate/cp-inference-zero", [*E, "--cp", "0", "--engine", "vllm"])
case("estimate/cp-inference-past-a-stage", [*E, "--tp", "8", "--cp", "2", "--engine", "vllm"])


@pytest.mark.parametrize(("argv", "files", "outputs"), [pytest.param(a, f, o, id=i) for i, a, f, o in CASES])
def test_bad_argument(
    sandbox: Sandbox, argv: list[str], files: dict[str, bytes | None], outputs: tuple[str, ...]
) -> None:
    for name, content in files.items():
        if name.startswith("@env:"):
            sandbox.monkeypatch.setenv(name[5:], (content or b"").decode())
        elif name.startswith("@xdg:"):
            path = sandbox.root / "xdg-config" / name[5:]
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(content or b"")
        elif name.startswith("@"):
            os.symlink(str(sandbox.work / (content or b"").decode()), sandbox.work / name[1:])
        else:
            sandbox.write(name, content)
    before = sandbox.snapshot()
    result = sandbox.run(argv)
    assert_one_line_error(sandbox, result, before, outputs)


def test_the_table_is_as_large_as_the_issue_asks() -> None:
    assert len({c[0] for c in CASES}) == len(CASES)  # every id unique
    assert len(CASES) >= 250

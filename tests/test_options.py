"""Every front door offers the plan options of `silica.options`, and nothing the library refuses.

The command line, the notebook API, the HTTP API and the web forms are compared with the one
declaration: the same names (flags on the CLI), defaults, limits and choices; each choice is one the
library accepts; each range's ends are accepted by the library and just past them refused by HTTP.
User systems reach estimate and compare over HTTP and the web pages (TestClient, no real server).
"""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from dataclasses import fields
from pathlib import Path
from typing import Any

import pytest
import typer

from silica import api
from silica.cli.app import app
from silica.cli.estimate_cmd import PlanOptions
from silica.errors import InputError
from silica.options import DOORS, PLAN_OPTIONS, check_option, option, options_for
from silica.workload import InferenceWorkload, TrainingWorkload

pytest.importorskip("fastapi")

from silica.serve._html import FORM_FIELDS
from silica.serve.routes import CompareRequest, EstimateRequest

SYSTEMS = """\
systems:
  - id: my-h100-pod
    chip: h100
    chips: 8
    link_gb_per_s: 900
    network_gbps: 1600
    usd_per_hour: 80
"""


def test_every_option_missing_from_a_door_says_why() -> None:
    for o in PLAN_OPTIONS:
        assert set(o.doors) <= set(DOORS)
        assert (set(o.doors) == set(DOORS)) or o.why, o.name
        assert o.help and o.label and o.flag


@pytest.mark.parametrize("command", ["estimate", "compare"])
def test_the_cli_offers_exactly_the_declared_flags(command: str) -> None:
    cmd = typer.main.get_group(app).commands[command]
    flags = {flag for p in cmd.params for flag in p.opts if flag.startswith("--")} - {"--help"}
    declared = {o.flag for o in options_for("cli", command) if o.flag.startswith("--")}
    assert flags == declared
    helps = {p.opts[0]: p.help for p in cmd.params if isinstance(p, typer.core.TyperOption)}
    for o in options_for("cli", command):
        if o.flag.startswith("--") and o.name != "output":  # --output/-o: every listing's own
            assert helps.get(o.flag) == o.help, o.flag
    shared = {o.name for o in PLAN_OPTIONS if "cli" in o.doors and len(o.commands) == 2}
    assert {f.name for f in fields(PlanOptions)} <= shared  # by the library's names


@pytest.mark.parametrize(("command", "model"), [("estimate", EstimateRequest), ("compare", CompareRequest)])
def test_http_offers_exactly_the_declared_fields(command: str, model: Any) -> None:
    schema = model.model_json_schema()
    props = schema["properties"]
    assert set(props) == {o.name for o in options_for("http", command)}
    for o in options_for("http", command):
        p = props[o.name]
        p = {**p, **next((a for a in p.get("anyOf", []) if a.get("type") != "null"), {})}
        if o.low is not None:
            assert p.get("exclusiveMinimum" if o.low_open else "minimum") == o.low, o.name
        if o.high is not None:
            assert p.get("maximum") == o.high, o.name
        if o.choices is not None:
            assert [c for c in p["enum"] if c is not None] == list(o.allowed()), o.name
        if not o.required:
            assert model.model_fields[o.name].default == o.default, o.name
    assert set(schema.get("required", [])) == {o.name for o in options_for("http", command) if o.required}


def test_the_forms_offer_the_declared_fields() -> None:
    from silica.serve import pages, workplace

    typed = {o.name for o in options_for("form") if o.kind in ("int", "float", "text") and not o.required}
    assert set(FORM_FIELDS) == typed
    for name, (label, kind, _) in FORM_FIELDS.items():
        assert (label, kind) == (option(name).label, option(name).kind)
    for command, module in (("compare", pages), ("estimate", workplace)):
        offered = {n for n, *_ in (pages._FIELDS if command == "compare" else workplace._ESTIMATE_FIELDS)}
        assert offered == {o.name for o in options_for("form", command) if o.name in FORM_FIELDS}
        selects = {o.name for o in options_for("form", command) if o.kind == "choice"} - {"task"}
        assert set(module._SELECTS) == selects


def test_the_notebook_api_takes_the_declared_names() -> None:
    workload_fields = set(InferenceWorkload.__dataclass_fields__) | set(TrainingWorkload.__dataclass_fields__)
    for command, fn in (("estimate", api.estimate), ("compare", api.compare)):
        params = set(inspect.signature(fn).parameters) - {"workload"}
        declared = {o.name for o in options_for("api", command)}
        assert params <= declared, params - declared
        assert declared - params <= workload_fields, declared - params - workload_fields


def test_every_choice_is_one_the_library_accepts() -> None:
    from silica.catalog.schema import DTYPES, PURCHASE_OPTIONS
    from silica.context import plan_context
    from silica.perf.stacks import load_stacks, resolve_stack
    from silica.plan.compare import OBJECTIVES

    assert option("option").allowed() == PURCHASE_OPTIONS
    for o in PURCHASE_OPTIONS:
        assert plan_context(option=o, use_settings=False).option == o
    assert set(option("compute_dtype").allowed()) == set(DTYPES) == set(option("weight_dtype").allowed())
    assert option("rank").allowed() == OBJECTIVES
    for engine in option("engine").allowed():  # each runs something somewhere
        stack = load_stacks()[engine]
        vendor, task = stack.vendor, sorted(stack.tasks)[0]
        assert resolve_stack(engine, vendor, task, "a target") is stack
    for o in PLAN_OPTIONS:  # each choice is named in the help the CLI prints
        for choice in o.allowed():
            assert choice in o.help, (o.name, choice)
    with pytest.raises(InputError, match="unknown option 'reserved_3yr'"):
        check_option("option", "reserved_3yr")


def test_every_range_is_the_librarys() -> None:
    from pydantic import ValidationError

    base = {"model": "llama-3.1-8b"}
    for o in options_for("http", "compare"):
        if o.kind not in ("int", "float") or o.low is None:
            continue
        if o.high is not None:
            CompareRequest(**base, **{o.name: o.high})
            with pytest.raises(ValidationError):
                CompareRequest(**base, **{o.name: o.high * 2 + 1})
        below = o.low if o.low_open else o.low - 1
        with pytest.raises(ValidationError):
            CompareRequest(**base, **{o.name: below})
        with pytest.raises(InputError):
            check_option(o.name, below)
    # The library accepts each end of the workload ranges the doors offer.
    InferenceWorkload(input_len=int(option("input_len").high or 0), output_len=0)
    InferenceWorkload(input_len=1, output_len=int(option("output_len").high or 0))
    TrainingWorkload(seq_len=1, virtual_stages=int(option("virtual_stages").high or 0))
    with pytest.raises(InputError):
        TrainingWorkload(seq_len=1, virtual_stages=int(option("virtual_stages").high or 0) + 1)


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    from fastapi.testclient import TestClient

    from silica.serve import ServeSettings, create_app

    db = tmp_path_factory.mktemp("options") / "store.db"
    with TestClient(create_app(ServeSettings(store_url=f"sqlite:///{db}")), base_url="http://127.0.0.1") as c:
        yield c


@pytest.fixture(autouse=True)
def _no_user_settings(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    for name in ("SILICA_PRICES", "SILICA_PRICE_OPTION", "SILICA_REGION", "SILICA_CALIBRATION_OVERLAY"):
        monkeypatch.delenv(name, raising=False)


def test_user_systems_over_http(client: Any) -> None:
    est = client.post(
        "/api/v1/estimate", json={"model": "llama-3.1-8b", "on": "my-h100-podx2", "systems": SYSTEMS}
    )
    assert est.status_code == 200, est.text
    body = est.json()
    assert body["instance"] == "my-h100-pod" and body["usd_per_hour"] == pytest.approx(160)
    assert "silica-serve-" not in est.text  # the private folder is not shown
    cmp = client.post("/api/v1/compare", json={"model": "llama-3.1-8b", "systems": SYSTEMS})
    assert cmp.status_code == 200, cmp.text
    assert "my-h100-pod" in {r["instance"] for r in cmp.json()["results"]}


@pytest.mark.parametrize(
    ("systems", "said"),
    [
        ("systems:\n  - id: a\n    chip: h100\n    chips: 8\n    network_gbps: -5\n", "line 5"),
        ("systems:\n  - id: a\n    chip: nochip\n    chips: 8\n", "chip"),
        ("a: &a [*a]\n", "alias"),
    ],
)
def test_bad_systems_are_a_4xx_with_the_line(client: Any, systems: str, said: str) -> None:
    got = client.post("/api/v1/compare", json={"model": "llama-3.1-8b", "systems": systems})
    assert 400 <= got.status_code < 500, got.text
    assert said in got.text and "silica-serve-" not in got.text


def test_http_refuses_what_the_library_refuses(client: Any) -> None:
    for field, value in (
        ("option", "reserved_3yr"),
        ("engine", "nosuch"),
        ("virtual_stages", 0),
        ("rank", "x"),
    ):
        got = client.post("/api/v1/compare", json={"model": "llama-3.1-8b", field: value})
        assert got.status_code == 422 and field in got.text, (field, got.text)


def test_the_pages_take_systems_engine_and_vp(client: Any) -> None:
    page = client.get(
        "/estimate",
        params={"model": "llama-3.1-8b", "on": "my-h100-pod", "systems": SYSTEMS, "engine": "vllm"},
        headers={"accept": "text/html"},
    )
    assert page.status_code == 200, page.text[:2000]
    assert "my-h100-pod" in page.text and "vllm" in page.text
    form = client.get("/compare", headers={"accept": "text/html"}).text
    for name in ("systems", "engine", "option", "virtual_stages", "rank", "pue"):
        assert f'name="{name}"' in form, name
    assert "reserved_3yr" not in form
    bad = client.get(
        "/compare",
        params={"model": "llama-3.1-8b", "systems": "systems:\n  - id: a\n    chip: h100\n    chips: 0\n"},
        headers={"accept": "text/html"},
    )
    assert bad.status_code in (400, 422) and "chips" in bad.text

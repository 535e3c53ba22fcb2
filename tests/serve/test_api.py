"""The HTTP API over a real uvicorn, on SQLite and on the real PostgreSQL: every endpoint returns
what the library returns (the document `--json` prints), and what it stores is in the CLI's store."""

from __future__ import annotations

import csv
import io
import json
import time
from pathlib import Path
from typing import Any

import pytest
from tests.serve.conftest import EXAMPLES, ROOT
from typer.testing import CliRunner

from silica import api
from silica.cli._common import plain
from silica.store import open_store

PUBLISHED = ROOT.parent / "shared" / "benchmarks" / "published.csv"


def _lib(result: Any) -> Any:
    """The library result as it crosses the wire (JSON: non-finite floats are null)."""
    return json.loads(json.dumps(plain(result)))


def test_openapi_lists_every_endpoint(client: Any) -> None:
    schema = client.get("/api/v1/openapi.json").json()
    paths = set(schema["paths"])
    for path in (
        "/api/v1/estimate",
        "/api/v1/compare",
        "/api/v1/catalog/chips",
        "/api/v1/catalog/instances",
        "/api/v1/models",
        "/api/v1/scan/{model}",
        "/api/v1/scan",
        "/api/v1/advise",
        "/api/v1/claims",
        "/api/v1/fleet/simulate",
        "/api/v1/jobs/fleet-sweep",
        "/api/v1/jobs/calibrate",
        "/api/v1/jobs/{job_id}",
        "/api/v1/history",
        "/api/v1/pilot",
        "/api/v1/monitor",
    ):
        assert path in paths, path
    props = schema["components"]["schemas"]["CompareRequest"]["properties"]
    assert {"model", "input_len", "tpot_slo_ms", "prices"} <= set(props)


def test_compare_is_the_library_result(client: Any) -> None:
    body = {"model": "llama-3.1-8b", "input_len": 512, "output_len": 128, "tpot_slo_ms": 40}
    got = client.post("/api/v1/compare", json=body)
    assert got.status_code == 200 and got.headers["content-type"] == "application/json"
    expected = _lib(api.compare("llama-3.1-8b", input_len=512, output_len=128, tpot_slo_ms=40).data)
    assert got.json() == expected
    assert len(got.json()["results"]) > 10
    again = client.post("/api/v1/compare", json=body)  # the cached answer is the same document
    assert again.json() == expected


def test_compare_with_my_price_and_training(client: Any) -> None:
    priced = client.post(
        "/api/v1/compare", json={"model": "llama-3.1-8b", "prices": {"trn2.48xlarge": 30.0}}
    ).json()
    trn2 = next(r for r in priced["results"] if r["instance"] == "trn2.48xlarge")
    assert trn2["usd_per_hour"] == pytest.approx(30.0)
    training = client.post(
        "/api/v1/compare",
        json={"model": "llama-3.1-8b", "task": "training", "seq_len": 4096, "tokens": 1e10},
    ).json()
    assert training["task"] == "training"
    assert training == _lib(api.compare("llama-3.1-8b", task="training", seq_len=4096, tokens=1e10).data)


def test_estimate_is_the_library_result(client: Any) -> None:
    body = {"model": "llama-3.1-70b", "on": "trn1.32xlarge", "input_len": 2048, "output_len": 512}
    got = client.post("/api/v1/estimate", json=body)
    assert got.status_code == 200
    assert got.json() == _lib(
        api.estimate("llama-3.1-70b", "trn1.32xlarge", input_len=2048, output_len=512).data
    )
    multi = client.post("/api/v1/estimate", json={"model": "llama-3.1-8b", "on": "p5.48xlargex2"}).json()
    assert multi["count"] == 2


def test_catalog_and_models(client: Any) -> None:
    chips = client.get("/api/v1/catalog/chips").json()
    assert chips == _lib(api.chips().data)
    assert all(c["source"] and c["as_of"] for c in chips["chips"])
    hopper = client.get("/api/v1/catalog/instances", params={"family": "hopper"}).json()
    assert hopper == _lib(api.instances("hopper").data) and hopper["instances"]
    models = client.get("/api/v1/models").json()["models"]
    assert "llama-3.1-8b" in {m["id"] for m in models}


def test_unknown_model_is_the_cli_line(client: Any) -> None:
    from silica.cli.app import app

    cli = CliRunner().invoke(app, ["compare", "llama-3.1-8x"])
    assert cli.exit_code == 2
    line = cli.output.strip().splitlines()[-1].removeprefix("error: ")
    got = client.post("/api/v1/compare", json={"model": "llama-3.1-8x"})
    assert got.status_code == 404
    assert got.headers["content-type"] == "application/problem+json"
    problem = got.json()
    assert problem["detail"] == line
    assert problem["status"] == 404 and problem["type"].startswith("urn:silica:problem:")


def test_a_path_is_not_a_model_here(client: Any) -> None:
    got = client.post("/api/v1/compare", json={"model": "/etc/passwd"})
    assert got.status_code == 404
    assert "paths are not read here" in got.json()["detail"]


def test_infeasible_slo_and_bad_workload_are_4xx(client: Any) -> None:
    bad = client.post(
        "/api/v1/compare", json={"model": "llama-3.1-8b", "rate_req_per_s": 1, "tokens_per_month": 9e12}
    )
    assert bad.status_code == 400 and "contradicts" in bad.json()["detail"]
    training = client.post("/api/v1/compare", json={"model": "llama-3.1-8b", "task": "training"})
    assert training.status_code == 400 and "sequence length" in training.json()["detail"]
    # Shapes sent as null were a TypeError inside the library, so a 500.
    null = client.post(
        "/api/v1/estimate", json={"model": "llama-3.1-8b", "on": "inf2.xlarge", "input_len": None}
    )
    assert null.status_code == 400 and "needs input_len" in null.json()["detail"]


def _advise(client: Any, **data: Any) -> Any:
    files = [
        ("inventory", ("inventory.yaml", (EXAMPLES / "inventory.yaml").read_bytes(), "text/yaml")),
        (
            "scans",
            ("ranker.scan.json", (EXAMPLES / "scans" / "ranker.scan.json").read_bytes(), "application/json"),
        ),
    ]
    return client.post("/api/v1/advise", files=files, data=data)


def test_advise_upload_stores_and_reports(client: Any, backend: str) -> None:
    before = open_store(backend).count()
    got = _advise(client)
    assert got.status_code == 200, got.text
    advice = got.json()
    lib = _lib(api.advise(EXAMPLES / "inventory.yaml").data)
    assert [(w["name"], w["verdict"]) for w in advice["workloads"]] == [
        (w["name"], w["verdict"]) for w in lib["workloads"]
    ]
    assert advice["workloads"][2]["monthly_savings_usd"] == lib["workloads"][2]["monthly_savings_usd"]
    ids = advice["stored_ids"]
    assert len(ids) == open_store(backend).count() - before > len(advice["workloads"])
    rec = client.get(f"/api/v1/history/{ids[-1]}").json()
    assert rec["kind"] == "recommendation" and rec["name"] == advice["workloads"][-1]["name"]
    assert client.get(f"/api/v1/history/{ids[0]}").json()["name"] == "inventory.yaml"
    report = client.get(advice["reports"]["html"])
    assert report.status_code == 200 and "support-bot" in report.text and "/tmp/" not in report.text
    md = client.get(advice["reports"]["md"])
    assert md.text.startswith("# Silica advice")
    html = _advise(client, format="html", store="false")
    assert html.headers["content-type"].startswith("text/html") and "<svg" in html.text
    assert open_store(backend).count() == before + len(ids)  # store=false kept nothing


def test_history_lists_kinds(client: Any, backend: str) -> None:
    open_store(backend).record("pilot", "api-test", {"note": "a pilot run"})
    listed = client.get("/api/v1/history", params={"kind": "pilot", "limit": 5}).json()
    assert listed["records"][0]["name"] == "api-test"
    assert "silica:silica@" not in listed["database"]  # never the password
    assert client.get("/api/v1/pilot").json()["records"][0]["kind"] == "pilot"
    assert client.get("/api/v1/monitor").status_code == 200
    missing = client.get("/api/v1/history/999999999")
    assert 400 <= missing.status_code < 500 and missing.json()["detail"]


def test_claims(client: Any) -> None:
    got = client.get("/api/v1/claims").json()
    assert got == _lib(api.claims().data)
    one = client.get("/api/v1/claims", params={"id": got["claims"][0]["id"]}).json()
    assert [c["id"] for c in one["claims"]] == [got["claims"][0]["id"]]
    html = client.get("/api/v1/claims", params={"format": "html"})
    assert html.status_code == 200 and "<table" in html.text


def test_fleet_simulate_small_and_refuse_large(client: Any) -> None:
    fleet = (EXAMPLES / "fleet.yaml").read_bytes()
    got = client.post("/api/v1/fleet/simulate", files={"fleet": ("fleet.yaml", fleet)})
    assert got.status_code == 200, got.text
    sim = got.json()
    assert sim == _lib(api.fleet_simulate(EXAMPLES / "fleet.yaml").data)
    big = fleet.replace(b"days: 7 ", b"days: 690")
    assert big != fleet
    refused = client.post("/api/v1/fleet/simulate", files={"fleet": ("big.yaml", big)})
    assert refused.status_code == 413 and "jobs/fleet-sweep" in refused.json()["detail"]


def _wait(client: Any, url: str, seconds: float = 300.0) -> dict[str, Any]:
    """Poll a job until it ends; the limit is generous because a 2-core CI machine may be busy."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        job = client.get(url).json()
        if job["status"] in ("done", "failed"):
            return dict(job)
        time.sleep(0.2)
    raise AssertionError(f"job {url} did not finish in {seconds:.0f} s")


def test_fleet_sweep_job(client: Any, backend: str) -> None:
    small = (EXAMPLES / "fleet.yaml").read_bytes().replace(b"days: 7 ", b"days: 1 ")
    got = client.post("/api/v1/jobs/fleet-sweep", files={"fleet": ("small.yaml", small)})
    assert got.status_code == 202
    job = _wait(client, got.json()["status_url"])
    assert job["status"] == "done", job["error"]
    assert job["result"]["scenarios"] and job["result"]["stored_ids"]
    first = open_store(backend).get(job["result"]["stored_ids"][0])  # in this server's store
    assert first.kind == "fleet_sweep" and first.name == job["result"]["scenarios"][0]["name"]
    assert "/tmp/silica-serve" not in str(job["result"])
    assert client.get("/api/v1/jobs").json()["jobs"][0]["id"] == job["id"]


@pytest.mark.skipif(not PUBLISHED.exists(), reason="../shared/benchmarks/published.csv not present")
def _one_family(chip: str, per_source: int = 8) -> bytes:
    """Up to `per_source` published rows of each source of one chip: a real calibration input small
    enough for a job test (every source of the chip stays, so the job's leave-one-source-out bands run;
    the fits of the whole file take minutes)."""
    rows = list(csv.reader(PUBLISHED.read_text().splitlines()))
    chip_col, source_col = rows[0].index("chip"), rows[0].index("source")
    kept: dict[str, int] = {}
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(rows[0])
    for row in rows[1:]:
        if row[chip_col] == chip and kept.get(row[source_col], 0) < per_source:
            kept[row[source_col]] = kept.get(row[source_col], 0) + 1
            writer.writerow(row)
    return out.getvalue().encode()


def test_calibration_job_and_a_failing_one(client: Any) -> None:
    got = client.post("/api/v1/jobs/calibrate", files={"measurements": ("m.csv", _one_family("l40s"))})
    job = _wait(client, got.json()["status_url"])
    assert job["status"] == "done", job["error"]
    assert (
        {key.split("/")[0] for key in job["result"]["families"]} == {"ada"}  # pooled and per stack
        and job["result"]["generated_by"] == "silica serve calibrate"
    )
    bad = client.post("/api/v1/jobs/calibrate", files={"measurements": ("m.csv", b"id,value\n1,2\n")})
    failed = _wait(client, bad.json()["status_url"])
    assert failed["status"] == "failed" and failed["error"]["detail"] and "Traceback" not in str(failed)
    assert client.get("/api/v1/jobs/nope").status_code == 404


def test_scan_registry_and_uploaded_config(client: Any, tmp_path: Path) -> None:
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    got = client.get("/api/v1/scan/llama-3.1-8b")
    assert got.status_code == 200, got.text
    assert set(got.json()["target_verdicts"]) >= {"inferentia2", "trainium1"}
    config = (ROOT / "src" / "silica" / "data" / "models" / "llama-3.1-8b.json").read_bytes()
    up = client.post("/api/v1/scan", files={"config": ("config.json", config)})
    assert up.status_code == 200, up.text
    assert up.json()["target_verdicts"] == got.json()["target_verdicts"]
    assert "/tmp/silica-serve" not in up.text

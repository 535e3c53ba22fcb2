"""The workplace pages and the job table without a browser (in-process, fast): the job library's
progress, cancel and time limit; CSV exports are the library's rows; errors on pages are HTML pages
in the user's words; the advise form redirects after its POST (post-redirect-get)."""

from __future__ import annotations

import csv
import io
import re
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.serve.conftest import EXAMPLES, form_token

from silica import api
from silica.serve import ServeSettings, create_app
from silica.serve.jobs import JobControl, Jobs

HTML = {"accept": "text/html"}


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    from fastapi.testclient import TestClient

    db = tmp_path_factory.mktemp("workplace") / "store.db"
    app = create_app(ServeSettings(store_url=f"sqlite:///{db}"))
    with TestClient(app, base_url="http://127.0.0.1") as c:  # a loopback Host, as a browser sends
        yield c


def _wait(job: Any, states: tuple[str, ...] = ("done", "failed", "cancelled")) -> None:
    deadline = time.monotonic() + 10
    while job.status not in states:
        assert time.monotonic() < deadline, job.status
        time.sleep(0.01)


def test_jobs_progress_cancel_and_time_limit() -> None:
    jobs = Jobs(10)
    gate = threading.Event()
    cleaned: list[str] = []

    def slow(control: JobControl) -> Any:
        for step in range(1000):
            control.report(step / 1000, f"step {step}")
            gate.set()
            time.sleep(0.005)
        return "finished"

    first = jobs.submit("demo", "a", slow, lambda: cleaned.append("a"), None)
    second = jobs.submit("demo", "b", slow, lambda: cleaned.append("b"), None)
    assert gate.wait(5)
    assert first.status == "running" and first.progress is not None and first.stage.startswith("step")
    assert jobs.cancel(second.id).status == "cancelled"  # queued: never starts
    jobs.cancel(first.id)
    _wait(first)
    assert first.status == "cancelled" and first.result is None and first.progress < 1.0
    assert "cancelled by a user" in first.error["detail"]
    from silica.serve.problems import ProblemError

    with pytest.raises(ProblemError) as finished:
        jobs.cancel(first.id)
    assert finished.value.status == 409
    overdue = jobs.submit("demo", "c", slow, lambda: cleaned.append("c"), 0.05)
    _wait(overdue)
    assert overdue.status == "cancelled" and "time limit" in overdue.error["detail"]
    quick = jobs.submit("demo", "d", lambda control: control.report(0.5) or 42, lambda: None)
    _wait(quick)
    assert quick.status == "done" and quick.result == 42 and quick.progress == 1.0
    _wait(second)
    assert sorted(cleaned) == ["a", "b", "c"]  # every job's files are removed, cancelled or not
    jobs.close()


def test_estimate_page_is_the_library_result(client: Any) -> None:
    got = client.get(
        "/estimate?model=llama-3.1-8b&on=p5.48xlarge&input_len=2048&output_len=128", headers=HTML
    )
    assert got.status_code == 200
    lib = api.estimate("llama-3.1-8b", "p5.48xlarge", input_len=2048, output_len=128).to_dict()
    assert f"{lib['ttft_ms']:,.1f}" in got.text and f"{lib['usd_per_hour']:,.2f}" in got.text
    for phase in lib["time"]:
        for part, ms in phase["parts_ms"].items():
            assert f"{ms:,.2f}" in got.text, part
    if lib["energy"]["known"]:
        assert "<h2>Energy</h2>" in got.text
    rows = list(csv.DictReader(io.StringIO(client.get(
        "/estimate?model=llama-3.1-8b&on=p5.48xlarge&input_len=2048&output_len=128&format=csv").text)))  # fmt: skip
    assert len(rows) == 1 and float(rows[0]["ttft_ms"]) == pytest.approx(lib["ttft_ms"])


def test_estimate_errors_are_per_field_in_the_users_words(client: Any) -> None:
    got = client.get("/estimate?model=llama-3.1-8b&on=&input_len=12x&batch=0&option=cheap", headers=HTML)
    assert got.status_code == 400 and got.headers["content-type"].startswith("text/html")
    errors = dict(re.findall(r'<small id="e-(\w+)" class="field-error">([^<]*)</small>', got.text))
    assert set(errors) == {"on", "input_len", "batch", "option"}
    assert errors["on"].startswith("Instance") and errors["input_len"].startswith("Input tokens")
    assert errors["batch"].startswith("Batch") and errors["option"].startswith("Purchase option")
    assert "input_len" not in " ".join(errors.values())  # labels, never internal names
    training = client.get("/estimate?model=llama-3.1-8b&on=p5.48xlarge&task=training", headers=HTML)
    assert "Sequence length is required for training." in training.text
    unknown = client.get("/estimate?model=llama-3.1-8b&on=zz9.huge", headers=HTML)
    assert unknown.status_code == 404 and 'role="alert"' in unknown.text


def test_catalog_filters_and_csv(client: Any) -> None:
    got = client.get("/catalog?family=aws&region=us-east-1&option=on_demand", headers=HTML)
    assert got.status_code == 200 and "trn1.32xlarge" in got.text and "p5.48xlarge" not in got.text
    rows = list(
        csv.DictReader(io.StringIO(client.get("/catalog?family=aws&option=on_demand&format=csv").text))
    )
    expected = [p for i in api.instances("aws").to_dict()["instances"] for p in i["prices"]
                if p["option"] == "on_demand"]  # fmt: skip
    priced = [r for r in rows if r["usd_per_hour"]]
    assert len(priced) == len(expected) and all(r["source"] and r["as_of"] for r in priced)
    chips = list(csv.DictReader(io.StringIO(client.get("/catalog?format=csv&table=chips").text)))
    assert len(chips) == len(api.chips().records())
    bad = client.get("/catalog?region=mars-1", headers=HTML)
    assert (
        bad.status_code == 400
        and "mars-1" in bad.text
        and bad.headers["content-type"].startswith("text/html")
    )


def test_compare_csv_is_the_ranking(client: Any) -> None:
    got = client.get("/compare?model=llama-3.1-8b&input_len=512&output_len=64&format=csv")
    assert got.headers["content-type"].startswith("text/csv")
    shown = [r["instance"] for r in csv.DictReader(io.StringIO(got.text))]
    lib = api.compare("llama-3.1-8b", input_len=512, output_len=64).to_dict()["results"]
    assert shown == [r["instance"] for r in lib]


def test_advise_redirects_and_history_pages(client: Any) -> None:
    files = [("inventory", ("inventory.yaml", (EXAMPLES / "inventory.yaml").read_bytes())),
             ("scans", ("ranker.scan.json", (EXAMPLES / "scans" / "ranker.scan.json").read_bytes()))]  # fmt: skip
    posted = client.post(
        "/advise", files=files, data=form_token(client, "/advise"), headers=HTML, follow_redirects=False
    )
    assert posted.status_code == 303 and posted.headers["location"].startswith("/advise/result/")
    count = len(client.get("/api/v1/history?limit=1000").json()["records"])
    for _ in range(2):  # reloading the result page stores nothing
        assert "Stored" in client.get(posted.headers["location"]).text
    assert len(client.get("/api/v1/history?limit=1000").json()["records"]) == count
    found = client.get("/history?q=doc-summaries", headers=HTML).text
    ids = re.findall(r'name="pick" value="(\d+)"', found)
    assert ids and "support-bot" not in found
    diff = client.get(f"/history/diff?a={ids[0]}&b={ids[-1]}", headers=HTML)
    assert diff.status_code == 200 and "keys differ" in diff.text
    same = client.get(f"/history/diff?a={ids[0]}&b={ids[0]}", headers=HTML)
    assert "0 of" in same.text and "No key differs" in same.text
    history_csv = list(csv.DictReader(io.StringIO(client.get("/history?q=doc-summaries&format=csv").text)))
    assert [r["id"] for r in history_csv] == ids
    for missing in ("/history/99999999", "/history/abc", f"/history/diff?a={ids[0]}&b=99999999",
                    "/advise/result/gone", "/reports/gone.html", "/no/such/page"):  # fmt: skip
        page = client.get(missing, headers=HTML)
        assert page.status_code == 404 and page.headers["content-type"].startswith("text/html"), missing
    assert client.get("/api/v1/history/99999999").headers["content-type"] != "text/html"


def test_inventory_over_one_mib_uploads_as_a_file(client: Any, tmp_path: Path) -> None:
    base = (EXAMPLES / "inventory.yaml").read_text()
    big = base + ("# " + "x" * 98 + "\n") * 19_000  # about 1.9 MiB, under the 2 MiB upload limit
    files = [("inventory", ("big.yaml", big.encode())),
             ("scans", ("ranker.scan.json", (EXAMPLES / "scans" / "ranker.scan.json").read_bytes()))]  # fmt: skip
    posted = client.post(
        "/advise", files=files, data=form_token(client, "/advise"), headers=HTML, follow_redirects=False
    )
    assert posted.status_code == 303, posted.text[:500]


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("rate=abc", "Requests per second"),
        ("rate=nan", "rate"),
        ("rate=-2", "rate"),
        ("input_len=1.5", "Input tokens"),
        ("requests=999999999", "requests"),
        ("on=not-an-instance", "not-an-instance"),
    ],
)
def test_simulate_page_refuses_a_bad_value_in_one_line(client: Any, query: str, field: str) -> None:
    """The simulate form's values go through the options' reading and the library's ranges: a 4xx page
    that names the field, never a traceback or a 500."""
    got = client.get(f"/simulate?model=llama-3.1-8b&{query}")
    assert 400 <= got.status_code < 500, got.status_code
    alert = re.search(r'role="alert">(.*?)</div>', got.text, re.S)
    assert alert is not None and field in alert.group(1)
    assert "Traceback" not in got.text

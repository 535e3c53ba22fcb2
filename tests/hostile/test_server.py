"""Issue 24, class S on a real loopback server: forms need their token, every compute path counts
against the cap, a flood of jobs is refused, jobs stop on cancel and time limit, slow clients are cut.

In-process tests (TestClient) check the guard's rules; the `e2e` ones start uvicorn as `silica serve`
configures it (`serve.server.uvicorn_config`) and talk to it over sockets.
"""

from __future__ import annotations

import asyncio
import re
import socket
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.configuration import set_hypothesis_home_dir

pytest.importorskip("fastapi")
httpx = pytest.importorskip("httpx")

from silica.serve import ServeSettings, create_app  # noqa: E402
from silica.serve.csrf import Csrf  # noqa: E402

set_hypothesis_home_dir(tempfile.mkdtemp(prefix="silica-hypothesis-"))

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
TOKEN = "team-token-0123456789abcdef"
POST_FORM = re.compile(r"<form\b[^>]*method=\"post\"[^>]*>(<input[^>]*>)?", re.IGNORECASE)


def _client(tmp_path: Path, **kw: Any) -> Any:
    from starlette.testclient import TestClient

    app = create_app(ServeSettings(store_url=f"sqlite:///{tmp_path / 's.db'}", **kw))
    return TestClient(app, base_url="http://127.0.0.1:8000")


def _token_of(client: Any, page: str) -> str:
    found = re.search(r'name="csrf_token" value="([0-9a-f]+)"', client.get(page).text)
    assert found, page
    return found.group(1)


def _advise_files() -> list[tuple[str, tuple[str, bytes]]]:
    return [
        ("inventory", ("inventory.yaml", (EXAMPLES / "inventory.yaml").read_bytes())),
        ("scans", ("ranker.scan.json", (EXAMPLES / "scans" / "ranker.scan.json").read_bytes())),
    ]


# ------------------------------------------------------------------------------- CSRF, in process


@pytest.mark.parametrize("tokens", [(), (TOKEN,)], ids=["token-free", "with token"])
def test_every_post_form_on_every_page_carries_a_token(tmp_path: Path, tokens: tuple[str, ...]) -> None:
    with _client(tmp_path, tokens=tokens) as c:
        if tokens:
            c.cookies.set("silica_token", TOKEN)
        c.app.state.jobs.submit("test", "queued", lambda ctl: time.sleep(0.5), lambda: None)
        c.app.state.jobs.submit("test", "waiting", lambda ctl: None, lambda: None)
        seen = 0
        for page in ("/", "/advise", "/login", "/jobs", "/compare", "/estimate", "/history", "/catalog"):
            got = c.get(page)
            assert got.status_code == 200, page
            for form in POST_FORM.finditer(got.text):
                assert form.group(1) and 'name="csrf_token"' in form.group(1), (page, form.group(0))
                seen += 1
        assert seen >= 3  # advise, login and at least one cancel button


@pytest.mark.parametrize("tokens", [(), (TOKEN,)], ids=["token-free", "with token"])
def test_a_form_post_without_its_token_is_refused_and_with_it_passes(
    tmp_path: Path, tokens: tuple[str, ...]
) -> None:
    from starlette.testclient import TestClient

    with _client(tmp_path, tokens=tokens) as c, TestClient(c.app, base_url="http://127.0.0.1:8000") as other:
        if tokens:
            c.cookies.set("silica_token", TOKEN)
            other.cookies.set("silica_token", TOKEN)
        token = _token_of(c, "/advise")
        bare = c.post("/advise", files=_advise_files(), follow_redirects=False)
        assert bare.status_code == 403 and "form token" in bare.json()["detail"]
        # Another browser's token for the same server (a page the attacker loaded itself) does not
        # fit this browser's cookie.
        assert _token_of(other, "/advise") != token  # the other browser has a cookie of its own
        stolen = other.post(
            "/advise", files=_advise_files(), data={"csrf_token": token}, follow_redirects=False
        )
        assert stolen.status_code == 403
        ok = c.post("/advise", files=_advise_files(), data={"csrf_token": token}, follow_redirects=False)
        assert ok.status_code == 303, ok.text[:300]
        job = c.app.state.jobs.submit("test", "slow", lambda ctl: time.sleep(0.3), lambda: None)
        assert c.post(f"/jobs/{job.id}/cancel", follow_redirects=False).status_code == 403
        url_token = {"csrf_token": _token_of(c, "/jobs")}
        assert c.post(f"/jobs/{job.id}/cancel", data=url_token, follow_redirects=False).status_code == 303


def test_a_cookie_signed_api_call_needs_the_token_a_bearer_call_does_not(tmp_path: Path) -> None:
    body = {"model": "llama-3.1-8b", "on": "g6e.xlarge"}
    with _client(tmp_path, tokens=(TOKEN,)) as c:
        c.cookies.set("silica_token", TOKEN)
        token = _token_of(c, "/advise")
        assert c.post("/api/v1/estimate", json=body).status_code == 403  # a browser's ambient cookie
        assert c.post("/api/v1/estimate", json=body, headers={"x-csrf-token": token}).status_code == 200
    with _client(tmp_path, tokens=(TOKEN,)) as script:
        got = script.post("/api/v1/estimate", json=body, headers={"authorization": f"Bearer {TOKEN}"})
        assert got.status_code == 200
    with _client(tmp_path) as loopback:  # token-free: no ambient credential, the Origin rule applies
        assert loopback.post("/api/v1/estimate", json=body).status_code == 200


@settings(
    max_examples=60,
    deadline=None,
    database=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(forged=st.one_of(st.text(max_size=80), st.from_regex(r"[0-9a-f]{64}", fullmatch=True)))
def test_any_forged_token_is_refused(forged: str) -> None:
    """Any string but the HMAC of the browser's own cookie fails, and the check never raises."""
    csrf = Csrf()
    cookie = csrf.new_cookie()
    assert not csrf.valid(cookie, forged) or forged == csrf.token(cookie)
    assert not csrf.valid(None, forged)
    body = f"csrf_token={forged}".encode()
    presented = Csrf.presented(body, b"application/x-www-form-urlencoded", None)
    assert presented is None or not csrf.valid(cookie, presented)


@pytest.mark.parametrize(
    ("body", "word"),
    [
        ('{"model": "llama-3.1-8b", "on": "g6e.xlarge", "on": "p5.48xlarge"}', "twice"),
        ('{"model": "llama-3.1-8b", "on": "g6e.xlarge", "input_len": NaN}', "NaN"),
        ('{"model": "llama-3.1-8b", "on": "g6e.xlarge", "input_len": 1' + "0" * 5000 + "}", "digits"),
    ],
    ids=["duplicate key", "NaN", "5000 digits"],
)
def test_an_api_json_body_goes_through_the_reading_layer(tmp_path: Path, body: str, word: str) -> None:
    """The API's JSON bodies meet the decoder files meet: a key given twice is not last-wins."""
    with _client(tmp_path) as c:
        got = c.post("/api/v1/estimate", content=body, headers={"content-type": "application/json"})
        assert got.status_code == 400 and word in got.json()["detail"], got.text[:300]


def test_a_page_compare_counts_against_the_cap(tmp_path: Path) -> None:
    """The cap counts the pages that compute, not only the API: at the cap, a page compare is 429."""
    from silica.serve.app import Guard

    with _client(tmp_path, max_inflight=1) as c:
        guard = c.app.middleware_stack
        while not isinstance(guard, Guard):
            guard = guard.app
        guard.inflight = 1  # one request is computing
        for path in ("/compare?model=llama-3.1-8b", "/estimate?model=llama-3.1-8b&on=g6e.xlarge"):
            got = c.get(path)
            assert got.status_code == 429 and got.headers["retry-after"] == "1", path
        assert c.get("/api/v1/health").status_code == 200  # liveness is never refused
        guard.inflight = 0
        assert c.get("/compare?model=llama-3.1-8b").status_code == 200


def test_a_job_flood_is_refused_not_queued(tmp_path: Path) -> None:
    """With the worker busy, jobs queue up to the limit and the rest are 429 at once; a queued one
    cancels before it starts, and every job carries its time limit."""
    import threading

    small = (ROOT / "tests" / "hostile" / "conftest.py").read_text().split('SMALL_FLEET = """\\\n')[1]
    fleet = small.split('"""')[0].encode()
    gate = threading.Event()
    with _client(tmp_path, max_jobs=3) as c:
        c.app.state.jobs.submit("test", "busy", lambda ctl: gate.wait(10), lambda: None)
        codes = [
            c.post("/api/v1/jobs/fleet-sweep", files={"fleet": ("f.yaml", fleet)}).status_code
            for _ in range(8)
        ]
        assert codes == [202, 202] + [429] * 6, codes
        queued = [j for j in c.get("/api/v1/jobs").json()["jobs"] if j["kind"] == "fleet-sweep"]
        assert all(j["timeout_s"] and j["timeout_s"] > 0 for j in queued)
        cancelled = c.post(f"/api/v1/jobs/{queued[0]['id']}/cancel").json()
        assert cancelled["status"] == "cancelled"
        gate.set()


def _settled(client: Any, job_id: str, states: tuple[str, ...], seconds: float = 120) -> dict[str, Any]:
    deadline = time.monotonic() + seconds
    while True:
        job: dict[str, Any] = client.get(f"/api/v1/jobs/{job_id}").json()
        if job["status"] in states or time.monotonic() > deadline:
            return job
        time.sleep(0.05)


def test_a_running_sweep_stops_on_cancel_and_on_its_time_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A sweep job reports after each scenario, and that is where a cancel or its time limit stops
    it: the one job worker is free again long before the sweep would have ended."""
    import threading

    import silica.fleet
    from silica.serve import actions

    # Deterministic on a busy machine: after each scenario the sweep waits until the test has sent its
    # cancel, so the worker cannot race through the remaining scenarios between poll and cancel.
    gate, real = threading.Event(), silica.fleet.run_sweep

    def gated(*args: Any, on_done: Any, **kwargs: Any) -> Any:
        def each(result: Any) -> None:
            on_done(result)
            gate.wait(60)

        return real(*args, on_done=each, **kwargs)

    monkeypatch.setattr(silica.fleet, "run_sweep", gated)
    fleet = (EXAMPLES / "fleet.yaml").read_bytes()  # 8 scenarios of a week each
    done = ("done", "failed", "cancelled")
    with _client(tmp_path) as c:
        job = c.post("/api/v1/jobs/fleet-sweep", files={"fleet": ("f.yaml", fleet)}).json()
        deadline = time.monotonic() + 120
        while (got := c.get(f"/api/v1/jobs/{job['id']}").json())["status"] not in done:
            if (got["progress"] or 0) > 0 or time.monotonic() > deadline:  # one scenario done
                break
            time.sleep(0.02)
        assert c.post(f"/api/v1/jobs/{job['id']}/cancel").status_code == 200
        gate.set()
        stopped = _settled(c, job["id"], done)
        assert stopped["status"] == "cancelled" and stopped["progress"] < 0.9, stopped
        assert "cancelled by a user" in stopped["error"]["detail"]
        monkeypatch.setattr(actions, "JOB_TIMEOUT_S", 1e-6)
        late = c.post("/api/v1/jobs/fleet-sweep", files={"fleet": ("f.yaml", fleet)}).json()
        assert late["timeout_s"] == 1e-6
        overdue = _settled(c, late["id"], done)
        assert overdue["status"] == "cancelled" and "time limit" in overdue["error"]["detail"], overdue


def test_a_job_that_never_reports_is_given_up_and_the_queue_moves_on() -> None:
    """Work stuck in one long step cannot stop at a report; past its limit and a grace it is given
    up (cancelled, its result dropped) and a fresh worker runs the jobs queued behind it."""
    import threading

    from silica.serve.jobs import Jobs

    jobs, gate, cleaned = Jobs(10, grace_s=0.2), threading.Event(), []
    stuck = jobs.submit(
        "test", "stuck", lambda ctl: gate.wait(30) and "late", lambda: cleaned.append("s"), 0.2
    )
    behind = jobs.submit("test", "behind", lambda ctl: 42, lambda: cleaned.append("b"))
    deadline = time.monotonic() + 10
    while behind.status != "done" and time.monotonic() < deadline:
        time.sleep(0.02)
    assert stuck.status == "cancelled" and "progress report" in stuck.error["detail"], stuck
    assert behind.status == "done" and behind.result == 42
    gate.set()  # the stuck work ends at last: its result is dropped, its files removed
    while "s" not in cleaned and time.monotonic() < deadline:
        time.sleep(0.02)
    assert stuck.status == "cancelled" and stuck.result is None and sorted(cleaned) == ["b", "s"]
    jobs.close()


# ------------------------------------------------------------------------------ real server (e2e)


@pytest.fixture
def served(tmp_path: Path) -> Any:
    from tests.serve.conftest import running

    def start(**kw: Any) -> Any:
        return running(ServeSettings(store_url=f"sqlite:///{tmp_path / 's.db'}", **kw))

    return start


def _closed_within(sock: socket.socket, seconds: float) -> tuple[bool, bytes]:
    """Whether the server closed the connection within `seconds`, and what it sent first."""
    sock.settimeout(0.2)
    got, end = b"", time.monotonic() + seconds
    while time.monotonic() < end:
        try:
            chunk = sock.recv(65536)
        except TimeoutError:
            continue
        except ConnectionResetError:
            return True, got
        if not chunk:
            return True, got
        got += chunk
    return False, got


@pytest.mark.e2e
def test_slow_headers_and_idle_connections_are_closed(served: Any) -> None:
    with served(header_timeout_s=1.0) as base:
        port = int(base.rsplit(":", 1)[1])
        with socket.create_connection(("127.0.0.1", port)) as idle:
            closed, _ = _closed_within(idle, 4)
            assert closed  # connected, said nothing
        with socket.create_connection(("127.0.0.1", port)) as slow:
            slow.sendall(b"GET /api/v1/health HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            start = time.monotonic()
            for byte in b"X-Slow: 1234567890\r\n":  # a byte every 0.2 s: never completes in time
                try:
                    slow.sendall(bytes([byte]))
                except OSError:
                    break
                time.sleep(0.2)
            closed, _ = _closed_within(slow, 3)
            assert closed and time.monotonic() - start < 6
        with socket.create_connection(("127.0.0.1", port)) as kept:  # a second request, sent slowly
            kept.sendall(b"GET /api/v1/health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            kept.settimeout(5)
            assert kept.recv(65536).startswith(b"HTTP/1.1 200")
            kept.sendall(b"GET /api/v1/health HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # and never ends
            closed, _ = _closed_within(kept, 4)
            assert closed
        with httpx.Client(base_url=base) as c:  # and the server still serves
            assert c.get("/api/v1/health").status_code == 200


@pytest.mark.e2e
def test_a_slow_body_is_a_408_and_closed(served: Any) -> None:
    with served(body_timeout_s=1.0) as base:
        port = int(base.rsplit(":", 1)[1])
        with socket.create_connection(("127.0.0.1", port)) as slow:
            slow.sendall(
                b"POST /api/v1/estimate HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                b'Content-Length: 100\r\n\r\n{"model": '
            )
            closed, answer = _closed_within(slow, 5)
            assert closed and answer.startswith(b"HTTP/1.1 408"), answer[:200]


@pytest.mark.e2e
def test_rebinding_host_and_cross_site_form_on_a_real_server(served: Any) -> None:
    with served() as base, httpx.Client(base_url=base, follow_redirects=False) as c:
        rebound = c.get("/api/v1/history", headers={"host": "attacker.example:8000"})
        assert rebound.status_code == 403 and "loopback" in rebound.json()["detail"]
        cross = c.post("/advise", files=_advise_files(), headers={"origin": "https://attacker.example"})
        assert cross.status_code == 403
        no_origin = c.post("/advise", files=_advise_files())  # an old browser: no Origin, no token
        assert no_origin.status_code == 403 and "form token" in no_origin.json()["detail"]
        token = _token_of(c, "/advise")
        own = c.post("/advise", files=_advise_files(), data={"csrf_token": token})
        assert own.status_code == 303


@pytest.mark.e2e
def test_a_burst_of_page_compares_is_refused_not_queued(served: Any) -> None:
    async def burst(base: str) -> list[int]:
        async with httpx.AsyncClient(base_url=base, timeout=120) as c:
            calls = [c.get(f"/compare?model=llama-3.1-70b&input_len={300 + i}") for i in range(24)]
            return [r.status_code for r in await asyncio.gather(*calls)]

    with served(max_inflight=2) as base:
        codes = asyncio.run(burst(base))
        assert set(codes) <= {200, 429} and 429 in codes and 200 in codes, codes

"""Bad input over HTTP: each is a 4xx problem with a one-line reason, the server keeps serving, and
nothing is half-written in the store. Also tokens, limits and a bug's 500 (a reference, no traceback)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.serve.conftest import EXAMPLES, form_token, running
from typer.testing import CliRunner

from silica.errors import InputError
from silica.serve import ServeSettings, create_app, is_loopback, load_tokens
from silica.store import open_store

TOKEN = "team-token-0123456789abcdef"


def _problem(resp: Any, status: int) -> str:
    """Check a problem response and return its detail (one line, no traceback)."""
    assert resp.status_code == status, resp.text
    assert resp.headers["content-type"] == "application/problem+json"
    body = resp.json()
    assert body["status"] == status and body["title"]
    detail = str(body["detail"])
    assert "\n" not in detail and "Traceback" not in resp.text and 'File "' not in resp.text
    assert "To fix:" in detail
    return detail


def test_malformed_json_wrong_types_unknown_fields(client: Any) -> None:
    bad = client.post(
        "/api/v1/compare", content=b'{"model": "llama', headers={"content-type": "application/json"}
    )
    assert "not valid JSON" in _problem(bad, 422)
    typed = client.post("/api/v1/compare", json={"model": "llama-3.1-8b", "input_len": "many"})
    assert "input_len" in _problem(typed, 422)
    neg = client.post("/api/v1/compare", json={"model": "llama-3.1-8b", "output_len": -1})
    assert "output_len" in _problem(neg, 422)
    extra = client.post("/api/v1/compare", json={"model": "llama-3.1-8b", "inputlen": 5})
    assert "inputlen" in _problem(extra, 422)
    array = client.post("/api/v1/estimate", json=[1, 2])
    _problem(array, 422)
    unknown_on = client.post("/api/v1/estimate", json={"model": "llama-3.1-8b", "on": "trn9.huge"})
    assert "trn9.huge" in _problem(unknown_on, 404)
    assert "No such path" in _problem(client.get("/api/v1/nothing"), 404)
    assert "not allowed" in _problem(client.get("/api/v1/compare"), 405)


def test_huge_bodies(client: Any) -> None:
    declared = client.post(
        "/api/v1/compare", content=b"x" * (5 * 1024 * 1024), headers={"content-type": "application/json"}
    )
    assert "limit" in _problem(declared, 413)

    def chunks() -> Any:
        for _ in range(80):
            yield b" " * 65536  # no Content-Length: counted as it arrives

    streamed = client.post("/api/v1/compare", content=chunks(), headers={"content-type": "application/json"})
    assert "over" in _problem(streamed, 413)
    big_upload = client.post("/api/v1/advise", files={"inventory": ("big.yaml", b"# pad\n" * 60_000)})
    assert "upload limit" in _problem(big_upload, 413)
    assert client.get("/api/v1/health").json()["status"] == "ok"


def _bomb() -> bytes:
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for prev, name in zip("abcdefgh", "bcdefghi", strict=True):
        lines.append(f"{name}: &{name} [{', '.join(['*' + prev] * 9)}]")
    return ("\n".join(lines) + "\nworkloads: []\n").encode()


def test_yaml_bomb_binary_config_and_path_tricks(client: Any, backend: str) -> None:
    before = open_store(backend).count()
    bomb = client.post("/api/v1/advise", files={"inventory": ("bomb.yaml", _bomb())})
    assert "aliases" in _problem(bomb, 422)
    # One alias that refers to its own holder is infinitely deep once loaded (it was a 500).
    loop = client.post("/api/v1/advise", data={"text": "workloads: &w [*w]\n"})
    assert "refers to the value that holds it" in _problem(loop, 422)
    # An id larger than the database's integer overflowed in the driver (it was a 500).
    assert "not an id the store can hold" in _problem(client.get("/api/v1/history/" + "9" * 30), 400)
    binary = client.post("/api/v1/scan", files={"config": ("config.json", bytes(range(256)) * 8)})
    assert "binary" in _problem(binary, 422)
    not_json = client.post("/api/v1/scan", files={"config": ("config.json", b"{'a': 1")})
    assert "not valid JSON" in _problem(not_json, 422)
    latin = client.post("/api/v1/advise", files={"inventory": ("inv.yaml", "team: é".encode("latin-1"))})
    assert "UTF-8" in _problem(latin, 422)
    inventory = (
        (EXAMPLES / "inventory.yaml").read_text().replace("scans/ranker.scan.json", "../../../etc/passwd")
    )
    trick = client.post(
        "/api/v1/advise", files={"inventory": ("../../../../tmp/evil.yaml", inventory.encode())}
    )
    detail = _problem(trick, 422)
    assert "outside the upload" in detail and detail.startswith("evil.yaml")
    absolute = inventory.replace("../../../etc/passwd", "/etc/passwd")
    assert "outside" in _problem(client.post("/api/v1/advise", data={"text": absolute}), 422)
    assert open_store(backend).count() == before
    assert client.get("/api/v1/health").status_code == 200


def test_a_bad_workload_stores_nothing(client: Any, backend: str) -> None:
    """The last workload is wrong: the whole advice fails, and none of the others is stored."""
    before = open_store(backend).count()
    text = (EXAMPLES / "inventory.yaml").read_text().replace("model: gemma-2-9b", "model: gemma-9000")
    got = client.post("/api/v1/advise", data={"text": text})
    assert "gemma-9000" in _problem(got, 422 if "line" in got.text else 404)
    empty = client.post("/api/v1/advise", data={})
    assert "No inventory" in _problem(empty, 400)
    assert open_store(backend).count() == before


def test_a_burst_is_refused_not_queued(base: str) -> None:
    """More requests at once than the server computes (8 here): the rest get 429, then all is well."""

    async def burst() -> list[int]:
        async with httpx.AsyncClient(base_url=base, timeout=120) as c:
            calls = [
                c.post(
                    "/api/v1/compare", json={"model": "llama-3.1-8b", "input_len": 100 + i, "output_len": 64}
                )
                for i in range(48)
            ]
            return [r.status_code for r in await asyncio.gather(*calls)]

    codes = asyncio.run(burst())
    assert set(codes) <= {200, 429} and 429 in codes and 200 in codes
    with httpx.Client(base_url=base) as c:
        assert c.post("/api/v1/compare", json={"model": "llama-3.1-8b"}).status_code == 200
        limited = None
        for r in asyncio.run(_statuses(base)):
            if r.status_code == 429:
                limited = r
        if limited is not None:
            assert limited.headers["retry-after"] == "1"
            _problem(limited, 429)


async def _statuses(base: str) -> list[httpx.Response]:
    async with httpx.AsyncClient(base_url=base, timeout=120) as c:
        calls = [
            c.post("/api/v1/compare", json={"model": "llama-3.1-70b", "input_len": 300 + i})
            for i in range(40)
        ]
        return list(await asyncio.gather(*calls))


def test_tokens_required_off_loopback(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    with pytest.raises(InputError, match="needs an API token"):
        ServeSettings(host="0.0.0.0")
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("10.1.2.3")
    from silica.cli.app import app

    monkeypatch.delenv("SILICA_API_TOKENS", raising=False)
    cli = CliRunner().invoke(app, ["serve", "--host", "0.0.0.0", "--port", "0"])
    assert cli.exit_code == 2 and "needs an API token" in cli.output
    monkeypatch.setenv("SILICA_API_TOKENS", "short")
    with pytest.raises(InputError, match="shorter than"):
        load_tokens()
    monkeypatch.setenv("SILICA_API_TOKENS", f"{TOKEN}, another-token-abcdefghijkl")
    file = tmp_path / "tokens"
    file.write_text("# team tokens\nfile-token-abcdefghijklmnop\n")
    assert load_tokens(file) == (TOKEN, "another-token-abcdefghijkl", "file-token-abcdefghijklmnop")
    settings = ServeSettings(host="0.0.0.0", tokens=load_tokens(file))
    assert settings.token_ok(TOKEN) and settings.token_ok("file-token-abcdefghijklmnop")
    assert not settings.token_ok(TOKEN[:-1]) and not settings.token_ok(None) and not settings.token_ok("")


def test_missing_and_wrong_token(tmp_path: Path) -> None:
    settings = ServeSettings(tokens=(TOKEN,), store_url=f"sqlite:///{tmp_path / 's.db'}")
    with running(settings) as base, httpx.Client(base_url=base, follow_redirects=False) as c:
        assert c.get("/api/v1/health").status_code == 200  # liveness stays open
        missing = c.post("/api/v1/compare", json={"model": "llama-3.1-8b"})
        assert "token" in _problem(missing, 401) and missing.headers["www-authenticate"].startswith("Bearer")
        wrong = c.get("/api/v1/models", headers={"authorization": "Bearer " + TOKEN[:-1] + "x"})
        _problem(wrong, 401)
        ok = c.get("/api/v1/models", headers={"authorization": f"Bearer {TOKEN}"})
        assert ok.status_code == 200
        page = c.get("/compare")
        assert page.status_code == 303 and page.headers["location"].startswith("/login")
        unsigned = c.post("/login", data={"token": TOKEN, "next": "/compare"})
        assert unsigned.status_code == 403  # no form token: a login forced by another site's page
        bad_login = c.post("/login", data={"token": "nope", "next": "/compare", **form_token(c, "/login")})
        assert bad_login.status_code == 401
        login = c.post("/login", data={"token": TOKEN, "next": "//evil.example/", **form_token(c, "/login")})
        assert login.status_code == 303 and login.headers["location"] == "/"
        assert "httponly" in login.headers["set-cookie"].lower()
        c.cookies.set("silica_token", TOKEN)
        assert c.get("/compare").status_code == 200


def test_a_bug_is_a_500_with_a_reference(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    app = create_app(ServeSettings(store_url=f"sqlite:///{tmp_path / 's.db'}"))

    @app.get("/api/v1/boom")
    def boom() -> None:
        raise ZeroDivisionError("secret internals")

    import uvicorn
    from tests.serve.conftest import free_port

    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="critical"))
    import threading
    import time

    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.05)
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}") as c:
            got = c.get("/api/v1/boom")
            detail = _problem(got, 500)
            assert got.json()["log_ref"] in detail and "secret internals" not in got.text
            assert c.get("/api/v1/health").status_code == 200
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def test_serve_cli_refuses_a_busy_port_and_a_bad_level() -> None:
    import socket

    from silica.cli.app import app

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        cli = CliRunner().invoke(app, ["serve", "--port", str(port)])
    assert cli.exit_code == 2 and f"Cannot listen on 127.0.0.1:{port}" in cli.output
    level = CliRunner().invoke(app, ["serve", "--log-level", "loud"])
    assert level.exit_code == 2 and "Unknown --log-level" in level.output

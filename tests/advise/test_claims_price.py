"""`silica claims --price/--prices`: a user's own quote makes the "cannot check" Trainium2 claims
checkable, and the report says whose prices it used."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from silica.advise.claim_checks import check_claims
from silica.catalog import load_catalog
from silica.cli.app import app

IDS = ("trn2-30-40-better-than-p5",)


def test_without_a_price_the_trn2_claim_cannot_be_checked() -> None:
    [c] = check_claims(list(IDS)).claims
    assert c.verdict == "cannot check"


@pytest.mark.parametrize(("usd", "verdict"), [(35.76, "supported"), (200.0, "not supported")])
def test_a_user_price_decides_the_claim(usd: float, verdict: str) -> None:
    [c] = check_claims(list(IDS), catalog=load_catalog(overrides={"trn2.48xlarge": usd})).claims
    assert c.verdict == verdict


def test_cli_price_reaches_the_check_and_the_report(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SILICA_DB_URL", f"sqlite:///{tmp_path / 's.db'}")
    html = tmp_path / "claims.html"
    args = ["claims", "--id", IDS[0], "--price", "trn2.48xlarge=35.76", "--no-store", "--html", str(html)]
    result = CliRunner().invoke(app, args, env={**os.environ})
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[1].split("\t")[:2] == [IDS[0], "supported"]
    assert "your prices for trn2.48xlarge" in html.read_text()

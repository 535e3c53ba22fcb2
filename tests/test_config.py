"""Price defaults from the environment and config.toml, with their origin; history summaries."""

from __future__ import annotations

from pathlib import Path

import pytest

from silica.config import load_settings
from silica.errors import DataFileError, InputError
from silica.store.summary import summarize


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in ("SILICA_REGION", "SILICA_PRICE_OPTION", "SILICA_PRICES"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("SILICA_CONFIG", str(tmp_path / "absent.toml"))


def test_defaults_when_nothing_is_set() -> None:
    settings = load_settings()
    assert settings.region.value is None and settings.region.origin == "default"
    assert settings.prices_path is None


def test_environment_wins_over_the_config_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    prices = tmp_path / "p.csv"
    prices.write_text("instance,region,option,usd_per_hour,source,as_of,notes\n", encoding="utf-8")
    config = tmp_path / "config.toml"
    config.write_text(f'region = "us-west-2"\nprice_option = "spot"\nprices = "{prices}"\n', encoding="utf-8")
    monkeypatch.setenv("SILICA_CONFIG", str(config))
    monkeypatch.setenv("SILICA_REGION", "eu-west-1")
    settings = load_settings()
    assert (settings.region.value, settings.region.origin) == ("eu-west-1", "environment SILICA_REGION")
    assert settings.price_option.value == "spot" and str(config) in settings.price_option.origin
    assert settings.prices_path == prices


@pytest.mark.parametrize(
    ("text", "error", "message"),
    [
        ('regoin = "x"\n', DataFileError, "unknown setting 'regoin'"),
        ("region = 5\n", DataFileError, "must be a non-empty string"),
        ("region = \n", DataFileError, "not valid TOML"),
        ('price_option = "cheap"\n', InputError, "is not a purchase option"),
        ('prices = "/no/such/file.csv"\n', InputError, "does not exist"),
    ],
)
def test_bad_config_is_one_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str, error: type, message: str
) -> None:
    config = tmp_path / "config.toml"
    config.write_text(text, encoding="utf-8")
    monkeypatch.setenv("SILICA_CONFIG", str(config))
    with pytest.raises(error, match=message):
        load_settings()


def test_history_summaries_say_what_a_record_holds() -> None:
    estimate = {
        "instance": "inf2.xlarge",
        "count": 2,
        "feasible": True,
        "ttft_ms": 171.2,
        "tpot_ms": 54.34,
        "usd_per_1m_output_tokens": 0.5331,
    }
    assert summarize("estimate", estimate) == "inf2.xlarge x2, TTFT 171 ms, TPOT 54.3 ms, $0.533/1M out"
    assert (
        summarize(
            "estimate",
            {"instance": "p5.48xlarge", "count": 1, "feasible": False, "reasons": ["weights do not fit"]},
        )
        == "p5.48xlarge x1: cannot run (weights do not fit)"
    )
    sweep = {
        "policy": "daynight",
        "metrics": {"slo_attainment": 0.999, "utilisation_busy": 0.473, "jobs_deadline_missed": 0},
    }
    assert summarize("fleet_sweep", sweep) == "daynight, SLO 99.90%, busy 47.3%, 0 deadlines missed"
    assert summarize("recommendation", {"verdict": "inferentia"}) == "inferentia"
    assert summarize("pilot", {"summary": "confirmed within 8%"}) == "confirmed within 8%"
    assert summarize("something-new", {"a": 1, "b": 2}) == "fields: a, b"


@pytest.mark.parametrize("xdg", [None, "", "   ", "/tmp/xdg-config"])
def test_config_dir_is_platformdirs_answer(xdg: str | None, monkeypatch: pytest.MonkeyPatch) -> None:
    """`paths.config_dir` writes out platformdirs' rule (to spare its import); they must agree."""
    from platformdirs import user_config_dir

    from silica.paths import config_dir

    if xdg is None:
        monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    else:
        monkeypatch.setenv("XDG_CONFIG_HOME", xdg)
    assert config_dir() == Path(user_config_dir("silica"))

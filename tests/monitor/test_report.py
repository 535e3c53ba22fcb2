"""The report from the replay file: drift flagged with the right deployment and window, right-sizing
with its saving, window summaries in the store, the HTML and Markdown reports, and bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.monitor import scenario
from tests.monitor.conftest import Replay, report_cli, run

from silica.monitor import build_report, load_plan, read_file


@pytest.fixture(scope="module")
def result(replay: Replay) -> dict:  # type: ignore[type-arg]
    code, out, err = report_cli(replay, "--json", "--no-store")
    assert code == 0, err
    return json.loads(out)


def test_production_30_percent_slower_is_flagged_in_its_window(result: dict, replay: Replay) -> None:  # type: ignore[type-arg]
    gpu, neuron = result["deployments"]
    planned = replay.neuron["tpot_ms"]
    assert scenario.SLOW * planned > replay.neuron["tpot_ms_high"], "the scenario must leave the band"
    assert gpu["drift"] == []
    [drift] = neuron["drift"]
    assert drift["deployment"] == "chat-neuron" and drift["figure"] == "tpot_ms"
    # The second hour, (since + 1 h, since + 2 h]: TPOT sum grew by 1.5 x p per observation there.
    assert (drift["start"], drift["end"]) == (replay.since + 3600, replay.since + 7200)
    assert drift["observed"] == pytest.approx(scenario.SLOW * planned)
    assert drift["ratio"] == pytest.approx(scenario.SLOW) and drift["direction"] == "slower"
    assert neuron["windows"][0]["tpot"]["mean_ms"] == pytest.approx(planned)
    assert neuron["verdict"].startswith("slower than plan (TPOT +50% in 1 of 2 windows)")
    assert any("chat-neuron" in d and "50% slower" in d for d in result["drift"])


def test_over_provisioned_deployment_gets_a_right_size_with_the_saving(result: dict, replay: Replay) -> None:  # type: ignore[type-arg]
    [advice] = [a for a in result["advice"] if a["kind"] == "right-size"]
    assert advice["deployment"] == "chat-gpu"
    # Peak 400 tokens/s; one g6e.xlarge is planned at output_tokens_per_s, 80% of it is enough:
    per_instance = replay.gpu["output_tokens_per_s"]
    assert 0.8 * per_instance >= 400
    # 4 ran, 1 is needed: 3 x price x 730 hours a month.
    assert advice["monthly_saving_usd"] == pytest.approx(3 * replay.gpu["price"]["usd_per_hour"] * 730)
    assert "run 1" in advice["text"]
    assert result["deployments"][0]["verdict"] == "over-provisioned (peak needs 1 of 4 instances)"


def test_windows_are_stored_and_history_shows_them(replay: Replay) -> None:
    code, _, err = report_cli(replay)
    assert code == 0, err
    code, out, err = run("history", "--kind", "monitor", "--json")
    assert code == 0, err
    records = json.loads(out)["records"]
    assert len(records) == 4  # 2 deployments x 2 windows, not every sample
    verdicts = {
        r["name"].split(" ")[0] + ":" + r["payload"]["start"]: r["payload"]["verdict"] for r in records
    }
    assert sum("50% slower" in v for v in verdicts.values()) == 1
    assert all(r["payload"]["window"]["output_tokens_per_s"] is not None for r in records)
    code, out, err = run("history", "--kind", "monitor")
    assert code == 0, err
    assert "DRIFT" in out and "chat-neuron" in out and "over-provisioned" in out


def test_html_and_markdown_reports(replay: Replay, tmp_path: Path) -> None:
    html, md = tmp_path / "monitor.html", tmp_path / "monitor.md"
    code, _, err = report_cli(replay, "--html", str(html), "--md", str(md), "--no-store")
    assert code == 0, err
    page = html.read_text()
    assert 'name="viewport"' in page and page.count("<figure>") == 6  # 3 charts per deployment (wide + phone)
    assert "latency vs time" in page and "utilisation vs time" in page and "planned vs actual" in page
    assert "http://" not in page and "https://" not in page and "<script" not in page
    text = md.read_text()
    assert "## chat-neuron" in text and "50% slower" in text and "right-size" in text


def test_a_deployment_without_engine_metrics_is_named_not_zero(replay: Replay) -> None:
    tel = read_file(replay.openmetrics)
    only_dcgm = type(tel)(tuple(s for s in tel.series if s.name.startswith("DCGM")), tel.sources, ())
    plans = load_plan(replay.gpu_plan, "chat-gpu")
    dep = build_report(only_dcgm, plans, since=replay.since, until=replay.until).deployments[0]
    assert dep.overall.output_tokens is None and dep.overall.output_tokens_per_s is None
    assert dep.verdict == "no engine metrics"
    assert any("delivered tokens/s and cost per 1M tokens unknown" in m for m in dep.missing)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--prometheus", "http://127.0.0.1:1"), "either with --from FILE or with --prometheus"),
        (("--window", "soon"), "--window 'soon' is not a duration"),
        (("--since", "yesterday"), "--since 'yesterday' is not a time"),
        (("--since", "now", "--until", "now-1h"), "--until is not after --since"),
        (("--since", "2020-01-01T00:00:00Z", "--until", "2020-01-02T00:00:00Z"), "No sample between"),
        (("--html", "/nonexistent-dir/x.html"), "does not exist"),
    ],
)
def test_bad_input_is_one_line(replay: Replay, args: tuple[str, ...], message: str) -> None:
    code, _, err = run(
        "monitor",
        "report",
        "--plan",
        f"chat-gpu={replay.gpu_plan}",
        "--from",
        str(replay.openmetrics),
        "--no-store",
        *args,
    )
    assert code == 2 and message in err and "Traceback" not in err, err
    assert len(err.strip().splitlines()) == 1


def test_bad_plans_are_one_line(tmp_path: Path) -> None:
    plan = tmp_path / "plan.json"
    for text, message in (
        ("not json", "is not JSON"),
        ('{"hello": 1}', "is not an estimate, compare, advise or fleet plan result"),
        (
            '{"instance": "g6e.xlarge", "output_tokens_per_s": 1, "task": "training"}',
            "monitor compares serving",
        ),
    ):
        plan.write_text(text)
        code, _, err = run("monitor", "exporter", "--plan", str(plan), "--once")
        assert code == 2 and message in err, err


def test_two_deployments_without_a_label_cannot_be_split(replay: Replay, tmp_path: Path) -> None:
    unlabelled = tmp_path / "u.om"
    unlabelled.write_text(
        replay.openmetrics.read_text()
        .replace('deployment="chat-gpu",', "")
        .replace(',deployment="chat-gpu"', "")
    )
    code, _, err = run(
        "monitor",
        "report",
        "--plan",
        f"a={replay.gpu_plan}",
        "--plan",
        f"b={replay.gpu_plan}",
        "--from",
        str(unlabelled),
        "--label",
        "team",
        "--no-store",
    )
    assert code == 2 and "cannot be split between 2 deployments" in err

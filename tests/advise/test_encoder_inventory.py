"""An inventory meets users halfway: an encoder's output length may be omitted or 1, and errors name
the YAML field (load.output_len), never a CLI flag (--output-len)."""

from __future__ import annotations

from pathlib import Path

import pytest

from silica.advise import advise, load_inventory
from silica.errors import InputError


def _inventory(tmp_path: Path, model: str, output_len: str) -> Path:
    path = tmp_path / "inv.yaml"
    path.write_text(
        "team: {engineer_usd_per_week: 5000}\n"
        "workloads:\n"
        "  - name: classifier\n"
        f"    model: {model}\n"
        "    task: inference\n"
        f"    load: {{requests_per_s: 200, input_len: 256{output_len}}}\n"
        "    current: {instance: g6e.xlarge, count: 1}\n"
    )
    return path


@pytest.mark.parametrize("output_len", ["", ", output_len: 1", ", output_len: 0"])
def test_encoder_workload_with_output_len_omitted_1_or_0_is_advised_as_an_encoder(
    tmp_path: Path, output_len: str
) -> None:
    inv = load_inventory(_inventory(tmp_path, "bert-base-uncased", output_len))
    assert inv.workloads[0].workload.output_len == 0
    [w] = advise(inv).workloads
    assert w.current.monthly_usd > 0
    assert any(o.monthly_usd is not None and o.monthly_usd > 0 for o in w.options)  # priced alternatives


@pytest.mark.parametrize(
    ("model", "output_len", "needle"),
    [
        ("bert-base-uncased", ", output_len: 5", "so output_len 5 cannot be served"),
        ("llama-3.1-8b", "", "load.output_len: missing"),
        ("llama-3.1-8b", ", output_len: 0", "set load.output_len to 1 or more"),
    ],
)
def test_inventory_errors_name_the_yaml_field_not_a_flag(
    tmp_path: Path, model: str, output_len: str, needle: str
) -> None:
    with pytest.raises(InputError) as err:
        advise(load_inventory(_inventory(tmp_path, model, output_len)))
    text = str(err.value)
    assert needle in text and "--" not in text


def test_encoder_options_are_priced_per_prompt_token_not_per_output_token(tmp_path: Path) -> None:
    [w] = advise(load_inventory(_inventory(tmp_path, "bert-base-uncased", ""))).workloads
    priced = [o for o in w.options if o.unit_cost is not None]
    assert priced
    assert {o.unit for o in priced} == {"USD per 1M prompt tokens"}

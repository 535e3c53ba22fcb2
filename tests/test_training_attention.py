"""Training attention's speed where a training stack's rows cannot see it.

Short-sequence training rows spend a few percent of their FLOPs on attention, so a fit moves its
speed freely to absorb other terms: without NeMo's long-sequence table, Hopper's Megatron entry put
flash attention at twice the speed that table measures (long-context rows 74% off with the table
held out). Where no row of a training stack's entry sees attention, it runs at the family's
published flash-attention speed (`data/families.yaml` training_attention).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from silica.perf.calibration import DEFAULT_PARAMS, TRAINING_ATTENTION
from silica.validate import fit as F
from silica.validate.benchmarks import BUNDLED, read_benchmarks
from silica.validate.predict import Prepared, prepare


@pytest.fixture(scope="module")
def long_sequence() -> Prepared:
    return prepare(read_benchmarks(BUNDLED / "nemo_long_sequence_cp_h100.csv"))


def test_only_rows_whose_attention_is_a_third_of_their_flops_see_it(long_sequence: Prepared) -> None:
    seen = F._attention_seen(long_sequence)
    by_length = {r.seq_len: bool(s) for r, s in zip(long_sequence.rows, seen, strict=True)}
    # Llama 2 7B: attention is 7% of the FLOPs at 4K tokens, 37% at 32K.
    assert not by_length[4096] and not by_length[16384]
    assert by_length[32768] and by_length[1048576]


def test_an_entry_blind_to_attention_runs_it_at_the_published_kernel_speed(long_sequence: Prepared) -> None:
    seen = F._attention_seen(long_sequence)
    short = np.flatnonzero(~seen)
    tie = F._training_attention_tie("hopper/megatron", short, long_sequence, seen)
    p = tie(replace(DEFAULT_PARAMS, compute_eff_max=0.8, attention_eff=0.9))
    # Training attention runs at attention_eff times the large-matmul efficiency.
    assert p.attention_eff * p.compute_eff_max == pytest.approx(TRAINING_ATTENTION["hopper"][0])
    # Rows that see attention fit it; a pooled (serving) entry is never tied.
    everything = np.arange(len(long_sequence.rows))
    for key, idx in (("hopper/megatron", everything), ("hopper", short)):
        untied = F._training_attention_tie(key, idx, long_sequence, seen)
        assert untied(p) == p and untied(DEFAULT_PARAMS) == DEFAULT_PARAMS


def test_the_published_speed_is_below_the_chip_peak_and_names_its_source() -> None:
    for family, (speed, why) in TRAINING_ATTENTION.items():
        assert 0.05 < speed < 1.0, family
        assert "arXiv" in why or "http" in why, family

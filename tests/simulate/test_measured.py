"""Step tables fitted to a real server's measurements (`StepTable.from_measurements`)."""

from __future__ import annotations

import numpy as np
import pytest

from silica.errors import InputError
from silica.simulate import Requests, StepTable, simulate


def test_interpolates_between_measured_points_and_extrapolates_the_batch() -> None:
    t = StepTable.from_measurements(
        "m", prefill=[(100, 0.02), (10, 0.01)], decode=[(1, 0.004), (4, 0.007)], kv_tokens=1000
    )
    assert t.max_num_seqs == 4 and len(t.decode) == 4
    assert t.prefill_s(10) == pytest.approx(0.01) and t.prefill_s(55) == pytest.approx(0.015)
    assert t.decode_s(2, 50.0) == pytest.approx(0.005)  # linear in the batch
    assert t.decode_s(3, 5000.0) == pytest.approx(0.006)  # context does not matter
    longer = StepTable.from_measurements(
        "m", prefill=[(10, 0.01)], decode=[(1, 0.004), (4, 0.007)], kv_tokens=1000, max_num_seqs=6
    )
    assert longer.decode_s(6, 0.0) == pytest.approx(0.009)  # the last segment's slope, carried on
    assert longer.prefill_s(500) == pytest.approx(0.01)  # one prefill point: flat


def test_one_sequence_at_a_time_serialises_requests() -> None:
    """max running sequences 1 (a server without batching): a request that arrives while another
    runs starts when it ends, so its TTFT is the remaining service time plus its own prefill."""
    t = StepTable.from_measurements(
        "serial", prefill=[(10, 0.01), (20, 0.01)], decode=[(1, 0.002)], kv_tokens=10**6, max_num_seqs=1
    )
    reqs = Requests(np.array([0.0, 0.001]), np.array([10.0, 10.0]), np.array([11.0, 11.0]), "two")
    r = simulate(reqs, t)
    first, second = (np.asarray(r.records.first_token) - reqs.arrival).tolist()
    service = 0.01 + 10 * 0.002
    assert first == pytest.approx(0.01)
    assert second == pytest.approx(service - 0.001 + 0.01)
    assert r.tbt.p99 == pytest.approx(2.0)


@pytest.mark.parametrize(
    ("prefill", "decode", "kv"),
    [
        ([], [(1, 0.01)], 10),
        ([(10, 0.01)], [(0, 0.01)], 10),
        ([(10, -1.0)], [(1, 0.01)], 10),
        ([(10, 0.01)], [(1, 0.01)], 0),
    ],
)
def test_refuses_bad_measurements(
    prefill: list[tuple[float, float]], decode: list[tuple[int, float]], kv: int
) -> None:
    with pytest.raises(InputError):
        StepTable.from_measurements("bad", prefill=prefill, decode=decode, kv_tokens=kv)

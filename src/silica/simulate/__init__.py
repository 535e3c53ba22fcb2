"""Request-level serving simulation driven by the calibrated performance model.

`traffic` makes request streams, `steptime` tabulates a replica's step times once, `engine` runs the
continuous-batching scheduler, `run` puts replicas behind a load balancer and summarises tails,
`sizing` sizes deployments to tail-latency SLOs (aggregated and disaggregated prefill/decode).
"""

from __future__ import annotations

from silica.simulate.engine import EngineSettings
from silica.simulate.run import SimResult, simulate
from silica.simulate.steptime import StepTable, step_table
from silica.simulate.traffic import Requests, from_trace, synthetic

__all__ = [
    "EngineSettings",
    "Requests",
    "SimResult",
    "StepTable",
    "from_trace",
    "simulate",
    "step_table",
    "synthetic",
]

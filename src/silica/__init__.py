"""Silica: plan, price and prove AI workloads on AWS Trainium, AWS Inferentia and NVIDIA GPUs.

The public surface is re-exported lazily so that `import silica` (and `silica --help`) stays cheap.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

__version__ = "0.1.0"

_EXPORTS = {
    "SilicaError": "silica.errors",
    "InputError": "silica.errors",
    "load_catalog": "silica.catalog",
    "load_model": "silica.models",
    "list_models": "silica.models",
    "estimate": "silica.plan",
    "compare": "silica.plan",
    "InferenceWorkload": "silica.workload",
    "TrainingWorkload": "silica.workload",
    "Deployment": "silica.workload",
}

__all__ = ["__version__", *sorted(_EXPORTS)]


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'silica' has no attribute {name!r}")

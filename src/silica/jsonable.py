"""One conversion from library results to JSON-ready values, for every interface that serialises them.

The HTTP API, the notebook API and the CLI's `--json` must print the same document for the same result,
so they share this function instead of each walking dataclasses, pydantic models and numpy scalars on
its own. Non-finite floats become null, as JSON requires (a `NaN` in a response body is not JSON).
"""

from __future__ import annotations

import math
from dataclasses import asdict, is_dataclass
from typing import Any

__all__ = ["plain"]


def plain(obj: Any) -> Any:
    """Convert dataclasses, pydantic models and numpy scalars into JSON-ready Python values."""
    if hasattr(obj, "to_dict"):
        return plain(obj.to_dict())
    if is_dataclass(obj) and not isinstance(obj, type):
        return plain(asdict(obj))
    if hasattr(obj, "model_dump"):
        return plain(obj.model_dump(mode="json"))
    if isinstance(obj, dict):
        return {str(k): plain(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple | set | frozenset):
        return [plain(v) for v in obj]
    if hasattr(obj, "item") and callable(obj.item):  # numpy scalar
        return plain(obj.item())
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj

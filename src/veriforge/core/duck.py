"""Reading loosely-typed records: an object with attributes or its ``to_dict()`` form.

Reports cross process and JSON boundaries (an analysis report object in one place, its dict from
the run store in another); consumers such as the cost model and OptiML's diagnosis read both the
same way instead of each keeping its own accessor.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any


def get(obj: Any, name: str, default: Any = None) -> Any:
    """``obj[name]`` for mappings, ``obj.name`` otherwise; ``default`` when absent or ``obj`` is None."""
    if obj is None:
        return default
    if isinstance(obj, Mapping):
        return obj.get(name, default)
    return getattr(obj, name, default)


def finite(value: Any) -> float | None:
    """``value`` as a finite float, or None (None, bools, non-numbers, NaN and infinities)."""
    if value is None or isinstance(value, bool):
        return None
    try:
        out = float(value)
    except (TypeError, ValueError):
        return None
    return out if math.isfinite(out) else None

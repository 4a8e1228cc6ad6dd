"""Errors raised by ReM-MoA: a bad configuration, or a run that cannot go on.

Both derive from the shared hierarchy so the CLI turns them into one clear line (exit code 2).
"""

from __future__ import annotations

from veriforge.errors import ConfigError, VeriforgeError

__all__ = ["MoAConfigError", "MoAError"]


class MoAError(VeriforgeError):
    """A ReM-MoA run failed for a reason other than its configuration (e.g. nothing to aggregate)."""


class MoAConfigError(ConfigError):
    """A ReM-MoA configuration is invalid or incomplete (no model, unknown method, bad budget)."""

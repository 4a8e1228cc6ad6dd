"""Errors of the search layer.

A search fails on purpose only for reasons the caller can fix: a bad configuration, an initial
state that does not pass its own evaluation, an evaluator that returns something other than an
:class:`~veriforge.search.interfaces.Evaluation`, or a resume that does not match the stored run.
Exceptions raised *by* an evaluator or proposer are not wrapped: they propagate unchanged, so a
crash in user code keeps its own traceback (and a killed search can be resumed from the store).
"""

from __future__ import annotations

from veriforge.errors import ConfigError, VeriforgeError

__all__ = ["ResumeError", "SearchConfigError", "SearchError"]


class SearchError(VeriforgeError):
    """A search could not run or continue."""


class SearchConfigError(SearchError, ConfigError):
    """A search configuration value is out of range or inconsistent."""


class ResumeError(SearchError):
    """A stored run cannot be continued (other initial state, other settings, finished run)."""

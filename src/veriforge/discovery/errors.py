"""Errors of the D3-Gym construction pipeline.

Every task that is not built gets a reason; these classes let callers tell *infrastructure* problems
(installing, fetching, missing data) from problems of the mined program itself.
"""

from __future__ import annotations

from veriforge.errors import VeriforgeError

__all__ = ["DiscoveryError", "EnvironmentBuildError", "RepoFetchError", "RewriteError"]


class DiscoveryError(VeriforgeError):
    """Base class for D3-Gym pipeline failures."""


class RepoFetchError(DiscoveryError):
    """The repository could not be found or cloned."""


class RewriteError(DiscoveryError):
    """A program could not be made standalone (its paths could not be rewritten safely)."""


class EnvironmentBuildError(DiscoveryError):
    """A task's Python environment could not be created or its dependencies installed.

    Always an *infrastructure* failure: the program never ran.
    """

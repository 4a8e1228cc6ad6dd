"""Errors of the ranking layer.

Ranking mistakes are quiet by nature: a fit over the wrong outcomes still returns numbers. So the
cases where a caller has mixed things that must not be mixed (reviewer opinions with verifier
facts, measured with estimated times) or asked for a fit from no data raise instead.
"""

from __future__ import annotations

from veriforge.errors import VeriforgeError


class RankError(VeriforgeError):
    """Base of the errors raised by :mod:`veriforge.rank`."""


class MixedSourcesError(RankError):
    """Reviewer judgements and verifier signals were passed to one fit without choosing a source."""


class InsufficientDataError(RankError):
    """A model cannot be fitted: no pairs, or no comparison between the items asked about."""


class ScheduleError(RankError):
    """A comparison scheduler or tournament was configured inconsistently (unknown item, bad budget)."""


class MixedProvenanceError(RankError):
    """Run times of different provenance (measured / emulated / estimated) were to be compared."""

"""Errors of the benchmark layer: a data file the loaders cannot read, or a suite that does not exist.

Both derive from the shared hierarchy so the CLI reports them as one clear line instead of a traceback.
"""

from __future__ import annotations

from veriforge.errors import ConfigError, VeriforgeError

__all__ = ["BenchError", "DataFormatError", "UnknownSuiteError"]


class BenchError(VeriforgeError):
    """Something in ``veriforge.moa.bench`` went wrong (the base of the classes below)."""


class DataFormatError(BenchError):
    """A data file is not in the suite's public format; the message names the file, record and field."""


class UnknownSuiteError(BenchError, ConfigError):
    """A suite or domain name ``veriforge.moa.bench`` does not know (the message lists the known ones)."""

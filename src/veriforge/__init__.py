"""veriforge: verified program generation.

A model (or a rule-based proposer) proposes programs; nothing counts until it has been
compiled, run, checked against a reference and measured. Import of this package stays cheap:
subpackages are imported only when used.
"""

__version__ = "0.1.0"

__all__ = ["__version__"]

"""Counting tokens for context budgets.

Routing enforces context budgets by *choosing* which whole traces to show, so it needs a token
count before any call is made. The default estimator needs no tokenizer: ``ceil(chars / 4)`` (the
usual English-BPE rate), but never fewer than the number of whitespace-separated words, so that
short-word text (numbers, code) is not under-counted. Pass a real counter (e.g.
:func:`tokenizer_counter`) when the model's tokenizer is at hand and budgets are tight.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

__all__ = ["TokenCounter", "estimate_tokens", "tokenizer_counter"]

TokenCounter = Callable[[str], int]


def estimate_tokens(text: str) -> int:
    """A tokenizer-free upper-leaning estimate: ``max(ceil(len/4), words)``."""
    if not text:
        return 0
    return max(math.ceil(len(text) / 4), len(text.split()))


def tokenizer_counter(tokenizer: Any) -> TokenCounter:
    """A counter from a ``transformers`` tokenizer (exact for that model; no special tokens)."""

    def count(text: str) -> int:
        return len(tokenizer.encode(text, add_special_tokens=False))

    return count

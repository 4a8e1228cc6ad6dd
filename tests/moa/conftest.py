"""Shared pieces of the ReM-MoA tests."""

from __future__ import annotations

from collections.abc import Callable

import pytest


def _gsm_reply(body: dict, index: int) -> str:
    """A scripted OpenAI-compatible model for GSM8K-format runs: proposers answer ``#### 3..5`` by seed,
    the judge prefers whichever response says ``#### 4``."""
    last = body["messages"][-1]["content"]
    if "[Response A]" in last:
        a = last.split("[Response A]\n", 1)[1].split("\n\n[Response B]", 1)[0]
        return "A is right.\n[[A]]" if "#### 4" in a else "B is right.\n[[B]]"
    seed = int(body.get("seed") or 0)
    return f"Step by step (seed {seed % 997}, sample {index}).\n#### {seed % 3 + 3}"


@pytest.fixture
def gsm_reply() -> Callable[[dict, int], str]:
    return _gsm_reply

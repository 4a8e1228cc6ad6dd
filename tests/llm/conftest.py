"""Fixtures for the LLM layer tests: a fake OpenAI-compatible server on 127.0.0.1."""

from __future__ import annotations

import pytest

from veriforge.llm.testing import FakeOpenAIServer


@pytest.fixture
def server():
    with FakeOpenAIServer(models=["fake-model", "other-model"]) as srv:
        yield srv

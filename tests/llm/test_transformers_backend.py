"""The local transformers back-end on a tiny random Qwen2 model built in the test (no network)."""

from __future__ import annotations

import math

import pytest

from veriforge.llm import LLMConfigError, TransformersBackend, create_client, ping
from veriforge.llm.backends.transformers_local import plain_prompt
from veriforge.llm.types import Message

pytest.importorskip("torch")
pytest.importorskip("transformers")

SENTENCES = [
    "write a cuda kernel that adds two vectors",
    "the reviewer ranks reasoning traces by quality",
    "shared memory tiles make matrix multiplication fast",
    "every candidate is compiled run checked and measured",
] * 4


@pytest.fixture(autouse=True)
def _offline(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


@pytest.fixture(scope="module")
def tiny_model_dir(tmp_path_factory):
    """A random 2-layer Qwen2 with a freshly trained byte-level BPE tokenizer, saved to disk."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HF_HUB_OFFLINE", "1")
        return _build_tiny_model(tmp_path_factory.mktemp("tiny-qwen2"))


def _build_tiny_model(path):
    import torch
    from transformers import Qwen2ForCausalLM

    from veriforge.llm.testing import tiny_qwen2_config, tiny_tokenizer

    # Only the characters of the (ASCII) sentences: every token decodes to printable text.
    fast = tiny_tokenizer(SENTENCES, vocab_size=300)
    torch.manual_seed(0)
    config = tiny_qwen2_config(fast)
    model = Qwen2ForCausalLM(config)
    model.save_pretrained(path)
    fast.save_pretrained(path)
    return path


async def test_generate_n_samples_with_logprobs(tiny_model_dir):
    client = create_client(f"hf:{tiny_model_dir}")
    r = await client.chat("write a cuda kernel", n=2, max_tokens=6, logprobs=True, top_logprobs=3, seed=7)
    assert len(r.completions) == 2 and r.cached == [False, False]
    assert r.texts[0] != r.texts[1]  # seeds 7 and 8: two different samples
    assert r.usage.prompt_tokens > 0
    assert 0 < r.usage.completion_tokens <= 12
    for c in r.completions:
        assert c.finish_reason in ("stop", "length")
        assert c.logprobs is not None
        assert len(c.logprobs) <= 6
        if c.finish_reason == "length":
            assert len(c.logprobs) == 6
        for t in c.logprobs:
            assert t.logprob <= 0 and math.isfinite(t.logprob)
            assert len(t.top_logprobs) == 3
            # the top alternative is at least as likely as the sampled token
            assert t.top_logprobs[0].logprob >= t.logprob - 1e-5
    # one logprob per generated token of the text (+1 end-of-sequence token for a "stop")
    assert sum(len(c.logprobs) + (c.finish_reason == "stop") for c in r.completions) == r.usage.completion_tokens
    # seeded: sample 1 alone (cache off) equals sample 1 of the pair
    fresh = create_client(f"hf:{tiny_model_dir}", settings=_settings(cache=False))
    alone = await fresh.chat("write a cuda kernel", n=1, max_tokens=6, logprobs=True, top_logprobs=3, seed=8)
    assert alone.text == r.completions[1].text
    # cached per sample on the second call
    again = await client.chat("write a cuda kernel", n=2, max_tokens=6, logprobs=True, top_logprobs=3, seed=7)
    assert again.cached == [True, True] and again.texts == r.texts


async def test_greedy_is_deterministic_and_length_capped(tiny_model_dir):
    backend = TransformersBackend(tiny_model_dir)
    client = create_client("tiny", settings=_settings(cache=False), backend=backend)
    a = await client.chat("shared memory tiles", temperature=0, max_tokens=4, n=2)
    b = await client.chat("shared memory tiles", temperature=0, max_tokens=4)
    assert a.texts[0] == a.texts[1] == b.text
    assert a.usage.completion_tokens <= 8
    assert all(c.finish_reason in ("stop", "length") for c in a.completions)
    assert a.completions[0].logprobs is None


async def test_stop_string_cuts_the_text(tiny_model_dir):
    client = create_client(f"hf:{tiny_model_dir}", settings=_settings(cache=False))
    full = (await client.chat("matrix", temperature=0, max_tokens=8)).text
    stop = full[3:5]
    assert len(stop) == 2 and full.index(stop) >= 1
    cut = await client.chat("matrix", temperature=0, max_tokens=8, stop=[stop])
    assert cut.text == full[: full.index(stop)]
    assert cut.completions[0].finish_reason == "stop"


async def test_in_memory_model_is_not_cached_by_default(tiny_model_dir):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir, local_files_only=True)
    tok = AutoTokenizer.from_pretrained(tiny_model_dir, local_files_only=True)
    backend = TransformersBackend(model=model, tokenizer=tok, name="policy")
    client = create_client("policy", backend=backend)
    assert client.cache is None  # weights may change between calls
    r = await client.chat("hello", max_tokens=3)
    assert r.model == "policy" and r.usage.prompt_tokens > 0


def test_plain_prompt_without_chat_template():
    text = plain_prompt([Message(role="system", content="be brief"), Message(role="user", content="hi")])
    assert text == "System: be brief\n\nUser: hi\n\nAssistant:"


async def test_chat_template_is_used_when_present(tiny_model_dir):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_model_dir, local_files_only=True)
    # only characters the tiny tokenizer knows, so the decoded prompt shows the template verbatim
    tok.chat_template = "{% for m in messages %}{{ m.role }} says {{ m.content }} {% endfor %}assistant says"
    backend = TransformersBackend(tiny_model_dir)
    backend._ensure_loaded()
    backend.tokenizer = tok
    ids = backend._prompt_ids([Message(role="user", content="hi")])
    assert tok.decode(ids[0]) == "user says hi assistant says"


async def test_missing_local_model_is_a_config_error(tmp_path):
    client = create_client(f"hf:{tmp_path / 'absent'}")
    with pytest.raises(LLMConfigError, match="never downloaded"):
        await client.chat("x")
    ok, detail = await ping(f"hf:{tmp_path / 'absent'}")
    assert not ok and "not found" in detail


async def test_ping_local_model(tiny_model_dir):
    ok, detail = await ping(f"hf:{tiny_model_dir}")
    assert ok and str(tiny_model_dir) in detail


def _settings(**kw):
    from veriforge.core.config import LLMSettings

    return LLMSettings(trace=False, **kw)

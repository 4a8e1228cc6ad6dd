"""Scripted back-end: JSONL replay and Python callables, deterministic per sample index."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from veriforge.llm import ChatRequest, Completion, LLMConfigError, LLMRequestError, ScriptedBackend, create_client

HERE = Path(__file__).parent


def write_jsonl(path: Path, lines: list) -> Path:
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n# a comment\n\n")
    return path


@pytest.fixture
def replies(tmp_path) -> Path:
    return write_jsonl(tmp_path / "replies.jsonl", [
        "plain one",
        {"text": "plain two", "finish_reason": "length"},
        {"text": "kernel A", "match": "kernel"},
        {"text": "kernel B", "match": "kernel"},
        {"text": "fix: add __syncthreads()", "match": "error:"},
    ])


async def test_jsonl_replay_by_sample_index(replies):
    client = create_client(f"scripted:{replies}")
    r = await client.chat("hello", n=3)
    assert r.texts == ["plain one", "plain two", "plain one"]
    assert [c.finish_reason for c in r.completions] == ["stop", "length", "stop"]
    k = await client.chat("write a kernel", n=2)
    assert k.texts == ["kernel A", "kernel B"]
    fix = await client.chat([{"role": "user", "content": "write a kernel"},
                             {"role": "assistant", "content": "kernel A"},
                             {"role": "user", "content": "error: race"}])
    assert fix.text == "fix: add __syncthreads()"
    # determinism: a fresh client (fresh cache) gives the same samples
    again = await create_client(f"scripted:{replies}").chat("write a kernel", n=2)
    assert again.texts == k.texts and again.cached == [False, False]


async def test_sample_index_is_kept_when_part_is_cached(replies):
    client = create_client(f"scripted:{replies}")
    await client.chat("hello", n=1)
    r = await client.chat("hello", n=2)
    assert r.cached == [True, False]
    assert r.texts == ["plain one", "plain two"]  # sample 1 is reply 1, not reply 0 again


async def test_jsonl_stop_and_max_tokens_apply(replies):
    client = create_client(f"scripted:{replies}")
    r = await client.chat("write a kernel", stop=["B"], n=2, max_tokens=1)
    assert r.texts == ["kernel", "kernel "]  # "kernel A" cut to 1 word; "kernel B" cut at "B"
    assert [c.finish_reason for c in r.completions] == ["length", "stop"]


async def test_jsonl_no_matching_reply_is_an_error(tmp_path):
    path = write_jsonl(tmp_path / "only.jsonl", [{"text": "x", "match": "kernel"}])
    client = create_client(f"scripted:{path}")
    with pytest.raises(LLMRequestError) as info:
        await client.chat("something else")
    assert info.value.retryable is False and "no scripted reply" in str(info.value)


@pytest.mark.parametrize(
    ("content", "needle"),
    [("{not json\n", "not valid JSON"), ('{"no_text": 1}\n', "string 'text'"), ("\n# only comments\n", "no replies")],
)
def test_bad_jsonl_is_a_config_error(tmp_path, content, needle):
    path = tmp_path / "bad.jsonl"
    path.write_text(content)
    with pytest.raises(LLMConfigError) as info:
        create_client(f"scripted:{path}")
    assert needle in str(info.value)


def test_missing_file_is_a_config_error(tmp_path):
    with pytest.raises(LLMConfigError, match="not found"):
        create_client(f"scripted:{tmp_path / 'nope.jsonl'}")


async def test_editing_the_file_changes_identity(tmp_path):
    path = write_jsonl(tmp_path / "r.jsonl", ["old"])
    a = ScriptedBackend(path)
    write_jsonl(path, ["new"])
    b = ScriptedBackend(path)
    assert a.identity != b.identity


async def test_callable_by_model_string(monkeypatch):
    monkeypatch.syspath_prepend(str(HERE))
    sys.modules.pop("replies_module", None)
    client = create_client("scripted:replies_module:answer")
    r = await client.chat("abc", n=3)
    assert r.texts == ["ABC#0", "ABC#1", "third:abc"]
    assert r.completions[2].index == 2 and r.completions[2].finish_reason == "length"
    assert r.usage.prompt_tokens == 1


async def test_async_callable_and_failures():
    calls: list[int] = []

    async def fn(request: ChatRequest, i: int) -> Completion:
        calls.append(i)
        if request.messages[-1].content == "boom":
            raise ValueError("script bug")
        return Completion(index=i, text=f"s{i}")

    client = create_client("scripted-fn", backend=ScriptedBackend(fn))
    assert (await client.chat("go", n=2)).texts == ["s0", "s1"]
    assert calls == [0, 1]
    with pytest.raises(LLMRequestError, match="script bug") as info:
        await client.chat("boom")
    assert info.value.kind == "script" and not info.value.retryable


async def test_callable_can_simulate_transient_failures():
    state = {"n": 0}

    def flaky(request, i):
        state["n"] += 1
        if state["n"] < 3:
            raise LLMRequestError("overloaded", status=503, retryable=True)
        return "finally"

    from veriforge.llm import LLMClient, RetryPolicy

    client = LLMClient(ScriptedBackend(flaky), retry=RetryPolicy(base_delay_s=0.001, max_delay_s=0.01))
    assert (await client.chat("x")).text == "finally"
    assert state["n"] == 3


def test_bad_callable_refs():
    with pytest.raises(LLMConfigError, match="cannot import"):
        create_client("scripted:no_such_module_xyz:fn")
    with pytest.raises(LLMConfigError, match="no attribute"):
        create_client("scripted:json:no_such_function")

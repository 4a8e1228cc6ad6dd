"""LLMClient over real HTTP to FakeOpenAIServer: cache per sample, retries, limits, trace, accounting."""

from __future__ import annotations

import asyncio
import itertools
import json

import pytest

from veriforge.errors import LLMError
from veriforge.llm import (
    ChatRequest,
    LLMClient,
    LLMRequestError,
    MemoryCache,
    OpenAICompatibleBackend,
    RetryPolicy,
    read_trace,
)
from veriforge.llm.testing import FakeOpenAIServer

FAST = RetryPolicy(max_retries=3, base_delay_s=0.05, max_delay_s=0.2)


def make_client(server, **kw) -> LLMClient:
    timeout_s = kw.pop("timeout_s", 5.0)
    backend = OpenAICompatibleBackend("fake-model", server.base_url, timeout_s=timeout_s,
                                      extra_body=kw.pop("extra_body", None))
    kw.setdefault("retry", FAST)
    return LLMClient(backend, model=f"fake-model@{server.base_url}", **kw)


async def test_n_samples_are_distinct_and_cached_per_index(server):
    client = make_client(server)
    first = await client.chat("write a kernel", n=2, temperature=0.8)
    assert len(first.completions) == 2
    assert len(set(first.texts)) == 2
    assert first.cached == [False, False]
    assert [c.index for c in first.completions] == [0, 1]

    second = await client.chat("write a kernel", n=4, temperature=0.8)
    assert second.texts[:2] == first.texts  # samples 0 and 1 come back unchanged
    assert second.cached == [True, True, False, False]
    assert len(set(second.texts)) == 4  # the two new ones are new samples, not copies
    assert server.chat_requests[-1].body["n"] == 2  # only the missing two were requested
    assert len(server.chat_requests) == 2

    third = await client.chat("write a kernel", n=3, temperature=0.8)
    assert third.cached == [True, True, True]
    assert third.texts == second.texts[:3]
    assert len(server.chat_requests) == 2  # nothing asked
    assert third.usage.total == 0 and third.cost_usd == 0.0

    other = await client.chat("write a kernel", n=1, temperature=0.2)  # different request
    assert other.cached == [False]
    assert len(server.chat_requests) == 3
    await client.aclose()


async def test_cache_off_hits_server_again(server):
    client = make_client(server, use_cache=False)
    a = await client.chat("same prompt")
    b = await client.chat("same prompt")
    assert a.cached == b.cached == [False]
    assert a.text != b.text
    assert len(server.chat_requests) == 2
    assert client.cache is None
    await client.aclose()


async def test_shared_cache_serves_a_second_client(server):
    cache = MemoryCache()
    one, two = make_client(server, cache=cache), make_client(server, cache=cache)
    a = await one.chat("p", n=2)
    b = await two.chat("p", n=2)
    assert b.texts == a.texts and b.cached == [True, True]
    assert len(server.chat_requests) == 1
    await one.aclose()
    await two.aclose()


async def test_429_is_retried_with_backoff(server):
    client = make_client(server, retry=RetryPolicy(max_retries=4, base_delay_s=0.1, max_delay_s=1.0))
    server.fail_next(2, status=429)
    resp = await client.chat("hello")
    assert resp.text.startswith("reply")
    reqs = server.chat_requests
    assert len(reqs) == 3
    gaps = [b.received_at - a.received_at for a, b in itertools.pairwise(reqs)]
    # equal jitter: retry k waits at least half of base * 2**k
    assert gaps[0] >= 0.05 - 0.005
    assert gaps[1] >= 0.10 - 0.005
    assert client.totals.calls == 1 and client.totals.failed_calls == 0
    await client.aclose()


async def test_retry_after_header_is_honoured(server):
    client = make_client(server, retry=RetryPolicy(max_retries=2, base_delay_s=0.01, max_delay_s=2.0))
    server.fail_next(1, status=429, retry_after=0.4)
    await client.chat("hello")
    a, b = server.chat_requests
    assert b.received_at - a.received_at >= 0.39
    await client.aclose()


async def test_500_then_success_is_retried(server):
    client = make_client(server)
    server.fail_next(1, status=503)
    assert (await client.chat("hi")).completions
    assert len(server.chat_requests) == 2
    await client.aclose()


@pytest.mark.parametrize("status", [400, 401])
async def test_client_errors_are_not_retried(server, status, tmp_path):
    client = make_client(server, trace_path=tmp_path / "t.jsonl")
    server.fail_next(3, status=status)
    with pytest.raises(LLMRequestError) as info:
        await client.chat("hi")
    assert info.value.status == status
    assert info.value.retryable is False
    assert isinstance(info.value, LLMError)
    assert len(server.chat_requests) == 1
    assert client.totals.failed_calls == 1
    [record] = read_trace(tmp_path / "t.jsonl")
    assert record["error"]["status"] == status and record["attempts"] == 1
    assert "response" not in record
    await client.aclose()


async def test_retries_exhausted_raise_the_last_error(server):
    client = make_client(server, retry=RetryPolicy(max_retries=2, base_delay_s=0.01, max_delay_s=0.02))
    server.fail_next(5, status=500)
    with pytest.raises(LLMRequestError) as info:
        await client.chat("hi")
    assert info.value.status == 500 and info.value.retryable
    assert len(server.chat_requests) == 3  # 1 try + 2 retries
    await client.aclose()


async def test_timeout_is_retried_then_raised(server):
    # 1 s, not less: on a loaded machine a shorter limit can expire before the server thread has even
    # read the retried request, and the count below would measure the machine, not the retry
    client = make_client(server, timeout_s=1.0,
                         retry=RetryPolicy(max_retries=1, base_delay_s=0.01, max_delay_s=0.02))
    server.hang_next(2, seconds=4.0)
    with pytest.raises(LLMError) as info:
        await client.chat("hi")
    assert isinstance(info.value, LLMRequestError)
    assert info.value.kind == "timeout" and info.value.status is None
    assert len(server.chat_requests) == 2
    # a later request succeeds once the server stops hanging
    assert (await client.chat("again")).text.startswith("reply")
    await client.aclose()


async def test_timeout_then_success(server):
    client = make_client(server, timeout_s=0.3)
    server.hang_next(1, seconds=3.0)
    resp = await client.chat("hi")
    assert resp.completions and len(server.chat_requests) == 2
    await client.aclose()


async def test_connection_refused_is_retried_then_raised():
    with FakeOpenAIServer() as srv:
        url = srv.base_url  # the port is closed once the server stops
    backend = OpenAICompatibleBackend("m", url, timeout_s=1)
    client = LLMClient(backend, retry=RetryPolicy(max_retries=1, base_delay_s=0.01, max_delay_s=0.02))
    with pytest.raises(LLMRequestError) as info:
        await client.chat("hi")
    assert info.value.kind == "connection" and info.value.retryable
    await client.aclose()


async def test_concurrency_limit_is_shared_by_clients_of_one_backend():
    with FakeOpenAIServer(delay_s=0.15) as srv:
        a = make_client(srv, max_concurrency=2, use_cache=False)
        b = make_client(srv, max_concurrency=2, use_cache=False)  # same identity -> same limiter
        await asyncio.gather(*(c.chat(f"p{i}") for i in range(4) for c in (a, b)))
        assert len(srv.chat_requests) == 8
        assert srv.max_in_flight == 2
        await a.aclose()
        await b.aclose()


async def test_concurrency_without_limit_pressure_runs_in_parallel():
    # the counterpart of the test above: the server can see more than 2 in flight when allowed
    with FakeOpenAIServer(delay_s=0.15) as srv:
        c = make_client(srv, max_concurrency=6, use_cache=False)
        await asyncio.gather(*(c.chat(f"p{i}") for i in range(6)))
        assert srv.max_in_flight > 2
        await c.aclose()


async def test_trace_has_one_line_per_call(server, tmp_path):
    path = tmp_path / "traces" / "llm.jsonl"
    client = make_client(server, trace_path=path)
    server.fail_next(1, status=429)
    await client.chat("one", n=2)
    await client.chat("one", n=2)  # fully cached
    await client.chat([{"role": "system", "content": "be brief"}, {"role": "user", "content": "two"}])
    lines = path.read_text().splitlines()
    assert len(lines) == 3
    records = [json.loads(line) for line in lines]
    assert records[0]["attempts"] == 2
    assert records[0]["cached"] == [False, False]
    assert records[1]["cached"] == [True, True] and records[1]["attempts"] == 0
    assert records[0]["request"]["messages"][0]["content"] == "one"
    assert records[2]["request"]["messages"][0]["role"] == "system"
    assert len(records[0]["response"]["completions"]) == 2
    assert records[0]["response"]["usage"]["total"] > 0
    assert all(r["latency_s"] >= 0 and r["model"].startswith("fake-model@") for r in records)
    await client.aclose()


async def test_token_and_cost_accounting(server):
    prices = {"fake-model": {"input": 1000.0, "output": 2000.0}}  # USD per 1M tokens
    client = make_client(server, prices=prices)
    r1 = await client.chat("three word prompt", n=2)
    # fake server: prompt tokens are words of the messages, counted once per request
    assert r1.usage.prompt_tokens == 3
    assert r1.usage.completion_tokens == sum(len(t.split()) for t in r1.texts)
    expected = (r1.usage.prompt_tokens * 1000 + r1.usage.completion_tokens * 2000) / 1e6
    assert r1.cost_usd == pytest.approx(expected)
    r2 = await client.chat("another prompt here now")
    t = client.totals
    assert t.calls == 2 and t.samples == 3 and t.cached_samples == 0
    assert t.prompt_tokens == 3 + 4
    assert t.completion_tokens == r1.usage.completion_tokens + r2.usage.completion_tokens
    assert t.cost_usd == pytest.approx(r1.cost_usd + r2.cost_usd)
    await client.chat("three word prompt", n=2)  # cached: free
    assert client.totals.cached_samples == 2
    assert client.totals.cost_usd == pytest.approx(r1.cost_usd + r2.cost_usd)
    await client.aclose()


async def test_unknown_price_is_none_not_zero(server):
    client = make_client(server, prices={"some-other-model": (1.0, 1.0)})
    r = await client.chat("hello")
    assert r.usage.total > 0
    assert r.cost_usd is None
    assert client.totals.cost_usd is None and client.totals.unpriced_calls == 1
    assert client.totals.total_tokens == r.usage.total
    await client.aclose()


async def test_extra_options_reach_the_server_body(server):
    client = make_client(server, extra_body={"top_k": 20, "repetition_penalty": 1.1})
    req = ChatRequest(messages=[{"role": "user", "content": "x"}], temperature=0.5, top_p=0.9, max_tokens=7,
                      stop=["END"], seed=3, extra={"top_k": 5, "guided_regex": "[a-z]+"})
    await client.chat(req)
    body = server.chat_requests[-1].body
    assert body["top_k"] == 5  # request extra overrides the back-end default
    assert body["repetition_penalty"] == 1.1
    assert body["guided_regex"] == "[a-z]+"
    assert body["temperature"] == 0.5 and body["top_p"] == 0.9 and body["max_tokens"] == 7
    assert body["stop"] == ["END"] and body["seed"] == 3 and body["model"] == "fake-model"
    await client.aclose()


async def test_logprobs_finish_reason_and_stop(server):
    server.replies = lambda body, i: f"alpha beta gamma delta epsilon {i}"
    client = make_client(server)
    r = await client.chat("x", n=2, logprobs=True, top_logprobs=3, max_tokens=3)
    for c in r.completions:
        assert c.finish_reason == "length"
        assert c.text == "alpha beta gamma"
        assert [t.token for t in c.logprobs] == ["alpha", " beta", " gamma"]
        assert all(len(t.top_logprobs) == 3 and t.logprob <= 0 for t in c.logprobs)
    r = await client.chat("y", stop="gamma")
    assert r.text == "alpha beta " and r.completions[0].finish_reason == "stop"
    assert r.completions[0].logprobs is None
    await client.aclose()


async def test_server_that_ignores_n_gets_single_requests():
    with FakeOpenAIServer(honor_n=False) as srv:
        client = make_client(srv)
        r = await client.chat("p", n=3)
        assert len(r.completions) == 3 and len(set(r.texts)) == 3
        assert [c.index for c in r.completions] == [0, 1, 2]
        bodies = [q.body for q in srv.chat_requests]
        assert bodies[0]["n"] == 3 and all("n" not in b for b in bodies[1:])
        assert len(bodies) == 3  # 1 (answered with one sample) + 2 top-ups
        assert client.backend.supports_n is False
        r2 = await client.chat("q", n=2)  # now known: no n>1 request is even tried
        assert len(r2.completions) == 2
        assert all("n" not in q.body for q in srv.chat_requests[3:])
        assert len(srv.chat_requests) == 5
        await client.aclose()


async def test_api_key_is_sent(tmp_path):
    with FakeOpenAIServer(require_api_key="secret-1") as srv:
        good = LLMClient(OpenAICompatibleBackend("fake-model", srv.base_url, api_key="secret-1"))
        assert (await good.chat("hi")).completions
        bad = LLMClient(OpenAICompatibleBackend("fake-model", srv.base_url, api_key="wrong"), retry=FAST)
        with pytest.raises(LLMRequestError) as info:
            await bad.chat("hi")
        assert info.value.status == 401 and info.value.kind == "auth"
        await good.aclose()
        await bad.aclose()


async def test_a_reply_that_is_not_json_is_one_clear_error_after_retries(server):
    """A body that is not JSON (a proxy's error page, a cut-off reply) may be transient: retried, then
    one error naming the endpoint — not a JSONDecodeError traceback."""
    client = make_client(server)
    server.malformed_next(10, raw=b"<html>502 Bad Gateway</html>")
    with pytest.raises(LLMRequestError) as info:
        await client.chat("hi")
    msg = str(info.value)
    assert server.base_url in msg and "the reply is not JSON" in msg and "\n" not in msg
    assert info.value.kind == "protocol" and info.value.retryable
    assert len(server.chat_requests) == 1 + FAST.max_retries
    server.reset()
    server.malformed_next(1, raw=b"{cut off")
    assert (await client.chat("hi")).completions  # one bad reply, then a good one: retried through
    await client.aclose()


@pytest.mark.parametrize("raw, detail", [
    ({"id": "x", "object": "chat.completion"}, "'choices' is NoneType"),
    ({"choices": "nope"}, "'choices' is str"),
    ({"choices": [{"index": 0}]}, "no attribute 'content'"),
    ({"choices": [{"index": 0, "message": {"role": "assistant", "content": 7}}]}, "content is int"),
    ([1, 2], "no attribute 'choices'"),
])
async def test_json_of_the_wrong_shape_is_one_clear_error_not_retried(server, raw, detail):
    client = make_client(server)
    server.malformed_next(5, raw=raw)
    with pytest.raises(LLMRequestError) as info:
        await client.chat("hi")
    msg = str(info.value)
    assert server.base_url in msg and "the reply is not a chat completion" in msg and detail in msg, msg
    assert "\n" not in msg and info.value.kind == "protocol" and not info.value.retryable
    assert len(server.chat_requests) == 1  # a server bug: asking again gives the same answer
    await client.aclose()


async def test_a_hung_server_is_reported_after_one_retry_with_progress(server, caplog):
    """Every try at a hung server costs a whole timeout of silence: by default a timeout is retried
    once (other retryable errors up to max_retries), and each retry is logged with the endpoint."""
    import logging

    policy = RetryPolicy(base_delay_s=0.01, max_delay_s=0.02)  # the default budgets, fast delays
    assert policy.max_retries == 5 and policy.max_timeout_retries == 1
    client = make_client(server, timeout_s=0.3, retry=policy)
    server.hang_next(4, seconds=2.0)
    with caplog.at_level(logging.WARNING, logger="veriforge.llm"), pytest.raises(LLMRequestError) as info:
        await client.chat("hi")
    assert info.value.kind == "timeout" and server.base_url in str(info.value)
    assert len(server.chat_requests) == 2  # one try, one retry
    [line] = [r.getMessage() for r in caplog.records if r.name == "veriforge.llm"]
    assert "no answer within 0.3 s" in line and "(attempt 1); retrying in" in line and server.base_url in line
    # server errors still get the whole budget
    server.reset()
    server.fail_next(4, status=503)
    assert (await client.chat("hi")).completions and len(server.chat_requests) == 5
    await client.aclose()


async def test_connecting_has_its_own_short_timeout(server):
    from veriforge.llm.backends.openai_http import CONNECT_TIMEOUT_S

    backend = OpenAICompatibleBackend("fake-model", server.base_url, timeout_s=120.0)
    timeout = backend._client().timeout
    assert timeout.connect == CONNECT_TIMEOUT_S == 5.0 and timeout.read == 120.0
    await backend.aclose()


async def test_a_slow_answer_is_noted_while_waiting(caplog):
    """Before its timeout, a request that has not answered is logged every waiting_note_s seconds."""
    import logging

    with FakeOpenAIServer(delay_s=0.75) as slow, caplog.at_level(logging.WARNING, logger="veriforge.llm"):
        client = make_client(slow, waiting_note_s=0.2)
        assert (await client.chat("hi")).completions
        notes = [r.getMessage() for r in caplog.records if "no answer yet" in r.getMessage()]
        assert len(notes) >= 2 and slow.base_url in notes[0] and "after 0.2 s" in notes[0]
        caplog.clear()
        quiet = make_client(slow, waiting_note_s=None)
        assert (await quiet.chat("other")).completions
        assert not [r for r in caplog.records if "no answer yet" in r.getMessage()]
        await client.aclose()
        await quiet.aclose()

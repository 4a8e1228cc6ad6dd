"""create_client wiring from settings, the run-store cache, API keys, and ping for doctor."""

from __future__ import annotations

import pytest

from veriforge.core.config import LLMSettings
from veriforge.core.store import RunStore
from veriforge.llm import LLMConfigError, create_client, ping, read_trace
from veriforge.llm.testing import FakeOpenAIServer


async def test_missing_model_is_a_clear_config_error():
    with pytest.raises(LLMConfigError) as info:
        create_client(None, LLMSettings())
    assert "no language model configured" in str(info.value)


async def test_no_settings_reads_the_environment(server, monkeypatch, _isolated_home):
    monkeypatch.setenv("VERIFORGE_LLM__MODEL", f"fake-model@{server.base_url}")
    monkeypatch.setenv("VERIFORGE_LLM__CACHE", "false")
    client = create_client()
    assert client.model == f"fake-model@{server.base_url}" and client.cache is None
    assert (await client.chat("hi")).completions
    await client.aclose()


async def test_settings_model_and_default_trace_path(server, _isolated_home):
    settings = LLMSettings(model=f"fake-model@{server.base_url}", max_retries=1)
    client = create_client(settings=settings)
    assert client.retry.max_retries == 1
    assert client.trace is not None and client.trace.path == _isolated_home / "traces" / "llm.jsonl"
    await client.chat("hi")
    [record] = read_trace(client.trace.path)
    assert record["model"] == f"fake-model@{server.base_url}"
    await client.aclose()


async def test_settings_trace_path_cache_off_and_prices(server, tmp_path):
    settings = LLMSettings(cache=False, trace_path=tmp_path / "t.jsonl", prices={"fake-model": [1.0, 3.0]},
                           max_concurrency=3, timeout_s=7, extra={"top_k": 11})
    client = create_client(f"vllm:fake-model@{server.base_url}", settings)
    assert client.cache is None and client.max_concurrency == 3
    assert client.backend.timeout_s == 7
    r1 = await client.chat("a b")
    r2 = await client.chat("a b")
    assert r1.cached == r2.cached == [False] and len(server.chat_requests) == 2
    assert server.chat_requests[0].body["top_k"] == 11
    assert r1.cost_usd == pytest.approx((r1.usage.prompt_tokens * 1 + r1.usage.completion_tokens * 3) / 1e6)
    assert len(read_trace(tmp_path / "t.jsonl")) == 2
    await client.aclose()


async def test_trace_off(server, _isolated_home):
    client = create_client(f"fake-model@{server.base_url}", LLMSettings(trace=False))
    await client.chat("hi")
    assert client.trace is None
    assert not (_isolated_home / "traces" / "llm.jsonl").exists()
    await client.aclose()


async def test_run_store_cache_survives_a_new_client(server, tmp_path):
    model = f"fake-model@{server.base_url}"
    store = RunStore(tmp_path / "runs.sqlite")
    client1 = create_client(model, LLMSettings(trace=False), store=store)
    first = await client1.chat("p", n=2)
    await client1.aclose()
    store.close()
    store2 = RunStore(tmp_path / "runs.sqlite")  # reopened, as a resumed run would
    client2 = create_client(model, LLMSettings(trace=False), store=store2)
    again = await client2.chat("p", n=3)
    assert again.cached == [True, True, False]
    assert again.texts[:2] == first.texts
    assert len(server.chat_requests) == 2 and "n" not in server.chat_requests[1].body  # n=1
    await client2.aclose()
    store2.close()


async def test_api_key_from_environment(monkeypatch):
    with FakeOpenAIServer(require_api_key="k-123") as srv:
        settings = LLMSettings(api_key_env="MY_LLM_KEY", trace=False)
        with pytest.raises(LLMConfigError, match=r"\$MY_LLM_KEY"):
            create_client(f"fake-model@{srv.base_url}", settings)
        monkeypatch.setenv("MY_LLM_KEY", "k-123")
        client = create_client(f"fake-model@{srv.base_url}", settings)
        assert (await client.chat("hi")).completions
        assert srv.chat_requests[-1].headers["authorization"] == "Bearer k-123"
        await client.aclose()


def test_hosted_openai_needs_its_key(monkeypatch):
    with pytest.raises(LLMConfigError, match="OPENAI_API_KEY"):
        create_client("openai:gpt-4o-mini", LLMSettings(trace=False))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    client = create_client("openai:gpt-4o-mini", LLMSettings(trace=False))
    assert client.backend.base_url == "https://api.openai.com/v1" and client.backend.api_key == "sk-test"


def test_local_servers_get_a_dummy_key():
    client = create_client("vllm:Qwen/Qwen2.5-7B-Instruct", LLMSettings(trace=False))
    assert client.backend.base_url == "http://localhost:8000/v1"
    assert client.backend.api_key  # non-empty placeholder; the openai client refuses an empty key
    assert client.identity == "vllm:Qwen/Qwen2.5-7B-Instruct@http://localhost:8000/v1"


async def test_ping_http_ok_missing_model_and_down(server):
    ok, detail = await ping(f"fake-model@{server.base_url}")
    assert ok and "fake-model" in detail
    ok, detail = await ping(f"absent-model@{server.base_url}")
    assert not ok and "does not serve 'absent-model'" in detail and "fake-model" in detail
    assert [r.path for r in server.requests] == ["/v1/models", "/v1/models"]
    with FakeOpenAIServer() as srv:
        url = srv.base_url
    ok, detail = await ping(f"m@{url}", timeout=2)
    assert not ok and "cannot connect" in detail


async def test_ping_http_auth_failure_and_unknown_forms():
    with FakeOpenAIServer(require_api_key="right") as srv:
        ok, detail = await ping(f"fake-model@{srv.base_url}")
        assert not ok and "HTTP 401" in detail
    ok, detail = await ping("nonsense")
    assert not ok and "unrecognised model string" in detail


async def test_ping_scripted(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_text('"hello"\n')
    ok, detail = await ping(f"scripted:{path}")
    assert ok and "scripted" in detail
    ok, detail = await ping(f"scripted:{tmp_path / 'missing.jsonl'}")
    assert not ok and "not found" in detail

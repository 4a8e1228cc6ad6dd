"""Small pieces: request types, cache keys, retry delays, prices, trace writer."""

from __future__ import annotations

import json
import random
import threading

import pytest
from pydantic import ValidationError

from veriforge.llm import ChatRequest, ChatResponse, Completion, PriceTable, RetryPolicy, Usage, cache_key
from veriforge.llm.trace import TraceWriter, read_trace


def req(**kw) -> ChatRequest:
    return ChatRequest(messages=[{"role": "user", "content": "hi"}], **kw)


def test_request_validation():
    with pytest.raises(ValidationError):
        ChatRequest(messages=[])
    with pytest.raises(ValidationError):
        req(n=0)
    with pytest.raises(ValidationError):
        req(n=2, sample_indices=[1])
    with pytest.raises(ValidationError):
        req(n=2, sample_indices=[1, 1])
    assert req(stop="END").stop == ["END"]
    assert req(n=2, sample_indices=[3, 5]).indices() == [3, 5]
    assert req(n=3).indices() == [0, 1, 2]


def test_response_round_trips_through_json():
    resp = ChatResponse(model="m", completions=[Completion(index=0, text="t")],
                        usage=Usage(prompt_tokens=2, completion_tokens=3), cached=[False], cost_usd=None)
    data = json.loads(resp.model_dump_json())
    assert data["usage"] == {"prompt_tokens": 2, "completion_tokens": 3, "total": 5}
    assert ChatResponse.model_validate(data) == resp


def test_cache_key_is_per_sample_and_ignores_n():
    a = cache_key("b", req(n=1), 0)
    assert a == cache_key("b", req(n=4), 0) == cache_key("b", req(n=2, sample_indices=[0, 1]), 0)
    assert a != cache_key("b", req(n=1), 1)
    assert a != cache_key("other-backend", req(n=1), 0)
    assert a != cache_key("b", req(temperature=0.5), 0)
    assert a != cache_key("b", req(extra={"top_k": 1}), 0)


def test_retry_delay_is_exponential_jittered_and_capped():
    policy = RetryPolicy(base_delay_s=1.0, max_delay_s=8.0, rng=random.Random(1))
    for attempt, nominal in [(0, 1.0), (1, 2.0), (2, 4.0), (3, 8.0), (6, 8.0)]:
        delays = [policy.delay(attempt) for _ in range(50)]
        assert all(nominal / 2 <= d <= nominal for d in delays)
        assert len(set(delays)) > 1  # jitter
    assert policy.delay(0, retry_after=5.0) == 5.0
    assert policy.delay(0, retry_after=100.0) == 8.0


def test_price_table_lookup_and_unknown():
    table = PriceTable({"gpt-4o-mini": {"input": 0.15, "output": 0.6}, "Qwen2.5-7B": (0.1, 0.2)})
    usage = Usage(prompt_tokens=1_000_000, completion_tokens=500_000)
    assert table.cost(usage, ["openai:gpt-4o-mini", "gpt-4o-mini"]) == pytest.approx(0.15 + 0.3)
    assert table.cost(usage, ["Qwen/Qwen2.5-7B"]) == pytest.approx(0.1 + 0.1)  # org/ prefix dropped
    assert table.cost(usage, ["unknown"]) is None
    assert table.cost(Usage(), ["unknown"]) == 0.0  # nothing spent is zero, priced or not


def test_price_table_accepts_config_price_objects():
    from veriforge.core.config import LLMSettings

    settings = LLMSettings(prices={"m": [2.0, 4.0]})
    table = PriceTable(settings.prices)
    assert table.cost(Usage(prompt_tokens=10**6, completion_tokens=10**6), ["m"]) == pytest.approx(6.0)


def test_trace_writer_lines_do_not_interleave(tmp_path):
    path = tmp_path / "deep" / "trace.jsonl"
    writer = TraceWriter(path)
    big = "x" * 20_000

    def work(k: int) -> None:
        for i in range(20):
            writer.write({"k": k, "i": i, "pad": big})

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    records = read_trace(path)
    assert len(records) == 80 and all(r["pad"] == big for r in records)


def test_importing_the_layer_does_not_import_heavy_backends():
    import subprocess
    import sys

    code = ("import sys, veriforge.llm; "
            "heavy = [m for m in ('openai', 'torch', 'transformers') if m in sys.modules]; "
            "assert not heavy, heavy")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr

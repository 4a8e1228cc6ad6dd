"""FakeOpenAIServer itself: the protocol pieces later systems' tests rely on."""

from __future__ import annotations

import httpx

from veriforge.llm.testing import FakeOpenAIServer


def post(server, body, path="/v1/chat/completions"):
    return httpx.post(f"http://127.0.0.1:{server.port}{path}", json=body, timeout=5, trust_env=False)


def test_models_and_chat_protocol():
    with FakeOpenAIServer(replies=["one two three", "four"], models=["a", "b"]) as srv:
        assert srv.base_url == f"http://127.0.0.1:{srv.port}/v1"
        models = httpx.get(f"{srv.base_url}/models", trust_env=False).json()
        assert [m["id"] for m in models["data"]] == ["a", "b"]
        resp = post(srv, {"model": "a", "n": 3, "messages": [{"role": "user", "content": "x y"}]}).json()
        assert [c["message"]["content"] for c in resp["choices"]] == ["one two three", "four", "one two three"]
        assert [c["index"] for c in resp["choices"]] == [0, 1, 2]
        assert resp["usage"] == {"prompt_tokens": 2, "completion_tokens": 7, "total_tokens": 9}
        assert srv.chat_requests[0].body["n"] == 3


def test_faults_are_served_in_order_then_normal_answers():
    with FakeOpenAIServer() as srv:
        srv.fail_next(1, status=500)
        srv.fail_next(1, status=429, retry_after=2)
        body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
        r1, r2, r3 = post(srv, body), post(srv, body), post(srv, body)
        assert r1.status_code == 500
        assert r2.status_code == 429 and r2.headers["retry-after"] == "2"
        assert r3.status_code == 200 and r3.json()["choices"][0]["message"]["content"] == "reply 0 to: hi"


def test_bad_requests_and_routes():
    with FakeOpenAIServer() as srv:
        assert post(srv, {"model": "m", "messages": []}).status_code == 400
        assert post(srv, {"x": 1}, path="/v1/nope").status_code == 404


def test_broken_reply_script_is_a_500_not_a_hang():
    def bad(body, i):
        raise RuntimeError("oops")

    with FakeOpenAIServer(replies=bad) as srv:
        r = post(srv, {"model": "m", "messages": [{"role": "user", "content": "hi"}]})
        assert r.status_code == 500 and "oops" in r.json()["error"]["message"]


def test_close_wakes_a_hanging_request_quickly():
    import threading
    import time

    srv = FakeOpenAIServer().start()
    srv.hang_next(1, seconds=30)
    result = {}

    def call():
        try:
            result["status"] = post(srv, {"model": "m", "messages": [{"role": "user", "content": "x"}]}).status_code
        except httpx.HTTPError as exc:
            result["error"] = exc

    t = threading.Thread(target=call)
    t.start()
    time.sleep(0.2)
    started = time.monotonic()
    srv.close()
    t.join(timeout=5)
    assert time.monotonic() - started < 3
    assert not t.is_alive()

"""`FakeOpenAIServer`: a real OpenAI-compatible HTTP server for tests and demos.

Tests of anything that talks to a model (this layer, and every system's end-to-end tests) need a
server that speaks the real protocol over a real socket, answers deterministically, and can be
told to misbehave. This one runs ``http.server`` in a background thread on ``127.0.0.1`` with a
random port and implements ``POST /v1/chat/completions`` (``n``, ``stop``, ``max_tokens``,
``usage``, ``finish_reason``, ``logprobs``/``top_logprobs``) and ``GET /v1/models``::

    with FakeOpenAIServer(replies=lambda body, i: f"answer {i}") as server:
        client = create_client(f"fake-model@{server.base_url}")
        ...
        server.fail_next(2, status=429)      # the next two chat requests get 429
        server.hang_next(1, seconds=5)       # the next one stalls (to exercise timeouts)
        assert len(server.chat_requests) == 3 and server.max_in_flight <= 4

Tokens are whitespace-separated words (prompt tokens: words of all message contents).
"""

from __future__ import annotations

import itertools
import json
import math
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

#: A reply script: ``fn(body, sample_index) -> text`` or ``-> {"text": ..., "finish_reason": ...}``.
ReplyFn = Callable[[dict[str, Any], int], "str | dict[str, Any]"]


@dataclass
class RecordedRequest:
    """One request the server received (header names lower-cased)."""

    method: str
    path: str
    headers: dict[str, str]
    body: dict[str, Any] | None
    received_at: float = field(default_factory=time.monotonic)


@dataclass
class _Fault:
    status: int | None  # None: hang
    seconds: float = 0.0
    retry_after: float | None = None
    body: dict[str, Any] | None = None
    raw: bytes | None = None  # sent as the body of an HTTP 200 (a malformed reply)


class FakeOpenAIServer:
    """An OpenAI-compatible chat server on 127.0.0.1 answering from a script.

    ``replies``: a callable ``(request_body, sample_index) -> str | dict`` or a list of texts
    served in order (cycled); by default each sample gets a distinct text
    ``"reply <k> to: <last user message>"`` with ``k`` counting every sample served.
    ``honor_n=False`` makes it behave like servers that ignore ``n`` (one choice per request).
    ``delay_s`` holds each chat request that long (makes concurrency observable).
    ``models`` are listed by ``GET /v1/models``.
    """

    def __init__(
        self,
        replies: ReplyFn | Sequence[str] | None = None,
        *,
        models: Sequence[str] = ("fake-model",),
        honor_n: bool = True,
        delay_s: float = 0.0,
        require_api_key: str | None = None,
    ) -> None:
        self.replies = replies
        self.models = list(models)
        self.honor_n = honor_n
        self.delay_s = delay_s
        self.require_api_key = require_api_key
        self.requests: list[RecordedRequest] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self._lock = threading.Lock()
        self._faults: list[_Fault] = []
        self._counter = itertools.count()
        self._ids = itertools.count()
        self._stopping = threading.Event()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # ---------------------------------------------------------------- lifecycle

    def start(self) -> FakeOpenAIServer:
        handler = type("_Handler", (_Handler,), {"fake": self})
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        # A short poll interval makes close() (and so every test using the server) fast.
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.02},
                                        name="fake-openai", daemon=True)
        self._thread.start()
        return self

    def close(self) -> None:
        self._stopping.set()  # wakes hanging handlers
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> FakeOpenAIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("server not started")
        return int(self._server.server_address[1])

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:<port>/v1`` — what a client's ``base_url`` should be."""
        return f"http://127.0.0.1:{self.port}/v1"

    # ---------------------------------------------------------------- behaviour

    def fail_next(
        self, k: int = 1, *, status: int = 429, retry_after: float | None = None,
        body: dict[str, Any] | None = None,
    ) -> None:
        """The next ``k`` chat requests get HTTP ``status`` (with an optional Retry-After header)."""
        with self._lock:
            self._faults.extend(_Fault(status, retry_after=retry_after, body=body) for _ in range(k))

    def malformed_next(self, k: int = 1, *, raw: bytes | dict[str, Any] = b"{not json") -> None:
        """The next ``k`` chat requests get HTTP 200 with ``raw`` as the body: bytes that are not JSON,
        or valid JSON of the wrong shape (a dict without ``choices``, ...)."""
        data = raw if isinstance(raw, bytes) else json.dumps(raw).encode()
        with self._lock:
            self._faults.extend(_Fault(200, raw=data) for _ in range(k))

    def hang_next(self, k: int = 1, *, seconds: float = 30.0) -> None:
        """The next ``k`` chat requests stall for ``seconds`` and then fail with 504."""
        with self._lock:
            self._faults.extend(_Fault(None, seconds=seconds) for _ in range(k))

    @property
    def chat_requests(self) -> list[RecordedRequest]:
        """The chat-completion requests received so far (including failed ones)."""
        return [r for r in self.requests if r.path.rstrip("/").endswith("/chat/completions")]

    def reset(self) -> None:
        """Forget recorded requests, pending faults and the in-flight maximum."""
        with self._lock:
            self.requests.clear()
            self._faults.clear()
            self.max_in_flight = 0

    # ----------------------------------------------------------------- internals

    def _next_fault(self) -> _Fault | None:
        with self._lock:
            return self._faults.pop(0) if self._faults else None

    def _reply(self, body: dict[str, Any], sample_index: int) -> dict[str, Any]:
        k = next(self._counter)
        if callable(self.replies):
            out = self.replies(body, sample_index)
        elif self.replies is not None:
            out = self.replies[k % len(self.replies)] if self.replies else ""
        else:
            last_user = next((m.get("content", "") for m in reversed(body.get("messages", []))
                              if m.get("role") == "user"), "")
            out = f"reply {k} to: {last_user}"
        return {"text": out} if isinstance(out, str) else dict(out)

    def _completion(self, body: dict[str, Any]) -> dict[str, Any]:
        n = int(body.get("n") or 1) if self.honor_n else 1
        max_tokens = body.get("max_tokens") or body.get("max_completion_tokens")
        stops = body.get("stop") or []
        stops = [stops] if isinstance(stops, str) else list(stops)
        choices = []
        completion_tokens = 0
        for i in range(n):
            reply = self._reply(body, i)
            text = str(reply.get("text", ""))
            finish = reply.get("finish_reason", "stop")
            for s in stops:
                if s and s in text:
                    text, finish = text[: text.index(s)], "stop"
            words = text.split(" ")
            if max_tokens is not None and len(text.split()) > int(max_tokens):
                words = text.split()[: int(max_tokens)]
                text, finish = " ".join(words), "length"
            tokens = [w if j == 0 else " " + w for j, w in enumerate(words)] if text else []
            completion_tokens += len(tokens)
            choice: dict[str, Any] = {
                "index": i,
                "message": {"role": "assistant", "content": text},
                "finish_reason": finish,
                "logprobs": None,
            }
            if body.get("logprobs"):
                choice["logprobs"] = {"content": _fake_logprobs(tokens, int(body.get("top_logprobs") or 0))}
            choices.append(choice)
        prompt_tokens = sum(len(str(m.get("content", "")).split()) for m in body.get("messages", []))
        return {
            "id": f"chatcmpl-fake-{next(self._ids)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", self.models[0] if self.models else "fake-model"),
            "choices": choices,
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                      "total_tokens": prompt_tokens + completion_tokens},
        }


def _fake_logprobs(tokens: list[str], top: int) -> list[dict[str, Any]]:
    """Deterministic, valid log-probabilities: token ``j`` gets ``log(1/(j+2))``."""
    out = []
    for j, tok in enumerate(tokens):
        lp = math.log(1.0 / (j + 2))
        alts = [{"token": tok, "logprob": lp, "bytes": None}]
        alts += [{"token": f"<alt{a}>", "logprob": lp - a - 1, "bytes": None} for a in range(max(0, top - 1))]
        out.append({"token": tok, "logprob": lp, "bytes": None, "top_logprobs": alts[:top]})
    return out


class _Handler(BaseHTTPRequestHandler):
    fake: FakeOpenAIServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        """Silence the per-request stderr log (tests stay readable)."""

    def _send(self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None) -> None:
        self._send_raw(status, json.dumps(payload).encode(), headers)

    def _send_raw(self, status: int, data: bytes, headers: dict[str, str] | None = None) -> None:
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (e.g. its timeout fired): nothing to answer

    def _record(self, body: dict[str, Any] | None) -> None:
        with self.fake._lock:
            self.fake.requests.append(RecordedRequest(self.command, self.path,
                                                     {k.lower(): v for k, v in self.headers.items()}, body))

    def _authorised(self) -> bool:
        key = self.fake.require_api_key
        if key is None or self.headers.get("Authorization") == f"Bearer {key}":
            return True
        self._send(401, {"error": {"message": "invalid api key", "type": "invalid_request_error"}})
        return False

    def do_GET(self) -> None:
        self._record(None)
        if not self._authorised():
            return
        if self.path.rstrip("/").endswith("/models"):
            data = [{"id": m, "object": "model", "created": 0, "owned_by": "veriforge"} for m in self.fake.models]
            self._send(200, {"object": "list", "data": data})
        else:
            self._send(404, {"error": {"message": f"no route {self.path}"}})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError:
            self._record(None)
            self._send(400, {"error": {"message": "body is not JSON", "type": "invalid_request_error"}})
            return
        self._record(body)
        if not self._authorised():
            return
        if not self.path.rstrip("/").endswith("/chat/completions"):
            self._send(404, {"error": {"message": f"no route {self.path}"}})
            return
        fake = self.fake
        with fake._lock:
            fake.in_flight += 1
            fake.max_in_flight = max(fake.max_in_flight, fake.in_flight)
        try:
            self._answer_chat(body)
        finally:
            with fake._lock:
                fake.in_flight -= 1

    def _answer_chat(self, body: dict[str, Any]) -> None:
        fake = self.fake
        fault = fake._next_fault()
        if fault is not None and fault.status is None:
            fake._stopping.wait(fault.seconds)
            self._send(504, {"error": {"message": "hung on purpose", "type": "timeout"}})
            return
        if fake.delay_s:
            fake._stopping.wait(fake.delay_s)
        if fault is not None and fault.raw is not None:
            self._send_raw(200, fault.raw)
            return
        if fault is not None:
            headers = {"Retry-After": str(fault.retry_after)} if fault.retry_after is not None else {}
            payload = fault.body or {"error": {"message": f"injected HTTP {fault.status}", "type": "fake"}}
            self._send(int(fault.status), payload, headers)
            return
        if not isinstance(body.get("messages"), list) or not body["messages"]:
            self._send(400, {"error": {"message": "messages must be a non-empty list",
                                       "type": "invalid_request_error"}})
            return
        try:
            payload = fake._completion(body)
        except Exception as exc:  # a broken reply script must show up in the test, not hang it
            self._send(500, {"error": {"message": f"reply script failed: {exc!r}", "type": "script"}})
            return
        self._send(200, payload)


# ------------------------------------------------------------------------------------------------
# Tiny random models: real transformers/TRL code paths on the CPU in seconds, with nothing
# downloaded (no tokenizer ships inside a PyPI package, so one is trained on the spot).

TINY_EOS = "<|endoftext|>"
TINY_PAD = "<|pad|>"


def tiny_tokenizer(texts: Sequence[str], *, vocab_size: int = 400, full_byte_alphabet: bool = False) -> Any:
    """A byte-level BPE ``PreTrainedTokenizerFast`` trained on ``texts`` in milliseconds.

    With ``full_byte_alphabet`` every byte is a token (any text encodes); without it the vocabulary
    holds only the characters of ``texts``, so every token decodes to printable text.
    """
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    extra = {"initial_alphabet": pre_tokenizers.ByteLevel.alphabet()} if full_byte_alphabet else {}
    tok.train_from_iterator(list(texts), trainers.BpeTrainer(vocab_size=vocab_size,
                                                              special_tokens=[TINY_EOS, TINY_PAD], **extra))
    return PreTrainedTokenizerFast(tokenizer_object=tok, eos_token=TINY_EOS, pad_token=TINY_PAD)


def tiny_qwen2_config(tokenizer: Any, **overrides: Any) -> Any:
    """A random 2-layer, 32-wide ``Qwen2Config`` sized to ``tokenizer`` (``overrides`` win)."""
    from transformers import Qwen2Config

    params: dict[str, Any] = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=1,
                                  intermediate_size=64, vocab_size=len(tokenizer), max_position_embeddings=512,
                                  eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id,
                                  bos_token_id=None)
    params.update(overrides)
    return Qwen2Config(**params)

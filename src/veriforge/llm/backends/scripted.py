"""Scripted replies: a JSONL file of completions or a Python callable.

For tests, demos and exact replays a "model" whose answers are known in advance is worth more
than a real one: same request and sample index -> same text, every time, with no server.

JSONL line format (one JSON value per line; blank lines and lines starting with ``#`` skipped)::

    {"text": "the reply", "finish_reason": "stop", "match": "substring", "logprobs": [...]}
    "a bare JSON string is shorthand for {\"text\": ...}"

Only ``text`` is required. Choosing the reply for sample ``i`` of a request:

1. lines whose ``match`` occurs in the last user message are the candidates; if there are none,
   the lines without ``match`` are (so unconditional lines are the fallback);
2. the reply is ``candidates[i % len(candidates)]``.

So a file of N unconditional lines gives N distinct samples for ``n=N``, and ``match`` lines
script a multi-turn conversation. No candidate at all is a non-retryable error.

A callable is ``fn(request, sample_index) -> str | Completion | dict`` (may be ``async``); the
model string ``scripted:package.module:function`` names one.
"""

from __future__ import annotations

import importlib
import inspect
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from veriforge.llm.errors import LLMConfigError, LLMRequestError
from veriforge.llm.types import ChatRequest, ChatResponse, Completion, Usage

ScriptFn = Callable[[ChatRequest, int], Any]


def load_script(path: str | Path) -> list[dict[str, Any]]:
    """Read and validate a scripted-replies JSONL file."""
    p = Path(path).expanduser()
    if not p.is_file():
        raise LLMConfigError(f"scripted replies file not found: {p}")
    lines: list[dict[str, Any]] = []
    for number, raw in enumerate(p.read_text(encoding="utf-8").splitlines(), start=1):
        if not raw.strip() or raw.lstrip().startswith("#"):
            continue
        try:
            value = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise LLMConfigError(f"{p}:{number}: not valid JSON ({exc.msg})") from exc
        if isinstance(value, str):
            value = {"text": value}
        if not isinstance(value, dict) or not isinstance(value.get("text"), str):
            raise LLMConfigError(f"{p}:{number}: a line must be a string or an object with a string 'text'")
        lines.append(value)
    if not lines:
        raise LLMConfigError(f"scripted replies file has no replies: {p}")
    return lines


def import_callable(ref: str) -> ScriptFn:
    """Import ``package.module:function`` (attribute paths like ``mod:Class.method`` work too)."""
    module_name, _, attr = ref.partition(":")
    if not module_name or not attr:
        raise LLMConfigError(f"a scripted callable is named 'package.module:function', got {ref!r}")
    try:
        obj: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise LLMConfigError(f"cannot import module {module_name!r} for scripted model: {exc}") from exc
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise LLMConfigError(f"module {module_name!r} has no attribute {attr!r}")
        obj = getattr(obj, part)
    if not callable(obj):
        raise LLMConfigError(f"{ref} is not callable")
    return obj


def apply_limits(
    text: str, stop: list[str] | None, max_tokens: int | None, finish: str | None
) -> tuple[str, str | None]:
    """Cut ``text`` at the first stop string, then at ``max_tokens`` words, like a server would."""
    for s in stop or []:
        if s and s in text:
            text, finish = text[: text.index(s)], "stop"
    words = text.split()
    if max_tokens is not None and len(words) > max_tokens:
        text, finish = " ".join(words[:max_tokens]), "length"
    return text, finish


class ScriptedBackend:
    """Deterministic replies from a JSONL script, a list of replies, or a callable.

    Token usage counts whitespace-separated words (prompt counted once), so accounting tests and
    demos see plausible, reproducible numbers.
    """

    def __init__(
        self,
        script: str | Path | list[str | dict[str, Any]] | ScriptFn,
        *,
        name: str = "scripted",
        identity: str | None = None,
    ) -> None:
        self.name = name
        self._fn: ScriptFn | None = None
        self._lines: list[dict[str, Any]] = []
        if callable(script):
            self._fn = script
            label = f"{getattr(script, '__module__', '?')}:{getattr(script, '__qualname__', repr(script))}"
        elif isinstance(script, list):
            self._lines = [{"text": s} if isinstance(s, str) else dict(s) for s in script]
            if not self._lines:
                raise LLMConfigError("a scripted back-end needs at least one reply")
            label = "inline"
        else:
            self._lines = load_script(script)
            label = str(Path(script).expanduser().resolve())
        if self._lines:
            # The replies are part of the identity: editing the file must not serve stale cache hits.
            from veriforge.core.hashing import canonical_json, content_hash

            label += "#" + content_hash(canonical_json(self._lines))[:16]
        self.identity = identity or f"scripted:{label}"

    async def chat(self, request: ChatRequest) -> ChatResponse:
        completions = []
        for index in request.indices():
            completions.append(await self._one(request, index))
        prompt_tokens = sum(len(m.content.split()) for m in request.messages)
        completion_tokens = sum(len(c.text.split()) for c in completions)
        return ChatResponse(model=self.name, completions=completions,
                            usage=Usage(prompt_tokens=prompt_tokens, completion_tokens=completion_tokens))

    async def _one(self, request: ChatRequest, index: int) -> Completion:
        if self._fn is not None:
            try:
                out = self._fn(request, index)
                if inspect.isawaitable(out):
                    out = await out
            except LLMRequestError:
                raise  # a script may simulate a server failure on purpose
            except Exception as exc:
                raise LLMRequestError(f"scripted callable failed on sample {index}: {exc!r}",
                                      kind="script") from exc
            return _to_completion(out, index, request)
        return _to_completion(self._pick(request, index), index, request)

    def _pick(self, request: ChatRequest, index: int) -> dict[str, Any]:
        last_user = next((m.content for m in reversed(request.messages) if m.role == "user"), "")
        matched = [line for line in self._lines if line.get("match") and str(line["match"]) in last_user]
        candidates = matched or [line for line in self._lines if not line.get("match")]
        if not candidates:
            raise LLMRequestError(f"no scripted reply matches the last user message {last_user[:80]!r}",
                                  kind="script")
        return candidates[index % len(candidates)]


def _to_completion(out: Any, index: int, request: ChatRequest) -> Completion:
    if isinstance(out, Completion):
        comp = out.model_copy(update={"index": index})
    elif isinstance(out, str):
        comp = Completion(index=index, text=out)
    elif isinstance(out, dict) and isinstance(out.get("text"), str):
        fields = {k: out[k] for k in ("text", "finish_reason", "logprobs") if k in out}
        comp = Completion.model_validate({**fields, "index": index})
    else:
        raise LLMRequestError(f"scripted reply for sample {index} must be a str, dict or Completion, "
                              f"got {type(out).__name__}", kind="script")
    text, finish = apply_limits(comp.text, request.stop, request.max_tokens, comp.finish_reason)
    if request.logprobs is False:
        return comp.model_copy(update={"text": text, "finish_reason": finish, "logprobs": None})
    return comp.model_copy(update={"text": text, "finish_reason": finish})

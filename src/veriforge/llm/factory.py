"""Build a ready :class:`LLMClient` from a model string and settings; check an endpoint answers.

This is the only place that knows which back-end a model string means and which settings feed
which part (timeouts to the back-end, retries/concurrency/cache/trace/prices to the client), so
the CLI, the systems and ``veriforge doctor`` all configure models the same way.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from veriforge.llm.backend import ChatBackend
from veriforge.llm.cache import MemoryCache, ResponseCache, StoreCache
from veriforge.llm.client import LLMClient
from veriforge.llm.errors import LLMConfigError, LLMRequestError, ModelUnavailableError
from veriforge.llm.naming import ModelSpec, no_model_message, parse_model
from veriforge.llm.retry import RetryPolicy

#: Where the trace goes when tracing is on and no ``trace_path`` is configured (under VERIFORGE_HOME).
DEFAULT_TRACE_NAME = Path("traces") / "llm.jsonl"


def _settings(settings: Any | None) -> Any:
    """The given LLM settings, else the running command's (TOML file < environment < ``--set``)."""
    if settings is not None:
        return settings
    from veriforge.core.config import active_settings

    return active_settings().llm


def _api_key(spec: ModelSpec, settings: Any) -> str | None:
    """The API key from the configured (or provider-default) environment variable.

    Hosted providers and explicitly configured variables must be set; local servers get ``None``
    (the back-end then sends a dummy key).
    """
    env = getattr(settings, "api_key_env", None) or spec.api_key_env
    if not env:
        return None
    key = os.environ.get(env)
    if not key:
        raise LLMConfigError(f"{spec.text}: the API key is read from ${env}, which is not set")
    return key


def create_backend(model: str | ModelSpec, settings: Any | None = None) -> ChatBackend:
    """The back-end a model string names (nothing is loaded or contacted yet)."""
    spec = model if isinstance(model, ModelSpec) else parse_model(model)
    cfg = _settings(settings)
    extra = dict(getattr(cfg, "extra", None) or {})
    if spec.kind == "http":
        from veriforge.llm.backends.openai_http import OpenAICompatibleBackend

        return OpenAICompatibleBackend(
            spec.model, spec.base_url or "", api_key=_api_key(spec, cfg),
            timeout_s=float(getattr(cfg, "timeout_s", 120.0)), extra_body=extra, provider=spec.provider,
        )
    if spec.kind == "hf":
        from veriforge.llm.backends.transformers_local import TransformersBackend

        return TransformersBackend(spec.model, generate_kwargs=extra)
    from veriforge.llm.backends.scripted import ScriptedBackend, import_callable

    if spec.script == "callable":
        fn = import_callable(spec.model)
        return ScriptedBackend(fn, name=spec.text, identity=spec.text)
    return ScriptedBackend(spec.model, name=spec.text)


def create_client(
    model: str | None = None,
    settings: Any | None = None,
    store: Any | None = None,
    *,
    backend: ChatBackend | None = None,
    cache: ResponseCache | None = None,
    retry: RetryPolicy | None = None,
) -> LLMClient:
    """A client for ``model`` (or ``settings.model``) configured from ``settings``.

    ``settings=None`` reads the effective configuration (``veriforge.toml``, ``VERIFORGE_LLM__*``).

    The cache lives in ``store`` (a :class:`~veriforge.core.store.RunStore`) when given, else in
    memory; ``settings.cache = False`` turns it off. The trace goes to ``settings.trace_path`` or
    ``$VERIFORGE_HOME/traces/llm.jsonl``. ``backend`` supplies a ready back-end (an in-memory RL
    policy) instead of building one from the string, which is then just its label.
    """
    cfg = _settings(settings)
    name = model or getattr(cfg, "model", None)
    if backend is None:
        if not name:
            raise LLMConfigError(no_model_message())
        backend = create_backend(name, cfg)
    use_cache = bool(getattr(cfg, "cache", True))
    if cache is None and use_cache:
        cache = StoreCache(store) if store is not None else MemoryCache()
    trace_path = None
    if getattr(cfg, "trace", True):
        trace_path = getattr(cfg, "trace_path", None)
        if trace_path is None:
            from veriforge.core.paths import home

            trace_path = home() / DEFAULT_TRACE_NAME
    return LLMClient(
        backend,
        model=name,
        cache=cache,
        use_cache=use_cache,
        max_concurrency=int(getattr(cfg, "max_concurrency", 8)),
        retry=retry or RetryPolicy(max_retries=int(getattr(cfg, "max_retries", 5))),
        prices=dict(getattr(cfg, "prices", None) or {}),
        trace_path=trace_path,
    )


async def ping(model: str, timeout: float = 5.0, settings: Any | None = None) -> tuple[bool, str]:
    """Does ``model`` answer? ``(ok, detail)``, never an exception (for ``veriforge doctor``).

    HTTP back-ends: ``GET {base_url}/models`` — ok when the server answers and lists the model (or
    lists nothing/serves a single model). Local models: the directory and its config exist (nothing
    is loaded). Scripted: the replies file parses / the callable imports.
    """
    try:
        spec = parse_model(model)
        if spec.kind == "http":
            return await _ping_http(spec, timeout, _settings(settings))
        if spec.kind == "hf":
            return _ping_local(spec)
        backend = create_backend(spec, settings)
        return True, f"scripted model ready ({getattr(backend, 'identity', spec.text)})"
    except LLMConfigError as exc:
        return False, str(exc)
    except Exception as exc:  # doctor must report, not crash
        return False, f"{type(exc).__name__}: {exc}"


async def _ping_http(spec: ModelSpec, timeout: float, settings: Any) -> tuple[bool, str]:
    ok, detail, _ = await _probe_models(spec, timeout, settings)
    return ok, detail


async def _probe_models(spec: ModelSpec, timeout: float, settings: Any) -> tuple[bool, str, int | None]:
    """``GET {base_url}/models``: (ok, detail, HTTP status or None when nothing answered)."""
    import httpx

    headers = {}
    key = _api_key(spec, settings)
    if key:
        headers["Authorization"] = f"Bearer {key}"
    url = f"{spec.base_url}/models"
    try:
        async with httpx.AsyncClient(timeout=timeout, trust_env=False) as http:
            resp = await http.get(url, headers=headers)
    except httpx.TimeoutException:
        return False, f"{url}: no answer within {timeout:g} s", None
    except httpx.HTTPError as exc:
        return False, f"{url}: cannot connect ({type(exc).__name__}: {exc})", None
    if resp.status_code != 200:
        return False, f"{url}: HTTP {resp.status_code} {resp.text[:200]}", resp.status_code
    try:
        served = [str(m.get("id")) for m in resp.json().get("data", [])]
    except (ValueError, AttributeError):
        return False, f"{url}: answered, but not with an OpenAI model list", resp.status_code
    if served and spec.model not in served and spec.provider != "llamacpp":
        shown = ", ".join(served[:10]) + (" ..." if len(served) > 10 else "")
        return False, f"{spec.base_url} answers but does not serve {spec.model!r} (serves: {shown})", 200
    detail = f"{spec.base_url} serves {spec.model!r}" + (f" ({len(served)} models)" if served else "")
    return True, detail, 200


def _ping_local(spec: ModelSpec) -> tuple[bool, str]:
    path = Path(spec.model).expanduser()
    if not path.is_dir():
        return False, f"local model directory not found: {path} (hf: models are never downloaded)"
    if not (path / "config.json").is_file():
        return False, f"{path} has no config.json: not a transformers model directory"
    return True, f"local transformers model at {path}"


#: Seconds the check before a long run waits for a model's first token (a loaded server answers a
#: one-token request in well under a second; a cold hosted API in a few).
CHECK_TIMEOUT_S = 15.0


async def check_answers(model: str, settings: Any | None = None, timeout: float | None = None) -> str:
    """Make sure ``model`` answers before long work depends on it; returns a one-line description.

    HTTP back-ends: one ``GET {base_url}/models`` with ``timeout`` seconds (what ``veriforge doctor``
    asks) — a server that is down, rejects the key or does not serve the model is reported in
    seconds, and no chat request is spent or counted. Endpoints without a model list (404/405) get
    one chat request for a single token instead, sent straight to the back-end (no retries, cache
    or trace). Local and scripted models are checked for presence only: loading weights to check
    them would cost what the run costs. Raises :class:`ModelUnavailableError` naming the endpoint
    and what to do.
    """
    timeout = CHECK_TIMEOUT_S if timeout is None else timeout
    spec = parse_model(model)
    if spec.kind != "http":
        ok, detail = await ping(model, timeout=timeout, settings=settings)
        if not ok:
            raise ModelUnavailableError(f"model {model} is not usable: {detail}")
        return detail
    cfg = _settings(settings)
    ok, detail, status = await _probe_models(spec, timeout, cfg)
    if ok:
        return detail
    if status not in (404, 405):
        raise ModelUnavailableError(f"model {model} does not answer: {detail}; {_advice(spec)}")
    return await _probe_chat(spec, model, cfg, timeout)


async def _probe_chat(spec: ModelSpec, model: str, cfg: Any, timeout: float) -> str:
    """One single-token chat request to an endpoint that lists no models."""
    from veriforge.llm.backend import close_backend
    from veriforge.llm.types import ChatRequest, Message

    limit = min(float(timeout), float(getattr(cfg, "timeout_s", timeout) or timeout))
    probe_cfg = cfg.model_copy(update={"timeout_s": limit}) if hasattr(cfg, "model_copy") else cfg
    backend = create_backend(spec, probe_cfg)
    request = ChatRequest(messages=[Message(role="user", content="Reply with OK.")], max_tokens=1, n=1)
    try:
        await backend.chat(request)
    except LLMRequestError as exc:
        raise ModelUnavailableError(f"model {model} does not answer at {spec.base_url}: {_reason(exc, spec)}; "
                                    f"{_advice(spec)}") from None
    finally:
        await close_backend(backend)
    return f"{spec.base_url} answers for {spec.model!r} (it lists no models)"


def _reason(exc: LLMRequestError, spec: ModelSpec) -> str:
    """The back-end's message without the identity prefix the caller already names."""
    text = str(exc)
    prefix = f"{spec.provider}:{spec.model}@{spec.base_url}: "
    return (text[len(prefix):] if text.startswith(prefix) else text).strip()[:300]


def _advice(spec: ModelSpec) -> str:
    """What to do about an HTTP model that does not answer."""
    start = {
        "vllm": f"start it (vllm serve {spec.model})",
        "sglang": f"start it (python -m sglang.launch_server --model-path {spec.model})",
        "ollama": f"start it (ollama serve; ollama pull {spec.model})",
        "llamacpp": "start it (llama-server -m MODEL.gguf)",
    }.get(spec.provider, "check the server and the API key")
    return (f"{start}, give its address as {spec.provider + ':' if spec.provider != 'endpoint' else ''}"
            f"{spec.model}@http://HOST:PORT/v1, or leave out --model; `veriforge doctor` checks the model")

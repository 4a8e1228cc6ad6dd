"""One string names a model, on the CLI and in config.

Forms (see docs/llm.md for the full table)::

    openai:gpt-4o-mini                  hosted OpenAI (key from $OPENAI_API_KEY)
    vllm:Qwen/Qwen2.5-7B-Instruct       vLLM at http://localhost:8000/v1
    sglang:MODEL                        SGLang at http://localhost:30000/v1
    ollama:llama3.1:8b                  Ollama at http://localhost:11434/v1
    llamacpp:[MODEL]                    llama.cpp server at http://localhost:8080/v1
    PROVIDER:MODEL@http://host:port/v1  any of the above at another address
    MODEL@http://host:port/v1           any OpenAI-compatible endpoint
    hf:/path/to/local/model             local transformers model (never downloaded)
    scripted:path/to/replies.jsonl      replay a JSONL file of replies
    scripted:package.module:function    call a Python function for each sample
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from veriforge.llm.errors import LLMConfigError

#: Provider prefix -> (default base URL, environment variable holding the API key or None).
HTTP_PROVIDERS: dict[str, tuple[str, str | None]] = {
    "openai": ("https://api.openai.com/v1", "OPENAI_API_KEY"),
    "vllm": ("http://localhost:8000/v1", None),
    "sglang": ("http://localhost:30000/v1", None),
    "ollama": ("http://localhost:11434/v1", None),
    "llamacpp": ("http://localhost:8080/v1", None),
}

#: The name sent to servers that serve a single model and ignore the name (llama.cpp).
DEFAULT_SERVED_MODEL = "default"

FORMS_HELP = (
    "model forms: openai:MODEL, vllm:MODEL, sglang:MODEL, ollama:MODEL, llamacpp:[MODEL], "
    "PROVIDER:MODEL@http://host:port/v1, MODEL@http://host:port/v1, hf:/path/to/local/model, "
    "scripted:path/to/replies.jsonl, scripted:package.module:function"
)

_ENDPOINT = re.compile(r"^(?P<model>.*)@(?P<url>https?://\S+)$")
_CALLABLE = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")


@dataclass(frozen=True)
class ModelSpec:
    """A parsed model string.

    ``kind`` picks the back-end (``http``, ``hf``, ``scripted``); ``provider`` the flavour
    (``openai``, ``vllm``, ..., ``endpoint`` for a bare URL, ``hf``, ``scripted``); ``model`` the
    served model name, local path, replies file or ``module:function``; ``script`` says which
    of the last two a scripted model is.
    """

    text: str
    kind: Literal["http", "hf", "scripted"]
    provider: str
    model: str
    base_url: str | None = None
    api_key_env: str | None = None
    script: Literal["file", "callable"] | None = None


def parse_model(text: str | None) -> ModelSpec:
    """Parse a model string; a clear :class:`LLMConfigError` for anything unrecognised."""
    if text is None or not str(text).strip():
        raise LLMConfigError(no_model_message())
    s = str(text).strip()
    prefix, sep, rest = s.partition(":")
    prefix = prefix.lower()
    if sep and prefix == "scripted":
        if not rest:
            raise LLMConfigError(f"{s!r}: 'scripted:' needs a replies file or module:function")
        is_callable = bool(_CALLABLE.match(rest)) and not rest.endswith((".jsonl", ".json", ".txt"))
        return ModelSpec(s, "scripted", "scripted", rest, script="callable" if is_callable else "file")
    if sep and prefix == "hf":
        if not rest:
            raise LLMConfigError(f"{s!r}: 'hf:' needs the path of a local model directory")
        return ModelSpec(s, "hf", "hf", rest)
    if sep and prefix in HTTP_PROVIDERS:
        default_url, key_env = HTTP_PROVIDERS[prefix]
        m = _ENDPOINT.match(rest)
        model, url = (m["model"], m["url"]) if m else (rest, default_url)
        if not model:
            if prefix != "llamacpp":
                raise LLMConfigError(f"{s!r}: name the model after '{prefix}:' ({FORMS_HELP})")
            model = DEFAULT_SERVED_MODEL
        return ModelSpec(s, "http", prefix, model, url.rstrip("/"), key_env)
    m = _ENDPOINT.match(s)
    if m:
        if not m["model"]:
            raise LLMConfigError(f"{s!r}: put the model name before '@' (MODEL@{m['url']})")
        return ModelSpec(s, "http", "endpoint", m["model"], m["url"].rstrip("/"), None)
    if prefix in ("http", "https"):
        raise LLMConfigError(f"{s!r}: a URL alone does not name a model; write MODEL@{s}")
    raise LLMConfigError(f"unrecognised model string {s!r}; {FORMS_HELP}")


def no_model_message() -> str:
    """What to tell a user who has not configured any model."""
    return (
        "no language model configured: pass --model MODEL, set VERIFORGE_LLM__MODEL, or put "
        "model = \"...\" under [llm] in veriforge.toml. Examples: vllm:Qwen/Qwen2.5-7B-Instruct, "
        "ollama:llama3.1:8b, openai:gpt-4o-mini, hf:/path/to/model, scripted:replies.jsonl. " + FORMS_HELP
    )

"""The data that crosses the LLM interface: requests in, completions out.

Every type is a pydantic model so a request, a response or a single sample can be written to the
JSONL trace, put in the cache and read back without custom encoders. The shapes follow the
OpenAI chat API (the lingua franca of model servers) so the HTTP back-end maps them one to one and
the other back-ends only have to pretend to be a server.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, computed_field, field_validator, model_validator

Role = Literal["system", "user", "assistant", "tool"]

#: Why a sample ended: ``stop`` (end-of-sequence token or a stop string), ``length`` (hit
#: ``max_tokens``), or whatever other reason a server reports (kept verbatim, e.g. ``content_filter``).
FinishReason = str


class Message(BaseModel):
    """One chat turn."""

    model_config = ConfigDict(frozen=True)

    role: Role
    content: str


class TopLogprob(BaseModel):
    """One alternative token at a position, with its log-probability."""

    token: str
    logprob: float


class TokenLogprob(BaseModel):
    """The sampled token at one position, its log-probability and (optionally) the top alternatives."""

    token: str
    logprob: float
    top_logprobs: list[TopLogprob] = Field(default_factory=list)


class ChatRequest(BaseModel):
    """A chat request for ``n`` independent samples.

    ``sample_indices`` is set by :class:`~veriforge.llm.client.LLMClient` when some of the ``n``
    samples already came from the cache: it names which *global* sample indices this call must
    produce, so deterministic back-ends (scripted replies, seeded local generation) give sample 3
    the same text whether it is produced alone or together with samples 0-2. It is not part of
    the request's identity (the cache key leaves it out).
    """

    model_config = ConfigDict(frozen=True)

    messages: list[Message]
    n: int = Field(default=1, ge=1)
    temperature: float | None = None
    top_p: float | None = None
    max_tokens: int | None = Field(default=None, ge=1)
    stop: list[str] | None = None
    seed: int | None = None
    logprobs: bool = False
    top_logprobs: int | None = Field(default=None, ge=0, le=20)
    extra: dict[str, Any] = Field(default_factory=dict)
    sample_indices: list[int] | None = None

    @field_validator("messages", mode="before")
    @classmethod
    def _coerce_messages(cls, value: Any) -> Any:
        """Accept plain ``{"role", "content"}`` dicts and ``(role, content)`` pairs for convenience."""
        if isinstance(value, list):
            return [Message(role=m[0], content=m[1]) if isinstance(m, tuple) else m for m in value]
        return value

    @field_validator("stop", mode="before")
    @classmethod
    def _coerce_stop(cls, value: Any) -> Any:
        """A single stop string is the common case; store it as a one-element list."""
        return [value] if isinstance(value, str) else value

    @model_validator(mode="after")
    def _check(self) -> ChatRequest:
        if not self.messages:
            raise ValueError("a chat request needs at least one message")
        if self.sample_indices is not None:
            if len(self.sample_indices) != self.n:
                raise ValueError("sample_indices must name exactly n indices")
            if len(set(self.sample_indices)) != self.n or min(self.sample_indices) < 0:
                raise ValueError("sample_indices must be distinct and non-negative")
        return self

    def indices(self) -> list[int]:
        """The global sample indices this request produces (``0..n-1`` unless narrowed)."""
        return list(self.sample_indices) if self.sample_indices is not None else list(range(self.n))

    def identity(self) -> dict[str, Any]:
        """The fields that decide *what* is asked (not how many): the basis of the cache key."""
        return self.model_dump(mode="json", exclude={"n", "sample_indices"})


class Completion(BaseModel):
    """One sample. ``index`` is its global sample index within the request's ``n``."""

    index: int
    text: str
    finish_reason: FinishReason | None = "stop"
    logprobs: list[TokenLogprob] | None = None


class Usage(BaseModel):
    """Tokens billed by one call (prompt counted once, as OpenAI-compatible servers do)."""

    prompt_tokens: int = 0
    completion_tokens: int = 0

    @computed_field  # type: ignore[prop-decorator]
    @property
    def total(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
        )


class ChatResponse(BaseModel):
    """The answer to a :class:`ChatRequest`.

    ``completions`` are sorted by index; ``cached[i]`` says whether ``completions[i]`` came from
    the cache. ``usage`` and ``cost_usd`` are what *this call* spent (cached samples cost nothing);
    ``cost_usd`` is ``None`` when the model has no price in the settings, never a made-up zero.
    """

    model: str
    completions: list[Completion]
    usage: Usage = Field(default_factory=Usage)
    cached: list[bool] = Field(default_factory=list)
    latency_s: float = 0.0
    cost_usd: float | None = None

    @property
    def texts(self) -> list[str]:
        """The sample texts in index order (the common thing callers want)."""
        return [c.text for c in self.completions]

    @property
    def text(self) -> str:
        """The first sample's text (for ``n=1`` calls)."""
        return self.completions[0].text

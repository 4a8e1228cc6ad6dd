"""Errors of the LLM layer, all :class:`~veriforge.errors.LLMError` subclasses.

The one distinction callers (and the retry loop) need is *retryable or not*: a rate limit, a
server error, a timeout or a dropped connection may succeed on a second try; a bad request or a
wrong API key never will, so retrying it only burns time and quota.
"""

from __future__ import annotations

from veriforge.errors import LLMError


class LLMConfigError(LLMError):
    """The model string, settings or environment do not name a usable model."""


class LLMRequestError(LLMError):
    """A call to a back-end failed.

    ``status`` is the HTTP status when there was one (``None`` for timeouts and connection errors);
    ``kind`` is a short machine-readable label (``rate_limit``, ``server``, ``timeout``,
    ``connection``, ``bad_request``, ``auth``, ``script``, ...); ``retry_after`` is the server's
    ``Retry-After`` hint in seconds, when it sent one.
    """

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        retryable: bool = False,
        kind: str = "error",
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.retryable = retryable
        self.kind = kind
        self.retry_after = retry_after

    def to_dict(self) -> dict[str, object]:
        """The JSON form written to the trace."""
        return {"type": type(self).__name__, "message": str(self), "status": self.status,
                "kind": self.kind, "retryable": self.retryable}


def status_is_retryable(status: int) -> bool:
    """429 and 5xx may succeed later (plus 408 request timeout and 409 conflict, as OpenAI's SDK does)."""
    return status in (408, 409, 429) or status >= 500


def kind_for_status(status: int) -> str:
    """A short label for an HTTP status, used in messages and the trace."""
    if status == 429:
        return "rate_limit"
    if status >= 500:
        return "server"
    if status in (401, 403):
        return "auth"
    if status == 404:
        return "not_found"
    if status == 408:
        return "timeout"
    return "bad_request"


class ModelUnavailableError(LLMError):
    """A configured model did not answer the one cheap request made before long work starts.

    Raised up front so a search, a generation or a benchmark does not run for minutes with every
    model call failing quietly into the trace file.
    """

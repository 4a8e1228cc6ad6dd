"""Retry policy: exponential back-off with jitter, for errors that may go away.

Rate limits and overloaded servers are the normal state of shared model endpoints; hammering
them in lock-step makes it worse. Each retry waits ``base * 2**attempt`` (capped), of which the
second half is random ("equal jitter"): many clients that failed together spread out, yet every
client is guaranteed to wait at least half the nominal delay. A server's ``Retry-After`` hint is
honoured when it is longer (still capped).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how patiently to retry a retryable failure."""

    max_retries: int = 5
    base_delay_s: float = 0.5
    max_delay_s: float = 30.0
    #: retries of a request that timed out. A server that did not answer within the timeout seldom
    #: answers the same request on the next try, and every try costs a whole timeout of silence:
    #: with the old budget (5 retries of 120 s) a hung server took about 12 minutes to be reported.
    max_timeout_retries: int = 1
    rng: random.Random = field(default_factory=random.Random, compare=False, repr=False)

    def allows(self, attempt: int, kind: str | None, timeouts: int) -> bool:
        """Whether retry number ``attempt + 1`` may follow an error of ``kind`` (``timeouts``: how many
        of the failures so far, this one included, were timeouts)."""
        if attempt >= self.max_retries:
            return False
        return kind != "timeout" or timeouts <= self.max_timeout_retries

    def delay(self, attempt: int, retry_after: float | None = None) -> float:
        """Seconds to wait before retry number ``attempt + 1`` (``attempt`` counts from 0)."""
        nominal = min(self.max_delay_s, self.base_delay_s * (2**attempt))
        wait = nominal / 2 + self.rng.uniform(0, nominal / 2)
        if retry_after is not None and retry_after > wait:
            wait = min(self.max_delay_s, retry_after)
        return wait

"""How long the server will read a prompt before the first token: rate and cache guess.

The time to the first token is the time to prefill the tokens the server does *not* have
in its prefix cache. So the rate is learned only from answers that really prefilled most
of their prompt (the server said how many tokens came from its cache), and the estimate
applies it to the tokens expected to be uncached: after a question about the same pages,
the document part is still cached and only the question is new.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from desktop.answers import StoredAnswer

# A rate needs a real prefill: a mostly cached prompt's first token measures the fixed
# overhead, not the throughput (the cause of estimates that were far too short).
MIN_UNCACHED_TOKENS = 2_048
MIN_UNCACHED_FRACTION = 0.5
MIN_TTFT_S = 0.3
# The question part of a prompt (instructions after the document, the question, the
# chat template's tail) is new on every question; the document before it is shared.
QUESTION_ALLOWANCE = 256
# The server's cache keeps a document this long after a question, as far as we know.
CACHE_TRUST_S = 3_600.0


@dataclass(frozen=True)
class PrefillGuess:
    """The expected prefill of one prompt: tokens to read, and seconds if a rate is known."""

    prompt_tokens: int
    uncached_tokens: int
    seconds: float | None

    @property
    def cached_tokens(self) -> int:
        """Tokens expected from the server's cache."""
        return self.prompt_tokens - self.uncached_tokens


def prefill_rate(answer: StoredAnswer) -> float | None:
    """Uncached prompt tokens per second to the first token; None when the answer says
    nothing about the throughput (cache not reported, mostly cached, too quick)."""
    if not answer.prompt_tokens or answer.cached_tokens is None or not answer.ttft_s:
        return None
    uncached = answer.prompt_tokens - answer.cached_tokens
    if uncached < MIN_UNCACHED_TOKENS or uncached < MIN_UNCACHED_FRACTION * answer.prompt_tokens:
        return None
    if answer.ttft_s < MIN_TTFT_S:
        return None
    return uncached / answer.ttft_s


def learned_rate(answers: Sequence[StoredAnswer]) -> float | None:
    """The median rate over the answers that measure it (None: none do)."""
    rates = [r for r in (prefill_rate(a) for a in answers) if r is not None]
    return statistics.median(rates) if rates else None


def expected_uncached(
    prompt_tokens: int,
    earlier: Sequence[StoredAnswer],
    first_page: int,
    last_page: int,
    now: float,
    granularity: int = 0,
) -> int:
    """Tokens the server will likely have to read: all of them, unless a recent question
    about the same pages left the document in its cache (then about the question only,
    plus up to the engine's ``granularity``: vLLM resumes a hybrid model at a block
    boundary, up to a block before the question; SGLang at the warmed prefix's end)."""
    same = [
        a
        for a in earlier
        if (a.first_page, a.last_page) == (first_page, last_page)
        and a.prompt_tokens
        and a.status != "failed"
        and now - a.created_at <= CACHE_TRUST_S
    ]
    if not same:
        return prompt_tokens
    last = max(same, key=lambda a: a.created_at)
    margin = QUESTION_ALLOWANCE + granularity
    shared = max(0, min(prompt_tokens, last.prompt_tokens or 0) - margin)
    return prompt_tokens - shared


def guess(
    prompt_tokens: int,
    rate: float | None,
    earlier: Sequence[StoredAnswer],
    first_page: int,
    last_page: int,
    now: float,
    granularity: int = 0,
) -> PrefillGuess:
    """The expected prefill of a prompt about ``first_page``-``last_page`` (``granularity``:
    where the engine's cache resumes at worst before the question, see expected_uncached)."""
    uncached = expected_uncached(prompt_tokens, earlier, first_page, last_page, now, granularity)
    seconds = uncached / rate if rate else None
    return PrefillGuess(prompt_tokens, uncached, seconds)

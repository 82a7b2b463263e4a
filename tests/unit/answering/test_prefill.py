"""The prefill estimate: a rate learned only from real prefills, applied to uncached tokens."""

from __future__ import annotations

import dataclasses

from desktop.answering.prefill import (
    CACHE_TRUST_S,
    QUESTION_ALLOWANCE,
    expected_uncached,
    guess,
    learned_rate,
    prefill_rate,
)
from tests.unit.answering.test_format import ANSWER

NOW = ANSWER.created_at + 60


def answered(**fields: object) -> object:
    return dataclasses.replace(ANSWER, **fields)  # type: ignore[arg-type]


def test_a_cache_hit_does_not_teach_a_rate() -> None:
    # 100,000 tokens, all but 500 from the cache, first token after 0.6 s: that is the
    # fixed overhead, not 166,000 tokens/s of prefill (the cause of "taking longer").
    hit = answered(prompt_tokens=100_000, cached_tokens=99_500, ttft_s=0.6)
    assert prefill_rate(hit) is None
    unknown = answered(prompt_tokens=100_000, cached_tokens=None, ttft_s=0.6)
    assert prefill_rate(unknown) is None  # the server did not say what it had cached
    cold = answered(prompt_tokens=100_000, cached_tokens=0, ttft_s=10.0)
    assert prefill_rate(cold) == 10_000
    assert (
        learned_rate([hit, unknown, cold, answered(cached_tokens=0, ttft_s=4.0)])
        == (10_000 + 98_310 / 4.0) / 2
    )


def test_after_a_question_about_the_same_pages_only_the_question_is_new() -> None:
    earlier = [answered(prompt_tokens=250_000, first_page=1, last_page=10)]
    assert expected_uncached(250_040, earlier, 1, 10, NOW) == 40 + QUESTION_ALLOWANCE
    # Other pages, an old answer or none: everything is read.
    assert expected_uncached(250_040, earlier, 1, 9, NOW) == 250_040
    assert expected_uncached(250_040, earlier, 1, 10, NOW + CACHE_TRUST_S) == 250_040
    assert expected_uncached(250_040, [], 1, 10, NOW) == 250_040


def test_the_guess_applies_the_rate_to_the_uncached_tokens() -> None:
    earlier = [answered(prompt_tokens=250_000, first_page=1, last_page=10)]
    warm = guess(250_000, 5_000.0, earlier, 1, 10, NOW)
    assert warm.uncached_tokens == QUESTION_ALLOWANCE
    assert warm.cached_tokens == 250_000 - QUESTION_ALLOWANCE
    assert warm.seconds == QUESTION_ALLOWANCE / 5_000
    cold = guess(250_000, 5_000.0, [], 1, 10, NOW)
    assert cold.seconds == 50.0
    assert guess(250_000, None, [], 1, 10, NOW).seconds is None

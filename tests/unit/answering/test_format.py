"""The words and figures the CLI and the app share (desktop.answering.format)."""

from __future__ import annotations

import dataclasses

from desktop.answering import AnswerKey
from desktop.answering.format import (
    ago,
    answer_figures,
    answer_scope,
    duration,
    generation_rate,
    page_span,
    scope,
    short_quote,
)
from desktop.documents.model import Page
from tests.support.answers import stored_answer

ANSWER = stored_answer(
    key=AnswerKey("x", "q", "Qwen3.5", "1", False, 1, 10, 100),
    answer="a",
    prompt_tokens=98_310,
    completion_tokens=400,
    cached_tokens=1_204,
    ttft_s=2.0,
    total_s=12.0,
    created_at=1_000_000.0,
)


def test_ago_counts_the_largest_whole_unit() -> None:
    assert ago(1_000, now=1_030) == "just now"
    assert ago(1_000, now=1_000 + 60) == "1 minute ago"
    assert ago(1_000, now=1_000 + 3 * 86_400 + 5) == "3 days ago"
    assert ago(0, now=7_200) == "2 hours ago"


def test_duration_is_minutes_and_seconds() -> None:
    assert duration(7.9) == "0:07"
    assert duration(272) == "4:32"
    assert duration(-3) == "0:00"


def test_page_span_says_the_printed_labels_when_they_differ() -> None:
    pages = [Page(n, label, "") for n, label in enumerate(["i", "ii", "1", "2", "A-1"], 1)]
    assert page_span(3, 4, pages) == "pages 3-4 of 5 (printed 1 to 2)"
    assert page_span(5, 5, pages) == "page 5 of 5 (printed A-1)"
    plain = [Page(n, str(n), "") for n in range(1, 4)]
    assert page_span(1, 2, plain) == "pages 1-2 of 3"
    assert page_span(2, 3, 300) == "pages 2-3 of 300"


def test_scope_is_empty_for_the_whole_document() -> None:
    assert scope(1, 10, 10) == ""
    assert scope(1, 4, 10) == "About pages 1-4 of 10 only"
    assert answer_scope(ANSWER, 10) == ""
    assert answer_scope(ANSWER, 300) == "About pages 1-10 of 300 only"


def test_figures_and_rate() -> None:
    assert generation_rate(ANSWER) == 40.0
    assert answer_figures(ANSWER) == (
        "Qwen3.5 · 1,204 of 98,310 prompt tokens from the server's cache · "
        "400 tokens generated · first token after 2.0 s · 40.0 tokens/s"
    )
    bare = dataclasses.replace(
        ANSWER, model="", cached_tokens=None, ttft_s=None, total_s=None, completion_tokens=None
    )
    assert generation_rate(bare) is None
    assert answer_figures(bare) == "98,310 prompt tokens"


def test_short_quote_is_one_line_and_cut() -> None:
    assert short_quote("a\n  b") == "a b"
    assert short_quote("x" * 200, limit=10) == "x" * 9 + "…"

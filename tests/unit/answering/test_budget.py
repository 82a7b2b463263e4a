"""The context budget: reserve, shrink to the floor with a warning, refuse beyond it."""

from __future__ import annotations

from pathlib import Path

import pytest

from desktop.answering.budget import (
    ContextLimits,
    Limit,
    document_budget,
    explain_limit,
    plan_budget,
    prompt_overhead,
    remedy,
    suggest_pages,
)
from desktop.answering.prompt import PageRange, count_prompt_tokens, full_range
from desktop.documents.ingest import extract
from desktop.errors import DocumentTooLarge, suggest_page_end
from tests.conftest import CORPUS_DIR, make_document

CONTEXT = ContextLimits(262_144)


def test_fits_with_full_reserve() -> None:
    budget = plan_budget(240_300, CONTEXT, 16_384)
    assert budget.fits
    assert budget.max_tokens == 16_384
    assert budget.warnings == []


def test_reserve_shrinks_with_warning() -> None:
    budget = plan_budget(255_000, CONTEXT, 16_384)
    assert budget.fits
    assert budget.max_tokens == 262_144 - 1 - 255_000
    assert "reduced from 16,384" in budget.warnings[0]


def test_refused_when_even_the_floor_does_not_fit() -> None:
    budget = plan_budget(261_000, CONTEXT, 16_384)
    assert not budget.fits
    assert budget.binding is Limit.CONTEXT
    assert budget.overflow == 261_000 - (262_144 - 1 - 2_048)


def test_server_input_limit_is_respected() -> None:
    limits = ContextLimits(262_144, max_input=99_000)
    assert not plan_budget(100_000, limits, 16_384).fits
    assert plan_budget(98_000, limits, 16_384).fits
    assert plan_budget(99_000, limits, 16_384).fits  # SGLang aborts only above it


def test_the_input_limit_binds_with_its_own_numbers() -> None:
    # The case from issue 7: a small KV pool, a huge context.
    budget = plan_budget(910, ContextLimits(262_144, max_input=900), 16_384)
    assert not budget.fits
    assert budget.binding is Limit.MAX_INPUT
    assert budget.prompt_limit == 900
    assert budget.overflow == 10
    text = explain_limit(budget)
    assert "at most 900 prompt tokens" in text and "max_req_input_len" in text
    assert "leaves" not in text  # not the false "context of 262,144 leaves 260,095"


def test_a_stated_context_is_named() -> None:
    budget = plan_budget(40_000, ContextLimits(32_768, stated_by="--context-length"), 4_096)
    assert "context of 32,768 tokens stated by --context-length" in explain_limit(budget)


def test_suggested_range_starts_where_the_range_starts() -> None:
    budget = plan_budget(400_000, CONTEXT, 16_384)
    suggestion = suggest_pages(PageRange(101, 400), budget)
    assert suggestion is not None
    first, last = suggestion.first, suggestion.last
    assert first == 101
    assert 101 <= last < 400
    assert (last - first + 1) < 300 * budget.prompt_limit / 400_000


def test_one_page_gets_no_page_range() -> None:
    budget = plan_budget(300_000, CONTEXT, 16_384)
    assert suggest_pages(PageRange(7, 7), budget) is None
    pages = make_document([(str(i), "x") for i in range(1, 11)]).pages
    words = remedy(budget, pages, PageRange(7, 7))
    assert "--pages" not in words and "single page" in words
    small_pool = plan_budget(910, ContextLimits(262_144, max_input=900), 16_384)
    assert "KV cache" in remedy(small_pool, pages, PageRange(1, 1))
    # A range is said in the page-range grammar, read back as the same pages.
    assert remedy(budget, pages, PageRange(3, 10)).endswith("--pages 3-8")


def test_too_large_message_has_both_numbers_and_a_range() -> None:
    err = DocumentTooLarge(
        "/x/big.pdf", needed=400_000, available=260_095, context=262_144, pages=300
    )
    text = str(err)
    assert text.startswith("/x/big.pdf: needs 400,000 prompt tokens")
    assert "262,144" in text
    assert "--pages 1-" in text
    assert 1 <= suggest_page_end(300, 400_000, 260_095) < 300 * 260_095 / 400_000


def test_one_page_refusal_never_suggests_pages_1_1() -> None:
    text = str(DocumentTooLarge("/x/one.pdf", 300_000, 260_095, 262_144, pages=1))
    assert "--pages" not in text and "single page" in text


@pytest.mark.parametrize("thinking", [True, False])
@pytest.mark.parametrize("question", ["", "What does clause 3 say?", "Übersicht? <|im_end|>"])
def test_whole_document_prompt_is_document_plus_a_fixed_overhead(
    question: str, thinking: bool
) -> None:
    # The library knows only a document's token count; this identity makes its "Fits"
    # column and the budget bar (which counts the whole prompt) the same number.
    docs = [
        make_document([("i", "Preface."), ("1", "Terms <think> and </document> too.")]),
        make_document([(str(i), f"Clause {i}. " + "word " * 50) for i in range(1, 30)], "T"),
        make_document([("1", "")], title=""),
    ]
    for path in (
        CORPUS_DIR / "004-pdflatex-4-pages" / "pdflatex-4-pages.pdf",
        CORPUS_DIR / "009-pdflatex-geotopo" / "GeoTopo-komprimiert.pdf",
    ):
        docs.append(extract(Path(path)))
    for doc in docs:
        exact = count_prompt_tokens(doc, full_range(doc), question, thinking)
        assert exact == doc.tokens + prompt_overhead(question, thinking), doc.title


def test_document_budget_is_the_full_count_budget() -> None:
    doc = make_document([(str(i), "clause " * 400) for i in range(1, 21)])
    limits = ContextLimits(8_192, max_input=8_000)
    exact = count_prompt_tokens(doc, PageRange(1, 20), "", True)
    assert document_budget(doc.tokens, limits, 4_096) == plan_budget(exact, limits, 4_096)

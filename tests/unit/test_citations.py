"""Citations resolve to pages; quotes are verified, found elsewhere, or not found."""

from __future__ import annotations

from desktop.answering.citations import (
    PageIndex,
    QuoteStatus,
    check_answer_quotes,
    check_quotes,
    find_citations,
    normalize_words,
)
from desktop.documents.model import Page

PAGES = [
    Page(1, "i", "Preface of the agree-\nment between the parties."),
    Page(2, "ii", "Table of contents"),
    Page(3, "1", "The ﬁrst clause: liability is capped at EUR 2,000,000."),
    Page(4, "2", "Termination requires 90 days written notice."),
    Page(5, "1", "A second page labelled 1 (appendix numbering restarts)."),
]


def test_citations_resolve_labels_ranges_and_duplicates() -> None:
    index = PageIndex(PAGES)
    answer = "See [p. 2] and [pp. i-ii], also [p. 1 (#5)], [Page 1, 2] and [p. 99]."
    cites = find_citations(answer, index)
    assert [c.pages for c in cites] == [(4,), (1, 2), (5,), (3, 4), ()]
    assert answer[cites[0].start : cites[0].end] == "[p. 2]"
    assert cites[4].first_page is None
    assert find_citations("a [path] and [pinned] note", index) == []


def test_normalisation_handles_pdf_noise() -> None:
    assert normalize_words("agree-\nment") == "agreement"
    assert normalize_words("ﬁrst “Clause”") == "first clause"


def test_quote_checks() -> None:
    index = PageIndex(PAGES)
    answer = (
        'The cap: "liability is capped at EUR 2,000,000" [p. 1]. '
        'Notice: "requires 90 days written notice" [p. i]. '
        'Invented: "liability is unlimited for all parties" [p. 1]. '
        'Scattered: "clause liability capped" [p. 1]. '
        '"agreement between the parties" [p. i].'
    )
    checks = check_quotes(answer, index)
    assert [c.status for c in checks] == [
        QuoteStatus.VERIFIED,
        QuoteStatus.OTHER_PAGE,
        QuoteStatus.NOT_FOUND,
        QuoteStatus.NOT_FOUND,
        QuoteStatus.VERIFIED,
    ]
    assert checks[1].found_on == 4
    assert checks[0].cited == (3,)


def test_quotes_restating_the_question_are_not_checked() -> None:
    index = PageIndex(PAGES)
    answer = 'You asked "what is the liability cap of the contract" and "so capped" [p. 1].'
    checks = check_answer_quotes(answer, "What is the liability cap of the contract?", index)
    assert [c.quote for c in checks] == []  # "so capped" has too few words to check
    answer += ' Also "the moon is made of cheese" [p. 1].'
    [check] = check_answer_quotes(answer, "What is the liability cap of the contract?", index)
    assert check.status is QuoteStatus.NOT_FOUND

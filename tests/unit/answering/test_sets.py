"""A set of documents in one prompt: layout, exact counts, letters, citations per document."""

from __future__ import annotations

from pathlib import Path

import pytest

from desktop.answering.ask_json import citation_json
from desktop.answering.citations import (
    QuoteStatus,
    check_citations,
    check_set_citations,
    find_citations,
    index_for,
    set_indexes,
)
from desktop.answering.prompt import (
    build_set_messages,
    count_set_prompt_tokens,
    render_chat,
    set_cacheable_prefix,
)
from desktop.answering.sets import build_set, split_ranges
from desktop.documents import tokens
from desktop.documents.ingest import extract
from desktop.documents.model import Document
from desktop.errors import UsageError
from tests.support.documents import three_kinds


@pytest.fixture
def three(tmp_path: Path) -> list[Document]:
    """A PDF with printed labels, a Word contract and a meeting transcript."""
    return [extract(path) for path in three_kinds(tmp_path)]


def test_each_document_whole_in_order_with_its_letter_and_anchors(three: list[Document]) -> None:
    docset = build_set(three)
    system = build_set_messages(docset, "What is agreed?")[0]["content"]
    heads = [
        system.index(f'<document id="{x}">\nTitle: {d.title}\n')
        for x, d in zip("ABC", three, strict=True)
    ]
    assert heads == sorted(heads)
    # Every document's own anchors, in its own block, whole.
    a, b, c = (system[heads[0] : heads[1]], system[heads[1] : heads[2]], system[heads[2] :])
    assert "[Page i]\nPreface. The board met in January." in a
    assert "[Page 2]\nOutlook." in a
    assert "[§ 4.2 ¶ 1] Invoices are due within 30 days." in b
    assert "[00:41:12] Alice: We agree to revisit hiring in March." in c
    for block, doc in zip((a, b, c), three, strict=True):
        assert block.count("[Page ") == len(doc.pages)
    # The instructions never say how many documents there are.
    instructions = system[: heads[0]]
    for word in ("three", "3 documents", "two", "2 documents"):
        assert word not in instructions


def test_set_count_is_exact_from_stored_page_counts(three: list[Document]) -> None:
    for ranges in ((), ("A:2-3", "C:00:05:12..")):
        docset = build_set(three, ranges)
        for thinking in (True, False):
            rendered = render_chat(build_set_messages(docset, "What is agreed?"), thinking)
            exact = len(tokens.encode_with_special(rendered))
            assert count_set_prompt_tokens(docset, "What is agreed?", thinking) == exact


def test_appending_a_document_keeps_the_earlier_documents_prefix(three: list[Document]) -> None:
    two = set_cacheable_prefix(build_set(three[:2]))
    three_docs = set_cacheable_prefix(build_set(three))
    through_b = two[: two.rindex("</document>") + len("</document>")]
    assert three_docs.startswith(through_b)
    # A second question about the same set shares the whole set.
    q1 = render_chat(build_set_messages(build_set(three), "First?"), True)
    q2 = render_chat(build_set_messages(build_set(three), "Second?"), True)
    assert q1.startswith(three_docs) and q2.startswith(three_docs)


def test_ranges_name_their_letter(three: list[Document]) -> None:
    docset = build_set(three, ["A:1..2", "C:00:05:02..00:41:12"])
    assert [(m.pages.first, m.pages.last) for m in docset.members] == [(2, 3), (1, 5), (1, 3)]
    note = build_set_messages(docset, "Q?")[1]["content"]
    assert note.startswith("(Only some pages are shown: of document A, pages 2-3 of 3")
    assert "document B" not in note
    with pytest.raises(UsageError, match="names its document's letter"):
        split_ranges(["1-40"], 3)
    with pytest.raises(UsageError, match="there is no document D"):
        split_ranges(["D:1-2"], 3)
    with pytest.raises(UsageError, match="already has a range"):
        split_ranges(["A:1", "A:2"], 3)


def test_the_same_document_twice_is_refused(three: list[Document]) -> None:
    with pytest.raises(UsageError, match="the same document is given twice"):
        build_set([three[0], three[1], three[0]])


def test_citation_grammar_reads_letters_and_todays_forms() -> None:
    text = "[A p. 12] [B pp. 3-5] [B § 4.2 ¶ 3] [C 00:41:12] [p. 12] [pp. 3, 7] [P 12] [p. A-2]"
    refs = find_citations(text)
    assert [(r.document, r.label) for r in refs] == [
        ("A", "12"),
        ("B", "3-5"),
        ("B", "§ 4.2 ¶ 3"),
        ("C", "00:41:12"),
        (None, "12"),
        (None, "3, 7"),
        (None, "12"),
        (None, "A-2"),
    ]


def test_quotes_are_checked_against_the_cited_document(three: list[Document]) -> None:
    docset = build_set(three)
    answer = (
        'Revenue: "Revenue rose to 12 million euros" [A p. 1]. '
        'Payment: "Invoices are due within 30 days" [B § 4.2 ¶ 1]. '
        'Hiring: "We agree to revisit hiring in March" [C 00:41:12]. '
        'Wrong letter: "Invoices are due within 30 days" [A p. 1]. '
        'Wrong page: "Revenue rose to 12 million euros" [A p. 2]. '
        'Nowhere: "the parties shall meet weekly" [B § 3]. '
        "Unquoted [C 00:05:30]. No such document [D p. 1]."
    )
    checks = check_set_citations(answer, set_indexes(docset))
    got = [(c.document, c.status, c.pages) for c in checks]
    assert got == [
        ("A", QuoteStatus.VERIFIED, (2,)),
        ("B", QuoteStatus.VERIFIED, (4,)),
        ("C", QuoteStatus.VERIFIED, (3,)),
        ("A", QuoteStatus.OTHER_DOCUMENT, (2,)),
        ("A", QuoteStatus.OTHER_PAGE, (3,)),
        ("B", QuoteStatus.NOT_FOUND, (5,)),
        ("C", QuoteStatus.UNQUOTED, (2,)),
        ("D", QuoteStatus.UNQUOTED, ()),
    ]
    wrong = citation_json(checks[3])
    assert wrong["status"] == "other_document"
    assert wrong["found_in"] == [{"document": "B", "pages": [4]}]
    assert citation_json(checks[4])["found_on"] == [2]


def test_single_document_checks_keep_todays_json(three: list[Document]) -> None:
    doc = three[0]
    [check] = check_citations('"Revenue rose to 12 million euros" [p. 1]', index_for(doc))
    assert citation_json(check) == {
        "pages": [2],
        "label": "1",
        "quote": "Revenue rose to 12 million euros",
        "status": "verified",
        "found_on": [2],
    }

"""One citation grammar, one label index, quote checks on real text, and `ask` reporting them."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pypdfium2 as pdfium
import pytest

from desktop.answering.ask_json import citation_json
from desktop.answering.citations import (
    CHECK_VERSION,
    CheckedCitations,
    CitationCheck,
    PageIndex,
    QuoteStatus,
    answer_checks,
    as_quote_checks,
    check_answer,
    check_citations,
    find_citations,
    index_for,
    normalize_words,
)
from desktop.answering.pages import (
    LabelIndex,
    PageRange,
    PageRangeError,
    describe,
    format_range,
    parse_range,
)
from desktop.documents.ingest import extract
from desktop.documents.model import Document, Page
from desktop.store.db import AnswerKey, Store
from tests.conftest import API_KEY, CORPUS_DIR
from tests.support.cli import longdoc
from tests.support.sglang_server import FakeSGLang

GEOTOPO_PDF = Path("009-pdflatex-geotopo") / "GeoTopo-komprimiert.pdf"

PAGES = [
    Page(1, "i", "Preface of the agree-\nment between the parties."),
    Page(2, "II", "Table of contents"),
    Page(3, "1", "The ﬁrst clause: liability is capped at EUR 2,000,000."),
    Page(4, "2", "Termination requires 90 days written notice."),
    Page(5, "1", "A second page labelled 1 (appendix numbering restarts)."),
    Page(6, "A", "Annex title page."),
    Page(7, "A-1", "Annex page one."),
    Page(8, "A-2", "Annex page two: the “service levels”  are   binding."),
    Page(9, "A-3", "Annex page three."),
]


@pytest.fixture(scope="module")
def geotopo() -> Document:
    """GeoTopo as ingested: labels i, ii, iii, then 1..; PDFium already joined hyphenations."""
    return extract(CORPUS_DIR / GEOTOPO_PDF)


# --- grammar ---------------------------------------------------------------------------


def test_every_citation_form_is_found_with_spans_for_each_label() -> None:
    text = (
        "a [page 12] b [p 12] c [P. 12] d [p. 12] e [pp. 3-5] f [p. A-2] g [p. iv] "
        "h [pp. 3, 7] i [Pages 3 and 7] j [p.12] k [p. 1 (#5)] l [pp. A-1–A-3] m [00:41:12]"
    )
    refs = find_citations(text)
    assert [r.label for r in refs] == [
        "12", "12", "12", "12", "3-5", "A-2", "iv", "3, 7", "3 and 7", "12", "1 (#5)",
        "A-1–A-3", "00:41:12",
    ]  # fmt: skip
    assert all(text[r.start : r.end] == r.text for r in refs)
    parts = [[text[p.start : p.end] for p in r.parts] for r in refs]
    assert parts[7] == ["3", "7"]
    assert parts[8] == ["3", "7"]
    assert parts[10] == ["1 (#5)"]


def test_things_that_are_not_citations() -> None:
    text = "a [path] and [pinned] note, [p] alone, [p. see below], [x](y), [12] and [page]"
    assert find_citations(text) == []


def test_labels_resolve_case_insensitively_and_hyphenated_labels_win() -> None:
    index = PageIndex(PAGES)
    answer = (
        "See [p. 2] and [pp. i-ii], also [p. 1 (#5)], [Page 1, 2], [p. 99], [p. A-2], "
        "[P. a-2], [pp. A-1–A-3], [pp. A-1-A-3], [p. ii], [p. I], [pp. A-1..A-2], [p. A]"
    )
    pages = [index.pages_for(r) for r in find_citations(answer)]
    assert pages == [
        (4,), (1, 2), (5,), (3, 4), (), (8,), (8,), (7, 8, 9), (7, 8, 9), (2,), (1,), (7, 8),
        (6,),
    ]  # fmt: skip
    assert index.resolve("#3") == 3
    assert index.resolve("#30") is None
    assert index.resolve_range("A-9") == ()


def test_word_paragraph_anchors_are_citations_resolved_by_the_document_kind() -> None:
    pages = [Page(1, "¶ 1", "Intro."), Page(2, "§ 4.2", "Payment."), Page(3, "§ 4.2 ¶ 12", "x")]
    text = "Pay [§ 4.2 ¶ 3], see [§4.2], [§ 4.2, ¶ 14] and [¶ 1]; not [§] or [§ a b]."
    refs = find_citations(text)
    assert [[p.text for p in r.parts] for r in refs] == [
        ["§ 4.2 ¶ 3"],
        ["§4.2"],
        ["§ 4.2, ¶ 14"],
        ["¶ 1"],
    ]

    def paragraphs(anchor: str) -> int | None:
        """Stands in for the Word reader's own rule: a paragraph is on its section's page."""
        return {"§ 4.2 ¶ 3": 2, "§ 4.2, ¶ 14": 3}.get(anchor)

    index = PageIndex(pages, anchors=paragraphs)
    assert [index.pages_for(r) for r in refs] == [(2,), (2,), (3,), (1,)]
    assert [PageIndex(pages).pages_for(r) for r in refs] == [(), (2,), (), (1,)]


def test_a_cited_moment_resolves_to_the_transcript_section_it_falls_in() -> None:
    index = PageIndex(
        [Page(1, "00:00:00", "a"), Page(2, "00:05:00", "b"), Page(3, "00:10:00", "c")]
    )
    [ref] = find_citations("He said so [00:07:41].")
    assert index.pages_for(ref) == (2,)
    [check] = check_citations('"b" and "said: b c d" [00:07:41]', index)
    assert check.status is QuoteStatus.NOT_FOUND and check.label == "00:07:41"
    assert index.resolve("00:05:00") == 2
    assert PageIndex(PAGES).resolve("00:05:00") is None


# --- normalisation ---------------------------------------------------------------------


def test_normalisation_forgives_extraction_noise() -> None:
    assert normalize_words("agree-\nment") == "agreement"
    assert normalize_words("agree-  \r\n  ment") == "agreement"
    assert normalize_words("well-known") == normalize_words("well-\nknown")
    assert normalize_words("ﬁrst “Clause”  and   ﬂow") == "first clause and flow"
    assert normalize_words("ＦＵＬＬ\u00a0width") == "full width"  # NFKC
    assert normalize_words("soft\u00adhyphen it’s") == normalize_words("softhyphen it's")
    assert normalize_words("Straße") == "strasse"
    assert normalize_words("  line\nbreaks\tand  spaces ") == "line breaks and spaces"


# --- quote checks on real text ---------------------------------------------------------


def test_quote_statuses_on_real_text(geotopo: Document) -> None:
    index = PageIndex(geotopo.pages)
    assert [p.label for p in geotopo.pages[:4]] == ["i", "ii", "iii", "1"]
    answer = (
        # correct, and across a line break ("Übungen\nund")
        'It has "die Mitschriften einiger Übungen und Tutorien" [p. ii]. '
        # across a word PDFium joined at a hyphenated line end (Übungsauf-gaben)
        '"ihre Übungsaufgaben und Lösungen zu benutzen" [p. II]. '
        # printed "Schwarz-Weiß" broken after its hyphen; extracted as "SchwarzWeiß"
        '"in A5 (Schwarz-Weiß, Ringbindung) für 10 Euro" [p. ii]. '
        # a real quote with the wrong page
        '"Dieses Skript wurde im Wintersemester 2013/2014" [p. iii]. '
        # invented
        '"Die Topologie ist eine Teilgebiet der Chemie" [p. ii]. '
        # stitched from words that are all on page ii, but not in this order
        '"Skript kostenlos Ringbindung Euro Tutorien" [p. ii]. '
        # the two ends of a real sentence with its middle left out
        '"Dieses Skript wurde einiger Übungen und Tutorien" [p. ii]. '
        "And a plain citation [p. 1]."
    )
    checks = check_citations(answer, index, "Worum geht es?")
    assert [c.status for c in checks] == [
        QuoteStatus.VERIFIED,
        QuoteStatus.VERIFIED,
        QuoteStatus.VERIFIED,
        QuoteStatus.OTHER_PAGE,
        QuoteStatus.NOT_FOUND,
        QuoteStatus.NOT_FOUND,
        QuoteStatus.NOT_FOUND,
        QuoteStatus.UNQUOTED,
    ]
    assert [c.found_on for c in checks] == [(2,), (2,), (2,), (2,), None, None, None, None]
    assert [c.pages for c in checks] == [(2,), (2,), (2,), (3,), (2,), (2,), (2,), (4,)]
    assert citation_json(checks[3]) == {
        "pages": [3],
        "label": "iii",
        "quote": "Dieses Skript wurde im Wintersemester 2013/2014",
        "status": "other_page",
        "found_on": [2],
    }
    assert citation_json(checks[-1])["quote"] is None
    assert answer[checks[0].start : checks[0].end].endswith("[p. ii]")


def test_hyphenation_kept_by_the_extractor_still_verifies() -> None:
    """GeoTopo's page ii with its hyphenated line ends as printed (PDFium marks them)."""
    pdf = pdfium.PdfDocument(CORPUS_DIR / GEOTOPO_PDF)
    try:
        raw = pdf[1].get_textpage().get_text_range()
    finally:
        pdf.close()
    text = raw.replace("\ufffe", "-\n").replace("\r\n", "\n")
    assert "Übungsauf-\ngaben" in text
    index = PageIndex([Page(1, "i", "Title"), Page(2, "ii", text)])
    answer = (
        '"ihre Übungsaufgaben und Lösungen zu benutzen" [p. ii] and '
        '"für einige Korrekturvorschläge und einen gut strukturierten" [p. ii] and '
        '"ihre Übungsauf gaben und Lösungen" [p. ii].'
    )
    statuses = [c.status for c in check_citations(answer, index)]
    assert statuses == [QuoteStatus.VERIFIED, QuoteStatus.VERIFIED, QuoteStatus.NOT_FOUND]


def test_quotes_restating_the_question_and_short_quotes_are_not_checked() -> None:
    index = PageIndex(PAGES)
    answer = 'You asked "what is the liability cap of the contract" and "so capped" [p. 1].'
    checks = check_citations(answer, index, "What is the liability cap of the contract?")
    assert [(c.quote, c.status) for c in checks] == [(None, QuoteStatus.UNQUOTED)]
    answer += ' Also "the moon is made of cheese" [p. 1]. And "Annex page two" alone.'
    checks = check_citations(answer, index, "What is the liability cap of the contract?")
    assert [(c.quote, c.status, c.found_on) for c in checks] == [
        (None, QuoteStatus.UNQUOTED, None),
        ("the moon is made of cheese", QuoteStatus.NOT_FOUND, None),
        ("Annex page two", QuoteStatus.VERIFIED, (8,)),  # no citation: it only has to exist
    ]
    quotes = as_quote_checks(checks)
    assert [(q.quote, q.cited, q.found_on) for q in quotes] == [
        ("the moon is made of cheese", (3,), None),
        ("Annex page two", (), 8),
    ]


def test_a_quote_may_run_over_a_page_break_and_labels_may_repeat() -> None:
    index = PageIndex(PAGES)
    answer = (
        '"requires 90 days written notice. A second page" [pp. 2-1 (#5)], '
        '"service levels are binding" [p. A-2], "A second page labelled 1" [p. 1].'
    )
    checks = check_citations(answer, index)
    assert [(c.status, c.found_on) for c in checks] == [
        (QuoteStatus.VERIFIED, (4, 5)),
        (QuoteStatus.VERIFIED, (8,)),
        # [p. 1] is the first page labelled 1; the model should have written (#5)
        (QuoteStatus.OTHER_PAGE, (5,)),
    ]


def test_the_index_is_built_once_per_document_and_range() -> None:
    doc = Document("f" * 64, "/x.pdf", "pdf", "t", list(PAGES))
    whole = index_for(doc)
    assert index_for(doc) is whole
    assert index_for(doc, 1, len(PAGES)) is whole
    part = index_for(doc, 6, 9)
    assert part is not whole
    assert [p.number for p in part.pages] == [6, 7, 8, 9]
    # Within pages A..A-3 only, the quote from page 3 is not there.
    [check] = check_citations('"liability is capped at EUR" [p. A]', part)
    assert check.status is QuoteStatus.NOT_FOUND


def test_checked_citations_are_stored_with_the_answer(tmp_path: Path) -> None:
    store = Store(tmp_path / "db.sqlite")
    doc = Document("e" * 64, "/x.pdf", "pdf", "t", list(PAGES))
    store.save_document(doc)
    key = AnswerKey(doc.sha256, "Cap?", "m", "1", True, 1, len(PAGES), 100)
    answer_id = store.start_answer(key, {"pid": 1})
    text = 'Capped: "liability is capped at EUR 2,000,000" [p. 1], see [p. A-2].'
    checked = check_answer(text, doc, 1, len(PAGES), "Cap?")
    store.finish_answer(answer_id, status="complete", answer=text, reasoning="", citations=checked)
    first = list(checked.items)
    assert [c.status for c in first] == [QuoteStatus.VERIFIED, QuoteStatus.UNQUOTED]
    again = store.get_answer(answer_id)
    assert again is not None
    assert again.extra["pid"] == 1
    assert again.citations is not None and again.citations.version == CHECK_VERSION
    # Read back as stored, not checked again: a changed text would give another result.
    changed = Document(doc.sha256, doc.path, "pdf", "t", [Page(1, "1", "nothing")])
    assert answer_checks(again, changed) == first
    assert [CitationCheck.from_stored(c.to_stored()) for c in first] == first
    store.close()


def test_reading_old_checks_checks_again_and_writes_nothing(tmp_path: Path) -> None:
    store = Store(tmp_path / "db.sqlite")
    doc = Document("e" * 64, "/x.pdf", "pdf", "t", list(PAGES))
    store.save_document(doc)
    key = AnswerKey(doc.sha256, "Cap?", "m", "1", True, 1, len(PAGES), 100)
    answer_id = store.start_answer(key)
    text = 'Capped: "liability is capped at EUR 2,000,000" [p. 1].'
    old = CheckedCitations(CHECK_VERSION - 1, ())
    store.finish_answer(answer_id, status="complete", answer=text, reasoning="", citations=old)
    answer = store.get_answer(answer_id)
    assert answer is not None and answer.citations == old
    assert [c.status for c in answer_checks(answer, doc)] == [QuoteStatus.VERIFIED]
    again = store.get_answer(answer_id)
    assert again is not None and again.citations == old  # a read wrote nothing
    store.close()


# --- page ranges -----------------------------------------------------------------------


def test_page_range_grammar() -> None:
    labels = LabelIndex(PAGES)
    assert parse_range("2-4", PAGES) == PageRange(2, 4)
    assert parse_range("5-", PAGES) == PageRange(5, 9)
    assert parse_range("-3", PAGES) == PageRange(1, 3)
    assert parse_range("7", PAGES) == PageRange(7, 7)  # digits alone: physical
    assert parse_range("3-99", labels) == PageRange(3, 9)
    assert parse_range("i..2", PAGES) == PageRange(1, 4)
    assert parse_range("I..ii", PAGES) == PageRange(1, 2)
    assert parse_range("A-1..A-3", PAGES) == PageRange(7, 9)
    assert parse_range("A-2", PAGES) == PageRange(8, 8)  # one printed label
    assert parse_range("a-2", PAGES) == PageRange(8, 8)
    assert parse_range("A..", PAGES) == PageRange(6, 9)
    assert parse_range("1..1", PAGES) == PageRange(3, 3)  # the label "1", first one
    assert parse_range("#5..A", PAGES) == PageRange(5, 6)


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("B-7", ["'B-7'", "no page is labelled 'B-7'", "labels i to A-3", "1-9"]),
        ("iv..A-2", ["'iv..A-2'", "'iv'", "labels i to A-3"]),
        ("A-3..A-1", ["runs backwards"]),
        ("12-20", ["starts after the last page"]),
        ("0-3", ["starts before page 1"]),
        ("", ["empty"]),
    ],
)
def test_page_range_errors_name_the_range_and_the_labels(text: str, words: list[str]) -> None:
    with pytest.raises(PageRangeError) as caught:
        parse_range(text, PAGES)
    for word in words:
        assert word in str(caught.value)


def test_formatted_ranges_read_back_and_describe_labels() -> None:
    for first, last in [(1, 4), (7, 9), (8, 8), (3, 3), (5, 5), (2, 6)]:
        for labels in (False, True):
            text = format_range(PAGES, first, last, labels=labels)
            assert parse_range(text, PAGES) == PageRange(first, last), text
    assert format_range(PAGES, 1, 4) == "1-4"
    assert format_range(PAGES, 1, 4, labels=True) == "i..2"
    assert format_range(PAGES, 8, 8, labels=True) == "A-2"
    assert format_range(PAGES, 5, 5, labels=True) == "5-5"  # the second "1": by position
    numbered = [Page(n, str(n), "x") for n in range(1, 11)]
    assert format_range(numbered, 3, 3, labels=True) == "3"
    assert describe(PAGES, PageRange(1, 9)) == "all 9 pages"
    assert describe(PAGES, PageRange(7, 9)) == "pages 7-9 of 9 (printed A-1 to A-3)"
    assert describe(PAGES, PageRange(8, 8)) == "page 8 of 9 (printed A-2)"
    assert describe(numbered, PageRange(2, 4)) == "pages 2-4 of 10"


# --- the real CLI against the test server ----------------------------------------------


@pytest.fixture
def server() -> Iterator[FakeSGLang]:
    with FakeSGLang(api_key=API_KEY, context_length=262_144) as fake:
        yield fake


def ask_geotopo(server: FakeSGLang, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``longdoc ask GeoTopo ARGS...`` without thinking, against ``server``."""
    pdf = str(CORPUS_DIR / GEOTOPO_PDF)
    return longdoc("ask", pdf, *args, "--no-think", home=home, server=server, api_key=API_KEY)


ANSWER = (
    'Er schreibt "die Mitschriften einiger Übungen und Tutorien" [p. ii], '
    '"Dieses Skript wurde im Wintersemester 2013/2014" [p. III] '
    'und "Die Topologie ist ein Teilgebiet der Chemie" [p. ii]; siehe auch [p. iii].'
)


def test_ask_json_reports_citations_and_a_cached_answer_keeps_them(
    server: FakeSGLang, tmp_path: Path
) -> None:
    server.behaviour.update(answer_text=ANSWER)
    first = ask_geotopo(server, tmp_path, "Worum geht es?", "--json", "--pages", "i..iii")
    assert first.returncode == 0, first.stderr
    data = json.loads(first.stdout)
    assert data["from_cache"] is False
    assert data["citations"] == [
        {
            "pages": [2],
            "label": "ii",
            "quote": "die Mitschriften einiger Übungen und Tutorien",
            "status": "verified",
            "found_on": [2],
        },
        {
            "pages": [3],
            "label": "III",
            "quote": "Dieses Skript wurde im Wintersemester 2013/2014",
            "status": "other_page",
            "found_on": [2],
        },
        {
            "pages": [2],
            "label": "ii",
            "quote": "Die Topologie ist ein Teilgebiet der Chemie",
            "status": "not_found",
            "found_on": None,
        },
        {"pages": [3], "label": "iii", "quote": None, "status": "unquoted", "found_on": None},
    ]
    # The model saw pages i..iii: the printed-label range is physical pages 1-3.
    [body] = server.chat_bodies
    anchors = [ln for ln in body["messages"][0]["content"].splitlines() if ln.startswith("[Page")]
    assert anchors == ["[Page i]", "[Page ii]", "[Page iii]"]
    store = Store(tmp_path / "longdoc.db")
    [stored] = store.answers_for(data["document"]["sha256"])
    store.close()
    assert stored.citations is not None and len(stored.citations.items) == 4
    again = ask_geotopo(server, tmp_path, "Worum geht es?", "--json", "--pages", "1-3")
    cached = json.loads(again.stdout)
    assert cached["from_cache"] is True
    assert cached["citations"] == data["citations"]


def test_plain_ask_flags_unverified_quotes_in_the_answer(
    server: FakeSGLang, tmp_path: Path
) -> None:
    server.behaviour.update(answer_text=ANSWER)
    result = ask_geotopo(server, tmp_path, "Worum geht es?", "--pages", "ii..iii")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert out.startswith(ANSWER)
    note = out[len(ANSWER) :]
    assert "Unverified quotes" in note
    assert '"Dieses Skript wurde im Wintersemester 2013/2014" [p. III]: not on the cited' in note
    assert "found on p. ii" in note
    assert '"Die Topologie ist ein Teilgebiet der Chemie" [p. ii]: not found' in note
    assert "Mitschriften" not in note  # verified quotes are not flagged
    assert "pages 2-3 of 117 (printed ii to iii)" in result.stderr


def test_bad_page_range_is_one_error_line_naming_the_labels(
    server: FakeSGLang, tmp_path: Path
) -> None:
    result = ask_geotopo(server, tmp_path, "Q?", "--pages", "x..iii")
    assert result.returncode == 2
    [line] = result.stderr.strip().splitlines()
    assert line.startswith("Error: ")
    assert "'x..iii'" in line and "no page is labelled 'x'" in line
    assert "labels i to" in line
    assert not server.chat_bodies


def test_a_found_quote_is_located_in_the_page_text_for_highlighting(geotopo: Document) -> None:
    text = "The ﬁrst  clause: “liability” is cap-\n  ped at EUR 2,000,000. Die Gro\u0308ße."
    index = PageIndex([Page(1, "1", text), *PAGES[1:]])
    span = index.locate(1, "first clause: liability is capped at")
    assert span is not None
    assert text[span[0] : span[1]] == "ﬁrst  clause: “liability” is cap-\n  ped at"
    span = index.locate(1, "Die Größe")
    assert span is not None and text[span[0] : span[1]] == "Die Gro\u0308ße"
    assert index.locate(1, "EUR 2,000,000. Die Grö") is None  # words, not parts of words
    ending = PageIndex([Page(1, "1", "So sagt es Herr Mu\u0308.")])
    span = ending.locate(1, "sagt es Herr Mü")
    assert span is not None and span[1] == len("So sagt es Herr Mu\u0308")
    assert index.locate(1, "clause liability capped") is None
    assert index.locate(2, "first clause") is None
    page_ii = geotopo.pages[1]
    quote = "die Mitschriften einiger Übungen und Tutorien"
    span = PageIndex(geotopo.pages).locate(2, quote)
    assert span is not None
    assert page_ii.text[span[0] : span[1]] == "die Mitschriften einiger Übungen\nund Tutorien"

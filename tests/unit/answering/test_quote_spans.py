"""Where a quote stands, whole, for the viewer: on its page, over a line or a page break."""

from __future__ import annotations

from pathlib import Path

from desktop.answering.quote_spans import Span, pdf_spans, spans_in, text_spans
from desktop.documents.model import Page
from tests.support.pdf_maker import write_pdf


def pages(*texts: str) -> list[Page]:
    return [Page(number=i, label=str(i), text=t) for i, t in enumerate(texts, 1)]


def test_on_its_page_over_a_line_break_and_a_hyphen() -> None:
    doc = pages("Nothing here.", "The notice period is ninety\ndays from the sig-\nnature date.")
    [span] = text_spans(doc, 2, "notice period is ninety days from the signature date")
    assert span == Span(2, 4, len(doc[1].text) - 1, doc[1].text[4:-1])  # without the stop
    assert span.text.endswith("sig-\nnature date")


def test_over_a_page_break_either_way() -> None:
    doc = pages("Intro.", "The parties agree that the", "notice period is ninety days.", "End.")
    quote = "the parties agree that the notice period"
    expected = [
        Span(2, 0, len(doc[1].text), "The parties agree that the"),
        Span(3, 0, len("notice period"), "notice period"),
    ]
    assert text_spans(doc, 2, quote) == expected  # cited to where it starts
    assert text_spans(doc, 3, quote) == expected  # or to where it ends


def test_not_there_or_no_such_page() -> None:
    doc = pages("One page only.")
    assert text_spans(doc, 1, "two pages") == []
    assert text_spans(doc, 2, "one page") == []
    assert text_spans(doc, 1, "   ") == []


def test_a_pdf_gives_the_rectangles_of_its_own_characters(tmp_path: Path) -> None:
    pdf = write_pdf(
        tmp_path / "notice.pdf",
        [["The notice period is", "ninety days from signing."], ["Nothing else."]],
    )
    [span] = pdf_spans(pdf, 1, "period is ninety days")
    assert span.number == 1 and len(span.rects) >= 2  # two lines
    assert " ".join(span.text.split()) == "period is ninety days"
    tops = sorted(y for _, y, _, _ in span.rects)
    assert tops[-1] > tops[0]  # measured from the top: the second line is lower
    assert pdf_spans(pdf, 2, "period is ninety days") == []


def test_words_run_together_in_a_pdfs_own_characters() -> None:
    """PDFium may give ``thenoticeperiod`` where the stored text has its spaces restored."""
    glued = ["Preamble.", "Intheeventoftermination,thenoticeperiodisninetydays."]
    found = spans_in(lambda n: glued[n - 1], 2, 2, "the notice period is ninety days", spaces=False)
    assert [(s.number, s.text) for s in found] == [(2, "thenoticeperiodisninetydays")]
    assert spans_in(lambda n: glued[n - 1], 2, 2, "the notice period is ninety days") == []

"""PDF form fields and annotations read into the page text, where they appear, marked."""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest

from desktop.answering.citations import check_citations, index_for
from desktop.documents import extract, pdf_forms
from desktop.documents.ingest import require_text
from desktop.documents.pdf import UNREAD_KEY, UNREAD_PAGE, unread_pages
from desktop.errors import DocumentUnreadable
from tests.support.pdf_maker import (
    Comment,
    Field,
    FormPage,
    TextLine,
    filled_form,
    write_form_pdf,
)


def _line_with(text: str, needle: str) -> str:
    return next(line for line in text.splitlines() if needle in line)


def test_filled_form_values_are_in_the_page_text_next_to_their_labels(tmp_path: Path) -> None:
    doc = extract(write_form_pdf(tmp_path / "form.pdf", [filled_form(1), filled_form(2)]))
    first = doc.pages[0].text
    assert _line_with(first, "First name:") == "First name: [Field: first name 1] Lucía"
    assert _line_with(first, "Last name:") == "Last name: [Field: last name 1] Garzas Ortega"
    assert _line_with(first, "Country:") == "Country: [Field: country] Spain"
    assert _line_with(first, "accept") == "☒ I accept I accept the terms"
    assert _line_with(first, "decline") == "☐ I decline I decline the offer"
    assert _line_with(first, "Payment:") == "Payment: ☐ payment ☒ payment: Monthly"
    # Each page has its own values, and the labels keep their order.
    assert "[Field: policy 2] PX-0002-77" in doc.pages[1].text
    assert "PX-0002-77" not in first
    assert first.index("Insured amount:") < first.index("1250 EUR") < first.index("Country:")
    assert doc.empty_pages == []


def test_every_value_word_reaches_the_text(tmp_path: Path) -> None:
    """Recall of value words over a generated form: all of them, once each."""
    pages = [filled_form(n) for n in range(1, 6)]
    doc = extract(write_form_pdf(tmp_path / "form.pdf", pages))
    text = "\n".join(p.text for p in doc.pages)
    values = [f.value for page in pages for f in page.fields if f.kind in ("text", "combo")]
    words = [w for v in values for w in v.split()]
    assert words and all(w in text for w in words)
    assert text.count("Garzas Ortega") == 5


def test_form_values_unicode_multiline_lists_and_hidden(tmp_path: Path) -> None:
    page = FormPage(
        lines=[TextLine(72, 700, "Remarks:"), TextLine(72, 600, "Colours:")],
        fields=[
            Field("text", "remarks", (150, 690, 400, 712), "Première ligne\nSecond line"),
            Field(
                "list",
                "colours",
                (150, 590, 300, 612),
                "Red;Blue",
                options=("Red", "Green", "Blue"),
            ),
            Field("text", "secret", (72, 200, 200, 220), "hidden value", hidden=True),
            Field("text", "empty", (72, 300, 200, 320), ""),
            Field(
                "text", "form1[0].Page1[0].f1_01[0]", (72, 400, 200, 420), "x", tooltip="Your SSN"
            ),
        ],
    )
    text = extract(write_form_pdf(tmp_path / "f.pdf", [page])).pages[0].text
    assert "Remarks: [Field: remarks] Première ligne\nSecond line" in text
    assert "Colours: [Field: colours] Red; Blue" in text
    assert "hidden value" not in text
    assert "[Field: empty]" not in text
    assert "[Field: Your SSN] x" in text


def test_field_names_cannot_break_their_marker(tmp_path: Path) -> None:
    page = FormPage(fields=[Field("text", "a]b[c", (72, 700, 200, 720), "v")])
    text = extract(write_form_pdf(tmp_path / "f.pdf", [page])).pages[0].text
    assert text == "[Field: a)b(c] v"


def test_notes_free_text_and_signature(tmp_path: Path) -> None:
    page = FormPage(
        lines=[
            TextLine(72, 700, "The liability cap is 2 million."),
            TextLine(72, 650, "Payment within 30 days."),
            TextLine(72, 450, "Signed:"),
        ],
        comments=[
            Comment("Text", (400, 690, 420, 710), "Check the cap", "J. Smith"),
            Comment("FreeText", (72, 500, 300, 520), "Approved by legal"),
            Comment("Highlight", (72, 645, 200, 660), "Is 30 days standard?", "Ana"),
        ],
        fields=[
            Field(
                "signature", "sig", (72, 380, 300, 440), appearance="Digitally signed by Ana Ruiz"
            ),
        ],
    )
    text = extract(write_form_pdf(tmp_path / "notes.pdf", [page])).pages[0].text
    lines = text.splitlines()
    assert lines[:2] == ["The liability cap is 2 million.", "[Note: J. Smith] Check the cap"]
    assert lines[2:4] == ["Payment within 30 days.", "[Note: Ana] Is 30 days standard?"]
    assert "[Text box] Approved by legal" in lines
    assert "[Signature] Digitally signed by Ana Ruiz" in text
    assert text.index("Signed:") < text.index("[Signature]")


def test_a_page_with_only_annotations_is_not_image_only(tmp_path: Path) -> None:
    pages = [
        FormPage(lines=[TextLine(72, 700, "Cover")]),
        FormPage(comments=[Comment("Text", (72, 700, 90, 720), "Only a note here", "Bo")]),
        FormPage(fields=[Field("text", "total", (72, 700, 200, 720), "1,250 EUR")]),
    ]
    doc = extract(write_form_pdf(tmp_path / "notes.pdf", pages))
    assert doc.pages[1].text == "[Note: Bo] Only a note here"
    assert doc.pages[2].text == "[Field: total] 1,250 EUR"
    assert doc.empty_pages == []
    assert not any("OCR" in w or "image" in w for w in doc.warnings)


def test_a_pdf_whose_only_text_is_a_form_can_be_asked(tmp_path: Path) -> None:
    page = FormPage(fields=[Field("text", "name", (72, 700, 200, 720), "Lucía Garzas")])
    doc = extract(write_form_pdf(tmp_path / "f.pdf", [page]))
    require_text(doc)  # no "images only" refusal
    assert doc.warnings == []


def test_form_values_are_quotable(tmp_path: Path) -> None:
    doc = extract(write_form_pdf(tmp_path / "form.pdf", [filled_form(1), filled_form(2)]))
    index = index_for(doc)
    for answer in (
        'The policy is "[Field: policy 2] PX-0002-77" [p. 2].',
        'The applicant is "First name: [Field: first name 1] Lucía" [p. 1].',
        'The box "☒ I accept I accept the terms" [p. 1].',
    ):
        assert [c.status.value for c in check_citations(answer, index)] == ["verified"], answer


def test_unloadable_pages_are_kept_named_and_warned(tmp_path: Path) -> None:
    pages = [
        FormPage(lines=[TextLine(72, 700, "Page one text")]),
        FormPage(broken=True),
        FormPage(lines=[TextLine(72, 700, "Page three text")]),
        FormPage(broken=True),
    ]
    doc = extract(write_form_pdf(tmp_path / "damaged.pdf", pages))
    assert [p.text for p in doc.pages] == [
        "Page one text",
        UNREAD_PAGE,
        "Page three text",
        UNREAD_PAGE,
    ]
    assert unread_pages(doc.metadata) == [2, 4]
    assert doc.metadata[UNREAD_KEY] == "2, 4"
    unread = [w for w in doc.warnings if "could not be read" in w]
    assert len(unread) == 1 and "pages 2 and 4" in unread[0] and "2 of 4" in unread[0]
    assert not any("image" in w for w in doc.warnings)  # unread is not "scanned"


def test_a_pdf_with_no_loadable_page_is_unreadable(tmp_path: Path) -> None:
    path = write_form_pdf(tmp_path / "damaged.pdf", [FormPage(broken=True), FormPage(broken=True)])
    with pytest.raises(DocumentUnreadable, match="none of its pages can be read"):
        extract(path)


def test_corpus_forms_and_annotations(corpus: Path) -> None:
    form = extract(corpus / "012-libreoffice-form/libreoffice-form.pdf").pages[0].text
    assert "First Name [Field: First Name] Alice" in form
    assert "[Field: First Name 2] Bob" in form
    assert re.search(r"☐ gdpr Agree to privacy policy", form)
    notes = extract(corpus / "024-annotations/annotated_pdf.pdf").pages[0].text
    for words in ("This is a text annotation.", "Highlight comment", "[Note: Lucas] Hello world!"):
        assert words in notes


def test_documents_stored_by_an_older_reader_are_read_again(tmp_path: Path) -> None:
    """A library made before form values were read gets them on the next open."""
    from dataclasses import replace

    from desktop.documents.ingest import EXTRACTOR_VERSION
    from desktop.documents.model import Page
    from desktop.library import open_document
    from desktop.store.db import Store

    path = write_form_pdf(tmp_path / "form.pdf", [filled_form(1)])
    store = Store(tmp_path / "library.db")
    try:
        fresh = extract(path)
        name, _ = fresh.extractor.rsplit("/", 1)
        # As an older reader stored it: no form values, its own version.
        old = replace(
            fresh,
            extractor=f"{name}/{EXTRACTOR_VERSION - 1}",
            pages=[Page(p.number, p.label, "Application form, part 1") for p in fresh.pages],
        )
        store.save_document(old)
        doc, reused = open_document(path, store)
        assert not reused
        assert "[Field: first name 1] Lucía" in doc.pages[0].text
        again, reused = open_document(path, store)
        assert reused and again.pages == doc.pages
    finally:
        store.close()


def test_text_boxes_from_rich_text_or_their_appearance(tmp_path: Path) -> None:
    page = FormPage(
        lines=[TextLine(72, 700, "Top line"), TextLine(72, 500, "Lower line")],
        comments=[
            Comment(
                "FreeText", (72, 600, 300, 620), "", rich="<body><p>Rich &amp; bold</p></body>"
            ),
            Comment("FreeText", (72, 400, 300, 420), "", appearance="Typed on the page"),
            Comment("FreeText", (72, 300, 300, 320), ""),  # nothing to read
        ],
    )
    text = extract(write_form_pdf(tmp_path / "boxes.pdf", [page])).pages[0].text
    assert text.splitlines() == [
        "Top line",
        "[Text box] Rich & bold",
        "Lower line",
        "[Text box] Typed on the page",
    ]


def test_values_and_notes_longer_than_the_string_buffer_are_read_whole(tmp_path: Path) -> None:
    """Strings past the getters' 4,096-byte buffer are asked for again, through the same
    unconverted calls (pdf_forms._bare) as short ones."""
    note = " ".join(f"word{n}" for n in range(500))  # 3,889 characters: 7,778 bytes
    value = " ".join(f"value{n}" for n in range(400))
    page = FormPage(
        lines=[TextLine(72, 700, "Remarks:")],
        fields=[Field("text", "remarks", (150, 695, 500, 712), value=value)],
        comments=[Comment("Text", (72, 600, 90, 620), note, "Ana")],
    )
    text = extract(write_form_pdf(tmp_path / "long.pdf", [page])).pages[0].text
    assert f"Remarks: [Field: remarks] {value}" in text
    assert "[Note: Ana] word0 word1" in text
    assert f"[Note: Ana] {note}" in text


def test_visible_line_spans_split_as_the_search_finds_them() -> None:
    """The CR LF fast path of pdf_forms._visible_spans gives the regular expression's spans
    (lines, their blanks at both ends, Unicode blanks, blank lines, lone CR or LF)."""
    rng = random.Random(19)
    pieces = ["ab", " ", "\t", "\r\n", "\u3000", "\x1c", "\xa0", "x y", "\r", "\n", "é"]
    texts = ["", "\r\n", "  a  \r\n\r\n b\r\n", "a\rb\r\nc", "a\nb"]
    for _ in range(3000):
        weights = [3, 2, 1, 3, 1, 1, 1, 2, rng.choice((0, 1)), rng.choice((0, 1)), 1]
        texts.append("".join(rng.choices(pieces, weights, k=rng.randint(0, 30))))
    for text in texts:
        expected = [m.span(1) for m in pdf_forms._VISIBLE_LINE.finditer(text)]
        assert pdf_forms._visible_spans(text) == expected, repr(text)

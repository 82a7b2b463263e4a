"""A citation link in an answer shows the page its label names, in any form the core reads."""

from __future__ import annotations

from pytestqt.qtbot import QtBot

from desktop.documents.model import Document, Page
from desktop.ui.document_view import DocumentView
from desktop.ui.markdown_stream import inline, parse_citation_href

LABELS = ["i", "ii", "iii", "iv", "1", "2", "A", "A-1", "A-2", "A-3"]


def test_citation_links_resolve_through_the_core_label_index(qtbot: QtBot) -> None:
    view = DocumentView()
    qtbot.addWidget(view)
    pages = [Page(n, label, f"Text of page {label}.") for n, label in enumerate(LABELS, 1)]
    view.show_document(Document("c" * 64, "/nowhere/annex.txt", "text", "Annex", pages))
    answer = "See [p. IV], [P. a-2], [pp. A-1–A-3], [page 2], [p 1, A] and [p. A-9]."
    shown = []
    for span in inline(answer):
        if span.href is None:
            continue
        label, number = parse_citation_href(span.href)
        shown.append(view.current_page() if view.go_to_citation(label, number) else None)
    # IV is "iv"; A-2 is the annex page, not "page A"; a range opens at its first page;
    # A-9 does not exist (and is not page A either).
    assert shown == [4, 9, 8, 6, 5, 7, None]

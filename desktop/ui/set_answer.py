"""A set's (or a comparison's) answer as HTML: citations as links, each quote marked.

Shared by the "Ask about these documents" window and the Compare window. A citation link
is ``cite:N`` (the N-th checked citation), so a click can open the cited document (by its
letter) at the cited page with the quote highlighted.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Sequence

from PySide6.QtCore import QUrl
from PySide6.QtWidgets import QLabel, QTextBrowser

from desktop.answering.events import AnswerDelta, Stored
from desktop.answers import CitationCheck, QuoteStatus, StoredAnswer

MARKS = {
    QuoteStatus.VERIFIED: ("✓", "#2e7d32", "found in the cited document, on the cited page"),
    QuoteStatus.OTHER_PAGE: ("⚠", "#b26a00", "found in the cited document, on another page"),
    QuoteStatus.OTHER_DOCUMENT: ("⚠", "#b26a00", "not in the cited document: in another one"),
    QuoteStatus.NOT_FOUND: ("✗", "#c62828", "not found in the documents"),
}


def answer_html(text: str, checks: Sequence[CitationCheck]) -> str:
    """``text`` with every citation a link and every checked quote marked after it."""
    out: list[str] = []
    position = 0
    for n, check in enumerate(checks):
        if check.cite_start is None or check.cite_end is None:
            continue
        if check.cite_start < position:
            continue
        out.append(html.escape(text[position : check.cite_start]))
        cited = html.escape(text[check.cite_start : check.cite_end])
        out.append(f'<a href="cite:{n}">{cited}</a>')
        mark = MARKS.get(check.status) if check.quote is not None else None
        if mark is not None:
            symbol, color, why = mark
            out.append(f' <span style="color:{color}" title="{why}">{symbol}</span>')
        position = check.cite_end
    out.append(html.escape(text[position:]))
    body = "".join(out).replace("\n", "<br>")
    return f"<div>{body}</div>"


def summary(checks: Sequence[CitationCheck]) -> str:
    """One line counting the quotes by what checking found."""
    quoted = [c for c in checks if c.quote is not None]
    if not quoted:
        return "No quotes to check."
    verified = sum(c.status is QuoteStatus.VERIFIED for c in quoted)
    elsewhere = sum(
        c.status in (QuoteStatus.OTHER_PAGE, QuoteStatus.OTHER_DOCUMENT) for c in quoted
    )
    missing = sum(c.status is QuoteStatus.NOT_FOUND for c in quoted)
    return f"Quotes: {verified} ✓ verified, {elsewhere} ⚠ elsewhere, {missing} ✗ not found."


class CitedAnswer:
    """An answer about several documents in its ``browser``: its text as it streams, then
    the stored answer with its citations as links (a click hands one to ``open_citation``)
    and their ``summary`` in its ``label``; the two widgets named as given."""

    def __init__(
        self, open_citation: Callable[[CitationCheck], None], browser_name: str, label_name: str
    ) -> None:
        self.browser = QTextBrowser()
        self.browser.setObjectName(browser_name)
        self.label = QLabel()
        self.label.setObjectName(label_name)
        self.checks: list[CitationCheck] = []  # the shown answer's, once it is stored
        self._parts: list[str] = []
        self._open_citation = open_citation
        self.browser.setOpenLinks(False)
        self.browser.anchorClicked.connect(self._on_anchor_clicked)

    def restart(self) -> None:
        """A new answer begins: no text and no citations yet."""
        self._parts = []
        self.checks = []

    def show_events(self, batch: Sequence[object]) -> None:
        """Show a batch of the answer's events: text deltas, then the stored answer."""
        for event in batch:
            if isinstance(event, AnswerDelta):
                self._parts.append(event.text)
                self.browser.setPlainText("".join(self._parts))
            elif isinstance(event, Stored):
                self.show_stored(event.answer)

    def show_stored(self, answer: StoredAnswer) -> None:
        """Show a stored answer, its citations linked and its quotes counted."""
        self.checks = list(answer.citations.items) if answer.citations else []
        self.browser.setHtml(answer_html(answer.answer, self.checks))
        self.label.setText(summary(self.checks))

    def _on_anchor_clicked(self, url: QUrl) -> None:
        if (check := cited(url, self.checks)) is not None:
            self._open_citation(check)


def cited(url: QUrl, checks: Sequence[CitationCheck]) -> CitationCheck | None:
    """The citation a ``cite:N`` link names (None for another link)."""
    text = url.toString()
    if not text.startswith("cite:"):
        return None
    return checks[int(text.removeprefix("cite:"))]

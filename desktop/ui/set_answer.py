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
from desktop.answers import CitationCheck, QuoteStatus

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


def show_events(
    batch: Sequence[object], parts: list[str], view: QTextBrowser, label: QLabel
) -> list[CitationCheck] | None:
    """Show a batch of the answer's events: the text as it streams (kept in ``parts``),
    then the stored answer with its citations as links and ``summary`` in ``label``.
    The checked citations once the answer is stored (None before)."""
    checks = None
    for event in batch:
        if isinstance(event, AnswerDelta):
            parts.append(event.text)
            view.setPlainText("".join(parts))
        elif isinstance(event, Stored):
            answer = event.answer
            checks = list(answer.citations.items) if answer.citations else []
            view.setHtml(answer_html(answer.answer, checks))
            label.setText(summary(checks))
    return checks


def follow_citations(
    browser: QTextBrowser,
    checks: Callable[[], Sequence[CitationCheck]],
    open_citation: Callable[[CitationCheck], None],
) -> None:
    """Have a click on a ``cite:N`` link in ``browser`` open that citation (of ``checks()``,
    the answer's current ones); other links are not followed."""

    def on_click(url: QUrl) -> None:
        if (check := cited(url, checks())) is not None:
            open_citation(check)

    browser.setOpenLinks(False)
    browser.anchorClicked.connect(on_click)


def cited(url: QUrl, checks: Sequence[CitationCheck]) -> CitationCheck | None:
    """The citation a ``cite:N`` link names (None for another link)."""
    text = url.toString()
    if not text.startswith("cite:"):
        return None
    return checks[int(text.removeprefix("cite:"))]

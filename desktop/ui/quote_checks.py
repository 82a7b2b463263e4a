"""Checking a shown answer's quotes against the open document's pages."""

from __future__ import annotations

import logging
from collections.abc import Callable

from PySide6.QtCore import QObject

from desktop.answering.citations import QuoteCheck
from desktop.answers import StoredAnswer
from desktop.documents.model import Document
from desktop.ui import quote_marks, tasks
from desktop.ui.answer_view import AnswerView

log = logging.getLogger("longdoc.ui.ask")

# Quotes are checked on the UI thread for up to this much page text (~15 ms) and answer
# text (a long answer has many quotes: 400 cost ~25 ms), else in a worker.
QUOTE_CHECK_INLINE_CHARS = 100_000
QUOTE_CHECK_INLINE_ANSWER_CHARS = 8_000


class QuoteChecks(QObject):
    """The line under the answer: which quotes the pages hold."""

    def __init__(
        self,
        document: Callable[[], Document | None],
        view: AnswerView,
        parent: QObject | None = None,
    ) -> None:
        super().__init__(parent)
        self._document = document
        self._view = view
        self._page_chars = 0  # the open document's page text (0: not counted yet)

    def reset(self) -> None:
        """Another document was opened."""
        self._page_chars = 0

    def check(self, answer: StoredAnswer) -> None:
        """Check a complete answer's quotes against the pages; the line under the answer.

        Pure Python over the page texts: at once for a short document, in a worker for a
        long one (the first check normalises every page's text)."""
        doc = self._document()
        if doc is None or answer.status != "complete" or not answer.answer:
            return
        if not self._page_chars:
            self._page_chars = sum(len(p.text) for p in doc.pages)

        def job() -> list[QuoteCheck]:
            # As the CLI does: the checks the core stored with the answer.
            return quote_marks.check_quotes(answer, doc)

        def show(checks: list[QuoteCheck]) -> None:
            # Still the same answer about the same document on screen?
            shown = self._view.answer
            if self._document() is doc and shown is not None and shown.id == answer.id:
                self._view.show_quote_checks(checks, doc.pages)

        if answer.citations is not None or (  # stored with the answer: read at once
            self._page_chars <= QUOTE_CHECK_INLINE_CHARS
            and len(answer.answer) <= QUOTE_CHECK_INLINE_ANSWER_CHARS
        ):
            show(job())
        else:
            tasks.run_call(
                job,
                receiver=self,
                success=show,
                failure=lambda exc: log.warning("checking quotes failed: %s", exc),
                name="check quotes",
            )

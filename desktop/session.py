"""What the windows share: settings, the store, the answerer for the current endpoint.

Plain Python (no widgets); its blocking methods are called from background tasks only.
"""

from __future__ import annotations

import statistics
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass

from desktop.answering import prefill
from desktop.answering.budget import Budget, ContextLimits, plan_budget, prompt_overhead
from desktop.answering.events import Sent
from desktop.answering.prompt import PageRange
from desktop.answering.service import Answerer, Endpoint, resolve_endpoint
from desktop.config import Settings, data_dir
from desktop.documents.model import Document
from desktop.documents.pdf import no_text_reason

# The app reaches the store through this layer (desktop/ui imports nothing from
# desktop.store): the names it needs are re-exported here.
from desktop.store.db import DocumentSummary as DocumentSummary
from desktop.store.db import Store as Store
from desktop.store.db import StoredAnswer
from server_manager import Connection, connection_for


def unanswerable_reason(
    kind: str, pages: int, empty_pages: int, reads_images: bool | None = None
) -> str | None:
    """Why no question can be asked about a document (no text at all), else None.

    The same rule as the core's (``Answerer.plan``), from the counts a library row has: a
    PDF whose pages are all images is asked about as images when the server's model reads
    them, refused when it does not (``reads_images`` False), and left to the core to
    decide while that is not known yet (None: the server has not been asked).
    """
    if pages and empty_pages < pages:
        return None
    if image_only(kind, pages, empty_pages):
        return no_text_reason(pages, reads_images=False) if reads_images is False else None
    return "the document holds no text"


def document_unanswerable(doc: Document, reads_images: bool | None = None) -> str | None:
    """``unanswerable_reason`` for an open document."""
    return unanswerable_reason(doc.kind, len(doc.pages), len(doc.empty_pages), reads_images)


def image_only(kind: str, pages: int, empty_pages: int) -> bool:
    """A PDF whose every page is an image (no text layer): asked about as images."""
    return kind == "pdf" and pages > 0 and empty_pages >= pages


@dataclass(frozen=True)
class BudgetView:
    """The budget bar's figures for one document, page range and question."""

    budget: Budget
    document_tokens: int
    pages: PageRange
    page_count: int
    thread_tokens: int = 0  # a thread's earlier turns, part of the prompt


class Session:
    """Settings, store and a cached Answerer per endpoint; thread-safe."""

    def __init__(self, settings: Settings, store: Store) -> None:
        self.settings = settings
        self.store = store
        self._lock = threading.Lock()
        self._answerer: Answerer | None = None
        # Answerers replaced (new settings, another endpoint) while a worker may still be
        # using one: closing its HTTP pool then could close it under a request, or let a
        # request that had just started open a connection nothing closes (a socket left
        # open, seen as a ResourceWarning). They are closed with the session, after the
        # window has waited for its workers.
        self._retired: list[Answerer] = []
        self._rates: list[float] = []
        self._reads_images: bool | None = None  # the current server's model; None: unknown

    def update_settings(self, settings: Settings) -> None:
        """New settings: drop the answerer so the next question uses the new endpoint."""
        with self._lock:
            self.settings = settings
            self._retire(self._answerer)
            self._answerer = None
            self._reads_images = None

    def close(self) -> None:
        """Release the answerer's connections (the window is closing)."""
        with self._lock:
            self._retire(self._answerer)
            old, self._answerer, self._retired = self._retired, None, []
        for answerer in old:
            answerer.close()

    def _retire(self, answerer: Answerer | None) -> None:
        """Keep a replaced answerer until ``close`` (under the lock)."""
        if answerer is not None:
            self._retired.append(answerer)

    def answerer(self) -> Answerer:
        """The answerer for the configured or managed endpoint (blocking: reads state)."""
        endpoint = resolve_endpoint(self.settings, self._managed)
        with self._lock:
            current = self._answerer
            if current is not None and current.endpoint == endpoint:
                return current
            self._answerer = Answerer(self.store, endpoint, self.settings)
            self._retire(current)
            return self._answerer

    def _managed(self) -> Connection | None:
        """The server Longdoc manages, if one runs (for ``resolve_endpoint``)."""
        return connection_for(data_dir(), self.settings)

    def endpoint(self) -> Endpoint:
        """Where questions go now (blocking)."""
        return resolve_endpoint(self.settings, self._managed)

    def limits(self) -> ContextLimits:
        """What the server accepts: context length and input limit (network call)."""
        answerer = self.answerer()
        limits = answerer.limits()
        # Count the whole-document overhead here, off the UI thread: the library's "Fits"
        # column reads it there (and the first count may load the tokenizer, ~1 s).
        prompt_overhead("", self.settings.thinking)
        # Whether scanned pages can be asked about, for the library and the Ask button.
        reads = answerer.reads_images()
        with self._lock:
            self._reads_images = reads
        return limits

    @property
    def reads_images(self) -> bool | None:
        """Whether the server's model reads images, as ``limits`` found (None: not yet)."""
        with self._lock:
            return self._reads_images

    def unanswerable(self, doc: Document) -> str | None:
        """Why ``doc`` cannot be asked about now (see ``unanswerable_reason``), else None."""
        return document_unanswerable(doc, self.reads_images)

    def budget(
        self,
        doc: Document,
        pages: PageRange | None,
        question: str,
        thinking: bool,
        history: Sequence[dict[str, str]] = (),
    ) -> BudgetView:
        """The exact prompt size against the server's limits (network + tokenizing).

        ``history``: a thread's earlier turns, part of the prompt after the document."""
        answerer = self.answerer()
        limits = answerer.limits()
        selected = pages or PageRange(1, max(len(doc.pages), 1))
        # The count the CLI's budget uses; an empty question counts as the library's.
        _, prompt = answerer.prompt(doc, selected, question, thinking, list(history))
        budget = plan_budget(prompt, limits, self.settings.answer_reserve)
        thread = 0
        if history:
            _, alone = answerer.prompt(doc, selected, question, thinking)
            thread = prompt - alone
        # Instructions and question add the same tokens to any range's document block.
        doc_tokens = max(0, prompt - thread - prompt_overhead(question, thinking))
        return BudgetView(budget, doc_tokens, selected, len(doc.pages), thread)

    # --- prefill throughput, for the waiting estimate ----------------------------------

    def learn(self, answers: list[StoredAnswer]) -> None:
        """Record prefill rates (uncached prompt tokens per second to the first token),
        only from answers that really prefilled (see ``prefill.prefill_rate``)."""
        rates = [r for r in (prefill.prefill_rate(a) for a in answers) if r is not None]
        if rates:
            with self._lock:
                self._rates = (self._rates + rates)[-50:]

    def prefill_estimate(self, prompt_tokens: int, cached_guess: int = 0) -> float | None:
        """Seconds the server will likely take to read ``prompt_tokens`` (None: unknown)."""
        with self._lock:
            if not self._rates:
                return None
            rate = statistics.median(self._rates)
        return max(0.0, (prompt_tokens - cached_guess) / rate)

    def prefill_guess(
        self, sent: Sent, earlier: list[StoredAnswer], warm: bool = False
    ) -> prefill.PrefillGuess:
        """The expected wait for the first token of a prompt just sent; ``warm``: the pages
        were warmed up, so the server has to read about the question only."""
        with self._lock:
            rate = statistics.median(self._rates) if self._rates else None
        with self._lock:
            answerer = self._answerer
        granularity = answerer.client.resume_granularity() if answerer is not None else 0
        guess = prefill.guess(
            sent.prompt_tokens,
            rate,
            earlier,
            sent.first_page,
            sent.last_page,
            time.time(),
            granularity,
        )
        if not warm:
            return guess
        uncached = min(guess.uncached_tokens, prefill.QUESTION_ALLOWANCE + granularity)
        return prefill.PrefillGuess(sent.prompt_tokens, uncached, uncached / rate if rate else None)

    def recent_answers(self, limit_documents: int = 20) -> list[StoredAnswer]:
        """Answers about recently opened documents (to learn the throughput; blocking)."""
        answers: list[StoredAnswer] = []
        for summary in self.store.list_documents()[:limit_documents]:
            answers.extend(self.store.answers_for(summary.sha256)[-10:])
        return answers

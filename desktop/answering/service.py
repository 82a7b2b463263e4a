"""Ask a question about a document: cache lookup, budget, stream, store. No Qt.

This is the one code path the CLI and the GUI share; both iterate the events of
``Answerer.ask`` and render them their own way.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Generator
from dataclasses import dataclass, field, replace
from typing import Any, NoReturn, Protocol

from desktop.answering.budget import Budget, ContextLimits, plan_budget, refusal, set_refusal
from desktop.answering.citations import (
    check_answer,
    check_set_answer,
    current_checks,
    current_set_checks,
)
from desktop.answering.client import (
    ChatClient,
    ModelInfo,
    StreamingAnswer,
    first_token_timeout,
)
from desktop.answering.conversation import check_document, follow_up_pages, refuse_if_too_long
from desktop.answering.events import (
    AnswerDelta,
    Event,
    Finished,
    ReasoningDelta,
    Sent,
    Stored,
    StreamEvent,
    Usage,
)
from desktop.answering.prefill import CACHE_TRUST_S
from desktop.answering.prompt import (
    PROMPT_VERSION,
    SET_PROMPT_VERSION,
    PageRange,
    build_messages,
    build_set_messages,
    cacheable_prefix,
    count_prompt_tokens,
    count_set_prompt_tokens,
    document_share,
    full_range,
    prefix_tokens,
    set_cacheable_prefix,
    set_prefix_tokens,
)
from desktop.answering.scans import (
    build_image_messages,
    build_set_image_messages,
    count_image_prompt_tokens,
    damaged_pages,
    page_images,
    reads_images,
    scanned_pages,
    unread_warning,
)
from desktop.answering.sets import DocumentSet
from desktop.answering.threads import (
    Thread,
    history_key,
    history_messages,
    set_thread_key,
)
from desktop.answering.warmup import ROUTES, Prefilled, Route, RouteMissing, prefill
from desktop.answers import AnswerKey, AnswerStatus, CheckedCitations, StoredAnswer
from desktop.config import Settings
from desktop.documents.ingest import require_text
from desktop.documents.layout import counts_current
from desktop.documents.model import Document
from desktop.errors import (
    Cancelled,
    ContextTooLong,
    ContextUnknown,
    DocumentTooLarge,
    LongdocError,
    ModelNotServed,
    NoServerConfigured,
    ServerError,
    ServerUnavailable,
    SetTooLarge,
    StreamBroken,
    UsageError,
)
from desktop.store.db import EndpointModel, NewTurn, Store
from longdoc_net.endpoint import Engine, refused_context

log = logging.getLogger("longdoc.answering")


# The question of a chat-route warm-up (servers without a raw-prompt route): only the
# prefix before it matters to the cache.
PREWARM_QUESTION = "Reply with OK."

# Any server computes the last prompt token again and may round a hit down to its page.
MIN_WARM_SLACK = 64

# Partial answers reach the store at least this often, so a killed process loses at most
# the last moment of the answer.
PROGRESS_FLUSH_S = 1.0

# Where a stated context length comes from, for messages (precedence: --context-length >
# LONGDOC_CONTEXT_LENGTH > context_length in longdoc.toml > the external profile's key).
# Far past any model's context (2^31 tokens): a server reporting more, or zero or less, is
# broken, and its numbers are refused rather than used.
MAX_SANE_CONTEXT = 2**31 - 1
STATED_BY_SETTINGS = "the context_length setting"
STATED_BY_PROFILE = "the external profile's context_length"


@dataclass(frozen=True)
class Warmed:
    """The outcome of a warm-up: how much of the prefix the server holds now.

    ``prefix_tokens`` is the exact size of the cacheable prefix; ``cached_tokens`` is how
    much of it the server already had before (None when it does not report it); ``route``
    is how it was sent: ``generate`` (SGLang's native API), ``completions`` or ``chat``
    (which leaves a hybrid model's state after the generation prompt, see prefill.py).
    """

    prefix_tokens: int
    prompt_tokens: int | None
    cached_tokens: int | None
    route: str
    seconds: float
    granularity: int = 64

    @property
    def was_warm(self) -> bool:
        """True when the server already held (almost) the whole prefix.

        A server always computes the last prompt token again and resumes a hybrid model
        only at a checkpoint: within the engine's ``granularity`` (vLLM's block size,
        SGLang's chunk size) of the end, which is as close as a warm-up of an already
        warm prefix gets; a fresh prefix finds nothing (0) or only a shared beginning.
        """
        cached = self.cached_tokens
        slack = max(self.granularity, MIN_WARM_SLACK)
        return cached is not None and cached > 0 and cached >= self.prefix_tokens - slack


@dataclass(frozen=True)
class Endpoint:
    """Where to send questions: URL, key, and the model name (empty = the server's first).

    ``engine`` is the managed profile's engine ("" = unknown, found out from the server);
    ``context_length`` is a stated context length (0 = none), with ``stated_by`` its source.
    """

    url: str
    api_key: str
    model: str = ""
    managed: bool = False
    engine: str = ""
    context_length: int = 0
    stated_by: str = ""


class ManagedServer(Protocol):
    """Where the managed server listens (``server_manager.Connection`` fits).

    ``engine``: the managed profile's engine ("" = unknown); ``context_length``: the
    external profile's stated context length (0 = none).
    """

    @property
    def url(self) -> str:
        """Base URL, no ``/v1``."""
        ...

    @property
    def api_key(self) -> str:
        """Its key."""
        ...

    @property
    def model(self) -> str:
        """The model it serves."""
        ...

    @property
    def engine(self) -> str:
        """The engine it runs, when known."""
        ...

    @property
    def context_length(self) -> int:
        """A stated context length (0 = none)."""
        ...


def resolve_endpoint(settings: Settings, managed: Callable[[], ManagedServer | None]) -> Endpoint:
    """The configured endpoint, else the server Longdoc manages (started or adopted).

    ``managed`` looks the managed server up; the CLI and the app pass one built on
    ``server_manager.connection_for`` (this package does not import the server manager).
    """
    stated = settings.context_length
    if settings.endpoint:
        return Endpoint(
            settings.endpoint,
            settings.api_key,
            settings.model,
            context_length=stated,
            stated_by=STATED_BY_SETTINGS if stated else "",
        )
    conn = managed()
    if conn is None:
        raise NoServerConfigured(
            "No server configured and no Longdoc server running: start one with "
            "`longdoc server start`, or pass --endpoint URL (or set LONGDOC_ENDPOINT)."
        )
    profile_stated = conn.context_length
    return Endpoint(
        conn.url,
        settings.api_key or conn.api_key,
        settings.model or conn.model,
        managed=True,
        engine=conn.engine,
        context_length=stated or profile_stated,
        stated_by=STATED_BY_SETTINGS if stated else STATED_BY_PROFILE if profile_stated else "",
    )


@dataclass
class Question:
    """One question about a document (or a page range of it)."""

    document: Document
    text: str
    pages: PageRange | None = None
    thinking: bool = True
    use_cache: bool = True
    max_tokens: int | None = None  # None = the settings' answer reserve
    thread: Thread | None = None  # a follow-up continues this thread; None starts a new one
    # Also ask the server to count the prompt (/v1/tokenize); the budget uses the larger.
    check_tokens: bool = False
    # A question about a set of documents (``document`` is then its first document, and
    # ``pages`` is unused: each member carries its range).
    docset: DocumentSet | None = None
    # A quote that repeats the question is not checked (it restates it, not the document),
    # unless the question itself quotes the documents (compare's change list).
    quotes_in_question: bool = False

    @property
    def subject_for_threads(self) -> str:
        """What its thread is stored under: the document's sha256, or the set's documents
        in order (a follow-up keeps the thread's ranges, see threads.keep_set_ranges)."""
        return self.document.sha256 if self.docset is None else set_thread_key(self.docset)

    @property
    def subject(self) -> str:
        """What the answer cache and threads key it on: the document's sha256 or the set's key."""
        return self.docset.key if self.docset is not None else self.document.sha256

    def page_range(self) -> PageRange:
        """The selected pages, defaulting to all (a follow-up: the thread's pages).

        For a set: 1 to the number of pages asked about over all its documents.
        """
        if self.docset is not None:
            if self.thread is not None and self.thread.document_sha != set_thread_key(self.docset):
                raise UsageError(f"Thread {self.thread.id} is about other documents.")
            return PageRange(1, max(self.docset.page_count, 1))
        if self.thread is not None:
            check_document(self.thread, self.document)
            return follow_up_pages(self.thread, self.pages, len(self.document.pages))
        return self.pages or full_range(self.document)

    def history(self) -> list[dict[str, str]]:
        """The thread's earlier turns as chat messages (none for a first question)."""
        return history_messages(self.thread.turns) if self.thread is not None else []


@dataclass
class Plan:
    """A question ready to send: messages, budget and the cache key."""

    question: Question
    pages: PageRange
    model: str
    messages: list[dict[str, Any]]  # content is a string, or text and image parts
    budget: Budget
    key: AnswerKey
    local_tokens: int = 0
    server_tokens: int | None = None  # the server's count, when asked and available
    # Pages the answer cannot use (damaged, or scanned for a server that reads no images)
    # and what the user is told about the scanned ones (ask --json's document fields).
    unread_pages: list[int] = field(default_factory=list)
    unread_warnings: list[str] = field(default_factory=list)


class Answerer:
    """Answers questions about documents against one endpoint, caching in the store."""

    def __init__(self, store: Store, endpoint: Endpoint, settings: Settings) -> None:
        self.store = store
        self.endpoint = endpoint
        self.settings = settings
        self.client = ChatClient(endpoint.url, endpoint.api_key, endpoint.engine)
        self._model: ModelInfo | None = None
        self._limits: ContextLimits | None = None
        self._reads_images: bool | None = None
        self._lock = threading.Lock()
        # Writes that reads found to do, made by the next ask's first transaction: the
        # model the endpoint serves, and page counts of documents stored by an older layout.
        self._seen: EndpointModel | None = None
        self._counted: dict[str, Document] = {}
        # The raw-prompt routes still worth trying for warm-ups (the engine's own, once it
        # is known; a 404 removes one), and the prefixes warmed here: (sha, first, last).
        self._routes: list[Route] | None = None
        self._warm: set[tuple[str, int, int]] = set()

    def close(self) -> None:
        """Release the HTTP client."""
        self.client.close()

    def model(self) -> ModelInfo:
        """The model to use and its context length, asked once from ``/v1/models``."""
        with self._lock:
            if self._model is not None:
                return self._model
        models = self.client.models()
        if not models:
            raise ServerError(f"The server at {self.endpoint.url} lists no models.")
        wanted = self.endpoint.model
        chosen = next((m for m in models if m.id == wanted), None) if wanted else models[0]
        if chosen is None:
            names = ", ".join(m.id for m in models)
            raise ModelNotServed(
                f"The server at {self.endpoint.url} has no model {wanted!r}; it serves: {names}."
            )
        with self._lock:
            self._model = chosen
            # Remembered by the next ask's own transaction (a read writes nothing).
            self._seen = EndpointModel(self.endpoint.url, chosen.id, chosen.max_model_len)
        return chosen

    def _context_limits(self, model: ModelInfo) -> ContextLimits:
        """The server's reported limits combined with a stated context length."""
        reported, stated = model.max_model_len, self.endpoint.context_length
        if reported is None and not stated:
            raise ContextUnknown(
                f"The server at {self.endpoint.url} does not report its context length "
                "(max_model_len in /v1/models): state it with --context-length N, "
                "LONGDOC_CONTEXT_LENGTH or context_length in longdoc.toml."
            )
        if reported is not None and not 0 < reported <= MAX_SANE_CONTEXT:
            # The server's own numbers are wrong, not the document: never "too large".
            raise ServerError(
                f"The server at {self.endpoint.url} reports a context length of {reported:,} "
                "tokens (max_model_len in /v1/models), which cannot be right; fix the "
                "server's --context-length (or state the real one with --context-length N)."
            )
        if reported is None or (stated and stated < reported):
            context, stated_by = stated, self.endpoint.stated_by
        else:
            context, stated_by = reported, ""
        max_input = self.client.facts().max_req_input_len
        if max_input is not None and not 0 < max_input <= MAX_SANE_CONTEXT:
            raise ServerError(
                f"The server at {self.endpoint.url} reports a max_req_input_len of "
                f"{max_input:,} tokens (/server_info), which cannot be right; check its "
                "--context-length and memory settings (or restart it)."
            )
        return ContextLimits(context, max_input, stated_by)

    def limits(self) -> ContextLimits:
        """What the server accepts: context length and input limit (asked once)."""
        model = self.model()
        with self._lock:
            if self._limits is not None:
                return self._limits
        limits = self._context_limits(model)
        with self._lock:
            self._limits = limits
        return limits

    def reads_images(self) -> bool:
        """Whether the server's model reads images (asked once, from ``/model_info``)."""
        with self._lock:
            known = self._reads_images
        if known is None:
            # Only SGLang says (/model_info); any other engine is sent text only, unasked.
            sglang = self.client.facts().engine == Engine.SGLANG
            known = sglang and reads_images(self.endpoint.url, self.endpoint.api_key)
            with self._lock:
                self._reads_images = known
        return known

    def cache_key(self, question: Question, model: str, max_tokens: int) -> AnswerKey:
        """The answer-cache key for a question."""
        pages = question.page_range()
        return AnswerKey(
            document_sha=question.subject,
            question=question.text.strip(),
            model=model,
            prompt_version=PROMPT_VERSION if question.docset is None else SET_PROMPT_VERSION,
            thinking=question.thinking,
            first_page=pages.first,
            last_page=pages.last,
            max_tokens=max_tokens,
            history=history_key(question.thread.turns) if question.thread else "",
        )

    def cached(self, question: Question, model: str) -> Stored | None:
        """A cached complete answer for ``model`` ("" = any model), without a server call."""
        if not question.use_cache:
            return None
        reserve = question.max_tokens or self.settings.answer_reserve
        found = self.store.find_answer(self.cache_key(question, model, reserve))
        return Stored(found, from_cache=True) if found else None

    def lookup(self, question: Question) -> Stored | None:
        """The cache hit for a question, if any.

        With no model configured, the model this endpoint served last time is tried first
        (no server call); otherwise the server is asked its model name; if it cannot be
        reached, the newest answer from any model is served so history stays usable.
        """
        if not question.use_cache:
            return None
        if self.endpoint.model:
            return self.cached(question, self.endpoint.model)
        remembered = self.store.remembered_model(self.endpoint.url)
        if remembered:
            hit = self.cached(question, remembered)
            if hit is not None:
                return hit
        try:
            model = self.model().id
        except ServerUnavailable:
            hit = self.cached(question, "")
            if hit is None:
                raise
            return hit
        return self.cached(question, model)

    def prompt(
        self,
        doc: Document,
        pages: PageRange,
        question: str,
        thinking: bool,
        history: list[dict[str, str]] | None = None,
    ) -> tuple[list[dict[str, Any]], int]:
        """The messages of a question and Longdoc's exact count of them (what the budget fits).

        Scanned pages go as images when the server reads them; a thread's earlier turns
        (``history``) go after the document. The app's budget bar counts through here too,
        so it shows what ``plan`` will decide.
        """
        history = history or []
        scanned = scanned_pages(doc, pages)
        if scanned and self.reads_images():
            messages = build_image_messages(doc, pages, question, page_images(doc, scanned))
            # A thread's earlier turns go after the document, right before the question.
            messages[-1:-1] = history
            return messages, count_image_prompt_tokens(messages, thinking)
        text_only: list[dict[str, Any]] = list(build_messages(doc, pages, question, history))
        had_counts = counts_current(doc)
        count = count_prompt_tokens(doc, pages, question, thinking, history)
        if not had_counts:
            with self._lock:
                self._counted[doc.sha256] = doc
        return text_only, count

    def set_prompt(
        self,
        docset: DocumentSet,
        question: str,
        thinking: bool,
        history: list[dict[str, str]] | None = None,
    ) -> tuple[list[dict[str, Any]], int, list[str]]:
        """A set's messages, Longdoc's exact count of them, and warnings (unread scans).

        Scanned pages go as images, in their place in each document, when the server reads
        images; else they are named unread per document.
        """
        history = history or []
        scanned = {m.letter: scanned_pages(m.document, m.pages) for m in docset.members}
        warnings: list[str] = []
        if any(scanned.values()):
            if self.reads_images():
                images = {
                    m.letter: page_images(m.document, scanned[m.letter])
                    for m in docset.members
                    if scanned[m.letter]
                }
                with_images = build_set_image_messages(docset, question, images)
                with_images[-1:-1] = history
                return with_images, count_image_prompt_tokens(with_images, thinking), warnings
            for m in docset.members:
                if scanned[m.letter]:
                    warnings.append(f"{m.letter}: {unread_warning(scanned[m.letter], m.document)}")
        unsaved = [m.document for m in docset.members if not counts_current(m.document)]
        messages: list[dict[str, Any]] = list(build_set_messages(docset, question, history))
        count = count_set_prompt_tokens(docset, question, thinking, history)
        with self._lock:
            for doc in unsaved:
                self._counted[doc.sha256] = doc
        return messages, count, warnings

    def _plan_set(self, question: Question, docset: DocumentSet) -> Plan:
        """``plan`` for a set: each document whole (or its range), one budget over all."""
        info = self.model()
        limits = self.limits()
        reserve = question.max_tokens or self.settings.answer_reserve
        history = question.history()
        reads = None
        for m in docset.members:
            if scanned_pages(m.document, m.pages):
                reads = self.reads_images() if reads is None else reads
                if reads:
                    continue
            require_text(m.document, m.pages.first, m.pages.last)
        messages, local, warnings = self.set_prompt(
            docset, question.text, question.thinking, history
        )
        server = (
            self.client.count_tokens(messages, info.id, question.thinking)
            if question.check_tokens
            else None
        )
        budget = plan_budget(max(local, server or 0), limits, reserve)
        budget.warnings.extend(warnings)
        if not budget.fits:
            self._refuse(
                question,
                question.page_range(),
                budget,
                reserve,
                lambda: self.set_prompt(docset, question.text, question.thinking)[1],
            )
        key = self.cache_key(question, info.id, reserve)
        return Plan(question, question.page_range(), info.id, messages, budget, key, local, server)

    def plan(self, question: Question) -> Plan:
        """Count the prompt exactly and fit it to the server's limits, or raise DocumentTooLarge.

        With ``question.check_tokens`` the server counts too and the larger count decides.
        """
        if not question.text.strip():
            raise UsageError("The question is empty.")
        if question.docset is not None:
            return self._plan_set(question, question.docset)
        info = self.model()
        limits = self.limits()
        doc = question.document
        pages = question.page_range()
        reserve = question.max_tokens or self.settings.answer_reserve
        history = question.history()
        scanned = scanned_pages(doc, pages)
        if not (scanned and self.reads_images()):
            require_text(doc, pages.first, pages.last)
        else:
            # Priced from the page sizes before a single page is rendered: a 10,000-page
            # scan is refused at once instead of after minutes of rendering.
            from desktop.documents.page_images import image_tokens_before_rendering

            text_part = count_prompt_tokens(doc, pages, question.text, question.thinking, history)
            least = text_part + image_tokens_before_rendering(doc.path, scanned)
            early = plan_budget(least, limits, reserve)
            if not early.fits:
                raise refusal(doc, pages, early)
        messages, local = self.prompt(doc, pages, question.text, question.thinking, history)
        server = (
            self.client.count_tokens(messages, info.id, question.thinking)
            if question.check_tokens
            else None
        )
        budget = plan_budget(max(local, server or 0), limits, reserve)
        unread = damaged_pages(doc, pages)
        unread_notes: list[str] = []
        if scanned and not self.reads_images():
            unread_notes.append(unread_warning(scanned, doc))
            budget.warnings.extend(unread_notes)
            unread = sorted({*unread, *scanned})
        if not budget.fits:
            self._refuse(
                question,
                pages,
                budget,
                reserve,
                lambda: self.prompt(doc, pages, question.text, question.thinking)[1],
            )
        key = self.cache_key(question, info.id, reserve)
        return Plan(
            question, pages, info.id, messages, budget, key, local, server, unread, unread_notes
        )

    def _save_counts(self, doc: Document) -> None:
        """Keep per-page counts made now (a document stored by an older layout)."""
        try:
            self.store.save_page_tokens(doc)  # updates nothing for a document not stored
        except LongdocError:
            log.debug("could not store the page counts", exc_info=True)

    def _refuse(
        self,
        question: Question,
        pages: PageRange,
        budget: Budget,
        reserve: int,
        alone: Callable[[], int],
    ) -> NoReturn:
        """Raise the one refusal of a prompt that does not fit, a document's or a set's:
        ThreadTooLong when only the earlier turns make it too long (``alone()``: the
        prompt's tokens without them; earlier turns are never dropped), else the budget's
        refusal with each document's numbers."""
        if question.thread is not None and question.history():
            docs = [question.document] if question.docset is None else question.docset.documents
            paths = ", ".join(str(d.path) for d in docs)
            refuse_if_too_long(
                paths, question.thread, budget.prompt_tokens, alone(), budget, reserve
            )
        raise refusal_for(question, pages, budget)

    def _turn(self, question: Question) -> NewTurn:
        """Where a complete answer to ``question`` goes: the thread's next turn (a new
        thread for a first question)."""
        pages = question.page_range()
        thread = question.thread
        return NewTurn(
            thread.id if thread is not None else None,
            question.subject_for_threads,
            pages.first,
            pages.last,
            tuple(t.id for t in thread.turns) if thread is not None else (),
        )

    def _serve_hit(self, question: Question, hit: StoredAnswer) -> Stored:
        """A cache hit joins the thread; citations checked by an older matcher are checked
        again and stored in the same transaction."""
        checked = (
            current_checks(hit, question.document)
            if question.docset is None
            else current_set_checks(hit, question.docset)
        )
        fresh = checked if checked is not hit.citations else None
        turn = self._turn(question)
        thread_id = self.store.add_turn(
            turn.thread_id,
            turn.document_sha,
            turn.first_page,
            turn.last_page,
            hit.id,
            list(turn.after),
            citations=fresh,
        )
        return Stored(replace(hit, citations=checked), from_cache=True, thread_id=thread_id)

    def prewarm(
        self,
        document: Document,
        pages: PageRange | None = None,
        cancel: threading.Event | None = None,
    ) -> Warmed:
        """Have the server prefill the document's cacheable prefix now (blocking; no answer
        is stored), so the next question about these pages starts at once.

        Sends exactly :func:`prompt.cacheable_prefix` through SGLang's ``/generate``, else
        ``/v1/completions``, else a one-token chat request. Safe to call from a worker
        thread; setting ``cancel`` aborts the request on the server and raises Cancelled.
        Raises DocumentTooLarge when the prefix cannot fit the context, and the usual
        server errors.
        """
        cancel = cancel or threading.Event()
        if cancel.is_set():
            raise Cancelled()
        self.model()
        doc = document
        pages = pages or full_range(doc)
        if scanned_pages(doc, pages) and self.reads_images():
            # Page images go in a user message (scans.py): no raw text prefix to send, so
            # the warm-up is a one-token chat request laid out like the questions.
            timeout = first_token_timeout(doc.tokens, self.settings.min_prefill_rate)
            return self._prewarm_chat(doc, pages, None, timeout, cancel)
        require_text(doc, pages.first, pages.last)
        had_counts = counts_current(doc)
        size = prefix_tokens(doc, pages)
        if not had_counts:
            self._save_counts(doc)  # a warm-up is an action, not a read: it may write
        limits = self.limits()
        budget = plan_budget(size, limits, self.settings.answer_reserve)
        if not budget.fits:
            raise refusal(doc, pages, budget)
        timeout = first_token_timeout(size, self.settings.min_prefill_rate)
        warmed = self._prewarm_raw(doc, pages, size, timeout, cancel)
        return warmed or self._prewarm_chat(doc, pages, size, timeout, cancel)

    def _warm_routes(self) -> list[Route]:
        """The raw-prompt routes of this endpoint's engine not found missing yet."""
        with self._lock:
            if self._routes is not None:
                return list(self._routes)
        known = self.client.facts().raw_prompt_routes
        routes = [r for r in ROUTES if r in known]
        with self._lock:
            if self._routes is None:
                self._routes = routes
            return list(self._routes)

    def _prewarm_raw(
        self, doc: Document, pages: PageRange, size: int, timeout: float, cancel: threading.Event
    ) -> Warmed | None:
        """The exact prefix through the engine's raw-prompt route; None when it has none."""
        key = (doc.sha256, pages.first, pages.last)
        return self._prewarm_prompt(cacheable_prefix(doc, pages), key, size, timeout, cancel)

    def _prewarm_prompt(
        self,
        prompt: str,
        key: tuple[str, int, int],
        size: int,
        timeout: float,
        cancel: threading.Event,
    ) -> Warmed | None:
        """A raw prompt (a document's or a set's prefix) through the engine's raw-prompt
        route, remembered as warm under ``key``; None when the engine has no such route."""
        info = self.model()
        granularity = self.client.facts().granularity
        for route in self._warm_routes():
            try:
                done: Prefilled = prefill(
                    self.endpoint.url,
                    self.endpoint.api_key,
                    prompt,
                    route=route,
                    model=info.id,
                    timeout_s=timeout,
                    cancel=cancel,
                )
            except RouteMissing:
                with self._lock:
                    if self._routes is not None and route in self._routes:
                        self._routes.remove(route)
                continue
            with self._lock:
                self._warm.add(key)
            return Warmed(
                size, done.prompt_tokens, done.cached_tokens, route, done.seconds, granularity
            )
        return None

    def warm_first(self, question: Question, plan: Plan, cancel: threading.Event) -> None:
        """Before the first question about a prefix (a document, or a page range) on this
        endpoint, have the server prefill exactly that prefix through a raw-prompt route.

        Only for engines that keep a hybrid model's states at checkpoints (SGLang, vLLM):
        the question's own request would leave a state only at a chunk end inside the
        document, so the next question would redo the rest (71% reuse measured on vLLM).
        Never a chat request (a question stays one chat request); a prefix is known warm
        when it was warmed here, or an earlier answer on this endpoint reused it.
        """
        doc, pages, docset = question.document, plan.pages, question.docset
        key = (question.subject, pages.first, pages.last)
        with self._lock:
            if key in self._warm:
                return
        facts = self.client.facts()
        if not facts.keeps_hybrid_states:
            return
        members = docset.members if docset is not None else ()
        scanned = any(scanned_pages(m.document, m.pages) for m in members) or (
            docset is None and bool(scanned_pages(doc, pages))
        )
        if scanned and self.reads_images():
            return  # page images go in a user turn: no raw text prefix to send
        size = prefix_tokens(doc, pages) if docset is None else set_prefix_tokens(docset)
        if self._reused_before(question.subject, pages, size, facts.granularity):
            with self._lock:
                self._warm.add(key)
            return
        timeout = first_token_timeout(size, self.settings.min_prefill_rate)
        prompt = cacheable_prefix(doc, pages) if docset is None else set_cacheable_prefix(docset)
        try:
            self._prewarm_prompt(prompt, key, size, timeout, cancel)
        except Cancelled:
            raise
        except LongdocError as exc:
            # The question itself goes on and reports whatever is wrong with the server.
            log.info("warm-up before the question failed: %s", exc)

    def _reused_before(self, subject: str, pages: PageRange, size: int, granularity: int) -> bool:
        """An answer on this endpoint about these pages reused the whole prefix, recently:
        the server held it then (a question alone leaves no state at the prefix's end)."""
        recent = time.time() - CACHE_TRUST_S
        slack = max(granularity, MIN_WARM_SLACK)
        return any(
            a.extra.get("endpoint") == self.endpoint.url
            and (a.first_page, a.last_page) == (pages.first, pages.last)
            and a.created_at >= recent
            and a.cached_tokens is not None
            and a.cached_tokens >= size - slack
            for a in self.store.answers_for(subject)
        )

    def _prewarm_chat(
        self,
        doc: Document,
        pages: PageRange,
        size: int | None,
        timeout: float,
        cancel: threading.Event,
    ) -> Warmed:
        """Warm-up as a one-token chat request, for servers without a raw-prompt route."""
        plan = self.plan(Question(doc, PREWARM_QUESTION, pages, thinking=False))
        if size is None:
            size = plan.budget.prompt_tokens
        started = time.monotonic()
        usage: Usage | None = None
        stream = self.client.stream(
            plan.messages,
            model=plan.model,
            max_tokens=1,
            thinking=False,
            first_token_timeout_s=timeout,
            cancel=cancel,
        )
        for event in stream:
            if isinstance(event, Usage):
                usage = event
        return Warmed(
            size,
            usage.prompt_tokens if usage else None,
            usage.cached_tokens if usage else None,
            "chat",
            time.monotonic() - started,
        )

    def confirm_tokens(self, plan: Plan) -> int | None:
        """The server's own count of the planned prompt (``/v1/tokenize``), if it offers one."""
        return self.client.count_tokens(plan.messages, plan.model, plan.question.thinking)

    def ask(
        self, question: Question, cancel: threading.Event | None = None
    ) -> Generator[Event, None, None]:
        """Answer from the cache, or plan, stream and store; the last event is ``Stored``.

        The ``Stored`` event carries the answer as stored, with its checked citations and
        its thread: the answer, the citations and the thread turn are written in one
        transaction, and nothing is read back. Only a complete answer is a turn; one cut
        at the token limit is stored ``truncated``. A stopped or failed answer is stored
        as incomplete/failed (never served from the cache) and the error is raised after
        it is stored.
        """
        cancel = cancel or threading.Event()
        hit = self.lookup(question)
        if hit is not None:
            yield self._serve_hit(question, hit.answer)
            return
        plan = self.plan(question)
        self.warm_first(question, plan, cancel)
        extra: dict[str, Any] = {"endpoint": self.endpoint.url, "pid": os.getpid()}
        if question.docset is not None:
            # What the set was (documents, order, ranges): a follow-up keeps its ranges.
            extra["set"] = question.docset.spec()
        created_at = time.time()
        with self._lock:
            seen, counted = self._seen, tuple(self._counted.values())
        answer_id = self.store.start_answer(
            plan.key, extra, created_at=created_at, seen=seen, counted=counted
        )
        with self._lock:
            if self._seen is seen:
                self._seen = None
            for doc in counted:
                self._counted.pop(doc.sha256, None)
        record = _Record(answer_id, started=time.monotonic())
        finished: Finished | None = None
        stream: StreamingAnswer | None = None
        try:
            yield Sent(
                prompt_tokens=plan.budget.prompt_tokens,
                context_length=plan.budget.context_length,
                max_tokens=plan.budget.max_tokens,
                model=plan.model,
                first_page=plan.pages.first,
                last_page=plan.pages.last,
                page_count=(
                    len(question.document.pages)
                    if question.docset is None
                    else question.docset.page_count
                ),
                warnings=list(plan.budget.warnings),
                unread_pages=list(plan.unread_pages),
                document_warnings=list(plan.unread_warnings),
                local_tokens=plan.local_tokens,
                server_tokens=plan.server_tokens,
            )
            stream = self.client.stream(
                plan.messages,
                model=plan.model,
                max_tokens=plan.budget.max_tokens,
                thinking=question.thinking,
                first_token_timeout_s=first_token_timeout(
                    plan.budget.prompt_tokens, self.settings.min_prefill_rate
                ),
                cancel=cancel,
            )
            flushed = time.monotonic()
            for event in stream:
                if isinstance(event, Finished):
                    finished = event
                elif record.take(event) and time.monotonic() - flushed >= PROGRESS_FLUSH_S:
                    # A SIGKILL leaves this row 'running' with what arrived so far; the
                    # next Store marks it incomplete (never served from the cache).
                    self.store.save_progress(answer_id, record.answer, record.reasoning)
                    flushed = time.monotonic()
                yield event
        except GeneratorExit:
            # The consumer dropped the generator (window closed): keep what arrived.
            if stream is not None:
                stream.cancel()
            self._finish(record, AnswerStatus.INCOMPLETE, error="stopped")
            raise
        except ContextTooLong as exc:
            refused = self._refused(question, plan, exc)
            self._finish(record, AnswerStatus.FAILED, error=str(refused))
            raise refused from exc
        except LongdocError as exc:
            # Stopped, or the stream broke off (malformed, cut, past a deadline): what
            # arrived is kept as incomplete; a request the server refused has failed.
            partial = isinstance(exc, Cancelled | StreamBroken)
            status = AnswerStatus.INCOMPLETE if partial else AnswerStatus.FAILED
            self._finish(record, status, error=str(exc))
            raise
        except BaseException:
            if stream is not None:
                stream.cancel()
            self._finish(record, AnswerStatus.INCOMPLETE, error="interrupted")
            raise
        assert finished is not None
        status = status_for(finished.finish_reason)
        checked = (
            check_answer(
                record.answer,
                question.document,
                plan.pages.first,
                plan.pages.last,
                plan.key.question,
            )
            if question.docset is None
            else check_set_answer(
                record.answer,
                question.docset,
                "" if question.quotes_in_question else plan.key.question,
            )
        )
        turn = self._turn(question) if status is AnswerStatus.COMPLETE else None
        thread_id = self._finish(
            record, status, finish_reason=finished.finish_reason, citations=checked, turn=turn
        )
        answer = record.stored(plan.key, status, finished.finish_reason, created_at, extra, checked)
        yield Stored(answer, from_cache=False, thread_id=thread_id)

    def _refused(
        self, question: Question, plan: Plan, exc: ContextTooLong
    ) -> DocumentTooLarge | SetTooLarge:
        """The engine's own "too long" refusal as Longdoc's own: the exact count Longdoc
        made, the limit the engine named (vLLM's "at least N" is only a bound), and pages
        that fit."""
        limits = plan.budget.limits
        named = refused_context(str(exc))
        if named is not None and named < limits.context_length:
            limits = ContextLimits(named, limits.max_input, "the server's refusal")
        reserve = question.max_tokens or self.settings.answer_reserve
        budget = plan_budget(plan.budget.prompt_tokens, limits, reserve)
        return refusal_for(question, plan.pages, budget)

    def _finish(
        self,
        record: _Record,
        status: AnswerStatus,
        *,
        finish_reason: str | None = None,
        error: str | None = None,
        citations: CheckedCitations | None = None,
        turn: NewTurn | None = None,
    ) -> int | None:
        record.error = error
        record.total_s = time.monotonic() - record.started
        return self.store.finish_answer(
            record.answer_id,
            **record.outcome(status, finish_reason),
            citations=citations,
            turn=turn,
        )


def refusal_for(
    question: Question, pages: PageRange, budget: Budget
) -> DocumentTooLarge | SetTooLarge:
    """The refusal of a budget that does not fit, for the question's document or set: a
    set's names each document's tokens (its block in the prompt) and what would fit."""
    docset = question.docset
    if docset is None:
        return refusal(question.document, pages, budget)
    shares = {m.letter: document_share(docset, m.letter) for m in docset.members}
    return set_refusal(docset, shares, budget)


def status_for(finish_reason: str) -> AnswerStatus:
    """The status of an answer whose stream ended with ``finish_reason``.

    "length" is the token limit (``--max-tokens``): the answer, or the reasoning before
    it, was cut, so it is ``truncated`` (never a turn, never a cache hit).
    """
    if finish_reason == "stop":
        return AnswerStatus.COMPLETE
    if finish_reason == "length":
        return AnswerStatus.TRUNCATED
    return AnswerStatus.INCOMPLETE


@dataclass
class _Record:
    """What has streamed of one answer so far, and its timings."""

    answer_id: int
    started: float
    parts: list[str] = field(default_factory=list)
    thinking: list[str] = field(default_factory=list)
    usage: Usage | None = None
    ttft_s: float | None = None
    total_s: float | None = None
    error: str | None = None

    def take(self, event: StreamEvent) -> bool:
        """Keep an event's text or figures; True when text arrived."""
        if isinstance(event, Usage):
            self.usage = event
            return False
        if isinstance(event, AnswerDelta):
            self.parts.append(event.text)
        elif isinstance(event, ReasoningDelta):
            self.thinking.append(event.text)
        else:
            return False
        if self.ttft_s is None:
            self.ttft_s = time.monotonic() - self.started
        return True

    @property
    def answer(self) -> str:
        """The answer so far."""
        return "".join(self.parts)

    @property
    def reasoning(self) -> str:
        """The reasoning so far."""
        return "".join(self.thinking)

    def outcome(self, status: AnswerStatus, finish_reason: str | None) -> dict[str, Any]:
        """What came back, by the names ``Store.finish_answer`` and ``StoredAnswer`` share."""
        usage = self.usage
        return {
            "status": status,
            "answer": self.answer,
            "reasoning": self.reasoning,
            "finish_reason": finish_reason,
            "error": self.error,
            "prompt_tokens": usage.prompt_tokens if usage else None,
            "completion_tokens": usage.completion_tokens if usage else None,
            "cached_tokens": usage.cached_tokens if usage else None,
            "ttft_s": self.ttft_s,
            "total_s": self.total_s,
        }

    def stored(
        self,
        key: AnswerKey,
        status: AnswerStatus,
        finish_reason: str | None,
        created_at: float,
        extra: dict[str, Any],
        citations: CheckedCitations | None,
    ) -> StoredAnswer:
        """The answer as ``finish_answer`` stored it (built here, not read back)."""
        return StoredAnswer(
            **key.key_values(),
            **self.outcome(status, finish_reason),
            id=self.answer_id,
            created_at=created_at,
            extra=dict(extra),
            citations=citations,
        )

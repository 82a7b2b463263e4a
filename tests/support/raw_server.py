"""A loopback "server" that sends exactly the bytes a test gives it: malformed streams,
SSE comments only, absurd numbers. Speaks just enough of OpenAI's API for ``longdoc ask``.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def sse(data: dict[str, Any] | str | bytes) -> bytes:
    """One SSE event: a dict as JSON, bytes and str as they are."""
    if isinstance(data, dict):
        data = json.dumps(data)
    raw = data if isinstance(data, bytes) else data.encode()
    return b"data: " + raw + b"\n\n"


def content(text: str, finish: str | None = None) -> bytes:
    """A chat chunk with answer text (and a finish reason)."""
    return sse({"id": "x", "object": "chat.completion.chunk", "model": "m",
                "choices": [{"index": 0, "delta": {"content": text},
                             "finish_reason": finish}]})  # fmt: skip


class RawServer(ThreadingHTTPServer):
    """``/v1/models`` says ``context_length``; a chat request gets ``chunks`` (each after
    ``delay_s``; with ``immediate_first`` not the first), then the connection closes.
    ``repeat_for_s``: the chunks go round until then (a server that trickles forever)."""

    daemon_threads = True

    def __init__(
        self,
        chunks: Sequence[bytes] = (),
        *,
        context_length: int | None = 262_144,
        delay_s: float = 0.0,
        repeat_for_s: float = 0.0,
        immediate_first: bool = False,
        model: str = "m",
    ) -> None:
        self.chunks = list(chunks)
        self.context_length = context_length
        self.delay_s = delay_s
        self.repeat_for_s = repeat_for_s
        self.immediate_first = immediate_first  # no delay before the very first chunk
        self.chats = 0
        self.model = model
        super().__init__(("127.0.0.1", 0), _Handler)
        self._thread = threading.Thread(target=self.serve_forever, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def __enter__(self) -> RawServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()
        self.server_close()


class _Handler(BaseHTTPRequestHandler):
    server: RawServer
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: object) -> None:
        pass

    def _json(self, status: int, data: Any) -> None:
        body = json.dumps(data).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        if self.path.startswith("/v1/models"):
            card: dict[str, Any] = {"id": self.server.model, "object": "model"}
            if self.server.context_length is not None:
                card["max_model_len"] = self.server.context_length
            self._json(200, {"object": "list", "data": [card]})
        else:
            self._json(404, {"error": "no such endpoint"})

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        self.rfile.read(length)
        if not self.path.endswith("/chat/completions"):
            self._json(404, {"error": "no such endpoint"})
            return
        self.server.chats += 1
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        until = time.monotonic() + self.server.repeat_for_s
        try:
            first = self.server.immediate_first
            while True:
                for chunk in self.server.chunks:
                    if not first:
                        time.sleep(self.server.delay_s)
                    first = False
                    self.wfile.write(chunk)
                    self.wfile.flush()
                if time.monotonic() >= until:
                    break
        except OSError:
            pass  # the client hung up
        self.close_connection = True

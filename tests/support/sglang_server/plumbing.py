"""The request handler's plumbing: reading, answering, SSE framing and client checks."""

from __future__ import annotations

import contextlib
import json
import select
import socket
import time
from http.server import BaseHTTPRequestHandler
from typing import TYPE_CHECKING, Any

from tests.support.sglang_server.protocol import CONNECTION_ERRORS, ClientGone

if TYPE_CHECKING:
    from tests.support.sglang_server.generation import _Generation
    from tests.support.sglang_server.server import FakeSGLang, _HTTPServer


_TYPES = {
    400: "BadRequestError",
    404: "NotFoundError",
    500: "InternalServerError",
    503: "ServiceUnavailableError",
}


class HandlerBase(BaseHTTPRequestHandler):
    """What every route needs: bodies in and out, errors in the flavor's shape, SSE."""

    protocol_version = "HTTP/1.1"
    server: _HTTPServer

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
        except CONNECTION_ERRORS:
            self.close_connection = True

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
        self.fake.record_status(self.command, self.path, status)
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
        if self.fake.flavor == "vllm":
            # vLLM's ErrorResponse: OpenAI's nested shape.
            self._json(
                status,
                {
                    "error": self._error_object(
                        message, err_type or _TYPES.get(status, "BadRequestError"), status
                    )
                },
            )
            return
        if status == 401:
            self._json(401, {"error": "Unauthorized"})
            return
        default_types = _TYPES
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

    def _error_object(self, message: str, err_type: str, code: int = 400) -> dict[str, Any]:
        if self.fake.flavor == "openai":
            return {"message": message, "type": err_type, "code": code}
        if self.fake.flavor == "vllm":
            return {"message": message, "type": err_type, "param": None, "code": code}
        return {
            "object": "error",
            "message": message,
            "type": err_type,
            "param": None,
            "code": code,
        }

    def _health_paths(self) -> tuple[str, ...]:
        """Paths answering 200/503 with an empty body (``/ready`` only exists in 0.5.23)."""
        if self.fake.flavor == "new":
            return ("/health", "/health_generate", "/ready")
        if self.fake.flavor == "vllm":
            return ("/health",)
        return ("/health", "/health_generate")

    def _not_found(self) -> None:
        self._json(404, {"detail": "Not Found"})

    def _authorised(self, path: str) -> bool:
        key = self.fake.api_key
        if self.fake.flavor == "vllm" and not path.startswith("/v1/"):
            return True  # vLLM's key guards the OpenAI routes only
        if not key or path.startswith(("/health", "/ready", "/metrics", "/_test/")):
            return True
        return self.headers.get("Authorization") == f"Bearer {key}"

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

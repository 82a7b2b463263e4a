"""HTTP servers of tests' own on loopback: any handler (``serving``), and a proxy that
records every request it gets and answers 502 (``RecordingProxy``)."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@contextlib.contextmanager
def serving(handler: type[BaseHTTPRequestHandler]) -> Iterator[str]:
    """``handler`` answering on a free loopback port while the block runs: its base URL."""
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


class RecordingProxy:
    """An HTTP proxy that records every request it gets and answers 502."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, str, dict[str, str]]] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def _any(self) -> None:
                owner.requests.append((self.command, self.path, dict(self.headers.items())))
                self.send_response(502)
                self.send_header("Content-Length", "0")
                self.end_headers()

            do_GET = do_POST = do_CONNECT = _any

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

"""A server killed mid-answer: one look at it reports nothing answered, never a traceback."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator

import pytest

from longdoc_net import endpoint


@pytest.fixture
def short_body_server() -> Iterator[str]:
    """Answers every request with a Content-Length it never sends, then hangs up."""
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]

    def serve() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            with conn:
                conn.recv(65536)
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2832\r\n\r\nsglang:")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{port}"
    listener.close()  # the daemon thread's accept() then ends


def test_a_body_cut_short_is_nothing_answered(short_body_server: str) -> None:
    assert endpoint.get(f"{short_body_server}/metrics").status == 0

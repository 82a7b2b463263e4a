"""The first-token deadline fires whatever the server trickles (issue 20 item 10).

A server that sends only SSE comments keeps every read short, so a read timeout never
fires; the deadline is counted from the request, whatever bytes arrive.
"""

from __future__ import annotations

import threading

import pytest

from desktop.answering.client import ChatClient
from desktop.errors import StreamBroken
from tests.support.raw_server import RawServer, content


def test_sse_comments_alone_do_not_hold_the_first_token_deadline() -> None:
    # Comments every 50 ms for up to 60 s: far past the 1 s deadline, and the stream ends
    # with a normal answer so that only the deadline can make it fail.
    with RawServer([b": keep-alive\n\n"], delay_s=0.05, repeat_for_s=60) as server:
        server.chunks.append(b"")
        client = ChatClient(server.url + "/v1", "k")
        shared = threading.Event()  # a batch's cancel event, shared by every request
        try:
            answer = client.stream(
                [{"role": "user", "content": "q"}], model="m", max_tokens=8, thinking=False,
                first_token_timeout_s=1.0, cancel=shared,
            )  # fmt: skip
            with pytest.raises(StreamBroken, match="first-token deadline"):
                list(answer)
        finally:
            client.close()
        assert not shared.is_set()  # only this request was late: the others go on


def test_a_token_in_time_disarms_the_deadline() -> None:
    # The first token comes at once, the rest long after the deadline.
    chunks = [content("Hello"), b": keep-alive\n\n", content(" there", "stop")]
    with RawServer(chunks, delay_s=1.5, immediate_first=True) as server:
        client = ChatClient(server.url + "/v1", "k")
        try:
            events = list(
                client.stream(
                    [{"role": "user", "content": "q"}],
                    model="m",
                    max_tokens=8,
                    thinking=False,
                    first_token_timeout_s=1.0,
                )
            )
        finally:
            client.close()
    assert "".join(getattr(e, "text", "") for e in events) == "Hello there"

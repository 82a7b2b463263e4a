"""Cancelling a streamed answer ends it in every state and always aborts it on the server."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest

from desktop.answering.client import SGLANG, ChatClient
from desktop.answering.events import AnswerDelta, ReasoningDelta
from desktop.errors import Cancelled
from tests.conftest import API_KEY
from tests.support.sglang_server import FakeSGLang

MESSAGES = [{"role": "user", "content": "[Page 1]\nThe sky is green.\nWhat colour is it?"}]


def wait_for(condition: Callable[[], bool], timeout: float = 20.0) -> bool:
    """Poll until ``condition()``; a hang detector, not a timing goal."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def aborts(server: FakeSGLang, rid: str) -> int:
    return sum(
        1
        for r in list(server.requests)
        if r.path == "/abort_request" and isinstance(r.body, dict) and r.body.get("rid") == rid
    )


def chats(server: FakeSGLang) -> int:
    return sum(1 for r in list(server.requests) if r.path.endswith("/chat/completions"))


@pytest.mark.parametrize(
    ("state", "stall_after", "thinking"),
    [("before headers", 0, True), ("reasoning", 3, True), ("answer", 3, False)],
)
def test_cancel_from_another_thread_ends_a_hung_stream_in_every_state(
    sglang: FakeSGLang, state: str, stall_after: int, thinking: bool
) -> None:
    # The server hangs with the connection open and ignores /abort_request.
    sglang.behaviour.update(stall_after=stall_after, reasoning_tokens=40, answer_tokens=200)
    client = ChatClient(sglang.url, API_KEY, engine=SGLANG)  # aborts go by rid: SGLang only
    try:
        for _ in range(3):
            sent = chats(sglang)
            cancel = threading.Event()
            stream = client.stream(
                MESSAGES,
                model="m",
                max_tokens=300,
                thinking=thinking,
                first_token_timeout_s=300,
                cancel=cancel,
            )
            seen: list[object] = []

            def read(stream: object = stream, seen: list[object] = seen) -> None:
                try:
                    for event in stream:  # type: ignore[attr-defined]
                        seen.append(event)
                except BaseException as exc:
                    seen.append(exc)

            reader = threading.Thread(target=read, daemon=True)
            reader.start()
            kind = {"reasoning": ReasoningDelta, "answer": AnswerDelta}.get(state)
            if kind is None:
                assert wait_for(lambda sent=sent: chats(sglang) > sent)  # type: ignore[misc]
            else:
                assert wait_for(
                    lambda kind=kind, seen=seen: any(isinstance(e, kind) for e in seen)  # type: ignore[misc]
                )
            cancel.set()
            reader.join(60)  # it ends at once; the timeout only catches a hang
            assert not reader.is_alive(), f"the reader stayed blocked ({state})"
            assert isinstance(seen[-1], Cancelled)
            assert wait_for(lambda rid=stream.rid: aborts(sglang, rid) == 1)  # type: ignore[misc]
    finally:
        client.close()


def test_the_server_is_told_to_abort_when_the_reader_notices_the_stop_first(
    sglang: FakeSGLang,
) -> None:
    sglang.behaviour.update(token_delay_s=0.002, answer_tokens=2_000)
    client = ChatClient(sglang.url, API_KEY, engine=SGLANG)  # aborts go by rid: SGLang only
    try:
        for _ in range(10):
            cancel = threading.Event()
            stream = client.stream(
                MESSAGES,
                model="m",
                max_tokens=3_000,
                thinking=False,
                first_token_timeout_s=60,
                cancel=cancel,
            )

            def consume(stream: object = stream, cancel: threading.Event = cancel) -> None:
                for event in stream:  # type: ignore[attr-defined]
                    if isinstance(event, AnswerDelta):
                        cancel.set()  # the loop itself sees it at the next chunk

            with pytest.raises(Cancelled):
                consume()
            assert wait_for(lambda rid=stream.rid: aborts(sglang, rid) == 1)  # type: ignore[misc]
    finally:
        client.close()

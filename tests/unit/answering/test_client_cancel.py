"""Cancelling a streamed answer ends it in every state and always aborts it on the server."""

from __future__ import annotations

import threading

import pytest

from desktop.answering.client import SGLANG, ChatClient, StreamingAnswer
from desktop.answering.events import AnswerDelta, ReasoningDelta
from desktop.errors import Cancelled
from tests.conftest import API_KEY
from tests.support.sglang_server import FakeSGLang
from tests.support.waiting import wait_for

MESSAGES = [{"role": "user", "content": "[Page 1]\nThe sky is green.\nWhat colour is it?"}]


def aborts(server: FakeSGLang, rid: str) -> int:
    return sum(
        1
        for r in list(server.requests)
        if r.path == "/abort_request" and isinstance(r.body, dict) and r.body.get("rid") == rid
    )


def start(
    client: ChatClient, cancel: threading.Event, *, max_tokens: int, thinking: bool
) -> StreamingAnswer:
    """A stream of MESSAGES that ``cancel`` stops (the first-token bound only catches a hang)."""
    return client.stream(
        MESSAGES,
        model="m",
        max_tokens=max_tokens,
        thinking=thinking,
        first_token_timeout_s=300,
        cancel=cancel,
    )


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
            sent = len(sglang.chat_bodies)
            cancel = threading.Event()
            stream = start(client, cancel, max_tokens=300, thinking=thinking)
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
                assert wait_for(lambda sent=sent: len(sglang.chat_bodies) > sent)  # type: ignore[misc]
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
            stream = start(client, cancel, max_tokens=3_000, thinking=False)

            def consume(stream: object = stream, cancel: threading.Event = cancel) -> None:
                for event in stream:  # type: ignore[attr-defined]
                    if isinstance(event, AnswerDelta):
                        cancel.set()  # the loop itself sees it at the next chunk

            with pytest.raises(Cancelled):
                consume()
            assert wait_for(lambda rid=stream.rid: aborts(sglang, rid) == 1)  # type: ignore[misc]
    finally:
        client.close()

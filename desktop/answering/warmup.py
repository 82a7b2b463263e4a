"""Warm-up requests: have the server prefill a raw prompt prefix, no chat template added.

A chat request always ends with the generation prompt, so a warm-up sent as chat leaves the
server's state after "<|im_start|>assistant": for Qwen3.5's hybrid (Mamba) layers SGLang can
only resume at a state it kept at a request's end or a chunk boundary, and the next
question's prompt leaves that path earlier. Sending the exact cacheable prefix as a raw
prompt (SGLang's native ``/generate``, else ``/v1/completions``) makes the request end
exactly where every question's prompt goes on, so the whole prefix is reused.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
import uuid
from dataclasses import dataclass
from typing import Any, Literal

import httpx2

from desktop.answering.client import CONNECT_TIMEOUT_S, status_error
from desktop.errors import (
    Cancelled,
    ServerUnreachable,
)
from desktop.net import auth_headers, http_client, is_loopback
from longdoc_net.endpoint import Failure, api_root, classify, error_message

Route = Literal["generate", "completions"]
ROUTES: tuple[Route, ...] = ("generate", "completions")


@dataclass(frozen=True)
class Prefilled:
    """What the server reported for a prefill request."""

    route: Route
    prompt_tokens: int | None
    cached_tokens: int | None
    seconds: float


class RouteMissing(Exception):
    """The server has no such endpoint (404/405): try the next route."""


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _read(route: Route, data: Any) -> tuple[int | None, int | None]:
    """(prompt_tokens, cached_tokens) from either response shape, liberally."""
    if isinstance(data, list) and data:
        data = data[0]
    if not isinstance(data, dict):
        return None, None
    if route == "generate":
        meta = data.get("meta_info")
        meta = meta if isinstance(meta, dict) else {}
        return _int(meta.get("prompt_tokens")), _int(meta.get("cached_tokens"))
    usage = data.get("usage")
    usage = usage if isinstance(usage, dict) else {}
    details = usage.get("prompt_tokens_details")
    cached = details.get("cached_tokens") if isinstance(details, dict) else None
    return _int(usage.get("prompt_tokens")), _int(cached)


def prefill(
    url: str,
    api_key: str,
    prompt: str,
    *,
    route: Route,
    model: str,
    timeout_s: float,
    cancel: threading.Event,
) -> Prefilled:
    """Send ``prompt`` for prefill with a one-token answer; cancel aborts it on the server.

    Raises RouteMissing when the server lacks the route, Cancelled when ``cancel`` is set,
    and the usual typed errors (unreachable, loading, key refused, too long, server error).
    """
    rid = uuid.uuid4().hex
    root = api_root(url)
    if route == "generate":
        path = "/generate"
        body: dict[str, Any] = {
            "text": prompt,
            "sampling_params": {"max_new_tokens": 1, "temperature": 0},
            "rid": rid,
        }
    else:
        path = "/v1/completions"
        # Standard fields only: a server other than SGLang may refuse unknown ones (422).
        body = {"model": model, "prompt": prompt, "max_tokens": 1, "temperature": 0}
    started = time.monotonic()
    # A proxy from the environment must never see a loopback server's key.
    http = http_client(url, httpx2.Timeout(timeout_s, connect=CONNECT_TIMEOUT_S))
    done = threading.Event()
    outcome: list[httpx2.Response | BaseException] = []

    def send() -> None:
        try:
            outcome.append(http.post(root + path, json=body, headers=auth_headers(api_key)))
        except BaseException as exc:  # handed to the waiting thread below
            outcome.append(exc)
        finally:
            done.set()

    if cancel.is_set():
        raise Cancelled()
    # Prefill of a long document takes minutes and a blocked read cannot be interrupted
    # from another thread: the request runs on its own thread, and a cancel returns at once
    # while SGLang is told to drop the request (again until it has, since an abort that
    # arrives before the server has registered the request is lost).
    threading.Thread(target=send, daemon=True, name="longdoc-prefill").start()
    while not done.wait(0.05):
        if cancel.is_set():
            # /generate carries the rid SGLang aborts by; any other route's request ends
            # with its connection (vLLM aborts on disconnect; it has no /abort_request).
            threading.Thread(
                target=_abort_until_done if route == "generate" else _close,
                args=(root, api_key, rid, done, http),
                daemon=True,
                name="longdoc-prefill-abort",
            ).start()
            raise Cancelled()
    http.close()
    [response] = outcome
    if isinstance(response, BaseException):
        exc = response
        if cancel.is_set():
            raise Cancelled() from exc
        if isinstance(exc, httpx2.TimeoutException):
            raise ServerUnreachable(
                f"The server at {url} did not finish the warm-up in time."
            ) from exc
        if isinstance(exc, httpx2.HTTPError | OSError | RuntimeError):
            raise ServerUnreachable(
                f"Cannot reach the server at {url}: is it running? "
                "Start it with `longdoc server start` or check the endpoint."
            ) from exc
        raise exc
    if cancel.is_set():
        raise Cancelled()
    status = response.status_code
    if classify(status) == Failure.NOT_FOUND:  # 404/405: the next route, not an error
        raise RouteMissing(path)
    try:
        data = response.json()
    except (ValueError, json.JSONDecodeError):
        data = response.text
    if status >= 400:
        message = error_message(data) or response.text.strip() or f"HTTP {status}"
        raise status_error(url, status, message, path)
    prompt_tokens, cached = _read(route, data)
    return Prefilled(route, prompt_tokens, cached, time.monotonic() - started)


def _abort_until_done(
    root: str, api_key: str, rid: str, done: threading.Event, http: httpx2.Client
) -> None:
    """Abort ``rid`` every half second until its request has ended (at most ~10 s)."""
    for _ in range(20):
        _abort(root, api_key, rid)
        if done.wait(0.5):
            break
    http.close()


def _close(root: str, api_key: str, rid: str, done: threading.Event, http: httpx2.Client) -> None:
    """End a raw-prompt request the engine aborts on disconnect: close its connection."""
    with contextlib.suppress(Exception):
        http.close()


def _abort(root: str, api_key: str, rid: str) -> None:
    """Ask SGLang to drop the request now; other servers drop it with the connection."""
    with contextlib.suppress(httpx2.HTTPError, OSError):
        httpx2.post(
            root + "/abort_request",
            json={"rid": rid},
            headers=auth_headers(api_key),
            timeout=3.0,
            trust_env=not is_loopback(root),
        )

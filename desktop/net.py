"""HTTP for the app's clients of a server: httpx2 clients that follow the proxy rule.

The rule itself, the API key header and the urllib helpers live in ``longdoc_net``, which
the server manager shares (see there); this adds what needs httpx2.
"""

from __future__ import annotations

import contextlib
import urllib.request
from typing import Any

import httpx2

import longdoc_net
from desktop.errors import ServerRedirected
from longdoc_net import auth_headers, is_loopback, opener_for
from longdoc_net.redirects import RedirectRefused, redirect_message

__all__ = ["auth_headers", "http_client", "is_loopback", "opener_for", "urlopen"]


class _Client(httpx2.Client):
    """Closes its connections when collected, as the openai package's own client does."""

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            if not self.is_closed:
                self.close()


def _refuse_redirect(response: httpx2.Response) -> None:
    """A 3xx is the server's problem, never followed (the key and the document stay put)."""
    if 300 <= response.status_code < 400:
        response.close()
        raise ServerRedirected(
            redirect_message(
                str(response.request.url),
                response.status_code,
                response.headers.get("location", ""),
            )
        )


def http_client(url: str, timeout: httpx2.Timeout, **kwargs: Any) -> httpx2.Client:
    """An HTTP client for ``url``: environment proxies unless the URL is loopback; no redirect
    is followed (one raises ServerRedirected, which the openai package lets through)."""
    hooks = dict(kwargs.pop("event_hooks", None) or {})
    hooks["response"] = [*hooks.get("response", []), _refuse_redirect]
    # trust_env=False is what turns the proxy variables off; for a loopback URL the other
    # things it ignores (netrc, SSL_CERT_FILE) do not apply either.
    return _Client(
        timeout=timeout,
        trust_env=not is_loopback(url),
        follow_redirects=False,
        event_hooks=hooks,
        **kwargs,
    )


def urlopen(request: urllib.request.Request, timeout: float) -> Any:
    """``longdoc_net.urlopen`` (the proxy rule, no redirects); a redirect is ServerRedirected
    rather than a URLError, so no caller mistakes it for a server that is simply absent."""
    try:
        return longdoc_net.urlopen(request, timeout)
    except RedirectRefused as exc:
        raise ServerRedirected(str(exc)) from None

"""HTTP for the app's clients of a server: httpx2 clients that follow the proxy rule.

The rule itself, the API key header and the urllib helpers live in ``longdoc_net``, which
the server manager shares (see there); this adds what needs httpx2.
"""

from __future__ import annotations

import contextlib
from typing import Any

import httpx2

from longdoc_net import auth_headers, is_loopback, opener_for, urlopen

__all__ = ["auth_headers", "http_client", "is_loopback", "opener_for", "urlopen"]


class _Client(httpx2.Client):
    """Closes its connections when collected, as the openai package's own client does."""

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            if not self.is_closed:
                self.close()


def http_client(url: str, timeout: httpx2.Timeout, **kwargs: Any) -> httpx2.Client:
    """An HTTP client for ``url``: environment proxies unless the URL is loopback."""
    # trust_env=False is what turns the proxy variables off; for a loopback URL the other
    # things it ignores (netrc, SSL_CERT_FILE) do not apply either.
    kwargs.setdefault("follow_redirects", True)
    return _Client(timeout=timeout, trust_env=not is_loopback(url), **kwargs)

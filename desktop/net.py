"""HTTP helpers every client of a server shares: the API key header and the proxy rule.

Proxy rule: a loopback endpoint (``localhost``, ``127.0.0.0/8``, ``::1``) never goes through
a proxy, whatever ``http_proxy``/``HTTPS_PROXY``/``ALL_PROXY`` say, so the Bearer key and the
documents never leave the machine; any other endpoint follows the environment (proxy
variables and ``NO_PROXY``), as curl does. Depends on nothing else in Longdoc, so the
server manager can use it too.
"""

from __future__ import annotations

import contextlib
import ipaddress
import urllib.request
from typing import Any
from urllib.parse import urlsplit

import httpx2


def auth_headers(api_key: str) -> dict[str, str]:
    """The ``Authorization`` header for an API key (none without a key)."""
    return {"Authorization": f"Bearer {api_key}"} if api_key else {}


def is_loopback(url: str) -> bool:
    """Does the URL name this machine (so that no proxy may see its traffic)?"""
    try:
        host = urlsplit(url).hostname or ""
    except ValueError:
        return False
    host = host.lower().rstrip(".")
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


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


_DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def urlopen(request: urllib.request.Request, timeout: float) -> Any:
    """``urllib.request.urlopen`` with the same proxy rule as ``http_client``."""
    if is_loopback(request.full_url):
        return _DIRECT.open(request, timeout=timeout)
    # A fresh opener reads the proxy variables now; urllib.request.urlopen would install a
    # process-wide one that keeps whatever they were at its first call.
    return urllib.request.build_opener().open(request, timeout=timeout)

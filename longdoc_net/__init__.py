"""What every client of an inference server shares: the API key header and the proxy rule.

Imported by the app's core (``desktop``) and by ``server_manager``, which do not import each
other; it imports neither (checked by import-linter) and needs only the standard library.

Proxy rule: a loopback endpoint (``localhost``, ``127.0.0.0/8``, ``::1``) never goes through a
proxy, whatever ``http_proxy``/``HTTPS_PROXY``/``ALL_PROXY`` say, so the Bearer key and the
documents never leave the machine; any other endpoint follows the environment (the proxy
variables and ``NO_PROXY``), as curl does.

Redirect rule: no request follows a redirect. urllib would resend the request, Bearer key
included, to whatever host the ``Location`` names; a redirect is refused with one sentence
(``redirect_message``) instead.
"""

from __future__ import annotations

import ipaddress
import urllib.error
import urllib.request
from typing import Any
from urllib.parse import urlsplit


def auth_headers(api_key: str) -> dict[str, str]:
    """The request headers that carry the key (none without one)."""
    return {"Authorization": f"Bearer {api_key}"} if api_key else {}


def is_loopback(url: str) -> bool:
    """True for ``localhost`` and loopback addresses (127.0.0.0/8, ::1); False if unparsable."""
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


def redirect_message(url: str, status: int, location: str) -> str:
    """The one sentence for a server that answered a redirect (never followed)."""
    where = f" to {location}" if location else ""
    return (
        f"The server at {url} answered {status}, a redirect{where}; Longdoc follows no "
        "redirects (the documents and the API key would go elsewhere): give the endpoint "
        "as the server's own address."
    )


class RedirectRefused(urllib.error.URLError):
    """A server answered 3xx; nothing was sent to the ``location`` it named."""

    def __init__(self, url: str, status: int, location: str) -> None:
        super().__init__(redirect_message(url, status, location))
        self.url, self.status, self.location = url, status, location

    def __str__(self) -> str:
        return str(self.reason)


class _RefuseRedirects(urllib.request.HTTPRedirectHandler):
    """Raise instead of building the request to the new location."""

    def redirect_request(
        self, req: urllib.request.Request, fp: Any, code: int, msg: str, headers: Any, newurl: str
    ) -> urllib.request.Request | None:
        raise RedirectRefused(req.full_url, code, newurl)


# A loopback server is reached directly: with http_proxy set, urllib would otherwise send the
# request, Bearer key included, to the proxy.
_DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}), _RefuseRedirects)


def opener_for(url: str) -> urllib.request.OpenerDirector:
    """The urllib opener for ``url``: never a proxy for loopback, the environment's otherwise."""
    # build_opener() reads the proxy variables when called; urllib.request.urlopen would keep
    # a process-wide opener made with whatever they were at its first call.
    return _DIRECT if is_loopback(url) else urllib.request.build_opener(_RefuseRedirects)


def urlopen(request: urllib.request.Request, timeout: float) -> Any:
    """``urllib.request.urlopen`` with the proxy rule."""
    return opener_for(request.full_url).open(request, timeout=timeout)

"""What every client of an inference server shares: the API key header and the proxy rule.

Imported by the app's core (``desktop``) and by ``server_manager``, which do not import each
other; it imports neither (checked by import-linter) and needs only the standard library.

Proxy rule: a loopback endpoint (``localhost``, ``127.0.0.0/8``, ``::1``) never goes through a
proxy, whatever ``http_proxy``/``HTTPS_PROXY``/``ALL_PROXY`` say, so the Bearer key and the
documents never leave the machine; any other endpoint follows the environment (the proxy
variables and ``NO_PROXY``), as curl does.

Redirect rule (``longdoc_net.redirects``): no opener made here follows a redirect.
"""

from __future__ import annotations

import ipaddress
from functools import cache
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

if TYPE_CHECKING:
    import urllib.request


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


@cache
def _direct() -> urllib.request.OpenerDirector:
    """A loopback server is reached directly: with http_proxy set, urllib would otherwise send
    the request, Bearer key included, to the proxy. Made on first use: urllib.request costs
    ~35 ms to import, and every command imports this package (desktop.errors' exit codes)."""
    import urllib.request

    from longdoc_net.redirects import RefuseRedirects

    return urllib.request.build_opener(urllib.request.ProxyHandler({}), RefuseRedirects)


def opener_for(url: str) -> urllib.request.OpenerDirector:
    """The urllib opener for ``url``: never a proxy for loopback, the environment's otherwise."""
    import urllib.request

    from longdoc_net.redirects import RefuseRedirects

    # build_opener() reads the proxy variables when called; urllib.request.urlopen would keep
    # a process-wide opener made with whatever they were at its first call.
    return _direct() if is_loopback(url) else urllib.request.build_opener(RefuseRedirects)


def urlopen(request: urllib.request.Request, timeout: float) -> Any:
    """``urllib.request.urlopen`` with the proxy rule."""
    return opener_for(request.full_url).open(request, timeout=timeout)

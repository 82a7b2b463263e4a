"""The redirect rule: no request follows a redirect.

urllib would resend a request, Bearer key and document included, to whatever host a 3xx's
``Location`` names (it keeps the header across hosts); a redirect is refused with one
sentence instead. Imported only by what makes requests (urllib costs start-up time).
"""

from __future__ import annotations

import urllib.error
import urllib.request
from typing import Any


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


class RefuseRedirects(urllib.request.HTTPRedirectHandler):
    """Raise instead of building the request to the new location."""

    def redirect_request(
        self, req: urllib.request.Request, fp: Any, code: int, msg: str, headers: Any, newurl: str
    ) -> urllib.request.Request | None:
        raise RedirectRefused(req.full_url, code, newurl)

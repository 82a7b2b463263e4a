"""desktop.session.Session: an answerer replaced by new settings stays usable by the worker
that holds it, and is closed with the session."""

from __future__ import annotations

import pytest

from desktop.config import Settings
from desktop.session import Session
from desktop.store.db import Store
from tests.conftest import API_KEY
from tests.support.sglang_server import FakeSGLang


def test_a_replaced_answerer_works_until_the_session_closes(
    sglang: FakeSGLang, store: Store
) -> None:
    session = Session(Settings(endpoint=sglang.url, api_key=API_KEY), store)
    held = session.answerer()  # a worker fetching the server's limits holds it
    session.update_settings(Settings(endpoint=sglang.url, api_key=API_KEY, thinking=False))
    fresh = session.answerer()
    assert fresh is not held
    # The worker's request, made after the settings changed, still goes through: its HTTP
    # pool was not closed under it (closed, a request just starting could leave a socket
    # open that nothing closes).
    assert held.model().id == fresh.model().id
    session.close()
    with pytest.raises(Exception, match="closed"):  # both closed with the session
        held.client.models()
    with pytest.raises(Exception, match="closed"):
        fresh.client.models()

"""Fixtures of the answering tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.conftest import API_KEY
from tests.support.sglang_server import FakeSGLang


@pytest.fixture(params=["vllm", "sglang"])
def engine(request: pytest.FixtureRequest) -> Iterator[FakeSGLang]:
    """Both engines' hybrid caches: vLLM's (states at block boundaries) and SGLang's."""
    if request.param == "vllm":
        server = FakeSGLang(api_key=API_KEY, flavor="vllm", context_length=262_144)
    else:
        server = FakeSGLang(api_key=API_KEY, context_length=262_144, hybrid_cache=True)
    with server:
        yield server

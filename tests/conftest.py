"""Fixtures shared by every test layer: a private data directory and the fake SGLang server."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from desktop.documents.model import Document, Page
from tests.support.sglang_server import FakeSGLang

ROOT = Path(__file__).resolve().parents[1]
CORPUS_DIR = ROOT.parent / "shared" / "corpus" / "pdf-samples"
API_KEY = "test-key-123"

# The shared fixtures (``store``...) live in tests/support, with the other test helpers.
pytest_plugins = ["tests.support.fixtures"]


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh LONGDOC_HOME with no endpoint variables leaking in from the environment."""
    path = tmp_path / "home"
    path.mkdir(mode=0o700)  # as Longdoc makes it; a looser one gets a notice on first use
    monkeypatch.setenv("LONGDOC_HOME", str(path))
    from desktop.config import SETTINGS

    for var in (spec.env for spec in SETTINGS.values() if spec.env):
        monkeypatch.delenv(var, raising=False)
    return path


@pytest.fixture
def sglang() -> Iterator[FakeSGLang]:
    """An SGLang 0.5.23-like server on loopback with an API key and a 262,144 context."""
    with FakeSGLang(api_key=API_KEY, context_length=262_144) as server:
        yield server


def make_document(pages: list[tuple[str, str]], title: str = "Test document") -> Document:
    """A document from (label, text) pairs, with a content-derived hash and exact tokens."""
    from desktop.documents.layout import measure

    page_list = [Page(i + 1, label, text) for i, (label, text) in enumerate(pages)]
    digest = hashlib.sha256(repr((title, pages)).encode()).hexdigest()
    doc = Document(
        sha256=digest,
        path=f"/docs/{digest[:8]}.pdf",
        kind="pdf",
        title=title,
        pages=page_list,
        extractor="test/1",
    )
    measure(doc)  # exact tokens of the block, and per page
    return doc


# A real X display for tests marked ``xvfb``, and no process left behind by the run.
from tests.support.display import (  # noqa: E402
    pytest_configure,
    pytest_runtest_logreport,
    pytest_runtest_protocol,
    pytest_sessionfinish,
)

__all__ = [
    "pytest_configure",
    "pytest_runtest_logreport",
    "pytest_runtest_protocol",
    "pytest_sessionfinish",
]

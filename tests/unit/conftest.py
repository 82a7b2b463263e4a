"""Unit-test fixtures: the shared PDF corpus, which must be present (tests fail without it)."""

from __future__ import annotations

from pathlib import Path

import pytest

# ../shared/corpus/pdf-samples relative to the project root (never copied into the project).
CORPUS = Path(__file__).resolve().parents[2].parent / "shared" / "corpus" / "pdf-samples"


@pytest.fixture
def corpus() -> Path:
    """The PDF corpus directory; a missing corpus is a failure, not a skip."""
    assert (CORPUS / "files.json").is_file(), f"PDF corpus missing at {CORPUS}"
    return CORPUS

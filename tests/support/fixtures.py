"""Fixtures every test directory shares (registered by tests/conftest.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from desktop.store.db import Store


@pytest.fixture
def store(home: Path) -> Iterator[Store]:
    """The real SQLite store, in the test's own data directory (where the app and the CLI
    open it too)."""
    from desktop.config import db_path

    result = Store(db_path())
    yield result
    result.close()


@pytest.fixture(autouse=True)
def _close_answerers() -> Iterator[None]:
    """Every test's answerers (``tests.support.answers.answerer_for``) closed at its end."""
    from tests.support.answers import close_answerers

    yield
    close_answerers()

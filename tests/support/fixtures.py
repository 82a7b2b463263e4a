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

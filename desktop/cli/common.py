"""Helpers shared by CLI commands: settings with flag overrides, the store."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

from desktop.config import Settings, data_dir, db_path
from desktop.store.db import Store

if TYPE_CHECKING:
    from server_manager import Connection


def open_store() -> Store:
    """The store in the data directory."""
    return Store(db_path())


def warn(message: str) -> None:
    """One warning line on stderr."""
    print(f"Warning: {message}", file=sys.stderr)


def managed_server(settings: Settings) -> Callable[[], Connection | None]:
    """Looks up the server Longdoc manages, for ``resolve_endpoint`` (imported only then)."""

    def lookup() -> Connection | None:
        from server_manager import connection_for

        return connection_for(data_dir(), settings)

    return lookup

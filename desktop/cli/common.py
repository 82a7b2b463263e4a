"""Helpers shared by CLI commands: settings with flag overrides, the store."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

from desktop.config import Settings, data_dir, db_path, load_settings, with_overrides
from desktop.store.db import Store

if TYPE_CHECKING:
    from server_manager import Connection


def settings_from(args: argparse.Namespace) -> Settings:
    """Settings with the command's flags applied (flags win over env and file)."""
    settings = load_settings()
    return with_overrides(
        settings,
        endpoint=getattr(args, "endpoint", None),
        model=getattr(args, "model", None),
        api_key=getattr(args, "api_key", None),
        context_length=getattr(args, "context_length", None),
    )


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

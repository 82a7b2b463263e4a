"""``longdoc reset-db``: move a damaged database aside (kept for recovery), start a fresh one."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from desktop.cli.commands import add_command
from desktop.errors import COMMON_EXIT_CODES, StorageError, display_path

EXIT_CODES = COMMON_EXIT_CODES


def register(sub: Any) -> None:
    """Add the ``reset-db`` command."""
    p = add_command(sub, "reset-db")
    p.add_argument(
        "--force", action="store_true", help="set the database aside even if it looks sound"
    )
    p.set_defaults(func=cmd_reset_db)


def cmd_reset_db(args: argparse.Namespace) -> int:
    """Set the damaged database aside and open a fresh one."""
    from desktop.config import db_path
    from desktop.store.db import Store, damage, other_user, set_aside

    path = db_path()
    if not path.exists():
        print(f"No database at {display_path(path)} yet; nothing to do.", file=sys.stderr)
        return 0
    holder = other_user(path)
    if holder is not None:
        pid, command = holder
        raise StorageError(
            f"{display_path(path)} is in use by process {pid} ({command}); moving it now "
            "would send that process's writes into the set-aside file. Close it (or let it "
            "finish) and run reset-db again."
        )
    problem = damage(path)
    if problem is None and not args.force:
        print(
            f"{display_path(path)} is sound; nothing to do (--force sets it aside anyway).",
            file=sys.stderr,
        )
        return 0
    try:
        moved = set_aside(path)
    except OSError as exc:
        raise StorageError(
            f"{display_path(path)}: cannot move the database aside ({exc.strerror or exc})"
        ) from exc
    Store(path).close()
    print(
        f"Moved the database to {display_path(moved)} (kept for recovery); started a fresh "
        f"one at {display_path(path)}. Ingest your documents again.",
        file=sys.stderr,
    )
    return 0

"""``longdoc gui``: the desktop application (also what plain ``longdoc`` opens)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any


def register(sub: Any) -> None:
    """Add the ``gui`` command."""
    p = sub.add_parser(
        "gui",
        help="open the desktop app (the default)",
        description="Open the Longdoc window, optionally with documents to add.",
    )
    p.add_argument("files", nargs="*", type=Path, metavar="FILE")
    p.set_defaults(func=cmd_gui)


def cmd_gui(args: argparse.Namespace) -> int:
    """Start the Qt application (imported lazily: the CLI works without a display)."""
    from desktop.ui.app import run

    return run(list(args.files))

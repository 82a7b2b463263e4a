"""``longdoc gui``: the desktop application (also what plain ``longdoc`` opens)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from desktop.cli.commands import add_command
from desktop.errors import COMMON_EXIT_CODES, UsageError

# The window reports document and server problems itself; the process exits 0.
EXIT_CODES = COMMON_EXIT_CODES


def register(sub: Any) -> None:
    """Add the ``gui`` command."""
    p = add_command(sub, "gui")
    p.add_argument("files", nargs="*", type=Path, metavar="FILE")
    p.set_defaults(func=cmd_gui)


def cmd_gui(args: argparse.Namespace) -> int:
    """Start the Qt application (imported lazily: the CLI works without a display)."""
    if (
        sys.platform.startswith("linux")
        and not os.environ.get("QT_QPA_PLATFORM")
        and not os.environ.get("DISPLAY")
        and not os.environ.get("WAYLAND_DISPLAY")
    ):
        # Without this check Qt aborts the process with a core dump and a plugin hint.
        raise UsageError(
            "no display to open the window on (DISPLAY and WAYLAND_DISPLAY are unset); "
            "use the command line instead (longdoc --help), or run under Xvfb"
        )
    from desktop.ui.app import run

    return run(list(args.files))

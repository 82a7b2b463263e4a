"""The table of ``longdoc`` commands: each command's name, module and one-line help, once.

``longdoc --help`` lists these lines without importing the modules; a module's
``register(subparsers)`` adds its parser through ``add_command``, which takes the help from
here, so a command's help is written in one place.
"""

from __future__ import annotations

import argparse
from typing import Any, NamedTuple


class Command(NamedTuple):
    """A ``longdoc`` command: its module defines ``register(subparsers)`` and ``EXIT_CODES``."""

    name: str
    module: str
    help: str


# One line per command. The module's register() adds the subparser named `name` with its
# arguments; its EXIT_CODES (codes from desktop.errors) become the help's epilog.
COMMANDS: tuple[Command, ...] = (
    Command("ingest", "desktop.cli.ingest", "extract, count and store documents"),
    Command("ask", "desktop.cli.ask", "ask a question about a whole document, or several"),
    Command(
        "compare",
        "desktop.cli.compare",
        "what changed between two versions of a document, then the model's explanation",
    ),
    Command(
        "summarize", "desktop.cli.summarize", "summarize every document in folders into one report"
    ),
    Command(
        "review", "desktop.cli.summarize", "ask the same questions of every document: a review grid"
    ),
    Command("warm", "desktop.cli.warm", "prefill documents in the server's cache before asking"),
    Command("server", "desktop.cli.server", "start, stop and watch the local inference server"),
    Command(
        "doctor",
        "desktop.cli.doctor",
        "check this workstation: app, data, container runtime, GPUs, model, server",
    ),
    Command("search", "desktop.cli.search", "find words in every stored page and every answer"),
    Command(
        "remove", "desktop.cli.search", "forget documents: their pages, answers and index entries"
    ),
    Command(
        "reset-db",
        "desktop.cli.reset_db",
        "move a damaged database aside (kept for recovery) and start a fresh one",
    ),
    Command("gui", "desktop.cli.gui", "open the desktop app (the default)"),
)

HELP = {command.name: command.help for command in COMMANDS}


def add_command(
    sub: Any, name: str, description: str = "", **kwargs: Any
) -> argparse.ArgumentParser:
    """The subparser of command ``name``, its one-line help from ``COMMANDS``."""
    parser: argparse.ArgumentParser = sub.add_parser(
        name, help=HELP[name], description=description or HELP[name], **kwargs
    )
    return parser

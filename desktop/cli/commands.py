"""The table of ``longdoc`` commands: each command's name, module, one-line help and
description, once.

``longdoc --help`` lists these lines without importing the modules; a module's
``register(subparsers)`` adds its parser through ``add_command``, which takes the help and
the description from here, so a command's words are written in one place.
"""

from __future__ import annotations

import argparse
from typing import Any, NamedTuple


class Command(NamedTuple):
    """A ``longdoc`` command: its module defines ``register(subparsers)`` and ``EXIT_CODES``."""

    name: str
    module: str
    help: str  # the line in ``longdoc --help``
    description: str  # the paragraph atop ``longdoc NAME --help``


# One entry per command. The module's register() adds the subparser named `name` with its
# arguments; its EXIT_CODES (codes from desktop.errors) become the help's epilog.
COMMANDS: tuple[Command, ...] = (
    Command(
        "ingest",
        "desktop.cli.ingest",
        "extract, count and store documents",
        "Extract the text of documents (PDF, Word .docx, WebVTT/SRT transcripts, "
        "text, Markdown; folders are searched), count their exact Qwen3.5 tokens and store "
        "them for later questions. Anything that is not a regular file (a pipe, a device) "
        "is refused before it is read.",
    ),
    Command(
        "ask",
        "desktop.cli.ask",
        "ask a question about a whole document, or several",
        "Ask a question about a whole document, or about several at once. The "
        "complete text (or the chosen page range) goes to the model in one prompt; nothing is "
        "truncated. Several documents are lettered A, B, C... in the order given, each whole "
        "in its own block, and cited with their letter ([B p. 4]). The last argument is always "
        "the question. The answer streams to stdout, the model's reasoning to stderr.",
    ),
    Command(
        "compare",
        "desktop.cli.compare",
        "what changed between two versions of a document, then the model's explanation",
        "Compare two versions of a document (PDF, Word, text, Markdown or a "
        "transcript, also across kinds): first a deterministic comparison, no server needed, "
        "of their paragraphs, list items, table rows and transcript lines, listing every "
        "change as added, removed, changed or moved with both anchors (A = OLD, B = NEW) and "
        "the words inserted and deleted; reflowed lines, hyphenation at line ends, moved page "
        "breaks and renumbered pages are not changes. Then, unless --no-explain, the model "
        "reads both versions whole with the change list and explains each material change, "
        "quoting both; every quote is checked against its version. Exits 0 whether or not "
        "anything changed.",
    ),
    Command(
        "summarize",
        "desktop.cli.summarize",
        "summarize every document in folders into one report",
        "Summarize each document (its whole text, one prompt each, several at once) "
        "and write a report. Finished answers are stored as they complete, so running it "
        "again resumes where it stopped. Folders are searched recursively; files that are "
        "not documents are listed as skipped.",
    ),
    Command(
        "review",
        "desktop.cli.summarize",
        "ask the same questions of every document: a review grid",
        "Ask every question of every document (each document whole, in one "
        "prompt) and write a grid: one row per document, one column per question, each "
        "cell the answer with its page citations and their check status. CSV is the grid "
        "format; Markdown and JSON hold the same answers.",
    ),
    Command(
        "warm",
        "desktop.cli.warm",
        "prefill documents in the server's cache before asking",
        "Have the server read each document now (its cacheable prompt prefix: "
        "instructions, title and pages), so the first question about it does not wait for "
        "the whole prefill. Useful before a meeting or after a batch. Nothing is answered "
        "or stored; a document the server already holds is reported as already warm.",
    ),
    Command(
        "server",
        "desktop.cli.server",
        "start, stop and watch the local inference server",
        "Start, stop and watch the local SGLang server (docker, podman or a "
        "host process), or use an external one, as the profile says.",
    ),
    Command(
        "doctor",
        "desktop.cli.doctor",
        "check this workstation: app, data, container runtime, GPUs, model, server",
        "Check everything Longdoc needs on this workstation (Python and Qt, the "
        "data directory, the container runtime, GPU devices and permissions, the server "
        "image, the model folder, the port, the server and its context length) and say "
        "how to fix each problem. Exit 0 when nothing is a problem (warnings allowed), "
        "{EXIT_DOCTOR_PROBLEMS} when something is.",
    ),
    Command(
        "search",
        "desktop.cli.search",
        "find words in every stored page and every answer",
        "Search the text of every stored page and every complete answer "
        "(question and answer), best matches first (bm25). Words match whatever their case "
        'and accents; "a phrase" in double quotes, prefix* , AND / OR / NOT and '
        "NEAR(a b, 5) work as in SQLite FTS5; a query with other punctuation (§ 4.2, "
        "O'Brien) is read as plain words. Chinese, Japanese and Korean text is matched as "
        "written. Matches are marked ⟦like this⟧ (bold on a terminal).",
    ),
    Command(
        "remove",
        "desktop.cli.search",
        "forget documents: their pages, answers and index entries",
        "Remove documents from the library, as the app's Remove does: the "
        "document, its pages, every answer and thread about it, and their search index "
        "entries. The files themselves are not touched. A document is named by the path it "
        "was ingested from or by the file itself (found by its content if moved).",
    ),
    Command(
        "reset-db",
        "desktop.cli.reset_db",
        "move a damaged database aside (kept for recovery) and start a fresh one",
        "Check the database (longdoc.db in the data directory); if SQLite finds "
        "it damaged, rename it and its -wal/-shm files to longdoc.db.damaged-<time> (nothing "
        "is deleted: `sqlite3 FILE .recover` can save what is left) and create an empty one. "
        "Documents must then be ingested again; answers start afresh. Close the app first.",
    ),
    Command(
        "gui",
        "desktop.cli.gui",
        "open the desktop app (the default)",
        "Open the Longdoc window, optionally with documents to add.",
    ),
)

HELP = {command.name: command.help for command in COMMANDS}
_BY_NAME = {command.name: command for command in COMMANDS}


def add_command(sub: Any, name: str, **kwargs: Any) -> argparse.ArgumentParser:
    """The subparser of command ``name``, its help and description from ``COMMANDS`` (where
    ``{EXIT_...}`` stands for that exit code of ``desktop.errors``)."""
    # Imported here, not with the table: main.py imports the table before its SIGINT
    # handling is in place, and keeps start-up imports to the chosen command's.
    from desktop import errors

    command = _BY_NAME[name]
    description = command.description.format_map(vars(errors))
    parser: argparse.ArgumentParser = sub.add_parser(
        name, help=command.help, description=description, **kwargs
    )
    return parser

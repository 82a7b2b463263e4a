"""``longdoc search`` and ``longdoc remove``: find anything in the library; forget documents."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from desktop.cli.commands import add_command
from desktop.errors import (
    COMMON_EXIT_CODES,
    EXIT_NOT_IN_LIBRARY,
    NotInLibrary,
    UsageError,
    display_path,
    one_line,
    plural,
)

if TYPE_CHECKING:
    from desktop.search import Hit

EXIT_CODES = (*COMMON_EXIT_CODES, EXIT_NOT_IN_LIBRARY)
PROGRESS_FROM = 2_000  # rows to index before progress is worth showing


def _limit(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 1 <= value <= 1_000:
        raise argparse.ArgumentTypeError("give 1 to 1000")
    return value


def register(sub: Any) -> None:
    """Add the ``search`` and ``remove`` commands."""
    p = add_command(sub, "search")
    p.add_argument("query", metavar="QUERY", help="words to look for (quote it for the shell)")
    p.add_argument(
        "--in",
        dest="scope",
        choices=("documents", "answers", "all"),
        default="all",
        help="search document pages, answers, or both (default: all)",
    )
    p.add_argument(
        "--document", type=Path, metavar="PATH", help="only this document's pages and answers"
    )
    p.add_argument(
        "--limit", type=_limit, default=20, metavar="N", help="at most N hits (default: 20)"
    )
    p.add_argument(
        "--json",
        action="store_true",
        help='print {"query", "hits": [{"kind": "page|answer", "path", "sha256", "title", '
        '"page", "label", "answer_id", "thread_id", "question", "asked_at", "snippet", '
        '"score"}]}',
    )
    p.set_defaults(func=cmd_search)

    r = add_command(sub, "remove")
    r.add_argument("paths", nargs="+", type=Path, metavar="PATH")
    r.set_defaults(func=cmd_remove)


def cmd_search(args: argparse.Namespace) -> int:
    """Search and print the hits; none is exit 0 with an empty list."""
    from desktop import search
    from desktop.cli.common import open_store

    search.check_query(args.query)  # before the database is even opened
    store = open_store()
    try:
        sha = None
        if args.document is not None:
            from desktop.library import find_document  # (reads files: ~12 ms to import)

            if args.document.is_dir():
                raise UsageError(
                    f"{display_path(args.document)}: is a folder; --document takes one"
                    " document (search without it to search the whole library)"
                )

            found = find_document(args.document, store)
            if found is None:
                raise NotInLibrary(args.document)
            sha = found.sha256
        result = search.search(
            store,
            args.query,
            scope=args.scope,
            document=sha,
            limit=args.limit,
            progress=_progress(),
        )
    finally:
        store.close()
    if args.json:
        print(json.dumps(search.to_json(result), ensure_ascii=False))
        return 0
    if not result.hits:
        hint = f" (read as plain words: {result.read_as})" if result.read_as else ""
        print(f"No matches for {one_line(result.query)}{one_line(hint)}.", file=sys.stderr)
        return 0
    terminal = sys.stdout.isatty()
    for hit in result.hits:
        print(_heading(hit))
        if terminal:
            # Matches in bold: Longdoc's own styling, around the escaped document text.
            from desktop.cli.terminal import style
            from desktop.search import MARK_END, MARK_START

            pieces = _snippet(hit.snippet, False).split(MARK_START)
            sys.stdout.write("    " + pieces[0])
            for piece in pieces[1:]:
                match, _, rest = piece.partition(MARK_END)
                style(sys.stdout, "\033[1m")
                sys.stdout.write(match)
                style(sys.stdout, "\033[22m")
                sys.stdout.write(rest)
            sys.stdout.write("\n")
        else:
            print("    " + _snippet(hit.snippet, False))
    return 0


def _heading(hit: Hit) -> str:
    """``Title — path, page iv`` or ``Title — path, answer 12 (thread 3) of 2026-11-30: Q``."""
    from desktop.search import iso

    where = f"{one_line(hit.document.title)} — {display_path(hit.document.path)}"
    if hit.kind == "page":
        return f"{where}, page {one_line(hit.label or str(hit.page))}"
    others = len(hit.documents) - 1
    if others > 0:
        where += f" and {plural(others, 'other document')}"
    thread = f" (thread {hit.thread_id})" if hit.thread_id is not None else ""
    day = (iso(hit.asked_at) or "")[:10]
    return f"{where}, answer {hit.answer_id}{thread} of {day}: {one_line(hit.question or '')}"


def _snippet(snippet: str, terminal: bool) -> str:
    """The snippet escaped (it is the document's text); matches bold on a terminal."""
    from desktop.search import MARK_END, MARK_START, parts

    out = []
    for text, match in parts(snippet):
        shown = one_line(text)
        if match:
            shown = f"\033[1m{shown}\033[22m" if terminal else f"{MARK_START}{shown}{MARK_END}"
        out.append(shown)
    return "".join(out)


def _progress() -> Any:
    """Reports the index being built (an older library's first search) when it is large."""
    last = [0.0]

    def report(done: int, total: int) -> None:
        now = time.monotonic()
        if total < PROGRESS_FROM or (now - last[0] < 1 and done < total):
            return
        last[0] = now
        print(
            f"Indexing the library for search: {done * 100 // total}% ({done:,} of {total:,})",
            file=sys.stderr,
            flush=True,
        )

    return report


def cmd_remove(args: argparse.Namespace) -> int:
    """Remove each named document; every one not in the library is one Error line (exit 8)."""
    from desktop.cli.common import open_store
    from desktop.library import find_document

    store = open_store()
    missing = 0
    try:
        for path in args.paths:
            if path.is_dir():
                raise UsageError(f"{display_path(path)}: is a folder; name the documents to remove")
        for path in args.paths:
            found = find_document(path, store)
            if found is None:
                print(f"Error: {NotInLibrary(path)}", file=sys.stderr)
                missing += 1
                continue
            store.remove_document(found.sha256)
            print(
                f"Removed {display_path(path)} ({one_line(found.title)}, "
                f"{plural(found.pages, 'page')}) and its answers"
            )
    finally:
        store.close()
    return EXIT_NOT_IN_LIBRARY if missing else 0

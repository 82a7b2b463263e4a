"""``longdoc warm``: have the server read documents now, so the first question starts at once."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from desktop.cli.commands import add_command
from desktop.cli.options import add_server_options
from desktop.errors import (
    ASKING_EXIT_CODES,
    EXIT_DOCUMENT,
    DocumentError,
    UsageError,
    display_path,
    one_line,
)

EXIT_CODES = ASKING_EXIT_CODES


def register(sub: Any) -> None:
    """Add the ``warm`` command."""
    p = add_command(sub, "warm")
    p.add_argument("paths", nargs="+", type=Path, metavar="PATH")
    p.add_argument("--pages", metavar="RANGE", help="only these pages, e.g. 1-120 or iv..xii")
    add_server_options(p)
    p.add_argument("--json", action="store_true", help="one JSON object per document and line")
    p.set_defaults(func=cmd_warm)


def cmd_warm(args: argparse.Namespace) -> int:
    """Warm each document in turn; a document that fails is reported and the others go on."""
    from desktop.answering.pages import PageRangeError, parse_range
    from desktop.answering.service import Answerer, resolve_endpoint
    from desktop.cli.common import managed_server, open_store
    from desktop.cli.ingest import json_path
    from desktop.cli.options import settings_from
    from desktop.library import expand_paths, open_document

    settings = settings_from(args)
    store = open_store()
    failed = False
    try:
        answerer = Answerer(store, resolve_endpoint(settings, managed_server(settings)), settings)
        try:
            for path in expand_paths(args.paths):
                try:
                    doc, _ = open_document(path, store)
                    pages = None
                    if args.pages:
                        try:
                            pages = parse_range(args.pages, doc.pages)
                        except PageRangeError as exc:
                            raise UsageError(f"{display_path(path)}: {exc}") from None
                    warmed = answerer.prewarm(doc, pages)
                except DocumentError as exc:
                    failed = True
                    if args.json:
                        print(
                            json.dumps({"path": json_path(exc.path), "error": exc.reason}),
                            flush=True,
                        )
                    else:
                        print(f"Error: {one_line(str(exc))}", file=sys.stderr)
                    continue
                if args.json:
                    row = {
                        "path": json_path(path),
                        "sha256": doc.sha256,
                        "first_page": pages.first if pages else 1,
                        "last_page": pages.last if pages else len(doc.pages),
                        "prefix_tokens": warmed.prefix_tokens,
                        "cached_tokens": warmed.cached_tokens,
                        "route": warmed.route,
                        "seconds": round(warmed.seconds, 3),
                    }
                    print(json.dumps(row, ensure_ascii=False), flush=True)
                else:
                    state = "already warm" if warmed.was_warm else "warmed"
                    print(
                        f"{display_path(path)}: {state}, {warmed.prefix_tokens:,} tokens ready "
                        f"({warmed.seconds:.1f} s)",
                        flush=True,
                    )
        finally:
            answerer.close()
    finally:
        store.close()
    return EXIT_DOCUMENT if failed else 0

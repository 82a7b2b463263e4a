"""``longdoc ingest``: extract, count and store documents."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from desktop.cli.commands import add_command
from desktop.errors import (
    COMMON_EXIT_CODES,
    EXIT_DOCUMENT,
    DocumentError,
    DocumentUnreadable,
    display_path,
    one_line,
    plural,
)

if TYPE_CHECKING:
    from desktop.documents.model import Document

EXIT_CODES = (*COMMON_EXIT_CODES, EXIT_DOCUMENT)


def register(sub: Any) -> None:
    """Add the ``ingest`` command."""
    p = add_command(sub, "ingest")
    p.add_argument("paths", nargs="+", type=Path, metavar="PATH")
    p.add_argument("--json", action="store_true", help="one JSON object per file and line")
    p.set_defaults(func=cmd_ingest)


def json_path(path: Path) -> str:
    """A path for JSON output: as given, with bytes that are not UTF-8 as ``\\xNN``."""
    return os.fsencode(path).decode("utf-8", "backslashreplace")


def describe(doc: Document, path: Path) -> dict[str, Any]:
    """The JSON line for an ingested document."""
    return {
        "path": json_path(path),
        "sha256": doc.sha256,
        "title": doc.title,
        "kind": doc.kind,
        "pages": len(doc.pages),
        "tokens": doc.tokens,
        "chars": doc.chars,
        "empty_pages": doc.empty_pages,
        "warnings": doc.warnings,
    }


def _files(paths: list[Path]) -> list[Path | DocumentError]:
    """Each file to ingest, or the error for a folder holding no documents."""
    from desktop.library import expand_paths

    result: list[Path | DocumentError] = []
    for path in paths:
        found = expand_paths([path])
        if path.is_dir() and not found:
            result.append(
                DocumentUnreadable(path, "this folder holds no PDF, text or Markdown documents")
            )
        result.extend(found)
    return result


def cmd_ingest(args: argparse.Namespace) -> int:
    """Ingest each file; a failed file is reported and the others go on."""
    from desktop.cli.common import open_store
    from desktop.library import open_documents

    store = open_store()
    failed = False
    try:
        for opened in open_documents(_files(args.paths), store):
            if isinstance(opened, DocumentError):
                exc, failed = opened, True
                if args.json:
                    print(
                        json.dumps({"path": json_path(exc.path), "error": exc.reason}), flush=True
                    )
                else:
                    print(f"Error: {one_line(str(exc))}", file=sys.stderr)
                continue
            path, doc = opened.path, opened.doc
            if args.json:
                print(json.dumps(describe(doc, path), ensure_ascii=False), flush=True)
            else:
                note = " (already stored)" if opened.reused else ""
                print(
                    f"{display_path(path)}: {doc.title!r}, {plural(len(doc.pages), 'page')}, "
                    f"{plural(doc.tokens, 'token')}{note}",
                    flush=True,
                )
                for warning in doc.warnings:
                    print(f"Warning: {display_path(path)}: {warning}", file=sys.stderr)
    finally:
        store.close()
    return EXIT_DOCUMENT if failed else 0

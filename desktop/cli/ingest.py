"""``longdoc ingest``: extract, count and store documents."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from desktop.cli.common import open_store
from desktop.documents.model import Document
from desktop.errors import EXIT_DOCUMENT, DocumentError, LongdocError
from desktop.library import expand_paths, open_document


def register(sub: Any) -> None:
    """Add the ``ingest`` command."""
    p = sub.add_parser(
        "ingest",
        help="extract, count and store documents",
        description="Extract the text of documents (PDF, Word .docx, WebVTT/SRT transcripts, "
        "text, Markdown; folders are searched), "
        "count their exact Qwen3.5 tokens and store them for later questions.",
    )
    p.add_argument("paths", nargs="+", type=Path, metavar="PATH")
    p.add_argument("--json", action="store_true", help="one JSON object per file and line")
    p.set_defaults(func=cmd_ingest)


def describe(doc: Document, path: Path) -> dict[str, Any]:
    """The JSON line for an ingested document."""
    return {
        "path": str(path),
        "sha256": doc.sha256,
        "title": doc.title,
        "kind": doc.kind,
        "pages": len(doc.pages),
        "tokens": doc.tokens,
        "chars": doc.chars,
        "empty_pages": doc.empty_pages,
        "warnings": doc.warnings,
    }


def cmd_ingest(args: argparse.Namespace) -> int:
    """Ingest each file; a failed file is reported and the others go on."""
    store = open_store()
    failed = False
    try:
        for path in expand_paths(args.paths):
            try:
                doc, reused = open_document(path, store)
            except DocumentError as exc:
                failed = True
                if args.json:
                    print(json.dumps({"path": str(path), "error": exc.reason}), flush=True)
                else:
                    print(f"Error: {exc}", file=sys.stderr)
                continue
            except LongdocError:
                raise
            if args.json:
                print(json.dumps(describe(doc, path), ensure_ascii=False), flush=True)
            else:
                note = " (already stored)" if reused else ""
                print(
                    f"{path}: {doc.title!r}, {len(doc.pages)} pages, {doc.tokens:,} tokens{note}",
                    flush=True,
                )
                for warning in doc.warnings:
                    print(f"Warning: {path}: {warning}", file=sys.stderr)
    finally:
        store.close()
    return EXIT_DOCUMENT if failed else 0

"""``longdoc summarize``: summarize every document in folders, resumable, as a report."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from desktop.answering.service import Answerer, resolve_endpoint
from desktop.batch import SUMMARY_QUESTION, BatchItem, summarize
from desktop.cli.common import managed_server, open_store, settings_from
from desktop.errors import EXIT_DOCUMENT, StorageError, UsageError
from desktop.library import expand_paths


def register(sub: Any) -> None:
    """Add the ``summarize`` command."""
    p = sub.add_parser(
        "summarize",
        help="summarize every document in folders into one report",
        description="Summarize each document (whole text, one prompt each) and write a report. "
        "Finished summaries are cached, so running it again resumes where it stopped.",
    )
    p.add_argument("paths", nargs="+", type=Path, metavar="PATH")
    p.add_argument(
        "--out",
        type=Path,
        metavar="FILE",
        help="write the report here (.md or .json); default: stdout as Markdown",
    )
    p.add_argument("--question", default=SUMMARY_QUESTION, help="what to ask of each document")
    p.add_argument("--think", dest="thinking", action="store_true", help="let the model reason")
    p.add_argument("--endpoint", metavar="URL")
    p.add_argument("--model", metavar="NAME")
    p.add_argument("--api-key", metavar="KEY")
    p.set_defaults(func=cmd_summarize)


def _progress(number: int, total: int, item: BatchItem) -> None:
    if item.status == "asking":
        print(
            f"[{number}/{total}] {item.path}: reading {item.tokens:,} tokens…",
            file=sys.stderr,
            flush=True,
        )
        return
    detail = {"done": f"done in {item.seconds:.1f} s", "cached": "from cache"}.get(
        item.status, item.error
    )
    print(f"[{number}/{total}] {item.path}: {detail}", file=sys.stderr, flush=True)


def cmd_summarize(args: argparse.Namespace) -> int:
    """Run the batch and write the report."""
    settings = settings_from(args)
    paths = expand_paths(args.paths)
    if not paths:
        raise UsageError("no documents found in the given paths")
    if args.out and args.out.suffix.lower() not in (".md", ".json"):
        raise UsageError(f"{args.out}: the report must end in .md or .json")
    store = open_store()
    answerer = Answerer(store, resolve_endpoint(settings, managed_server(settings)), settings)
    try:
        report = summarize(
            paths,
            store,
            answerer,
            question=args.question,
            thinking=bool(args.thinking),
            on_progress=_progress,
        )
    finally:
        answerer.close()
        store.close()
    text = report.to_json() if args.out and args.out.suffix == ".json" else report.to_markdown()
    if args.out:
        try:
            args.out.write_text(text, encoding="utf-8")
        except OSError as exc:
            raise StorageError(f"{args.out}: cannot write the report ({exc.strerror})") from exc
        print(f"Report written to {args.out}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    counts = report.counts()
    return EXIT_DOCUMENT if counts.get("skipped") or counts.get("failed") else 0

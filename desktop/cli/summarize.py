"""``longdoc summarize`` and ``longdoc review``: batch work over folders, with a report."""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from pathlib import Path
from typing import Any, TextIO

from desktop.cli.commands import add_command
from desktop.cli.options import add_server_options
from desktop.cli.terminal import style
from desktop.errors import (
    EXIT_BATCH_FAILED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_SERVER_UNAVAILABLE,
    EXIT_STORAGE,
    EXIT_USAGE,
)

# Worded in desktop/errors.py (the one table); 4 only when nothing could be asked, and a
# document's own problem is a failed row in the report (6), never exit 3.
EXIT_CODES = (
    EXIT_OK,
    EXIT_STORAGE,
    EXIT_USAGE,
    EXIT_SERVER_UNAVAILABLE,
    EXIT_BATCH_FAILED,
    EXIT_INTERRUPTED,
)


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("paths", nargs="+", type=Path, metavar="PATH", help="files or folders")
    p.add_argument("--think", dest="thinking", action="store_true", help="let the model reason")
    p.add_argument(
        "--concurrency",
        type=int,
        metavar="N",
        help="requests at once (default: the server's own limit from /server_info, at most 8; "
        "4 when the server does not say)",
    )
    p.add_argument(
        "--out",
        type=Path,
        metavar="PATH",
        help="write the report here (checked before anything is asked; a symlink is written "
        "through, a device or FIFO in place)",
    )
    p.add_argument(
        "--format",
        choices=("md", "json", "csv"),
        help="report format (default: from the --out suffix, else Markdown)",
    )
    p.add_argument("--force", action="store_true", help="ask again even what is already answered")
    p.add_argument(
        "--json",
        action="store_true",
        help="print one JSON object per event on stdout (the report must then go to --out)",
    )
    add_server_options(p)


def register(sub: Any) -> None:
    """Add the ``summarize`` and ``review`` commands."""
    from desktop.batch import STYLES

    summarize = add_command(sub, "summarize")
    _common(summarize)
    what = summarize.add_mutually_exclusive_group()
    what.add_argument(
        "--style",
        default=None,
        metavar="STYLE|FILE",
        help=f"summary style: {', '.join(STYLES)} (default brief), or a template file "
        "(copy one from resources/prompts/ and change it)",
    )
    what.add_argument("--question", metavar="Q", help="ask this instead of a summary")
    summarize.set_defaults(func=cmd_summarize)

    review = add_command(sub, "review")
    _common(review)
    review.add_argument(
        "--questions",
        type=Path,
        required=True,
        metavar="FILE",
        help="one question per line (# starts a comment)",
    )
    review.set_defaults(func=cmd_review)


def cmd_summarize(args: argparse.Namespace) -> int:
    """Summaries of every document."""
    from desktop.batch import DEFAULT_STYLE, Job, load_style

    if args.question:
        job = Job("summary", [args.question], style="question", thinking=args.thinking)
    else:
        style = args.style or DEFAULT_STYLE
        job = Job("summary", [load_style(style)], style=style, thinking=args.thinking)
    return _run(args, job)


def cmd_review(args: argparse.Namespace) -> int:
    """The review grid."""
    from desktop.batch import Job, load_questions

    return _run(args, Job("review", load_questions(args.questions), thinking=args.thinking))


def _run(args: argparse.Namespace, job: Any) -> int:
    from desktop.answering.service import Answerer, resolve_endpoint
    from desktop.batch import Batch, collect, default_concurrency, report_format
    from desktop.cli.common import managed_server, open_store
    from desktop.cli.options import settings_from
    from desktop.errors import EXIT_BATCH_FAILED, EXIT_INTERRUPTED, UsageError
    from desktop.reports import check_output, write_report

    job.force = bool(args.force)
    fmt = report_format(args.out, args.format)
    if args.out is not None:
        check_output(args.out)  # a bad --out costs nothing: nothing is asked yet
    if args.json and args.out is None:
        raise UsageError("with --json the events go to stdout: give the report a file, --out PATH")
    if args.concurrency is not None and not 1 <= args.concurrency <= 64:
        raise UsageError(f"--concurrency {args.concurrency}: use a number from 1 to 64")
    paths = collect(args.paths)
    if not paths:
        raise UsageError("no files found in the given paths")
    settings = settings_from(args)
    store = open_store()
    answerer = Answerer(store, resolve_endpoint(settings, managed_server(settings)), settings)
    cancel = threading.Event()
    try:
        concurrency = args.concurrency or default_concurrency(answerer.client.server_info())
        progress = _Progress(len(paths), concurrency, json_events=args.json)
        batch = Batch(
            paths,
            store,
            answerer,
            job,
            concurrency=concurrency,
            listener=progress.on_event,
            cancel=cancel,
        )
        interrupted = False
        try:
            report = batch.run()
        except KeyboardInterrupt:
            # Stop asking, let the requests in flight end (they are stored as incomplete),
            # and still write the report of what finished.
            cancel.set()
            interrupted = True
            batch.finish()
            report = batch.report
        progress.close()
    finally:
        answerer.close()
        store.close()
    text = report.render(fmt)
    if args.out is not None:
        write_report(args.out, text)
        if not args.json:
            print(f"Report written to {args.out}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    if interrupted:
        return EXIT_INTERRUPTED
    return EXIT_BATCH_FAILED if report.failed else 0


class _Progress:
    """A live progress bar on a terminal, plain lines otherwise, JSON lines with --json."""

    def __init__(self, total: int, concurrency: int, json_events: bool) -> None:
        self.total = total
        self.json = json_events
        self.stream: TextIO = sys.stderr
        self.live = not json_events and self.stream.isatty()
        self.started = time.monotonic()
        self.counts = {"done": 0, "failed": 0, "skipped": 0, "cancelled": 0}
        self.running: list[str] = []
        self.durations: list[float] = []
        self.concurrency = concurrency
        if not json_events:
            print(f"{total} files, {concurrency} at a time.", file=self.stream, flush=True)

    def on_event(self, event: Any) -> None:
        """Called (serialised) by the batch for every event."""
        if self.json:
            print(json.dumps(event.to_json(), ensure_ascii=False), flush=True)
            return
        item = event.item
        name = Path(event.path).name
        if event.event == "started":
            self.running.append(event.path)
        elif event.event in self.counts:
            if event.path in self.running:
                self.running.remove(event.path)
            self.counts[event.event] += 1
            if event.event == "done" and item is not None:
                if not item.from_cache:
                    self.durations.append(item.seconds)
                how = "already answered" if item.from_cache else f"{item.seconds:.1f} s"
                self._line(f"done     {name} ({how})")
            elif item is not None:
                self._line(f"{event.event:<8} {name}: {item.error}")
        if self.live:
            self._bar()

    def _line(self, text: str) -> None:
        if self.live:
            style(self.stream, "\r\x1b[K")
        finished = sum(self.counts.values())
        self.stream.write(f"[{finished}/{self.total}] {text}\n")
        self.stream.flush()

    def _bar(self) -> None:
        finished = sum(self.counts.values())
        width = 24
        filled = int(width * finished / self.total) if self.total else width
        remaining = self.total - finished - len(self.running)
        parts = [
            f"{self.counts['done']} done",
            f"{self.counts['failed']} failed",
            f"{len(self.running)} running",
            f"{remaining} to go",
        ]
        eta = self._eta(remaining)
        if eta:
            parts.append(eta)
        flight = ", ".join(Path(p).name for p in self.running[:3])
        line = f"[{'#' * filled}{'.' * (width - filled)}] " + ", ".join(parts)
        if flight:
            line += f" · {flight}"
        style(self.stream, "\r\x1b[K")
        self.stream.write(line[:200])
        self.stream.flush()

    def _eta(self, remaining: int) -> str:
        """Time left from the average answer time so far and the concurrency."""
        if not self.durations:
            return ""
        average = sum(self.durations) / len(self.durations)
        left = average * (remaining + len(self.running) / 2) / self.concurrency
        return f"about {left / 60:.0f} min left" if left >= 90 else f"about {left:.0f} s left"

    def close(self) -> None:
        """End the live line and print the totals."""
        if self.json:
            return
        if self.live:
            style(self.stream, "\r\x1b[K")
        done = ", ".join(f"{n} {s}" for s, n in self.counts.items() if n)
        elapsed = time.monotonic() - self.started
        print(f"Finished in {elapsed:.1f} s: {done or 'nothing to do'}.", file=self.stream)

"""``longdoc ask``: one question about a document (or a set of them), streamed to the terminal."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from desktop.cli.commands import add_command
from desktop.cli.options import add_server_options, token_count
from desktop.cli.terminal import style
from desktop.errors import (
    ASKING_EXIT_CODES,
    UsageError,
    display_path,
)

if TYPE_CHECKING:
    from collections.abc import Callable

    from desktop.answering.citations import CitationCheck
    from desktop.answering.sets import DocumentSet
    from desktop.answering.threads import Thread
    from desktop.documents.model import Document
    from desktop.store.db import Store

EXIT_CODES = ASKING_EXIT_CODES

DIM = "\x1b[2m"
RESET = "\x1b[0m"


def register(sub: Any) -> None:
    """Add the ``ask`` command."""
    p = add_command(sub, "ask")
    p.add_argument("path", type=Path, nargs="+", metavar="PATH")
    p.add_argument("question", metavar="QUESTION")
    p.add_argument(
        "--pages",
        metavar="RANGE",
        action="append",
        help="only these pages: 1-120 (physical pages), iv..xii or A-1..A-9 (printed "
        "labels, inclusive), or one printed label alone (A-2); with several documents, "
        "prefix the document's letter and repeat: --pages A:1-40 --pages B:iv..xii",
    )
    think = p.add_mutually_exclusive_group()
    think.add_argument(
        "--think",
        dest="thinking",
        action="store_true",
        default=None,
        help="let the model reason first (default from settings)",
    )
    think.add_argument(
        "--no-think", dest="thinking", action="store_false", help="answer without reasoning"
    )
    p.add_argument("--no-cache", action="store_true", help="ask again even if answered before")
    thread = p.add_mutually_exclusive_group()
    thread.add_argument(
        "--follow-up",
        action="store_true",
        help="continue the last thread on this document: the model sees the earlier "
        "questions and answers (without them, every ask starts a new thread)",
    )
    thread.add_argument(
        "--thread",
        type=int,
        metavar="ID",
        help="continue thread ID (ask --json prints each answer's thread_id)",
    )
    add_server_options(p)
    p.add_argument(
        "--max-tokens",
        type=token_count,
        metavar="N",
        help="the longest answer in tokens, reasoning included; also the answer reserve the "
        "budget keeps free in the context (default: answer_reserve, 16384; shrinks to 2048 "
        "with a warning when the document needs the room)",
    )
    p.add_argument(
        "--check-tokens",
        action="store_true",
        help="also have the server count the prompt (/v1/tokenize); the budget uses the larger",
    )
    p.add_argument(
        "--json",
        action="store_true",
        help="print one JSON object at the end, with the checked citations",
    )
    p.set_defaults(func=cmd_ask)


def report_token_check(local: int, remote: int | None) -> None:
    """Print the local and the server's prompt token counts; warn when they differ."""
    from desktop.cli.common import warn

    if remote is None:
        print(
            f"Prompt: {local:,} tokens (the server cannot count chat messages; "
            "SGLang 0.5.15 or newer and vLLM can).",
            file=sys.stderr,
        )
    elif remote == local:
        print(f"Prompt: {local:,} tokens (the server agrees).", file=sys.stderr)
    else:
        warn(
            f"the prompt has {local:,} tokens by Longdoc's count but {remote:,} by the "
            "server's; the budget uses the larger"
        )


def flag_quotes(checks: list[CitationCheck], doc: Document) -> str:
    """A Markdown note listing the quotes not found on the page they cite ("" if none)."""
    from desktop.answering.citations import QuoteStatus

    def finding(check: CitationCheck) -> str:
        if check.status is QuoteStatus.OTHER_PAGE and check.found_on:
            where = ", ".join(doc.pages[n - 1].label for n in check.found_on[:3])
            return f"not on the cited page; found on p. {where}"
        return "not found in the document"

    return _unverified_note(checks, lambda c: f" [p. {c.label}]" if c.label else "", finding)


def flag_set_quotes(checks: list[CitationCheck], docset: DocumentSet) -> str:
    """The "Unverified quotes" note of a set's answer: each quote with where it really is."""
    from desktop.answering.citations import QuoteStatus

    def finding(check: CitationCheck) -> str:
        member = docset.member(check.document or "")
        if check.status is QuoteStatus.OTHER_PAGE and check.found_on and member is not None:
            where = ", ".join(member.document.pages[n - 1].label for n in check.found_on[:3])
            return f"not on the cited page; found on p. {where}"
        if check.status is QuoteStatus.OTHER_DOCUMENT and check.found_in:
            where = "; ".join(
                f"{letter} p. " + ", ".join(_label(docset, letter, n) for n in pages[:3])
                for letter, pages in check.found_in
            )
            return f"not in that document; found in {where}"
        return "not found in the documents"

    def cited(check: CitationCheck) -> str:
        return f" [{check.document} p. {check.label}]" if check.document and check.label else ""

    return _unverified_note(checks, cited, finding)


def _unverified_note(
    checks: list[CitationCheck],
    cited: Callable[[CitationCheck], str],
    finding: Callable[[CitationCheck], str],
) -> str:
    """The "Unverified quotes" note: each quote not verified (shortened), the citation it
    carries (``cited``) and what checking found (``finding``); "" when there is none."""
    from desktop.answering.citations import QuoteStatus

    lines = []
    for check in checks:
        if check.quote is None or check.status is QuoteStatus.VERIFIED:
            continue
        quote = " ".join(check.quote.split())
        quote = quote if len(quote) <= 80 else quote[:77] + "..."
        lines.append(f'> - "{quote}"{cited(check)}: {finding(check)}')
    if not lines:
        return ""
    return "\n> **Unverified quotes**\n>\n" + "\n".join(lines) + "\n"


def _label(docset: DocumentSet, letter: str, number: int) -> str:
    member = docset.member(letter)
    return member.document.pages[number - 1].label if member is not None else f"#{number}"


def pick_thread(store: Store, doc: Document, args: argparse.Namespace) -> Thread | None:
    """The thread a follow-up continues (None: a new thread), by the conversation rules."""
    from desktop.answering.conversation import choose_thread

    thread = choose_thread(store, doc, args.thread, args.follow_up, display_path(args.path))
    if args.follow_up and thread is None:
        print(
            f"No earlier thread on {display_path(args.path)}: starting a new one.", file=sys.stderr
        )
    return thread


def pick_set_thread(
    store: Store, docset: DocumentSet, args: argparse.Namespace
) -> tuple[Thread | None, DocumentSet]:
    """The thread a follow-up on a set continues, and the set with the thread's ranges."""
    from desktop.answering.threads import keep_set_ranges, set_thread_key

    key = set_thread_key(docset)
    if args.thread is not None:
        thread = store.get_thread(args.thread)
        if thread is None:
            raise UsageError(
                f"There is no thread {args.thread}; `longdoc ask --json` prints each "
                "answer's thread_id."
            )
        if thread.document_sha != key:
            raise UsageError(
                f"Thread {args.thread} is about other documents (or the same in another "
                "order); use --follow-up to continue the last thread on these."
            )
    elif args.follow_up:
        thread = store.last_thread(key)
        if thread is None:
            print("No earlier thread on these documents: starting a new one.", file=sys.stderr)
            return None, docset
    else:
        return None, docset
    return thread, keep_set_ranges(thread, docset, bool(args.pages))


def check_question(args: argparse.Namespace) -> None:
    """Refuse a command line whose last argument is a file rather than a question."""
    question = Path(args.question).expanduser()
    if args.question.strip() and question.is_file():
        raise UsageError(
            f"{display_path(args.question)} looks like a file: add a question as the last "
            "argument (longdoc ask PATH [PATH...] QUESTION)."
        )


def cmd_ask(args: argparse.Namespace) -> int:
    """Ask, stream, store; print JSON at the end with --json."""
    from desktop.answering.ask_json import ask_json, document_json
    from desktop.answering.events import AnswerDelta, ReasoningDelta, Sent, Stored
    from desktop.answering.format import ago, truncation_note
    from desktop.answering.pages import PageRange, describe, parse_range
    from desktop.answering.scans import damaged_pages
    from desktop.answering.service import Answerer, Question, resolve_endpoint
    from desktop.answering.sets import build_set
    from desktop.cli.common import managed_server, open_store, warn
    from desktop.cli.ingest import json_path
    from desktop.cli.options import settings_from
    from desktop.library import open_document

    check_question(args)
    paths: list[Path] = list(args.path)
    if len(paths) > 1 and args.pages and any(":" not in r for r in args.pages):
        bare = next(r for r in args.pages if ":" not in r)
        raise UsageError(
            f"--pages {bare}: with several documents each range names its document's letter, "
            "e.g. --pages A:1-40 --pages B:iv..xii."
        )
    settings = settings_from(args)
    thinking = settings.thinking if args.thinking is None else args.thinking
    store = open_store()
    try:
        docs = [open_document(path, store)[0] for path in paths]
        doc = docs[0]
        args.path = paths[0]
        if not args.json:  # with --json they are the document's "warnings"
            for path, each in zip(paths, docs, strict=True):
                for note in each.warnings:
                    warn(f"{display_path(path)}: {note}")
        docset = build_set(docs, args.pages or ()) if len(docs) > 1 else None
        pages = None
        if docset is None and args.pages:
            try:
                pages = parse_range(args.pages[-1], doc.pages)
            except ValueError as exc:
                raise UsageError(f"{display_path(args.path)}: {exc}") from None
        answerer = Answerer(store, resolve_endpoint(settings, managed_server(settings)), settings)
        if docset is None:
            thread = pick_thread(store, doc, args)
        else:
            thread, docset = pick_set_thread(store, docset, args)
        question = Question(
            doc, args.question, pages, thinking, not args.no_cache, args.max_tokens, thread
        )
        question.docset = docset
        question.check_tokens = args.check_tokens
        if docset is not None:
            named = ", ".join(
                f"{m.letter} {display_path(p)}" for m, p in zip(docset.members, paths, strict=True)
            )
            print(f"Asking about {len(docset)} documents: {named}.", file=sys.stderr)
        if thread is not None:
            print(
                f"Follow-up in thread {thread.id} (turn {len(thread.turns) + 1}).",
                file=sys.stderr,
            )
        tty_err = sys.stderr.isatty()
        final: Stored | None = None
        sent: Sent | None = None
        in_reasoning = False
        answered = False
        events = answerer.ask(question)
        try:
            for event in events:
                if isinstance(event, Sent):
                    sent = event
                    if args.check_tokens:
                        report_token_check(event.local_tokens, event.server_tokens)
                    for warning in event.warnings:
                        warn(warning)
                    if docset is not None:
                        for m in docset.members:
                            if not m.whole:
                                scope = describe(m.document.pages, m.pages)
                                print(f"{m.letter}: {scope} only.", file=sys.stderr)
                    elif (event.first_page, event.last_page) != (1, event.page_count):
                        scope = describe(doc.pages, PageRange(event.first_page, event.last_page))
                        print(f"Answering about {scope} only.", file=sys.stderr)
                elif isinstance(event, ReasoningDelta) and not args.json:
                    if not in_reasoning and tty_err:
                        style(sys.stderr, DIM)
                    in_reasoning = True
                    sys.stderr.write(event.text)
                    sys.stderr.flush()
                elif isinstance(event, AnswerDelta) and not args.json:
                    if in_reasoning:
                        style(sys.stderr, RESET if tty_err else "")
                        sys.stderr.write("\n")
                        sys.stderr.flush()
                        in_reasoning = False
                    sys.stdout.write(event.text)
                    sys.stdout.flush()
                    answered = True
                elif isinstance(event, Stored):
                    final = event
                    if event.from_cache and args.check_tokens:
                        print("Prompt: not sent (answered from the cache).", file=sys.stderr)
        finally:
            events.close()  # a KeyboardInterrupt here still stores the answer as incomplete
            if in_reasoning:
                # End the dimmed reasoning line so an error starts on a line of its own.
                style(sys.stderr, RESET if tty_err else "")
                sys.stderr.write("\n")
                sys.stderr.flush()
            if final is None and answered:
                sys.stdout.write("\n")
                sys.stdout.flush()
        assert final is not None
        answer = final.answer
        checks = list(answer.citations.items) if answer.citations else []
        if answer.truncated:
            warn(truncation_note(answer))
        if args.json:
            # Unread pages: from what was sent, else (a cached answer) the damaged ones.
            unread = (
                sent.unread_pages
                if sent is not None
                else damaged_pages(
                    doc, docset.members[0].pages if docset else question.page_range()
                )
            )
            notes = [*doc.warnings, *(sent.document_warnings if sent is not None else [])]
            document = document_json(doc, json_path(args.path), warnings=notes, unread_pages=unread)
            documents = (
                None
                if docset is None
                else [
                    {"letter": m.letter}
                    | document_json(m.document, json_path(p), warnings=m.document.warnings)
                    for m, p in zip(docset.members, paths, strict=True)
                ]
            )
            data = ask_json(final, args.question, document, documents=documents)
            print(json.dumps(data, ensure_ascii=False))
        else:
            if final.from_cache:
                if thinking and answer.reasoning:
                    style(sys.stderr, DIM if tty_err else "")
                    sys.stderr.write(answer.reasoning)
                    style(sys.stderr, RESET if tty_err else "")
                    sys.stderr.write("\n")
                sys.stdout.write(answer.answer)
                print(
                    f"\n(from cache, asked {ago(answer.created_at)}; --no-cache asks again)",
                    file=sys.stderr,
                )
            if not answer.answer.endswith("\n"):
                sys.stdout.write("\n")
            note = flag_quotes(checks, doc) if docset is None else flag_set_quotes(checks, docset)
            sys.stdout.write(note)
            sys.stdout.flush()
            if final.thread_id is not None:
                print(
                    f"(thread {final.thread_id}: --follow-up asks a follow-up question)",
                    file=sys.stderr,
                )
        answerer.close()
    finally:
        store.close()
    return 0

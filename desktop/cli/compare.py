"""``longdoc compare OLD NEW``: what changed between two versions, then the model's account."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from desktop.cli.commands import add_command
from desktop.cli.options import add_server_options
from desktop.errors import ASKING_EXIT_CODES, UsageError, display_path

EXIT_CODES = ASKING_EXIT_CODES


def register(sub: Any) -> None:
    """Add the ``compare`` command."""
    p = add_command(sub, "compare")
    p.add_argument("old", type=Path, metavar="OLD")
    p.add_argument("new", type=Path, metavar="NEW")
    p.add_argument(
        "--json",
        action="store_true",
        help='print one JSON object: {"old", "new", "changes": [{"kind", "old_anchor", '
        '"new_anchor", "old_text", "new_text", "inserted", "deleted"}], "explanation", '
        '"citations"}',
    )
    p.add_argument("--out", type=Path, metavar="FILE", help="write the redline (or JSON) here")
    p.add_argument(
        "--no-explain", action="store_true", help="only the comparison: no server is asked"
    )
    think = p.add_mutually_exclusive_group()
    think.add_argument("--think", dest="thinking", action="store_true", default=None)
    think.add_argument("--no-think", dest="thinking", action="store_false")
    add_server_options(p)
    p.set_defaults(func=cmd_compare)


def version_json(path: Path, doc: Any) -> dict[str, Any]:
    """A version as ``compare --json`` names it."""
    from desktop.answering.ask_json import document_json
    from desktop.cli.ingest import json_path

    return document_json(doc, json_path(path))


def cmd_compare(args: argparse.Namespace) -> int:
    """Compare, print the redline, then (unless --no-explain) stream the explanation."""
    from desktop.cli.common import open_store
    from desktop.compare.align import compare_documents
    from desktop.compare.report import change_json, redline
    from desktop.library import open_document
    from desktop.reports import check_output, write_report

    if args.out is not None:
        check_output(args.out)
    store = open_store()
    try:
        old, _ = open_document(args.old, store)
        new, _ = open_document(args.new, store)
        if old.sha256 == new.sha256:
            raise UsageError(
                f"{display_path(args.old)} and {display_path(args.new)} are the same document "
                "(same content): give two versions."
            )
        comparison = compare_documents(old, new)
        result: dict[str, Any] = {
            "old": {"letter": "A"} | version_json(args.old, old),
            "new": {"letter": "B"} | version_json(args.new, new),
            "changes": [change_json(c) for c in comparison.changes],
            "explanation": None,
            "citations": [],
        }
        color = args.out is None and not args.json and sys.stdout.isatty()
        text = redline(comparison, color=color)
        if not args.json:
            header = f"A = {display_path(args.old)}\nB = {display_path(args.new)}\n\n"
            if args.out is None:
                sys.stdout.write(header + text)
                sys.stdout.flush()
        try:
            if not args.no_explain:
                explain(args, store, comparison, old, new, result)
        finally:
            if args.json:
                output = json.dumps(result, ensure_ascii=False) + "\n"
                if args.out is not None:
                    write_report(args.out, output)
                else:
                    sys.stdout.write(output)
            elif args.out is not None:
                report = header + text
                if result["explanation"] is not None:
                    report += "\nExplanation\n\n" + result["explanation"] + "\n"
                write_report(args.out, report)
                print(f"Redline written to {display_path(args.out)}", file=sys.stderr)
    finally:
        store.close()
    return 0


def explain(
    args: argparse.Namespace,
    store: Any,
    comparison: Any,
    old: Any,
    new: Any,
    result: dict[str, Any],
) -> None:
    """One chat request with both versions whole (A = old, B = new) and the change list."""
    from desktop.answering.ask_json import set_citations_json
    from desktop.answering.events import AnswerDelta, Stored
    from desktop.answering.service import Answerer, Question, resolve_endpoint
    from desktop.cli.ask import flag_set_quotes
    from desktop.cli.common import managed_server
    from desktop.cli.options import settings_from
    from desktop.compare.explain import explain_question, versions
    from desktop.errors import NoServerConfigured, ServerUnavailable

    settings = settings_from(args)
    thinking = settings.thinking if args.thinking is None else args.thinking
    try:
        endpoint = resolve_endpoint(settings, managed_server(settings))
    except NoServerConfigured as exc:
        # For compare, no server is "unreachable": the changes are printed already.
        raise ServerUnavailable(f"{exc} (or pass --no-explain)") from None
    docset = versions(old, new)
    answerer = Answerer(store, endpoint, settings)
    streaming = not args.json and args.out is None
    if streaming:
        print("\nExplanation\n", flush=True)
    final: Stored | None = None
    try:
        question = Question(old, explain_question(comparison), thinking=thinking, docset=docset)
        question.quotes_in_question = True  # the change list quotes both versions
        events = answerer.ask(question)
        try:
            for event in events:
                if isinstance(event, AnswerDelta) and streaming:
                    sys.stdout.write(event.text)
                    sys.stdout.flush()
                elif isinstance(event, Stored):
                    final = event
        finally:
            events.close()
    finally:
        answerer.close()
    assert final is not None
    answer = final.answer
    checks = list(answer.citations.items) if answer.citations else []
    result["explanation"] = answer.answer
    files = [result["old"], result["new"]]
    result["citations"] = set_citations_json(checks, files)
    if streaming:
        if final.from_cache:
            sys.stdout.write(answer.answer)
        if not answer.answer.endswith("\n"):
            sys.stdout.write("\n")
        sys.stdout.write(flag_set_quotes(checks, docset))
        sys.stdout.flush()

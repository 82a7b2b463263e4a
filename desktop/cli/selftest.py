"""``longdoc server selftest``: prove the server reads whole long documents."""

from __future__ import annotations

import argparse
import json
import sys
import threading
from typing import Any

from desktop.cli.options import add_server_options
from desktop.errors import EXIT_DOCTOR_PROBLEMS

# A check found problems (shared with `longdoc doctor`): here, a needle was missed.
EXIT_RECALL_LOST = EXIT_DOCTOR_PROBLEMS


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The selftest's own options (the ``server`` group adds --profile)."""
    parser.add_argument(
        "--lengths",
        default="8k,64k,128k,200k,250k",
        metavar="LIST",
        help="document lengths in tokens, comma-separated (default: 8k,64k,128k,200k,250k); "
        "lengths past the server's context are skipped and said so",
    )
    parser.add_argument("--json", action="store_true", help="print the report as one JSON object")
    add_server_options(parser)


def cmd_selftest(args: argparse.Namespace) -> int:
    """Run the needle test against the configured (or given) server; store the results."""
    from desktop.answering.service import resolve_endpoint
    from desktop.cli.common import managed_server
    from desktop.cli.options import settings_from
    from desktop.config import data_dir
    from desktop.errors import UsageError
    from desktop.selftest import parse_lengths, results_path, run_for_settings

    try:
        lengths = parse_lengths(args.lengths)
    except ValueError as exc:
        raise UsageError(f"--lengths: {exc}.") from None
    settings = settings_from(args)

    def say(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    home = data_dir()
    endpoint = resolve_endpoint(settings, managed_server(settings))
    report = run_for_settings(
        settings, endpoint, home, lengths, progress=say, cancel=threading.Event()
    )
    path = results_path(home)
    if args.json:
        print(json.dumps(report.to_json(), indent=1))
    else:
        print(_format(report.to_json()))
        print(f"(saved in {path})")
    return 0 if report.full_recall else EXIT_RECALL_LOST


def _format(run: dict[str, Any]) -> str:
    lines = [f"Server: {run['endpoint']}, model {run['model']}, context {run['context_length']}"]
    for item in run["lengths"]:
        head = f"{item['length']:>9,} tokens: "
        if item["status"] != "ok":
            lines.append(head + f"{item['status']} ({item['detail']})")
            continue
        found = " ".join(f"{depth} {'✓' if ok else '✗'}" for depth, ok in item["recall"].items())
        speed = ""
        if item["prefill_tokens_per_s"]:
            speed += f", prefill {item['prefill_tokens_per_s']:,.0f} tok/s"
        if item["decode_tokens_per_s"]:
            speed += f", decode {item['decode_tokens_per_s']:,.1f} tok/s"
        lines.append(head + f"recall {round(100 * item['recall_fraction'])}% ({found}){speed}")
    if run["cache_detail"]:
        lines.append(f"Prefix cache: {run['cache_detail']}.")
    lines.append(
        "Full recall at every tested length."
        if run["full_recall"]
        else "Recall lost: the server does not read the whole document at some length."
    )
    return "\n".join(lines)

"""The ``longdoc`` command: a thin layer over the core; one module per command group."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence

from desktop import __version__
from desktop.errors import EXIT_INTERRUPTED, EXIT_USAGE, LongdocError

EXIT_CODES = """\
exit codes:
  0    success
  1    storage problem: disk full, data directory not writable
  2    usage: bad arguments or settings
  3    document problem: unreadable, encrypted, no text, too large for the context
  4    server unreachable, still loading, or refusing the API key
  5    server rejected or broke off the request
  10-18  server manager: no container runtime (10), no permission (11), image missing (12),
       model folder missing (13), port in use (14), no GPU devices (15), bad profile (16),
       server failed (17), not running (18), another profile's server running (19)
  130  interrupted
"""


class _Parser(argparse.ArgumentParser):
    """argparse with usage errors as exit 2 and one ``Error:`` line."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        print(f"Error: {message}", file=sys.stderr)
        raise SystemExit(EXIT_USAGE)


def build_parser() -> argparse.ArgumentParser:
    """The full command-line parser."""
    from desktop.cli import ask, doctor, gui, ingest, summarize, warm

    parser = _Parser(
        prog="longdoc",
        description="Ask questions about whole long documents with a local Qwen3.5 "
        "served by SGLang. With no command, opens the desktop app.",
        epilog=EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"longdoc {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="log details to stderr")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    ingest.register(sub)
    ask.register(sub)
    summarize.register(sub)
    gui.register(sub)
    doctor.register(sub)
    warm.register(sub)
    try:
        from desktop.cli import server
    except ImportError:  # pragma: no cover - the server CLI ships with server_manager
        pass
    else:
        server.register(sub)
    for name, sp in sub.choices.items():
        sp.epilog = sp.epilog or EXIT_CODES
        sp.formatter_class = argparse.RawDescriptionHelpFormatter
        if not sp.description:
            sp.description = f"longdoc {name}"
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point: parse, dispatch, turn expected failures into one line and an exit code."""
    probe = os.environ.get("LONGDOC_PROBE")
    if probe:
        # `longdoc doctor` in a one-folder build checks Qt in a child like this.
        from desktop.doctor import run_probe

        return run_probe(probe)
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.WARNING,
        format="%(name)s: %(message)s",
    )
    if args.command is None:
        args = parser.parse_args(["gui", *([] if argv is None else list(argv))])
    try:
        code: int = args.func(args)
        return code
    except LongdocError as exc:
        print(f"Error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("Error: interrupted.", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # Output piped into `head` and closed: not an error worth a traceback.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    sys.exit(main())

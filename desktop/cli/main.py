"""The ``longdoc`` command: a thin layer over the core; one module per command group.

Start-up imports only what the chosen command needs: the table in ``commands.py`` knows
each command's name, module and one-line help, and this module imports a command's module
only when that command runs or its help is shown (openai, Qt and the tokenizer are
imported by the code that uses them).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
from collections.abc import Sequence
from types import FrameType

from desktop.cli.commands import COMMANDS

DESCRIPTION = (
    "Ask questions about whole long documents with a local Qwen3.5 served by SGLang.\n"
    "With no command, opens the desktop app."
)


class _Parser(argparse.ArgumentParser):
    """argparse with usage errors as exit 2 and one ``Error:`` line."""

    def error(self, message: str) -> None:  # type: ignore[override]
        from desktop.errors import EXIT_USAGE, one_line

        self.print_usage(sys.stderr)
        print(f"Error: {one_line(message)}", file=sys.stderr)
        raise SystemExit(EXIT_USAGE)


def _command_name(argv: Sequence[str]) -> str | None:
    """The command ``argv`` names: its first word that is not an option (none take values)."""
    for word in argv:
        if word == "--":
            return None
        if not word.startswith("-"):
            return word
    return None


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The parser; given ``argv``, only the command it names is imported (others are listed)."""
    import importlib

    from desktop import __version__
    from desktop.errors import exit_codes_help

    parser = _Parser(
        prog="longdoc",
        description=DESCRIPTION,
        epilog=exit_codes_help(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"longdoc {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="log details to stderr")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    chosen = None if argv is None else _command_name(argv)
    wanted = {c.module for c in COMMANDS if argv is None or c.name == chosen}
    registered: set[str] = set()
    for command in COMMANDS:
        if command.module not in wanted:
            # Listed in `longdoc --help` without importing the module behind it.
            sub.add_parser(command.name, help=command.help)
            continue
        if command.module in registered:
            continue  # one module may add several commands (summarize and review)
        registered.add(command.module)
        module = importlib.import_module(command.module)
        module.register(sub)
        for name in (c.name for c in COMMANDS if c.module == command.module):
            sp = sub.choices[name]
            sp.epilog = exit_codes_help(getattr(module, "EXIT_CODES", None))
            sp.formatter_class = argparse.RawDescriptionHelpFormatter
            if not sp.description:
                sp.description = command.help
    return parser


def _on_sigint(signum: int, frame: FrameType | None) -> None:
    """Ctrl-C: a KeyboardInterrupt, except inside an import, where it ends the process.

    A KeyboardInterrupt raised while a module is being imported surfaces as a traceback
    from deep inside a library (or as a RuntimeError from class creation); nothing is
    stored yet at that point, so one line and exit 130 is all there is to do.
    """
    while frame is not None:
        if frame.f_code.co_filename.startswith("<frozen importlib"):
            os.write(2, b"Error: interrupted.\n")
            os._exit(130)
        frame = frame.f_back
    raise KeyboardInterrupt


def _set_sigint(handler: object) -> None:
    # ValueError: not the main thread (main() called from a test's thread).
    with contextlib.suppress(ValueError):
        signal.signal(signal.SIGINT, handler)  # type: ignore[arg-type]


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point: parse, dispatch, turn expected failures into one line and an exit code."""
    _set_sigint(_on_sigint)
    probe = os.environ.get("LONGDOC_PROBE")
    if probe:
        # `longdoc doctor` in a one-folder build checks Qt in a child like this.
        from desktop.doctor import run_probe

        return run_probe(probe)
    # File names that are not UTF-8 reach us as surrogates; print them escaped, not crash.
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors="backslashreplace")
    # Everything Longdoc writes (data directory, database, logs, reports) is the user's only:
    # the documents are confidential. Child processes (the server supervisor) inherit it.
    os.umask(0o077)
    words = list(sys.argv[1:] if argv is None else argv)

    from desktop.errors import EXIT_INTERRUPTED, LongdocError, one_line

    try:
        parser = build_parser(words)
        args = parser.parse_args(words)
        if args.command is None:
            words = ["gui", *words]
            args = build_parser(words).parse_args(words)
        if args.verbose:
            # Without -v, warnings still reach stderr through logging's last-resort handler.
            import logging

            logging.basicConfig(level=logging.DEBUG, format="%(name)s: %(message)s")
        from desktop.cli.terminal import safe_streams

        with safe_streams():  # nothing untrusted reaches the terminal raw (see there)
            code: int = args.func(args)
        return code
    except LongdocError as exc:
        print(f"Error: {one_line(str(exc))}", file=sys.stderr)
        for item in exc.items:  # several problems: a list, one line each
            print(f"  • {one_line(item)}", file=sys.stderr)
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

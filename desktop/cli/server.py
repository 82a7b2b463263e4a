"""``longdoc server start|stop|restart|status|logs``: a thin layer over ``server_manager``.

This is the edge where the server manager's typed errors become one ``Error:`` line and
an exit code: ``server_manager`` does not import ``desktop``, so its errors are not
``LongdocError``s until they pass through ``_edge``.
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
from collections.abc import Callable, Sequence
from typing import Any

from desktop.cli.commands import add_command
from desktop.cli.options import add_setting_options, settings_from
from desktop.config import data_dir
from desktop.errors import (
    COMMON_EXIT_CODES,
    EXIT_DOCTOR_PROBLEMS,
    EXIT_REQUEST_FAILED,
    EXIT_SERVER_UNAVAILABLE,
    LongdocError,
    exit_codes_help,
)
from longdoc_net.endpoint import Phase
from server_manager import ServerManager, ServerManagerError, ServerStatus, Stage
from server_manager import errors as codes
from server_manager.manager import server_status

# Only the codes each subcommand can return (desktop.errors.EXIT_CODES words them).
_START = (
    *COMMON_EXIT_CODES,
    EXIT_SERVER_UNAVAILABLE,  # an external profile's server does not answer or refuses the key
    codes.EXIT_NO_CONTAINER_RUNTIME,
    codes.EXIT_RUNTIME_PERMISSION,
    codes.EXIT_IMAGE_MISSING,
    codes.EXIT_MODEL_DIR_MISSING,
    codes.EXIT_PORT_IN_USE,
    codes.EXIT_NO_GPU_DEVICES,
    codes.EXIT_PROFILE_INVALID,
    codes.EXIT_SERVER_FAILED,
    codes.EXIT_OTHER_SERVER_RUNNING,
    codes.EXIT_RUNTIME_DOWN,  # the runtime's daemon is down (docker version cannot reach it)
)
SUBCOMMAND_EXIT_CODES: dict[str, tuple[int, ...]] = {
    "start": _START,
    "restart": _START,
    # The runtime not answering; another process holding the start/stop lock.
    "stop": (
        *COMMON_EXIT_CODES,
        codes.EXIT_RUNTIME_PERMISSION,
        codes.EXIT_SERVER_FAILED,
    ),
    # An endpoint that does not answer or refuses the key (4); the runtime's daemon down.
    "status": (*COMMON_EXIT_CODES, EXIT_SERVER_UNAVAILABLE, codes.EXIT_RUNTIME_DOWN),
    "logs": (*COMMON_EXIT_CODES, codes.EXIT_NOT_RUNNING),
    # Talks to the server (4, 5) and reports a missed needle (7).
    "selftest": (
        *COMMON_EXIT_CODES,
        EXIT_SERVER_UNAVAILABLE,
        EXIT_REQUEST_FAILED,
        EXIT_DOCTOR_PROBLEMS,
    ),
}
# The `server` group's help lists them all.
EXIT_CODES = tuple(sorted({code for listed in SUBCOMMAND_EXIT_CODES.values() for code in listed}))


class ServerCommandFailed(LongdocError):
    """A server-manager error at the CLI edge: its sentence, its exit code."""

    def __init__(self, error: ServerManagerError) -> None:
        super().__init__(error.message, in_app=str(error))
        self.exit_code = error.exit_code
        self.items = error.items


def _edge(func: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
    """Run a command, turning server-manager errors into the CLI's own."""

    @functools.wraps(func)
    def run(args: argparse.Namespace) -> int:
        try:
            return func(args)
        except ServerManagerError as exc:
            raise ServerCommandFailed(exc) from exc

    return run


def _manager(args: argparse.Namespace) -> ServerManager:
    return ServerManager(data_dir(), settings_from(args))


def _print_stage(stage: Stage) -> None:
    print(stage.label, file=sys.stderr, flush=True)


def _print_json(data: object) -> None:
    print(json.dumps(data, indent=2))


@_edge
def cmd_start(args: argparse.Namespace) -> int:
    """Start (or adopt) the server; with waiting, print stages until it is ready."""
    manager = _manager(args)
    connection = manager.start(
        on_stage=None if args.no_wait or args.json else _print_stage, wait=not args.no_wait
    )
    if args.json:
        _print_json(manager.status(gpus=False).to_json())
    elif args.no_wait:
        print(
            f"Starting at {connection.url} (follow with `longdoc server status`).", file=sys.stderr
        )
    else:
        print(f"Ready at {connection.url} (model {connection.model})", file=sys.stderr)
    return 0


@_edge
def cmd_stop(args: argparse.Namespace) -> int:
    """Stop the server gracefully; nothing is left running."""
    stopped = _manager(args).stop()
    if args.json:
        _print_json({"stopped": stopped})
    else:
        print("Server stopped." if stopped else "No Longdoc server was running.", file=sys.stderr)
    return 0


@_edge
def cmd_restart(args: argparse.Namespace) -> int:
    """Stop, then start again (with the given profile)."""
    _manager(args).stop()
    return cmd_start(args)


def _format_status(status: ServerStatus) -> str:
    lines = [f"Profile:  {status.profile}", f"State:    {status.state}"]
    if status.stage and status.state == Phase.STARTING:
        lines.append(f"Stage:    {status.stage.replace('_', ' ')}")
    if status.endpoint:
        lines.append(f"Endpoint: {status.endpoint}")
    if status.model:
        lines.append(f"Model:    {status.model}")
    if status.container:
        lines.append(f"Container: {status.container}")
    if status.restarts:
        lines.append(f"Restarts: {status.restarts}")
    m = status.metrics
    if m:
        parts = [
            f"{m.get('running_requests', 0):g} running",
            f"{m.get('queued_requests', 0):g} queued",
        ]
        if "token_usage" in m:
            parts.append(f"token usage {m['token_usage']:.0%}")
        if "cache_hit_rate" in m:
            parts.append(f"cache hits {m['cache_hit_rate']:.0%}")
        if "gen_throughput" in m:
            parts.append(f"{m['gen_throughput']:.1f} tok/s")
        lines.append("Load:     " + ", ".join(parts))
    for gpu in status.gpus:
        use = "n/a" if gpu.utilization_pct is None else f"{gpu.utilization_pct:.0f}%"
        mem = "n/a" if gpu.memory_used_pct is None else f"{gpu.memory_used_pct:.0f}%"
        lines.append(f"GPU {gpu.index}:    {use} busy, {mem} memory")
    if status.gpu_note:
        lines.append(f"GPUs:     {status.gpu_note}")
    if status.error:
        lines.append(f"Error:    {status.error}")
    return "\n".join(lines)


@_edge
def cmd_status(args: argparse.Namespace) -> int:
    """Print the server's state (``--json``: the documented object).

    With an endpoint set (``LONGDOC_ENDPOINT``, ``endpoint`` in longdoc.toml) the state of
    that server, which Longdoc does not manage. Exit 0 unless the server cannot be used:
    4 when an endpoint (or an external profile's server) does not answer or refuses the
    key, 20 while the container runtime's daemon is down.
    """
    settings = settings_from(args)
    status = server_status(data_dir(), settings)
    if args.json:
        _print_json(status.to_json())
    else:
        print(_format_status(status))
    return _status_code(status)


def _status_code(status: ServerStatus) -> int:
    """The exit code of ``server status``: whether the server can be used now."""
    if status.state == Phase.RUNTIME_DOWN:
        return codes.EXIT_RUNTIME_DOWN
    if status.external and status.state in (Phase.STOPPED, Phase.FAILED):
        return EXIT_SERVER_UNAVAILABLE
    return 0


@_edge
def cmd_logs(args: argparse.Namespace) -> int:
    """Print the server log; ``--follow`` keeps printing new lines until interrupted."""
    manager = _manager(args)
    try:
        for line in manager.logs(follow=args.follow):
            # --json: one object per line, so a follower can parse as lines arrive.
            print(json.dumps({"line": line}) if args.json else line, flush=args.follow)
    except KeyboardInterrupt:
        return 0
    return 0


def register(subparsers: Any) -> None:
    """Add ``server`` and its subcommands to the ``longdoc`` parser."""
    server = add_command(
        subparsers,
        "server",
        epilog=exit_codes_help(EXIT_CODES),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = server.add_subparsers(dest="server_command", metavar="SUBCOMMAND", required=True)

    def add(
        name: str,
        help_text: str,
        func: Callable[[argparse.Namespace], int],
        json_help: str | None,
    ) -> argparse.ArgumentParser:
        """A subcommand with --profile and (unless it has its own, ``json_help=None``) --json."""
        parser: argparse.ArgumentParser = sub.add_parser(
            name,
            help=help_text,
            description=help_text,
            epilog=exit_codes_help(SUBCOMMAND_EXIT_CODES[name]),
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        add_setting_options(parser, "profile")
        if json_help is not None:
            parser.add_argument("--json", action="store_true", help=json_help)
        parser.set_defaults(func=func)
        return parser

    status_json = "print the status object (as `status --json`) instead of progress lines"
    start = add(
        "start",
        "start the server (or adopt the running one) and wait until ready",
        cmd_start,
        status_json,
    )
    start.add_argument("--no-wait", action="store_true", help="return once it is starting")
    add(
        "stop",
        "stop the server gracefully; nothing is left running",
        cmd_stop,
        'print {"stopped": true|false}',
    )
    restart = add("restart", "stop and start again", cmd_restart, status_json)
    restart.add_argument("--no-wait", action="store_true", help="return once it is starting")
    status = add(
        "status",
        "show state, load and GPU use; with an endpoint set (--endpoint, LONGDOC_ENDPOINT, "
        "endpoint in longdoc.toml), that server's instead (exit 0 when it answers, "
        f"{EXIT_SERVER_UNAVAILABLE} when it does not or refuses the key)",
        cmd_status,
        "print one JSON object",
    )
    # The server to report instead of the managed one (as every command that asks it).
    add_setting_options(status, "endpoint", "api_key", "model")
    logs = add(
        "logs",
        "print the server log (the API key is blanked)",
        cmd_logs,
        'print one {"line": ...} object per line',
    )
    logs.add_argument("--follow", "-f", action="store_true", help="keep printing new lines")
    from desktop.cli import selftest

    selftest.add_arguments(
        add(
            "selftest",
            "check that the server reads whole long documents: needles planted at several "
            "depths of generated documents, recall per length and depth, prefill and decode "
            "speed, prefix-cache reuse (exit 7 when a needle is missed)",
            selftest.cmd_selftest,
            None,  # selftest adds its own --json (the report as one object)
        )
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``server`` subcommands on their own (``python -m desktop.cli.server status``)."""
    parser = argparse.ArgumentParser(prog="longdoc")
    register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["server", *(sys.argv[1:] if argv is None else argv)])
    try:
        code: int = args.func(args)
        return code
    except LongdocError as exc:
        print(f"Error: {exc}", file=sys.stderr)
        return exc.exit_code


if __name__ == "__main__":
    sys.exit(main())

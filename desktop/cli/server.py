"""``longdoc server start|stop|restart|status|logs``: a thin layer over ``server_manager``."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any

from desktop.config import data_dir, load_settings, with_overrides
from desktop.errors import LongdocError
from server_manager import ServerManager, ServerStatus, Stage
from server_manager.profiles import available_profiles

EXIT_CODES = """\
exit codes:
  0   success
  10  no container runtime (docker or podman) installed
  11  no permission to use the container runtime
  12  the profile's image is not present locally (load it with `docker load -i ...`)
  13  the model directory is missing or has no config.json
  14  the port is already in use
  15  no GPU device nodes (/dev/kfd, /dev/dri)
  16  the profile is invalid
  17  the server failed: kept dying, or not ready in time
  18  no server is running
  19  a server with another profile is running
"""


def _manager(args: argparse.Namespace) -> ServerManager:
    settings = with_overrides(load_settings(), profile=getattr(args, "profile", None))
    return ServerManager(data_dir(), settings)


def _print_stage(stage: Stage) -> None:
    print(stage.label, file=sys.stderr, flush=True)


def cmd_start(args: argparse.Namespace) -> int:
    """Start (or adopt) the server; with waiting, print stages until it is ready."""
    manager = _manager(args)
    connection = manager.start(
        on_stage=None if args.no_wait else _print_stage, wait=not args.no_wait
    )
    if args.no_wait:
        print(
            f"Starting at {connection.url} (follow with `longdoc server status`).", file=sys.stderr
        )
    else:
        print(f"Ready at {connection.url} (model {connection.model})", file=sys.stderr)
    return 0


def cmd_stop(args: argparse.Namespace) -> int:
    """Stop the server gracefully; nothing is left running."""
    stopped = _manager(args).stop()
    print("Server stopped." if stopped else "No Longdoc server was running.", file=sys.stderr)
    return 0


def cmd_restart(args: argparse.Namespace) -> int:
    """Stop, then start again (with the given profile)."""
    manager = _manager(args)
    manager.stop()
    return cmd_start(args)


def _format_status(status: ServerStatus) -> str:
    lines = [f"Profile:  {status.profile}", f"State:    {status.state}"]
    if status.stage and status.state == "starting":
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


def cmd_status(args: argparse.Namespace) -> int:
    """Print the server's state (``--json``: the documented object)."""
    status = _manager(args).status()
    if args.json:
        print(json.dumps(status.to_json(), indent=2))
    else:
        print(_format_status(status))
    return 0


def cmd_logs(args: argparse.Namespace) -> int:
    """Print the server log; ``--follow`` keeps printing new lines until interrupted."""
    manager = _manager(args)
    try:
        for line in manager.logs(follow=args.follow):
            print(line, flush=args.follow)
    except KeyboardInterrupt:
        return 0
    return 0


def register(subparsers: Any) -> None:
    """Add ``server`` and its subcommands to the ``longdoc`` parser."""
    server = subparsers.add_parser(
        "server",
        help="start, stop and watch the local inference server",
        description="Start, stop and watch the local SGLang server (docker, podman or a "
        "host process), or use an external one, as the profile says.",
        epilog=EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = server.add_subparsers(dest="server_command", metavar="SUBCOMMAND", required=True)
    profiles = ", ".join(available_profiles(None))

    def add(name: str, help_text: str, func: object) -> argparse.ArgumentParser:
        parser: argparse.ArgumentParser = sub.add_parser(
            name,
            help=help_text,
            description=help_text,
            epilog=EXIT_CODES,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        parser.add_argument(
            "--profile",
            metavar="NAME",
            default=None,
            help=f"server profile (bundled: {profiles}; or one of yours in <data dir>/profiles)",
        )
        parser.set_defaults(func=func)
        return parser

    start = add(
        "start", "start the server (or adopt the running one) and wait until ready", cmd_start
    )
    start.add_argument("--no-wait", action="store_true", help="return once it is starting")
    add("stop", "stop the server gracefully; nothing is left running", cmd_stop)
    restart = add("restart", "stop and start again", cmd_restart)
    restart.add_argument("--no-wait", action="store_true", help="return once it is starting")
    status = add("status", "show state, load and GPU use", cmd_status)
    status.add_argument("--json", action="store_true", help="print one JSON object")
    logs = add("logs", "print the server log", cmd_logs)
    logs.add_argument("--follow", "-f", action="store_true", help="keep printing new lines")
    from desktop.cli import selftest

    selftest.add_arguments(
        add(
            "selftest",
            "check that the server reads whole long documents: needles planted at several "
            "depths of generated documents, recall per length and depth, prefill and decode "
            "speed, prefix-cache reuse (exit 7 when a needle is missed)",
            selftest.cmd_selftest,
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

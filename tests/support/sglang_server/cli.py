"""Command line: ``python -m tests.support.sglang_server``."""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
import time
import traceback
from collections.abc import Sequence
from pathlib import Path

from tests.support.sglang_server import protocol
from tests.support.sglang_server.behaviour import Behaviour
from tests.support.sglang_server.server import FakeSGLang
from tests.support.sglang_server.tokens import qwen_encoding


def build_parser() -> argparse.ArgumentParser:
    """The command-line options (a subset of SGLang's plus the fake's own)."""
    p = argparse.ArgumentParser(
        prog="python -m tests.support.sglang_server",
        description="A fake SGLang server (Qwen3.5) for tests and GPU-less demos.",
    )
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=30000, help="0 picks a free port")
    p.add_argument("--api-key", default=None)
    p.add_argument("--model-name", "--served-model-name", default=protocol.DEFAULT_MODEL)
    p.add_argument("--model-path", "--model", default=None, help="accepted and ignored")
    p.add_argument(
        "--context-length",
        type=int,
        default=None,
        help=f"default {protocol.DEFAULT_CONTEXT_LENGTH} (reported as null in /server_info)",
    )
    p.add_argument("--max-total-tokens", type=int, default=protocol.DEFAULT_MAX_TOTAL_NUM_TOKENS)
    p.add_argument(
        "--flavor",
        choices=protocol.FLAVORS,
        default="new",
        help="new = SGLang 0.5.23, old = 0.5.9, openai = generic server, vllm = vLLM 0.26",
    )
    p.add_argument("--startup-delay", type=float, default=0.0)
    p.add_argument("--log-stages", action="store_true", help="print SGLang's startup lines")
    p.add_argument("--enable-cache-report", action=argparse.BooleanOptionalAction, default=True)
    p.add_argument("--enable-metrics", action=argparse.BooleanOptionalAction, default=True)
    p.add_argument(
        "--cache-granularity",
        type=int,
        default=1,
        help="round cache hits down to a multiple (e.g. 64 for Mamba checkpoints)",
    )
    p.add_argument(
        "--hybrid-cache",
        action="store_true",
        help="cache hits resume only at an earlier request's end or a chunk boundary (Mamba)",
    )
    p.add_argument("--chunked-prefill-size", type=int, default=16384)
    p.add_argument(
        "--block-size",
        type=int,
        default=protocol.VLLM_BLOCK_SIZE,
        help="vllm flavor: the attention block; hybrid states are kept at block boundaries",
    )
    p.add_argument(
        "--max-num-batched-tokens",
        type=int,
        default=protocol.VLLM_MAX_NUM_BATCHED_TOKENS,
        help="vllm flavor: the prefill budget per step (chunks are it cut to whole blocks)",
    )
    p.add_argument("--token-delay", type=float, default=0.0, help="seconds per generated token")
    p.add_argument("--prefill-tokens-per-s", type=float, default=None)
    p.add_argument("--answer-tokens", type=int, default=None)
    p.add_argument(
        "--strict",
        action="store_true",
        help="reject unknown chat fields with 422 and omit max_model_len (transformers serve)",
    )
    p.add_argument(
        "--image-understanding",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="what /model_info says; --no-image-understanding refuses image parts",
    )
    p.add_argument(
        "--exit-after",
        type=float,
        default=None,
        help="crash with exit code 1 after this many seconds",
    )
    p.add_argument(
        "--oom-after",
        type=float,
        default=None,
        help="after this many seconds, take memory until the kernel kills the process (OOM)",
    )
    p.add_argument(
        "--config",
        default=None,
        help="YAML file of `flag-name: value` lines, read like SGLang's (flags override it)",
    )
    p.add_argument(
        "--log-args",
        action="store_true",
        help="log every argument, key included, as SGLang does at start-up (ServerArgs)",
    )
    p.add_argument(
        "--api-key-env",
        default=None,
        metavar="NAME",
        help="take the key from this environment variable (as vLLM reads VLLM_API_KEY)",
    )
    return p


def merge_config(argv: Sequence[str]) -> list[str]:
    """SGLang's ``--config`` rule: the file's keys become flags, placed before the command
    line's own so that those win (sglang ``ConfigArgumentMerger``); one flat YAML mapping of
    scalars, the values plain or double-quoted."""
    args = list(argv)
    if "--config" not in args:
        return args
    at = args.index("--config")
    path = Path(args[at + 1])
    if path.suffix.lower() not in (".yaml", ".yml"):
        raise SystemExit(f"Config file must be YAML format, got: {path.suffix}")
    from_file: list[str] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        key, _, value = line.partition(":")
        value = value.strip()
        from_file += [f"--{key.strip()}", json.loads(value) if value.startswith('"') else value]
    return from_file + args[:at] + args[at + 2 :]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the server in the foreground until SIGTERM/SIGINT (exit 0) or --exit-after (1)."""
    args = build_parser().parse_args(merge_config(sys.argv[1:] if argv is None else argv))
    if args.api_key_env:
        args.api_key = os.environ.get(args.api_key_env) or args.api_key
    behaviour = Behaviour(
        token_delay_s=args.token_delay,
        prefill_tokens_per_s=args.prefill_tokens_per_s,
        answer_tokens=args.answer_tokens,
        image_understanding=args.image_understanding,
    )
    fake = FakeSGLang(
        args.host,
        args.port,
        api_key=args.api_key,
        model_name=args.model_name,
        context_length=args.context_length,
        max_total_num_tokens=args.max_total_tokens,
        flavor=args.flavor,
        startup_delay=args.startup_delay,
        enable_cache_report=args.enable_cache_report,
        enable_metrics=args.enable_metrics,
        cache_granularity=args.cache_granularity,
        log_stream=sys.stdout,
        log_stages=args.log_stages,
        behaviour=behaviour,
        strict=args.strict,
        hybrid_cache=args.hybrid_cache,
        chunked_prefill_size=args.chunked_prefill_size,
        block_size=args.block_size,
        max_num_batched_tokens=args.max_num_batched_tokens,
    )
    stop = threading.Event()

    def on_signal(signum: int, frame: object) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    if args.log_args:
        # SGLang logs every server argument, the key included, as it starts.
        fake.log(
            f"server_args=ServerArgs(model_path={args.model_path!r}, "
            f"served_model_name={args.model_name!r}, api_key={args.api_key!r}, "
            f"port={args.port})"
        )
    try:
        qwen_encoding()  # load the vocabulary before accepting requests
        fake.start()
    except OSError as exc:
        print(f"[{time.strftime('%Y-%m-%d %H:%M:%S')}] Error: {exc}", flush=True)
        return 1
    if args.oom_after is not None and not stop.wait(args.oom_after):
        fake.log("Allocating the KV cache for a request (fake memory hog from --oom-after)")
        hog: list[bytes] = []
        while not stop.is_set():
            hog.append(b"\1" * (64 << 20))  # written, so every page is really taken
    crashed = not stop.wait(args.exit_after) if args.exit_after is not None else False
    if not crashed:
        while not stop.wait(0.2):
            pass
    if crashed:
        fake.log(
            "Scheduler hit an exception: RuntimeError: HIP error: an illegal memory access "
            "was encountered (fake crash from --exit-after)"
        )
        fake.log("Received sigquit from a child process. It usually means the child failed.")
    try:
        fake.stop()
    except Exception:  # a crash path must still exit with its code
        traceback.print_exc()
    return 1 if crashed else 0

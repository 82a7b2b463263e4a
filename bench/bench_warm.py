"""Time to first token of the first question about a document, with and without warm-up.

Run as ``.venv/bin/python bench/bench_warm.py [--runs 3] [--rate 40000] [--pages 200]``
from the project root. The SGLang-compatible test server runs in a child process with a
prefill delay proportional to the *uncached* prompt tokens (``--prefill-tokens-per-s``)
and a hybrid cache (``--hybrid-cache``: like Qwen3.5's Mamba layers, a hit resumes only
where an earlier request ended or at a 16,384-token chunk boundary). For each run, on a
fresh server (empty cache):

- **cold**: ask the question; the server prefills the whole prompt.
- **warm**: ``Answerer.prewarm`` (through ``/generate``), then ask.
- **warm over chat**: the same warm-up sent as a one-token chat request (what a server
  without ``/generate`` and ``/v1/completions`` gets): its state sits after the generation
  prompt, so the question can only resume at the last chunk boundary.

The ratio warm/cold is the figure; the goal is that the first question waits no more
than a tenth of the cold prefill.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

from _common import (  # first: it puts the project on sys.path
    API_KEY,
    ROOT,
    start_server,
)

from desktop.answering.events import AnswerDelta, ReasoningDelta, Stored
from desktop.answering.service import Answerer, Endpoint, Question
from desktop.config import Settings
from desktop.documents.model import Document
from desktop.store.db import Store
from tests.conftest import make_document

GOAL = 0.1


class Server:
    """The test server in a child process (its prefill sleeps do not share our GIL)."""

    def __init__(self, rate: float) -> None:
        self.proc, self.url = start_server("--hybrid-cache", "--prefill-tokens-per-s", str(rate))

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(10)


def first_token(answerer: Answerer, question: Question) -> tuple[float, int]:
    """Seconds to the first streamed token, and the cached prompt tokens reported."""
    started = time.perf_counter()
    ttft = None
    cached = 0
    for event in answerer.ask(question):
        if ttft is None and isinstance(event, AnswerDelta | ReasoningDelta):
            ttft = time.perf_counter() - started
        if isinstance(event, Stored):
            cached = event.answer.cached_tokens or 0
    assert ttft is not None
    return ttft, cached


def document(pages: int) -> Document:
    """A contract-like document of ``pages`` pages (~430 tokens each)."""
    text = "Section {n}. The supplier shall deliver the goods listed in annex {n} on time. "
    return make_document([(str(i), text.format(n=i) * 20) for i in range(1, pages + 1)])


def one_run(mode: str, rate: float, doc: Document, folder: Path) -> tuple[float, float, int]:
    """(warm-up seconds, time to first token, cached tokens) on a fresh server."""
    server = Server(rate)
    store = Store(folder / f"{mode}-{time.monotonic_ns()}.db")
    answerer = Answerer(store, Endpoint(server.url, API_KEY), Settings())
    try:
        warm_s = 0.0
        if mode != "cold":
            if mode == "warm over chat":
                answerer._routes.clear()
            started = time.perf_counter()
            answerer.prewarm(doc)
            warm_s = time.perf_counter() - started
        ttft, cached = first_token(answerer, Question(doc, "When are the goods due?"))
        return warm_s, ttft, cached
    finally:
        answerer.close()
        store.close()
        server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--rate", type=float, default=40_000, help="prefill tokens per second")
    parser.add_argument("--pages", type=int, default=200)
    args = parser.parse_args()
    os.chdir(ROOT)
    modes = ("cold", "warm", "warm over chat")
    results: dict[str, list[tuple[float, float, int]]] = {m: [] for m in modes}
    doc = document(args.pages)
    with tempfile.TemporaryDirectory() as folder:
        for _ in range(args.runs):
            for mode in modes:
                results[mode].append(one_run(mode, args.rate, doc, Path(folder)))
    cold = statistics.median(r[1] for r in results["cold"])
    print(
        f"Time to first token of the first question ({args.pages} pages, {doc.tokens:,} tokens, "
        f"prefill {args.rate:,.0f} tokens/s, hybrid cache), median of {args.runs}:"
    )
    for mode in modes:
        ttft = statistics.median(r[1] for r in results[mode])
        warm = statistics.median(r[0] for r in results[mode])
        cached = statistics.median(r[2] for r in results[mode])
        goal = f" (goal <= {GOAL}x)" if mode == "warm" else ""
        extra = f", warm-up {warm:.2f} s" if mode != "cold" else ""
        print(
            f"   {mode:15s} {ttft:6.2f} s  {ttft / cold:5.3f}x{goal}  "
            f"cached {cached:,.0f} tokens{extra}"
        )


if __name__ == "__main__":
    main()

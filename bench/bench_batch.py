"""Batch benchmark: wall time of a 40-document summary batch at concurrency 1 and 8.

Run as ``.venv/bin/python bench/bench_batch.py`` from the project root. The test server
(in another process, as a real server would be) answers each request after a fixed
per-request delay (``--token-delay`` per generated token), so the ratio shows how much of
the server's parallelism Longdoc uses. Goal: concurrency 8 at least 7x faster than 1.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

from _common import (  # first: it puts the project on sys.path
    API_KEY,
    start_server,
)

from desktop.answering.service import Answerer, Endpoint
from desktop.batch import Batch, Job
from desktop.config import Settings
from desktop.library import open_document
from desktop.store.db import Store

DOCUMENTS = 40
PAGES = 20
ANSWER_TOKENS = 40
TOKEN_DELAY_S = 0.02  # 40 tokens x 20 ms = 0.8 s per request
GOAL = 7.0


def make_documents(folder: Path) -> list[Path]:
    """40 Markdown documents of about 20 pages each, all different."""
    paths = []
    for n in range(DOCUMENTS):
        parts = []
        for p in range(PAGES):
            sentences = " ".join(
                f"Clause {n}.{p}.{s}: the supplier {n} delivers item {p * 31 + s} within "
                f"{s + 3} days at {100 + n * p + s} EUR."
                for s in range(12)
            )
            parts.append(f"# Section {p + 1}\n\n{sentences}")
        path = folder / f"contract-{n:02d}.md"
        path.write_text("\n\n".join(parts))
        paths.append(path)
    return paths


def timed_run(paths: list[Path], store: Store, answerer: Answerer, concurrency: int) -> float:
    job = Job("summary", ["Summarize this document."], style="bench", force=True)
    batch = Batch(paths, store, answerer, job, concurrency=concurrency, cancel=threading.Event())
    started = time.perf_counter()
    report = batch.run()
    elapsed = time.perf_counter() - started
    assert not report.failed, [i.error for i in report.failed]
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.parse_args()
    server, url = start_server(
        "--token-delay", str(TOKEN_DELAY_S), "--answer-tokens", str(ANSWER_TOKENS)
    )
    try:
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp) / "docs"
            folder.mkdir()
            paths = make_documents(folder)
            store = Store(Path(tmp) / "bench.db")
            for path in paths:  # ingest first: the benchmark times the asking
                open_document(path, store)
            settings = Settings(answer_reserve=512)
            answerer = Answerer(store, Endpoint(url, API_KEY), settings)
            tokens = sum(open_document(p, store)[0].tokens for p in paths)
            one = timed_run(paths, store, answerer, 1)
            eight = timed_run(paths, store, answerer, 8)
            answerer.close()
            store.close()
    finally:
        server.terminate()
        server.wait(timeout=10)
    per_request = ANSWER_TOKENS * TOKEN_DELAY_S
    ratio = one / eight
    print(f"{DOCUMENTS} documents x {PAGES} pages ({tokens:,} tokens), "
          f"{per_request:.2f} s per request at the server")  # fmt: skip
    print(f"concurrency 1: {one:6.2f} s   (floor {DOCUMENTS * per_request:.1f} s)")
    print(f"concurrency 8: {eight:6.2f} s   (floor {DOCUMENTS * per_request / 8:.1f} s)")
    print(f"ratio: {ratio:.2f}x (goal >= {GOAL:.0f}x) {'ok' if ratio >= GOAL else 'MISSED'}")
    print(f"cpu count: {os.cpu_count()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

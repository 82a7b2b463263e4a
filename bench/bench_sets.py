"""A set of two 120K-token documents against one 240K-token document: client time.

Run as ``.venv/bin/python bench/bench_sets.py`` from the project root. Asking about a set
should cost the client no more than asking about one document of the same size (goal:
ratio <= 1.1): both are built from the stored per-page counts, with no re-encoding. The
client time is ``Answerer.plan`` (layout, exact count, budget) plus encoding the request
body, against the test server (its model and limits asked once, before timing).
"""

from __future__ import annotations

import json
import statistics
import tempfile
import time
from pathlib import Path

import _common  # noqa: F401  (first: it puts the project on sys.path)

from desktop.answering.service import Answerer, Endpoint, Question
from desktop.answering.sets import build_set
from desktop.config import Settings
from desktop.documents.layout import measure
from desktop.documents.model import Document, Page
from desktop.store.db import Store
from tests.support.contracts import clause
from tests.support.sglang_server import FakeSGLang

TARGET = 120_000
GOAL = 1.1


def pages_of(seed: int, tokens: int) -> list[str]:
    """Pages of generated clauses, about ``tokens`` tokens in all."""
    import random

    rng = random.Random(seed)
    pages, size, n = [], 0, 1
    while size < tokens:
        text = "\n".join(clause(rng, n + k) for k in range(12))
        n += 12
        pages.append(text)
        size += len(text) * 10 // 29  # about 2.9 characters a token; measured exactly below
    return pages


def document(name: str, texts: list[str]) -> Document:
    doc = Document(
        sha256=f"bench-{name}",
        path=f"/bench/{name}.pdf",
        kind="pdf",
        title=name,
        pages=[Page(i + 1, str(i + 1), t) for i, t in enumerate(texts)],
        extractor="bench/1",
    )
    measure(doc)
    return doc


def client_time(answerer: Answerer, question: Question) -> float:
    started = time.perf_counter()
    plan = answerer.plan(question)
    json.dumps({"messages": plan.messages})
    return time.perf_counter() - started


def main() -> int:
    a_texts, b_texts = pages_of(1, TARGET), pages_of(2, TARGET)
    a, b = document("a", a_texts), document("b", b_texts)
    whole = document("ab", a_texts + b_texts)
    print(f"documents: A {a.tokens:,} + B {b.tokens:,} tokens; one document {whole.tokens:,}")
    with tempfile.TemporaryDirectory() as tmp, FakeSGLang(context_length=524_288) as server:
        store = Store(Path(tmp) / "db.sqlite")
        answerer = Answerer(store, Endpoint(server.url, ""), Settings())
        single = Question(whole, "What changed?", thinking=False)
        pair = Question(a, "What changed?", thinking=False, docset=build_set([a, b]))
        for question in (single, pair):
            answerer.plan(question)  # model, limits, tokenizer: once
        times: dict[str, list[float]] = {"single": [], "set": []}
        for _ in range(7):
            times["single"].append(client_time(answerer, single))
            times["set"].append(client_time(answerer, pair))
        one, two = statistics.median(times["single"]), statistics.median(times["set"])
        print(
            f"client time: one 240K-token document {one * 1000:.1f} ms, a set of two 120K "
            f"{two * 1000:.1f} ms: ratio {two / one:.2f} (goal <= {GOAL})"
        )
        answerer.close()
        store.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

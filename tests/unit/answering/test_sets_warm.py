"""A set's first question on a hybrid-cache engine warms the set's prefix, as a document's does."""

from __future__ import annotations

import random
from pathlib import Path

from desktop.answering.events import Event, Usage
from desktop.answering.prompt import set_cacheable_prefix, set_prefix_tokens
from desktop.answering.service import Answerer, Endpoint, Question
from desktop.answering.sets import build_set
from desktop.config import Settings
from desktop.documents.model import Document
from desktop.store.db import Store
from tests.conftest import API_KEY, make_document
from tests.support.sglang_server import FakeSGLang

WORDS = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa"]


def document(pages: int, seed: int) -> Document:
    """``pages`` pages of ~560 tokens each, different for each seed."""
    rnd = random.Random(seed)
    return make_document(
        [(str(i), " ".join(rnd.choice(WORDS) for _ in range(420))) for i in range(1, pages + 1)],
        title=f"Document {seed}",
    )


def reuse(events: list[Event]) -> float:
    usage = next(e for e in events if isinstance(e, Usage))
    assert usage.cached_tokens is not None
    return usage.cached_tokens / usage.prompt_tokens


def test_a_second_question_about_a_set_reuses_the_whole_set(
    engine: FakeSGLang, tmp_path: Path
) -> None:
    store = Store(tmp_path / "db.sqlite")
    answerer = Answerer(store, Endpoint(engine.url, API_KEY), Settings())
    docset = build_set([document(30, seed=1), document(30, seed=2)])
    first = docset.members[0].document
    list(answerer.ask(Question(first, "What is the first duty?", docset=docset)))
    second = list(answerer.ask(Question(first, "What is the second duty?", docset=docset)))
    assert reuse(second) >= 0.99
    # One warm-up, as a raw prompt: exactly the set's prefix; never a chat one.
    raw = [r for r in engine.requests if r.path in ("/generate", "/v1/completions")]
    assert len(raw) == 1
    sent = raw[0].body.get("text") or raw[0].body.get("prompt")
    assert sent == set_cacheable_prefix(docset)
    usage = next(e for e in second if isinstance(e, Usage))
    assert usage.cached_tokens is not None
    # A hit is rounded down to the engine's block or checkpoint size.
    slack = max(answerer.client.facts().granularity, 64)
    assert usage.cached_tokens >= set_prefix_tokens(docset) - slack
    answerer.close()
    store.close()

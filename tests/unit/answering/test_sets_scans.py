"""Scanned pages in a set: images in their place in their document, or named unread."""

from __future__ import annotations

from pathlib import Path

from desktop.answering.events import Sent
from desktop.answering.service import Answerer, Endpoint, Question
from desktop.answering.sets import build_set
from desktop.config import Settings
from desktop.documents.ingest import extract
from desktop.store.db import Store
from tests.conftest import API_KEY, CORPUS_DIR
from tests.support.documents import meeting_vtt, scanned_pdf
from tests.support.sglang_server import FakeSGLang


def test_a_sets_scanned_pages_go_as_images_or_are_named_unread(tmp_path: Path) -> None:
    meeting = extract(meeting_vtt(tmp_path / "m.vtt"))
    scan = extract(scanned_pdf(tmp_path / "mixed.pdf", CORPUS_DIR))
    docset = build_set([meeting, scan])  # A: the transcript, B: the PDF with a scanned page
    store = Store(tmp_path / "db.sqlite")
    with FakeSGLang(api_key=API_KEY, context_length=262_144) as server:
        answerer = Answerer(store, Endpoint(server.url, API_KEY), Settings())
        list(answerer.ask(Question(meeting, "What is on B's last page?", docset=docset)))
        [body] = [r.body for r in server.requests if r.path.endswith("/chat/completions")]
        system, blocks, asked = body["messages"]
        assert isinstance(system["content"], str) and "Title:" not in system["content"]
        parts = blocks["content"]
        assert [p["type"] for p in parts] == ["text", "image_url", "text"]
        assert parts[0]["text"].startswith('<document id="A">')
        assert '<document id="B">' in parts[0]["text"]
        assert parts[0]["text"].endswith("[Page 5]\n")
        assert asked["content"] == "What is on B's last page?"
        answerer.close()

        server.behaviour.image_understanding = False
        answerer = Answerer(store, Endpoint(server.url, API_KEY), Settings())
        events = list(
            answerer.ask(
                Question(meeting, "Again?", thinking=False, docset=docset, use_cache=False)
            )
        )
        sent = next(e for e in events if isinstance(e, Sent))
        assert any(w.startswith("B: Page 5 has no text") for w in sent.warnings)
        answerer.close()
    store.close()

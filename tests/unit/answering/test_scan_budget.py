"""A scan's budget is checked from its page count and sizes before any page is rendered
(issue 20 item 10): a 10,000-page scan was rendered page by page before being refused."""

from __future__ import annotations

from pathlib import Path

import pytest

import desktop.documents.page_images as page_images
from desktop.answering.service import Answerer, Endpoint, Question
from desktop.config import Settings
from desktop.documents import extract
from desktop.errors import DocumentTooLarge
from desktop.store.db import Store
from tests.conftest import API_KEY
from tests.support.pdf_maker import write_pdf
from tests.support.sglang_server import FakeSGLang


def test_a_scan_too_large_for_the_context_is_refused_before_rendering(
    tmp_path: Path, sglang: FakeSGLang, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 400 pages without text: as images (1,634 tokens each at A4/letter) far past 262,144.
    doc = extract(write_pdf(tmp_path / "scan.pdf", [[] for _ in range(400)]))
    rendered: list[int] = []

    def render(pdf: object, number: int) -> object:
        rendered.append(number)
        raise AssertionError("a page was rendered before the budget was checked")

    monkeypatch.setattr(page_images, "_render", render)
    store = Store(tmp_path / "db.sqlite")
    try:
        answerer = Answerer(store, Endpoint(sglang.url, API_KEY), Settings())
        with pytest.raises(DocumentTooLarge):
            answerer.plan(Question(doc, "What does it say?"))
        answerer.close()
    finally:
        store.close()
    assert rendered == []


def test_the_estimate_never_exceeds_the_rendered_count(tmp_path: Path) -> None:
    path = write_pdf(tmp_path / "scan.pdf", [[] for _ in range(3)])
    images = page_images.render_pages(path, [1, 2, 3])
    exact = sum(image.tokens for image in images.values())
    assert 0.95 * exact <= page_images.image_tokens_before_rendering(path, [1, 2, 3]) <= exact

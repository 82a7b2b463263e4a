"""Scanned pages through the real ``longdoc ask``: images to a model that reads them, else named."""

from __future__ import annotations

import json
from pathlib import Path

from desktop.answering.prompt import full_range
from desktop.answering.scans import build_image_messages, count_image_prompt_tokens, page_images
from desktop.documents import extract
from tests.conftest import CORPUS_DIR
from tests.e2e.test_cli import ask, chats
from tests.support.documents import scanned_pdf
from tests.support.sglang_server import FakeSGLang

ALL_SCANNED = CORPUS_DIR / "007-imagemagick-images" / "imagemagick-images.pdf"


def chat_bodies(server: FakeSGLang) -> list[dict[str, object]]:
    return [r.body for r in server.requests if r.path.endswith("/chat/completions")]


def test_scanned_page_is_sent_as_an_image(sglang: FakeSGLang, home: Path, tmp_path: Path) -> None:
    """Page 5 has no text: it goes to the model as an image after its anchor, counted exactly."""
    path = scanned_pdf(tmp_path / "mixed.pdf", CORPUS_DIR)
    question = "What is on the last page?"
    result = ask(sglang, home, str(path), question, "--no-think", "--json")
    assert result.returncode == 0, result.stderr
    assert "does not read images" not in result.stderr
    [body] = chat_bodies(sglang)
    messages = body["messages"]
    assert isinstance(messages, list)
    assert [m["role"] for m in messages] == ["system", "user", "user"]
    kinds = [part["type"] for part in messages[1]["content"]]
    assert kinds == ["text", "image_url", "text"]
    assert messages[1]["content"][0]["text"].endswith("[Page 5]\n")
    [[size]] = sglang.images
    assert max(size) == 1536
    # The budget counted what the server counted: text plus the image's patches.
    doc = extract(path)
    local = count_image_prompt_tokens(
        build_image_messages(doc, full_range(doc), question, page_images(doc, [5])), False
    )
    assert json.loads(result.stdout)["usage"]["prompt_tokens"] == local
    # A second question reuses the document and its image from the server's cache.
    again = ask(sglang, home, str(path), "And the first page?", "--no-think", "--json")
    usage = json.loads(again.stdout)["usage"]
    assert usage["cached_tokens"] >= local - 20


def test_whole_scan_is_answered_from_images(sglang: FakeSGLang, home: Path) -> None:
    result = ask(sglang, home, str(ALL_SCANNED), "What is shown?", "--no-think")
    assert result.returncode == 0, result.stderr
    assert [len(sizes) for sizes in sglang.images] == [6]


def test_scanned_page_is_named_when_the_model_cannot_read_images(
    sglang: FakeSGLang, home: Path, tmp_path: Path
) -> None:
    sglang.behaviour.image_understanding = False
    path = scanned_pdf(tmp_path / "mixed.pdf", CORPUS_DIR)
    result = ask(sglang, home, str(path), "What is on the last page?", "--no-think")
    assert result.returncode == 0, result.stderr
    assert (
        "Warning: Page 5 has no text and the server's model does not read images, so the "
        "answer could not use it" in result.stderr
    )
    assert sglang.images == []
    [body] = chat_bodies(sglang)
    messages = body["messages"]
    assert isinstance(messages, list)
    assert all(isinstance(m["content"], str) for m in messages)
    assert chats(sglang) == 1

"""Scanned pages as images: Qwen3.5's token formula, deterministic PNGs, the message layout."""

from __future__ import annotations

import json
import urllib.request
import zlib
from pathlib import Path

import pytest

from desktop.answering.prompt import PageRange, full_range
from desktop.answering.scans import (
    build_image_messages,
    count_image_prompt_tokens,
    page_images,
    reads_images,
    scanned_pages,
    unread_warning,
)
from desktop.documents import extract
from desktop.documents.page_images import (
    LONG_EDGE,
    MARKER_TOKENS,
    gray_png,
    image_tokens,
    png_size,
    smart_resize,
)
from tests.conftest import API_KEY, CORPUS_DIR
from tests.support.documents import scanned_pdf
from tests.support.sglang_server import FakeSGLang


@pytest.mark.parametrize(
    ("width", "height", "resized", "tokens"),
    [
        (1086, 1536, (1536, 1088), 48 * 34),  # an A4 page at LONG_EDGE
        (1536, 1536, (1536, 1536), 48 * 48),
        (10, 10, (256, 256), 8 * 8),  # below 65,536 pixels: scaled up
        (8000, 8000, (4096, 4096), 128 * 128),  # above 16,777,216 pixels: scaled down
        (3000, 100, (96, 3008), 3 * 94),  # rounded to the nearest multiple of 32
    ],
)
def test_qwen_image_token_formula(
    width: int, height: int, resized: tuple[int, int], tokens: int
) -> None:
    assert smart_resize(height, width) == resized
    assert image_tokens(width, height) == tokens


def test_gray_png_is_a_valid_deterministic_png() -> None:
    pixels = bytes(range(256)) * 3  # 3 rows of 256, stride 256
    png = gray_png(200, 3, 256, pixels)
    assert png == gray_png(200, 3, 256, pixels)
    assert png_size(png) == (200, 3)
    start = png.index(b"IDAT") + 4
    length = int.from_bytes(png[start - 8 : start - 4], "big")
    rows = zlib.decompress(png[start : start + length])
    assert rows == b"".join(b"\x00" + pixels[y * 256 : y * 256 + 200] for y in range(3))
    assert png_size(b"GIF89a") is None


def test_scanned_page_becomes_an_image_in_its_place(tmp_path: Path) -> None:
    """The image follows its page's anchor in the first user message; the system turn has
    no images; the prefix is the same for every question."""
    doc = extract(scanned_pdf(tmp_path / "mixed.pdf", CORPUS_DIR))
    assert scanned_pages(doc, full_range(doc)) == [5]
    assert scanned_pages(doc, PageRange(1, 4)) == []
    images = page_images(doc, [5])
    assert max(images[5].width, images[5].height) == LONG_EDGE
    assert images[5].tokens == image_tokens(images[5].width, images[5].height) + MARKER_TOKENS
    first = build_image_messages(doc, full_range(doc), "What is on page 5?", images)
    second = build_image_messages(doc, full_range(doc), "And page 2?", images)
    assert first[:2] == second[:2]
    assert [m["role"] for m in first] == ["system", "user", "user"]
    assert isinstance(first[0]["content"], str)
    parts = first[1]["content"]
    assert [p["type"] for p in parts] == ["text", "image_url", "text"]
    assert parts[0]["text"].startswith("<document>\nTitle: ")
    assert parts[0]["text"].endswith("\n[Page 5]\n")
    assert parts[2]["text"] == "\n</document>"
    assert parts[1]["image_url"]["url"].startswith("data:image/png;base64,iVBOR")
    assert first[2]["content"] == "What is on page 5?"


def test_token_count_matches_the_server(tmp_path: Path) -> None:
    """Longdoc's count of text + image patches equals the (test) server's own."""
    doc = extract(scanned_pdf(tmp_path / "mixed.pdf", CORPUS_DIR))
    messages = build_image_messages(doc, full_range(doc), "Q?", page_images(doc, [5]))
    with FakeSGLang(api_key=API_KEY) as server:
        request = urllib.request.Request(
            f"{server.url}/v1/tokenize",
            data=json.dumps({"model": "m", "messages": messages}).encode(),
            headers={"Authorization": f"Bearer {API_KEY}", "Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request) as response:
            count = json.loads(response.read())["count"]
        assert reads_images(server.url, API_KEY)
        server.behaviour.image_understanding = False
        assert not reads_images(server.url + "/v1", API_KEY)
    assert count_image_prompt_tokens(messages, thinking=True) == count
    assert not reads_images("http://127.0.0.1:9", API_KEY)  # nothing there: text only


def test_unread_pages_are_named() -> None:
    doc = extract(Path(CORPUS_DIR / "004-pdflatex-4-pages" / "pdflatex-4-pages.pdf"))
    assert unread_warning([2], doc).startswith(
        "Page 2 has no text and the server's model does not read images, so the answer "
        "could not use it"
    )
    assert unread_warning([1, 3], doc).startswith("Pages 1 and 3 have no text")

"""Scanned pages (no text layer) sent as images, in their place, to a model that reads them.

Where the images go, and why: Qwen3.5's chat template refuses images in a system message
("System message cannot contain images."), so for a document with scanned pages the
system message keeps only the instructions and the document block moves to the first
user message, as text parts with an image part right after each scanned page's anchor;
the question follows as a second user message. The prefix (instructions + document with
its images) is still the same bytes for every question, so SGLang's radix cache reuses
it (it hashes image data into the pad tokens, so the same PNG bytes hit the same cache).

Whether the server's model reads images is SGLang's ``/model_info``
``has_image_understanding``; a server that does not say is assumed not to, and the
scanned pages are named as unread in the answer's warnings instead.
"""

from __future__ import annotations

import base64
import http.client
import json
import urllib.error
import urllib.request
from typing import Any

from desktop.answering.pages import PageRange
from desktop.answering.prompt import build_messages, build_set_messages, render_chat
from desktop.answering.sets import DocumentSet
from desktop.documents import tokens
from desktop.documents.layout import DOCUMENT_OPEN, ambiguous_labels, anchor
from desktop.documents.model import Document
from desktop.documents.page_images import PageImage, image_tokens, png_size, render_pages
from desktop.net import auth_headers, urlopen
from longdoc_net.endpoint import api_root

INFO_TIMEOUT_S = 15.0
NO_TEXT = "(no text on this page)"
# Where the instructions end and the document block starts in the text-only system message
# (the instructions mention "<document>" too, but never after a blank line).
BLOCK_START = f"\n\n{DOCUMENT_OPEN}"

IMAGE_NOTE = (
    "For this document the text is in the first user message, not here. Pages that are "
    "scanned images are given as images right after their [Page ...] marker: read them "
    "like the other pages and cite them the same way."
)
SET_IMAGE_NOTE = (
    "Here the documents are in the first user message, not here. Pages that are scanned "
    "images are given as images right after their [Page ...] marker: read them like the "
    "other pages and cite them the same way."
)


def scanned_pages(doc: Document, pages: PageRange) -> list[int]:
    """The pages of a PDF in ``pages`` that have no text layer (image-only, scanned)."""
    if doc.kind != "pdf":
        return []
    return [n for n in doc.empty_pages if pages.first <= n <= pages.last]


def damaged_pages(doc: Document, pages: PageRange) -> list[int]:
    """The pages of a PDF in ``pages`` that PDFium could not load (read as unread)."""
    if doc.kind != "pdf":
        return []
    from desktop.documents.pdf import unread_pages

    return [n for n in unread_pages(doc.metadata) if pages.first <= n <= pages.last]


def describe_pages(numbers: list[int], doc: Document) -> str:
    """``page 3`` / ``pages 3 and 7`` / ``pages 3, 7 and 9``, by printed label."""
    labels = [doc.pages[n - 1].label for n in numbers]
    if len(labels) == 1:
        return f"page {labels[0]}"
    return f"pages {', '.join(labels[:-1])} and {labels[-1]}"


def unread_warning(numbers: list[int], doc: Document) -> str:
    """What the answer says when scanned pages could not be sent."""
    what = describe_pages(numbers, doc)
    verb = "has" if len(numbers) == 1 else "have"
    return (
        f"{what[0].upper()}{what[1:]} {verb} no text and the server's model does not read "
        "images, so the answer could not use "
        f"{'it' if len(numbers) == 1 else 'them'}; run the file through OCR (e.g. ocrmypdf) "
        "to include them"
    )


def reads_images(url: str, api_key: str) -> bool:
    """Whether the server says its model understands images (SGLang ``/model_info``)."""
    request = urllib.request.Request(f"{api_root(url)}/model_info", headers=auth_headers(api_key))
    try:
        with urlopen(request, timeout=INFO_TIMEOUT_S) as response:
            data = json.loads(response.read())
    # HTTPException: a server killed mid-answer leaves a short body (IncompleteRead).
    except (urllib.error.URLError, http.client.HTTPException, OSError, ValueError):
        return False  # not SGLang, or too old to say: send text only
    return isinstance(data, dict) and data.get("has_image_understanding") is True


def page_images(doc: Document, numbers: list[int]) -> dict[int, PageImage]:
    """The scanned pages rendered (cached per document and page)."""
    return render_pages(doc.path, numbers, key=doc.sha256)


def _document_parts(
    doc: Document, block: str, pages: PageRange, images: dict[int, PageImage]
) -> list[dict[str, Any]]:
    """The document block as text parts with each scanned page's image after its anchor."""
    selected = doc.select(pages.first, pages.last)
    # As the layout does: a label is ambiguous when it repeats anywhere in the document.
    repeated = ambiguous_labels(doc.pages)
    parts: list[dict[str, Any]] = []
    position = 0
    for page in selected:
        image = images.get(page.number)
        if image is None:
            continue
        marker = f"{anchor(page, page.label in repeated)}\n{NO_TEXT}"
        at = block.find(marker, position)
        if at < 0:
            continue
        cut = at + len(marker) - len(NO_TEXT)
        parts.append({"type": "text", "text": block[position:cut]})
        encoded = base64.b64encode(image.png).decode("ascii")
        parts.append(
            {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{encoded}"}}
        )
        position = at + len(marker)
    parts.append({"type": "text", "text": block[position:]})
    return parts


def build_image_messages(
    doc: Document, pages: PageRange, question: str, images: dict[int, PageImage]
) -> list[dict[str, Any]]:
    """Instructions (system), the document with its page images (user), the question (user).

    Made from the text-only messages (``prompt.build_messages``), so instructions, document
    block and question are exactly what a document without scans gets.
    """
    system, asked = build_messages(doc, pages, question)
    instructions, _, rest = system["content"].partition(BLOCK_START)
    block = DOCUMENT_OPEN + rest
    return [
        {"role": "system", "content": f"{instructions}\n\n{IMAGE_NOTE}"},
        {"role": "user", "content": _document_parts(doc, block, pages, images)},
        {"role": "user", "content": asked["content"]},
    ]


def count_image_prompt_tokens(messages: list[dict[str, Any]], thinking: bool) -> int:
    """The prompt's tokens as the server counts them: text, markers and each image's patches."""
    # The one <|image_pad|> counted with the text stands for all of an image's patches.
    patches = sum(
        _image_part_tokens(part) - 1
        for message in messages
        if isinstance(message["content"], list)
        for part in message["content"]
        if part.get("type") == "image_url"
    )
    return len(tokens.encode_with_special(render_chat(messages, thinking))) + patches


def _image_part_tokens(part: dict[str, Any]) -> int:
    """Patch tokens of a ``data:image/png;base64,...`` image part (from the PNG header)."""
    url = str(part.get("image_url", {}).get("url", ""))
    head = base64.b64decode(url.split(",", 1)[-1][:44])  # 33 bytes: the PNG header
    size = png_size(head)
    if size is None:
        raise ValueError("image parts must be PNG data URLs")
    return image_tokens(*size)


def build_set_image_messages(
    docset: DocumentSet, question: str, images: dict[str, dict[int, PageImage]]
) -> list[dict[str, Any]]:
    """A set's messages when some of its documents have scanned pages: instructions
    (system), every document with its page images in place (user), the question (user).

    As for one document; the blocks stay in set order, so this cannot keep an appended
    document's prefix when an earlier document's images move the block out of the system
    turn (the README says so).
    """
    system, asked = build_set_messages(docset, question)
    instructions, _, rest = system["content"].partition("\n\n<document id=")
    blocks = "<document id=" + rest
    starts = [blocks.index(f'<document id="{m.letter}">') for m in docset.members]
    ends = [*starts[1:], len(blocks)]
    parts: list[dict[str, Any]] = []
    for m, a, b in zip(docset.members, starts, ends, strict=True):
        block = blocks[a:b]
        found = images.get(m.letter)
        pieces = (
            _document_parts(m.document, block, m.pages, found)
            if found
            else [{"type": "text", "text": block}]
        )
        if parts and parts[-1]["type"] == "text" and pieces[0]["type"] == "text":
            parts[-1] = {"type": "text", "text": parts[-1]["text"] + pieces[0]["text"]}
            pieces = pieces[1:]
        parts.extend(pieces)
    return [
        {"role": "system", "content": f"{instructions}\n\n{SET_IMAGE_NOTE}"},
        {"role": "user", "content": parts},
        {"role": "user", "content": asked["content"]},
    ]

"""Longdoc's prompt text is what Qwen3.5's own chat template renders, byte for byte.

Token counts, the cacheable prefix and warm-ups (sent as raw text) all assume Longdoc knows
the exact text the server makes of its messages. Here the real template (vendored in
tests/unit/answering/data/, source named in qwen3_5_chat_template.md) is rendered with jinja2 as
transformers does, and compared with ``prompt.render_chat`` and with the test server's own
rendering, for every message shape Longdoc sends.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from jinja2.exceptions import TemplateError
from jinja2.sandbox import ImmutableSandboxedEnvironment

from desktop.answering.pages import PageRange
from desktop.answering.prompt import (
    build_messages,
    build_set_messages,
    cacheable_prefix,
    full_range,
    render_chat,
    set_cacheable_prefix,
)
from desktop.answering.scans import build_image_messages
from desktop.answering.sets import build_set
from desktop.documents.page_images import PageImage, gray_png
from tests.conftest import make_document
from tests.support.sglang_server import template as test_server

TEMPLATE = Path(__file__).parent / "data" / "qwen3_5_chat_template.jinja"
TEMPLATE_SHA256 = "a4aee8afcf2e0711942cf848899be66016f8d14a889ff9ede07bca099c28f715"

PAGES = [("i", "Preface.  Alpha and Beta.\n"), ("1", "Term: 24 months."), ("2", "  Fees.\n\n")]
OTHER = [("1", "Second contract."), ("2", "Liability capped at EUR 1M.")]


def raise_exception(message: str) -> None:
    raise TemplateError(message)


def real_template(
    messages: Sequence[Mapping[str, Any]], thinking: bool, *, stated: bool = True
) -> str:
    """The real template, compiled as transformers' ``apply_chat_template`` compiles it.

    ``stated``: the request names ``enable_thinking`` (``chat_template_kwargs``); Longdoc
    sends it only to switch thinking off, so both forms must render alike.
    """
    env = ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True, extensions=["jinja2.ext.loopcontrols"]
    )
    env.globals["raise_exception"] = raise_exception
    kwargs = {"enable_thinking": thinking} if stated or not thinking else {}
    return env.from_string(TEMPLATE.read_text(encoding="utf-8")).render(
        messages=list(messages), add_generation_prompt=True, tools=None, **kwargs
    )


def history() -> list[dict[str, str]]:
    """Two earlier turns of a thread, as ``threads.history_messages`` makes them."""
    return [
        {"role": "user", "content": "Who are the parties?"},
        {"role": "assistant", "content": "Alpha and Beta [p. i]."},
        {"role": "user", "content": "How long is the term?"},
        {"role": "assistant", "content": "\n24 months [p. 1].\n"},
    ]


def shapes() -> dict[str, list[dict[str, Any]]]:
    doc = make_document(PAGES, title="Pinned contract")
    other = make_document(OTHER, title="Second")
    whole = full_range(doc)
    return {
        "question": build_messages(doc, whole, "  What does it cost?  "),
        "page range": build_messages(doc, PageRange(2, 3), "What does it cost?"),
        "follow-up": build_messages(doc, whole, "And the fees?", history()),
        "follow-up on a range": build_messages(doc, PageRange(1, 2), "Why?", history()),
        "summary": build_messages(doc, whole, "Summarize the document in a few paragraphs."),
        "set": build_set_messages(build_set([doc, other]), "Compare the terms."),
        "set follow-up": build_set_messages(build_set([doc, other]), "And?", history()),
    }


def test_the_fixture_is_the_vendored_template() -> None:
    assert hashlib.sha256(TEMPLATE.read_bytes()).hexdigest() == TEMPLATE_SHA256


@pytest.mark.parametrize("thinking", [True, False], ids=["thinking", "no thinking"])
@pytest.mark.parametrize("shape", list(shapes()))
def test_longdoc_renders_what_the_real_template_renders(shape: str, thinking: bool) -> None:
    messages = shapes()[shape]
    expected = real_template(messages, thinking)
    assert render_chat(messages, thinking) == expected
    assert real_template(messages, thinking, stated=False) == expected
    # The test server the rest of the suite runs against renders it the same way.
    assert test_server.render_chat(messages, enable_thinking=thinking) == expected


def test_the_cacheable_prefix_is_where_every_real_prompt_starts() -> None:
    doc = make_document(PAGES, title="Pinned contract")
    prefix = cacheable_prefix(doc, full_range(doc))
    for messages in (shapes()["question"], shapes()["follow-up"], shapes()["summary"]):
        for thinking in (True, False):
            assert real_template(messages, thinking).startswith(prefix)
    docset = build_set([doc, make_document(OTHER, title="Second")])
    assert real_template(shapes()["set"], True).startswith(set_cacheable_prefix(docset))


def test_scanned_pages_render_as_the_real_template_renders_images() -> None:
    doc = make_document([*PAGES, ("3", "")], title="Scanned")
    png = gray_png(64, 32, 64, bytes(64 * 32))
    images = {4: PageImage(4, 64, 32, png)}
    messages = build_image_messages(doc, full_range(doc), "What is on page 3?", images)
    for thinking in (True, False):
        expected = real_template(messages, thinking)
        assert expected.count("<|vision_start|><|image_pad|><|vision_end|>") == 1
        assert render_chat(messages, thinking) == expected
    # Qwen3.5 refuses images in the system turn: Longdoc never puts them there.
    system = [{"role": "system", "content": messages[1]["content"]}, messages[2]]
    with pytest.raises(TemplateError, match="System message cannot contain images"):
        real_template(system, True)

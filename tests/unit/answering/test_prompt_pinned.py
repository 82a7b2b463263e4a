"""The single-document prompt, byte for byte as it was before sets of documents existed.

Existing answer caches and the server's prefix cache depend on these bytes: a change here
must be deliberate (and bump PROMPT_VERSION), never a side effect of the set layout.
"""

from __future__ import annotations

import hashlib

from desktop.answering.prompt import PageRange, build_messages, cacheable_prefix, render_chat
from tests.conftest import make_document

PAGES = [("i", "Preface. Alpha and Beta."), ("1", "Term. 24 months."), ("2", "Liability capped.")]

SYSTEM = (
    "<|im_start|>system\nYou are Longdoc, an assistant that answers questions about one document. "
    "The document's text follows between <document> and </document>; each page starts with a "
    "marker like [Page 12] that gives the page's printed label. When the question says that "
    "only some pages are shown, the other pages exist but you cannot see them.\n\nRules:\n"
    "- Answer only from the document. If the document does not contain the answer, say so.\n"
    "- Cite the pages you rely on right after each claim, in the form [p. 12] or [pp. 12-14], "
    "using the printed label from the page markers.\n- When you quote, copy the words exactly, "
    'in double quotes, followed by the citation: "exact words" [p. 12].\n- Answer in the '
    "language of the question. Use Markdown for structure.\n\n<document>\nTitle: Pinned contract\n"
)
WHOLE = (
    SYSTEM + "[Page i]\nPreface. Alpha and Beta.\n[Page 1]\nTerm. 24 months.\n[Page 2]\n"
    "Liability capped.\n</document><|im_end|>\n<|im_start|>user\nWho are the parties?"
    "<|im_end|>\n<|im_start|>assistant\n<think>\n"
)
RANGE = (
    SYSTEM + "[Page 1]\nTerm. 24 months.\n[Page 2]\nLiability capped.\n</document><|im_end|>\n"
    "<|im_start|>user\n(Only pages 2-3 of 3 (printed 1 to 2) are shown. The other pages exist "
    "but are not included.)\n\nWho are the parties?<|im_end|>\n<|im_start|>assistant\n<think>\n"
)


def test_single_document_prompt_bytes_are_pinned() -> None:
    doc = make_document(PAGES, title="Pinned contract")
    whole = render_chat(build_messages(doc, PageRange(1, 3), "Who are the parties?"), True)
    part = render_chat(build_messages(doc, PageRange(2, 3), "Who are the parties?"), True)
    assert whole == WHOLE
    assert part == RANGE
    # The same bytes as a digest, so an edit to the literals above is noticed too.
    assert hashlib.sha256(whole.encode()).hexdigest() == (
        "186156bd9be247b64f9c8b7bfbe82139907b4bc4d6143a2cc182ea140c817393"
    )
    assert hashlib.sha256(part.encode()).hexdigest() == (
        "ef97e69f80450e5854372a51a072c91001d1e71e80d76dbe2797113cf5072312"
    )
    assert WHOLE.startswith(cacheable_prefix(doc, PageRange(1, 3)))

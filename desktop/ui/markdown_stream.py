"""Moved to ``desktop.answering.markdown_stream``: Qt-free, it lives outside ``desktop.ui``.

Re-exported here for the modules and scripts that import it by its old name.
"""

from __future__ import annotations

from desktop.answering.markdown_stream import (
    PAGE_SCHEME,
    Block,
    Span,
    block_kind,
    citation_href,
    close_open,
    inline,
    line_kind,
    paragraph_source,
    parse_all,
    parse_block,
    parse_citation_href,
    safe_cut,
    split_first,
    to_plain_markdown,
)

__all__ = [
    "PAGE_SCHEME",
    "Block",
    "Span",
    "block_kind",
    "citation_href",
    "close_open",
    "inline",
    "line_kind",
    "paragraph_source",
    "parse_all",
    "parse_block",
    "parse_citation_href",
    "safe_cut",
    "split_first",
    "to_plain_markdown",
]

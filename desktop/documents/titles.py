"""Choosing a document's title from its candidates: the one rule every reader uses.

A candidate (metadata title, bookmark, heading, first line...) that holds nothing a reader
can read is skipped for the next one: made only of control, format (invisible), private-use,
unassigned, surrogate or combining characters, replacement characters (U+FFFD) and soft
hyphens, it would show as boxes or as nothing. Longdoc's own section names (``Notes``,
``Footnotes``, ``Endnotes``) are never a title. A chosen title is one line without soft
hyphens, at most ``TITLE_MAX`` characters.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable

TITLE_MAX = 120
SOFT_HYPHEN = "\u00ad"
# Names Longdoc itself gives to sections it adds (see docx.NOTES_SECTION).
OWN_SECTION_NAMES = frozenset({"notes", "footnotes", "endnotes", "§ notes"})
# Categories of characters that show nothing readable on their own.
_UNREADABLE = frozenset({"Cc", "Cf", "Co", "Cn", "Cs", "Mn", "Mc", "Me", "Zs", "Zl", "Zp"})


def readable(text: str) -> bool:
    """Whether ``text`` holds at least one character a reader can read."""
    return any(
        ch not in ("\ufffd", SOFT_HYPHEN) and unicodedata.category(ch) not in _UNREADABLE
        for ch in text
    )


def clean_title(text: str) -> str:
    """``text`` as a title: no soft hyphens or invisible marks at its ends, one line."""
    text = text.replace(SOFT_HYPHEN, "")
    words = " ".join(text.split())
    # Format characters (zero-width spaces, direction marks) left at the ends are noise.
    while words and unicodedata.category(words[0]) == "Cf":
        words = words[1:]
    while words and unicodedata.category(words[-1]) == "Cf":
        words = words[:-1]
    if len(words) > TITLE_MAX:
        words = words[:TITLE_MAX].rstrip()
    return words.strip()


def choose_title(candidates: Iterable[str | None], fallback: str) -> str:
    """The first readable candidate, cleaned; else ``fallback`` (the file name), cleaned."""
    for candidate in candidates:
        if not candidate:
            continue
        title = clean_title(candidate)
        if title and readable(title) and title.lower() not in OWN_SECTION_NAMES:
            return title
    return clean_title(fallback) or fallback

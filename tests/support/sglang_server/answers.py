"""Deterministic answers: page anchors, citations, needles and token-exact pieces."""

from __future__ import annotations

import contextlib
import re
from dataclasses import dataclass
from typing import Any, Literal

from tests.support.sglang_server.protocol import FILLER_WORDS
from tests.support.sglang_server.template import TemplateError, content_text
from tests.support.sglang_server.tokens import decode, encode, qwen_encoding

_ANCHOR_RE = re.compile(r"^\[Page ([^\]\n]+?)(?: \(#(\d+)\))?\]$", re.MULTILINE)
_DOCUMENT_END_RE = re.compile(r"^</document>$", re.MULTILINE)


@dataclass(frozen=True)
class PageRef:
    """A page anchor found in the prompt and the text that follows it."""

    label: str
    number: int | None
    text: str

    @property
    def citation(self) -> str:
        """How the answer cites the page: ``[p. label]`` or ``[p. label (#n)]``."""
        if self.number is None:
            return f"[p. {self.label}]"
        return f"[p. {self.label} (#{self.number})]"


def find_pages(prompt: str) -> list[PageRef]:
    """The ``[Page <label>]`` / ``[Page <label> (#n)]`` anchors of the prompt, in order."""
    matches = list(_ANCHOR_RE.finditer(prompt))
    pages: list[PageRef] = []
    for i, match in enumerate(matches):
        end = matches[i + 1].start() if i + 1 < len(matches) else len(prompt)
        closing = _DOCUMENT_END_RE.search(prompt, match.end(), end)
        if closing is not None:
            end = closing.start()
        number = int(match.group(2)) if match.group(2) else None
        pages.append(PageRef(match.group(1), number, prompt[match.end() : end].strip()))
    return pages


def last_question(messages: list[dict[str, Any]]) -> str:
    """The last non-empty line of the last user message."""
    for message in reversed(messages):
        if message.get("role") == "user":
            with contextlib.suppress(TemplateError):
                lines = [ln.strip() for ln in content_text(message.get("content")).splitlines()]
                lines = [ln for ln in lines if ln]
                return lines[-1] if lines else ""
    return ""


def compose_answer(prompt: str, question: str) -> tuple[str, str]:
    """(reasoning, answer) for a rendered prompt, both deterministic."""
    pages = find_pages(prompt)
    if not pages:
        reasoning = f'The user asks: "{question}". The prompt has no page anchors.'
        answer = f'The prompt has no pages. The question was: "{question}".'
        return reasoning, answer
    first, last = pages[0], pages[-1]
    reasoning = (
        f'The user asks: "{question}". The document has {len(pages)} pages, from '
        f"{first.label} to {last.label}. I will cite the first and the last page and quote "
        "the opening words of the first page."
    )
    answer = (
        f'The document has {len(pages)} pages. The question was: "{question}". '
        f"See {first.citation} and {last.citation}."
    )
    words = first.text.split()[:8]
    if words:
        answer += f' It opens with "{" ".join(words)}" {first.citation}.'
    return reasoning, answer


_NEEDLE_RE = re.compile(r"access code for the (\w+) vault is (\d{6})")


def needle_answer(prompt: str, horizon: float) -> str:
    """The codes a model that reads only the first ``horizon`` of the prompt would give."""
    limit = int(len(prompt) * horizon)
    found = [m for m in _NEEDLE_RE.finditer(prompt) if m.end() <= limit]
    return "\n".join(f"{m.group(1)}: {m.group(2)}" for m in found) or "No codes found."


def fit_tokens(text: str, target: int | None) -> str:
    """``text`` padded with filler words (or cut) to exactly ``target`` tokens."""
    if target is None:
        return text
    ids = encode(text, special=False)
    if len(ids) < target:
        missing = target - len(ids)
        filler = " ".join(FILLER_WORDS[i % len(FILLER_WORDS)] for i in range(missing + 1))
        ids = encode(f"{text} {filler}", special=False)
    return decode(ids[: max(target, 0)])


@dataclass(frozen=True)
class Piece:
    """One step of generation: text shown as reasoning or content, or hidden tokens."""

    kind: Literal["reasoning", "content", "hidden"]
    text: str
    tokens: int


def token_pieces(text: str, kind: Literal["reasoning", "content"]) -> list[Piece]:
    """Split ``text`` into one piece per token, merging tokens that split a UTF-8 character."""
    enc = qwen_encoding()
    pieces: list[Piece] = []
    buffer = b""
    count = 0
    for token in encode(text, special=False):
        buffer += enc.decode_single_token_bytes(token)
        count += 1
        try:
            piece = buffer.decode("utf-8")
        except UnicodeDecodeError:
            continue
        pieces.append(Piece(kind, piece, count))
        buffer, count = b"", 0
    if buffer:
        pieces.append(Piece(kind, buffer.decode("utf-8", errors="replace"), count))
    return pieces


# --------------------------------------------------------------------------------------------
# Behaviour switches and the prefix cache.

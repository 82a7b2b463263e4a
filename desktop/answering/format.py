"""Words and figures about answers, shared by the CLI and the app (no Qt).

"3 days ago", "About pages 5-20 of 300 (printed iv to 12) only", "1,204 of 98,310 prompt
tokens from the server's cache · 41.2 tokens/s": written once here so the terminal and the
window say the same.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from desktop.answering.pages import PageRange, describe
from desktop.answers import StoredAnswer
from desktop.documents.model import Page


def ago(timestamp: float, now: float | None = None) -> str:
    """ "just now", "5 minutes ago", "3 days ago"."""
    delta = (time.time() if now is None else now) - timestamp
    for unit, size in (("day", 86_400), ("hour", 3_600), ("minute", 60)):
        if delta >= size:
            n = int(delta // size)
            return f"{n} {unit}{'s' if n != 1 else ''} ago"
    return "just now"


def duration(seconds: float) -> str:
    """A clock-like duration: "0:07", "4:32", "72:05"."""
    seconds = max(0, int(seconds))
    return f"{seconds // 60}:{seconds % 60:02d}"


def page_label(pages: Sequence[Page], number: int) -> str:
    """The printed label of page ``number`` (1-based), or "#n" when out of range."""
    if 0 < number <= len(pages):
        return pages[number - 1].label or str(number)
    return f"#{number}"


def page_span(first: int, last: int, pages: Sequence[Page] | int) -> str:
    """ "pages 5-20 of 300 (printed iv to 12)": the core's words for a range
    (``pages.describe``). ``pages`` is the document's pages (for their labels) or just
    their count."""
    selected = PageRange(first, last)
    if isinstance(pages, int):
        return selected.describe(pages)
    return describe(pages, selected)


def scope(first: int, last: int, pages: Sequence[Page] | int) -> str:
    """ "About pages 1-120 of 300 only" for part of a document; "" for all of it."""
    count = pages if isinstance(pages, int) else len(pages)
    if count and (first, last) != (1, count):
        return f"About {page_span(first, last, pages)} only"
    return ""


def answer_scope(answer: StoredAnswer, pages: Sequence[Page] | int) -> str:
    """The scope line of a stored answer (see ``scope``)."""
    return scope(answer.first_page, answer.last_page, pages)


def generation_rate(answer: StoredAnswer) -> float | None:
    """Tokens per second after the first token; None when the figures are missing."""
    if answer.completion_tokens and answer.total_s and answer.ttft_s is not None:
        gen_s = answer.total_s - answer.ttft_s
        if gen_s > 0:
            return answer.completion_tokens / gen_s
    return None


def answer_figures(answer: StoredAnswer) -> str:
    """The line under an answer: model, tokens, server cache, first token, speed."""
    parts: list[str] = []
    if answer.model:
        parts.append(answer.model)
    if answer.prompt_tokens is not None:
        prompt = f"{answer.prompt_tokens:,} prompt tokens"
        if answer.cached_tokens:
            prompt = (
                f"{answer.cached_tokens:,} of {answer.prompt_tokens:,} prompt tokens "
                "from the server's cache"
            )
        parts.append(prompt)
    if answer.completion_tokens is not None:
        parts.append(f"{answer.completion_tokens:,} tokens generated")
    if answer.ttft_s is not None:
        parts.append(f"first token after {answer.ttft_s:.1f} s")
    rate = generation_rate(answer)
    if rate is not None:
        parts.append(f"{rate:,.1f} tokens/s")
    return " · ".join(parts)


def short_quote(quote: str, limit: int = 120) -> str:
    """A quote on one line, cut with "…" past ``limit`` characters."""
    quote = " ".join(quote.split())
    return quote if len(quote) <= limit else quote[: limit - 1].rstrip() + "…"


# How to allow longer answers, in each surface's words (``truncation_note``).
CLI_RAISE_LIMIT = "raise --max-tokens"
APP_RAISE_LIMIT = "raise the answer reserve in Settings"


def truncation_note(answer: StoredAnswer, raise_limit: str = CLI_RAISE_LIMIT) -> str:
    """Why a truncated answer stops short, and what to change (the CLI's ``Warning:`` line
    and the app's notice). ``raise_limit`` names how to allow longer answers there."""
    limit = f"the token limit ({answer.max_tokens:,} tokens)"
    if not answer.answer.strip():
        return (
            f"the model was still reasoning when it reached {limit}, so there is no "
            f"answer; {raise_limit}, or turn thinking off"
        )
    return f"the answer reached {limit} and was cut; {raise_limit} to allow more"

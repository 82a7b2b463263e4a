"""The context budget: one function decides whether a prompt fits, what binds, the reserve.

The CLI's refusal, the library's "Fits" column and the app's budget bar all come from
``plan_budget`` (through ``document_budget`` when only a document's token count is known),
so they always show the same numbers.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING

from desktop.answering.pages import PageRange, format_range
from desktop.config import MIN_ANSWER_RESERVE
from desktop.documents.model import Document, Page
from desktop.errors import DocumentTooLarge, SetTooLarge

if TYPE_CHECKING:
    from desktop.answering.sets import DocumentSet


class Limit(StrEnum):
    """Which of the server's limits caps the prompt."""

    CONTEXT = "context"  # the context length (max_model_len, or the stated one)
    MAX_INPUT = "max_input"  # SGLang's max_req_input_len (from /server_info)


@dataclass(frozen=True)
class ContextLimits:
    """What the server accepts: its context length and, for SGLang, ``max_req_input_len``.

    ``stated_by`` names the setting the context length came from when the server did not
    report it (or reported a larger one); empty when it is the server's own figure.
    """

    context_length: int
    max_input: int | None = None
    stated_by: str = ""


@dataclass(frozen=True)
class Budget:
    """How a prompt fits the server's limits; ``max_tokens`` is what the answer may use."""

    prompt_tokens: int
    limits: ContextLimits
    reserve: int
    max_tokens: int
    fits: bool
    warnings: list[str] = field(default_factory=list)

    @property
    def context_length(self) -> int:
        """The context length the prompt and the answer share."""
        return self.limits.context_length

    @property
    def binding(self) -> Limit:
        """The limit that caps the prompt (the smaller of the two)."""
        max_input = self.limits.max_input
        by_context = self.context_length - 1 - MIN_ANSWER_RESERVE
        return (
            Limit.MAX_INPUT if max_input is not None and max_input < by_context else Limit.CONTEXT
        )

    @property
    def prompt_limit(self) -> int:
        """The largest prompt that fits: within max_req_input_len and the minimum reserve."""
        by_context = self.context_length - 1 - MIN_ANSWER_RESERVE
        max_input = self.limits.max_input
        return by_context if max_input is None else min(by_context, max_input)

    @property
    def overflow(self) -> int:
        """Tokens too many even with the minimum reserve (0 when it fits)."""
        return max(0, self.prompt_tokens - self.prompt_limit)


def plan_budget(prompt_tokens: int, limits: ContextLimits, reserve: int) -> Budget:
    """Fit the answer reserve; shrink it to the floor with a warning before refusing.

    SGLang refuses ``prompt >= context`` and ``prompt + max_tokens >= context``, so one
    token is kept free; it also aborts prompts over ``max_req_input_len`` after HTTP 200,
    so that limit is checked here too.
    """
    context = limits.context_length
    usable = context - 1
    within_input = limits.max_input is None or prompt_tokens <= limits.max_input
    if within_input and prompt_tokens + reserve <= usable:
        return Budget(prompt_tokens, limits, reserve, reserve, True)
    room = usable - prompt_tokens
    if within_input and room >= MIN_ANSWER_RESERVE:
        warning = (
            f"The answer reserve was reduced from {reserve:,} to {room:,} tokens so the "
            f"document fits the context of {context:,} tokens; long answers may be cut."
        )
        return Budget(prompt_tokens, limits, reserve, room, True, [warning])
    return Budget(prompt_tokens, limits, reserve, 0, False)


@functools.lru_cache(maxsize=64)
def prompt_overhead(question: str, thinking: bool) -> int:
    """Exact tokens a whole-document prompt has beyond the document's own token count.

    The document block is tokenized on its own (it starts after a paragraph break and ends
    at ``<|im_end|>``, both boundaries the tokenizer's split pattern never crosses), so the
    instructions, the template and the question add the same count to every document;
    ``tests/unit/answering/test_budget.py`` checks this against the full count on real documents.
    """
    from desktop.answering.prompt import count_prompt_tokens, full_range
    from desktop.documents.ingest import count_range_tokens
    from desktop.documents.model import Document, Page

    probe = Document(
        sha256="budget-overhead-probe",
        path="",
        kind="text",
        title="",
        pages=[Page(1, "1", "x")],
        extractor="",
    )
    whole = count_prompt_tokens(probe, full_range(probe), question, thinking)
    return whole - count_range_tokens(probe, 1, 1)


def document_budget(
    document_tokens: int,
    limits: ContextLimits,
    reserve: int,
    *,
    question: str = "",
    thinking: bool = True,
) -> Budget:
    """The budget of a whole document from its token count alone (the library's column)."""
    return plan_budget(document_tokens + prompt_overhead(question, thinking), limits, reserve)


def suggest_pages(selected: PageRange, budget: Budget) -> PageRange | None:
    """A range starting where ``selected`` starts that should fit; None when one page is too much.

    Assumes evenly sized pages, with a 5% margin for the uneven ones.
    """
    pages = selected.last - selected.first + 1
    if budget.fits or pages <= 1 or budget.prompt_tokens <= 0:
        return None
    count = max(1, min(pages - 1, int(pages * budget.prompt_limit / budget.prompt_tokens * 0.95)))
    return PageRange(selected.first, selected.first + count - 1)


def explain_limit(budget: Budget) -> str:
    """The binding limit in words with its true numbers, for refusals and the budget bar."""
    limits = budget.limits
    if budget.binding is Limit.MAX_INPUT:
        return (
            f"the server accepts at most {budget.prompt_limit:,} prompt tokens "
            "(max_req_input_len: its KV cache is smaller than its context of "
            f"{limits.context_length:,})"
        )
    whose = (
        f"the context of {limits.context_length:,} tokens stated by {limits.stated_by}"
        if limits.stated_by
        else f"the server's context of {limits.context_length:,} tokens"
    )
    return (
        f"{whose} leaves {budget.prompt_limit:,} for the prompt after the minimum answer "
        f"reserve of {MIN_ANSWER_RESERVE:,}"
    )


def remedy(budget: Budget, pages: Sequence[Page], selected: PageRange) -> str:
    """What the user can do about a refusal: a page range, or for one page, a bigger server."""
    suggestion = suggest_pages(selected, budget)
    if suggestion is not None:
        text = format_range(pages, suggestion.first, suggestion.last)
        return f"choose a page range, e.g. --pages {text}"
    if budget.binding is Limit.MAX_INPUT:
        return (
            "a single page cannot be split: give the server more memory for its KV cache "
            "(e.g. a higher --mem-fraction-static or more GPUs)"
        )
    if budget.limits.stated_by:
        return (
            f"a single page cannot be split: raise the stated context ({budget.limits.stated_by})"
            " if the server allows more, or use a server with a longer context"
        )
    return "a single page cannot be split: use a server with a longer context"


def refusal(doc: Document, selected: PageRange, budget: Budget) -> DocumentTooLarge:
    """The one DocumentTooLarge for a budget that does not fit: the binding limit with its
    numbers, what to do, and a range that fits (questions and warm-ups alike)."""
    fit = suggest_pages(selected, budget)
    return DocumentTooLarge(
        doc.path,
        budget.prompt_tokens,
        budget.prompt_limit,
        budget.limits.context_length,
        selected.last - selected.first + 1,
        limit=explain_limit(budget),
        remedy=remedy(budget, doc.pages, selected),
        suggested=None if fit is None else (fit.first, fit.last),
    )


def set_refusal(docset: DocumentSet, shares: dict[str, int], budget: Budget) -> SetTooLarge:
    """The one refusal of a set that does not fit: each document's tokens (``shares``, its
    block in the prompt), the binding limit, and what would fit: a document to drop, or a
    range of the largest."""
    over = budget.overflow
    options = []
    droppable = [m.letter for m in docset.members if shares[m.letter] >= over]
    if droppable:
        options.append(f"drop document {' or '.join(droppable[-3:])}")
    largest = max(docset.members, key=lambda m: shares[m.letter])
    allowed = shares[largest.letter] - over
    pages = largest.pages.last - largest.pages.first + 1
    if allowed > 0 and pages > 1:
        count = max(1, min(pages - 1, int(pages * allowed / shares[largest.letter] * 0.95)))
        last = largest.pages.first + count - 1
        text = format_range(largest.document.pages, largest.pages.first, last)
        options.append(f"ask about part of {largest.letter}, e.g. --pages {largest.letter}:{text}")
    return SetTooLarge(
        [(m.letter, m.document.path, shares[m.letter]) for m in docset.members],
        budget.prompt_tokens,
        limit=explain_limit(budget),
        remedy="; or ".join(options)
        or "ask about fewer documents, or use a server with a longer context",
    )

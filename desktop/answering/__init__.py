"""Asking about documents: the prompt, the budget, the streaming client, the ask service.

The answer model's public home: ``from desktop.answering import StoredAnswer, Thread,
AnswerKey, AnswerStatus, CheckedCitations, CitationCheck, QuoteStatus``. The values are
defined in ``desktop/answers.py``, one layer below the store (which builds them from its
rows), so that the layers stay one-way; importing them from here loads nothing else.
"""

from desktop.answers import (
    AnswerKey,
    AnswerStatus,
    CheckedCitations,
    CitationCheck,
    QuoteStatus,
    StoredAnswer,
    Thread,
)

__all__ = [
    "AnswerKey",
    "AnswerStatus",
    "CheckedCitations",
    "CitationCheck",
    "QuoteStatus",
    "StoredAnswer",
    "Thread",
]

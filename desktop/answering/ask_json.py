"""The ``ask --json`` object, built in this one module from the typed answer.

``longdoc ask --json`` prints :func:`ask_json`; ``summarize``/``review`` reports reuse
:func:`citation_json` for their cells, so a citation reads the same everywhere. The README
documents the schema (*Command line*); change both together.

Extension points: fields that only some answers have are emitted only when present, so a
single-document answer's JSON stays as it was. A set of documents passes ``documents``
(each from :func:`document_json`); a document's ``warnings`` and ``unread_pages`` are
``document_json``'s optional arguments; a set's citations carry ``document`` and
``found_in`` (:func:`citation_json`), and with ``documents`` also the cited document's
``path`` and ``sha256``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from desktop.answering.events import Stored
from desktop.answers import CitationCheck
from desktop.documents.model import Document


def document_json(
    doc: Document,
    path: str,
    *,
    warnings: Sequence[str] | None = None,
    unread_pages: Sequence[int] | None = None,
) -> dict[str, Any]:
    """A document as ``ask --json`` names it; ``path`` as the user gave it (JSON-safe)."""
    data: dict[str, Any] = {
        "path": path,
        "sha256": doc.sha256,
        "title": doc.title,
        "pages": len(doc.pages),
        "tokens": doc.tokens,
    }
    if warnings is not None:
        data["warnings"] = list(warnings)
    if unread_pages is not None:
        data["unread_pages"] = list(unread_pages)
    return data


def citation_json(check: CitationCheck) -> dict[str, Any]:
    """One checked citation: ``{"pages", "label", "quote", "status", "found_on"}``, and in
    a set's answer ``"document"`` (its letter) and ``"found_in"``
    (``[{"document", "pages"}]``, every document the quote is in)."""
    return check.to_json()


def citations_json(checks: Sequence[CitationCheck]) -> list[dict[str, Any]]:
    """Every checked citation, in answer order."""
    return [citation_json(check) for check in checks]


def ask_json(
    stored: Stored,
    question: str,
    document: dict[str, Any],
    *,
    documents: Sequence[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """The object ``ask --json`` prints for the final event of ``Answerer.ask``.

    ``document`` is the (first) document, from :func:`document_json`; ``documents`` the
    whole set, for a question about several. ``thread_id`` is null unless the answer is a
    turn of a thread (only complete answers are); ``"truncated": true`` is there only when
    the answer stopped at the token limit.
    """
    answer = stored.answer
    checks = answer.citations.items if answer.citations is not None else ()
    data: dict[str, Any] = {"document": document}
    if documents is not None:
        data["documents"] = list(documents)
    data |= {
        "question": question,
        "answer": answer.answer,
        "reasoning": answer.reasoning,
        "from_cache": stored.from_cache,
        "model": answer.model,
        "finish_reason": answer.finish_reason,
        "usage": {
            "prompt_tokens": answer.prompt_tokens,
            "completion_tokens": answer.completion_tokens,
            "cached_tokens": answer.cached_tokens,
        },
        "timings": {"ttft_s": answer.ttft_s, "total_s": answer.total_s},
        "citations": citations_json(checks),
        "thread_id": stored.thread_id,
    }
    if documents is not None:
        data["citations"] = set_citations_json(checks, documents)
    if answer.truncated:  # only then, so every other answer's object stays as it was
        data["truncated"] = True
    return data


def set_citations_json(
    checks: Sequence[CitationCheck], documents: Sequence[dict[str, Any]]
) -> list[dict[str, Any]]:
    """A set's checked citations, each also naming the cited document's ``path`` and
    ``sha256`` (``documents``: each with its ``letter``, from :func:`document_json`)."""
    files = {d.get("letter"): (d["path"], d["sha256"]) for d in documents}
    items = citations_json(checks)
    for item in items:
        item["path"], item["sha256"] = files.get(item.get("document"), (None, None))
    return items

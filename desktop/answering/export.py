"""Answers as Markdown, for copying and for export files (citations kept as written)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from desktop.answering.format import answer_scope, page_span
from desktop.answers import StoredAnswer
from desktop.documents.model import Page
from desktop.errors import one_line, safe_text


def answer_markdown(answer: StoredAnswer, title: str, pages: Sequence[Page] | int) -> str:
    """One answer: the question as a heading, the answer, and a line of provenance."""
    when = datetime.fromtimestamp(answer.created_at).strftime("%Y-%m-%d %H:%M")
    scope = "all pages"
    if answer_scope(answer, pages):
        scope = f"{page_span(answer.first_page, answer.last_page, pages)} only"
    status = "" if answer.status == "complete" else f", {answer.status}"
    lines = [
        f"## {one_line(answer.question.strip())}",
        "",
        safe_text(answer.answer.strip()) or "(no answer)",
        "",
        f"*{one_line(title)} ({scope}); {one_line(answer.model or 'unknown model')}; "
        f"{when}{status}*",
        "",
    ]
    return "\n".join(lines)


def history_markdown(
    title: str, path: str, answers: list[StoredAnswer], pages: Sequence[Page] | int
) -> str:
    """Every answer about a document, oldest first."""
    parts = [f"# {one_line(title)}", "", f"`{one_line(path)}`", ""]
    parts.extend(answer_markdown(a, title, pages) for a in answers)
    return "\n".join(parts)

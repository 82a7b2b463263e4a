"""Answers as Markdown, for copying and for export files (citations kept as written)."""

from __future__ import annotations

from datetime import datetime

from desktop.store.db import StoredAnswer


def answer_markdown(answer: StoredAnswer, title: str, page_count: int) -> str:
    """One answer: the question as a heading, the answer, and a line of provenance."""
    when = datetime.fromtimestamp(answer.created_at).strftime("%Y-%m-%d %H:%M")
    scope = "all pages"
    if page_count and (answer.first_page, answer.last_page) != (1, page_count):
        scope = f"pages {answer.first_page}-{answer.last_page} of {page_count} only"
    status = "" if answer.status == "complete" else f", {answer.status}"
    lines = [
        f"## {answer.question.strip()}",
        "",
        answer.answer.strip() or "(no answer)",
        "",
        f"*{title} ({scope}); {answer.model or 'unknown model'}; {when}{status}*",
        "",
    ]
    return "\n".join(lines)


def history_markdown(title: str, path: str, answers: list[StoredAnswer], page_count: int) -> str:
    """Every answer about a document, oldest first."""
    parts = [f"# {title}", "", f"`{path}`", ""]
    parts.extend(answer_markdown(a, title, page_count) for a in answers)
    return "\n".join(parts)

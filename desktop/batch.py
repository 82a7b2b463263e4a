"""Summarize every document in a folder: resumable, with progress, exported as a report.

Resuming needs no bookkeeping of its own: every answer lands in the answer cache as it
completes, so running the same batch again serves finished documents from the cache at
once and asks only about the rest.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from desktop.answering.events import Sent, Stored
from desktop.answering.service import Answerer, Question
from desktop.errors import (
    Cancelled,
    DocumentError,
    LongdocError,
    ServerUnavailable,
    plural,
)
from desktop.library import open_document
from desktop.store.db import Store

SUMMARY_QUESTION = (
    "Summarize this document for an analyst: what it is, its main points and any "
    "obligations, dates, amounts or risks it states. Cite pages."
)


@dataclass
class BatchItem:
    """The outcome for one file."""

    path: str
    status: str = "pending"  # pending | done | cached | failed | skipped
    title: str = ""
    pages: int = 0
    tokens: int = 0
    summary: str = ""
    error: str = ""
    model: str = ""
    seconds: float = 0.0


@dataclass
class BatchReport:
    """Every item of a batch run, in order."""

    question: str
    items: list[BatchItem] = field(default_factory=list)
    started_at: float = field(default_factory=time.time)

    def counts(self) -> dict[str, int]:
        """How many items ended in each status."""
        result: dict[str, int] = {}
        for item in self.items:
            result[item.status] = result.get(item.status, 0) + 1
        return result

    def to_markdown(self) -> str:
        """The report as Markdown: one section per document, failures listed at the end."""
        stamp = time.strftime("%Y-%m-%d %H:%M", time.localtime(self.started_at))
        counts = ", ".join(f"{n} {status}" for status, n in sorted(self.counts().items()))
        lines = [f"# Summaries ({stamp})", "", f"Question: {self.question}", "", counts, ""]
        for item in self.items:
            if item.status in ("done", "cached"):
                lines += [
                    f"## {item.title or Path(item.path).name}",
                    "",
                    f"`{item.path}`: {plural(item.pages, 'page')}, {plural(item.tokens, 'token')}, "
                    f"model {item.model}",
                    "",
                    item.summary.strip(),
                    "",
                ]
        problems = [i for i in self.items if i.status in ("failed", "skipped")]
        if problems:
            lines += ["## Not summarized", ""]
            lines += [f"- `{i.path}`: {i.error}" for i in problems]
            lines.append("")
        return "\n".join(lines)

    def to_json(self) -> str:
        """The report as JSON."""
        return json.dumps(
            {
                "question": self.question,
                "started_at": self.started_at,
                "items": [vars(i) for i in self.items],
            },
            ensure_ascii=False,
            indent=2,
        )


Progress = Callable[[int, int, BatchItem], None]


def summarize(
    paths: Sequence[Path],
    store: Store,
    answerer: Answerer,
    *,
    question: str = SUMMARY_QUESTION,
    thinking: bool = False,
    on_progress: Progress | None = None,
    cancel: threading.Event | None = None,
) -> BatchReport:
    """Summarize each file in turn; a document problem skips that file, a dead server stops."""
    report = BatchReport(question)
    report.items = [BatchItem(str(p)) for p in paths]
    cancel = cancel or threading.Event()
    total = len(report.items)
    for number, (path, item) in enumerate(zip(paths, report.items, strict=True), 1):
        if cancel.is_set():
            raise Cancelled()
        started = time.monotonic()
        try:
            doc, _ = open_document(path, store)
            item.title, item.pages, item.tokens = doc.title, len(doc.pages), doc.tokens
            for event in answerer.ask(Question(doc, question, thinking=thinking), cancel):
                if isinstance(event, Sent) and on_progress:
                    item.status = "asking"
                    on_progress(number, total, item)
                if isinstance(event, Stored):
                    item.summary = event.answer.answer
                    item.model = event.answer.model
                    item.status = "cached" if event.from_cache else "done"
        except DocumentError as exc:
            item.status, item.error = "skipped", exc.reason
        except (Cancelled, ServerUnavailable):
            raise
        except LongdocError as exc:
            item.status, item.error = "failed", str(exc)
        item.seconds = time.monotonic() - started
        if on_progress:
            on_progress(number, total, item)
    return report

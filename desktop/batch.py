"""Batch work over folders: summaries and review grids, concurrent, resumable, with a report.

Every document is still asked whole, in one prompt, through the same ``Answerer`` as a
question in the app, so a batch warms the server's prefix cache for later questions.
Requests run in parallel up to the server's own concurrency; each document's questions run
in order on one worker so the second question reuses the first one's cached prefix.

Resuming needs no bookkeeping of its own: every answer lands in the answer cache as it
completes (the store commits each one), so a re-run serves finished documents from the
cache and asks only about the rest; a killed run loses at most the answers in flight.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from desktop.answering.ask_json import citations_json
from desktop.answering.events import Stored
from desktop.answering.service import Answerer, Question
from desktop.documents import SUPPORTED_SUFFIXES
from desktop.documents.model import Document
from desktop.errors import Cancelled, DocumentError, LongdocError, UsageError, one_line, safe_text
from desktop.library import open_document, walk
from desktop.reports import csv_text
from desktop.store.db import Store
from longdoc_net.resources import resources_dir

STYLES = ("brief", "detailed", "contract", "manual", "transcript")
DEFAULT_STYLE = "brief"
# Without word from the server (a router, another engine), this many requests at once.
UNKNOWN_CONCURRENCY = 4
MAX_CONCURRENCY = 8
REPORT_FORMATS = ("md", "json", "csv")
# How often a batch waiting for a document another batch is asking about looks again.
CLAIM_POLL_S = 0.2

Kind = Literal["summary", "review"]
ItemStatus = Literal["pending", "running", "done", "failed", "skipped", "cancelled"]


PROMPTS_DIR = resources_dir("prompts")


def load_style(style: str) -> str:
    """The summary prompt for a style name, or the text of a template file."""
    if style in STYLES:
        return (PROMPTS_DIR / f"summary-{style}.md").read_text(encoding="utf-8").strip()
    path = Path(style).expanduser()
    if not path.is_file():
        raise UsageError(
            f"--style {style}: not a style ({', '.join(STYLES)}) nor a template file; copy "
            f"one from {PROMPTS_DIR} and change it."
        )
    from desktop.documents.source import read_bounded_text

    try:
        text = read_bounded_text(path, "template").strip()
    except (OSError, ValueError) as exc:  # UnicodeDecodeError and "too large" included
        raise UsageError(f"{path}: cannot read the template ({one_line(str(exc))}).") from None
    if not text:
        raise UsageError(f"{path}: the template is empty.")
    return text


def load_questions(path: Path) -> list[str]:
    """One question per non-empty line (lines starting with # are comments)."""
    from desktop.documents.source import read_bounded_text

    try:
        lines = read_bounded_text(Path(path), "questions").splitlines()
    except (OSError, ValueError) as exc:  # UnicodeDecodeError and "too large" included
        raise UsageError(f"{path}: cannot read the questions ({one_line(str(exc))}).") from None
    questions = [ln.strip() for ln in lines if ln.strip() and not ln.lstrip().startswith("#")]
    if not questions:
        raise UsageError(f"{path}: no questions in the file (one per line).")
    return questions


def server_concurrency(info: dict[str, Any]) -> int | None:
    """How many requests the server runs at once, from SGLang's ``/server_info``."""
    value = info.get("max_running_requests")
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    states = info.get("internal_states")
    if isinstance(states, list):
        per_rank = [
            s.get("effective_max_running_requests_per_dp") for s in states if isinstance(s, dict)
        ]
        numbers = [v for v in per_rank if isinstance(v, int) and not isinstance(v, bool) and v > 0]
        if numbers:
            return sum(numbers)
    return None


def default_concurrency(info: dict[str, Any]) -> int:
    """The server's concurrency bounded to MAX_CONCURRENCY; UNKNOWN_CONCURRENCY if unknown."""
    known = server_concurrency(info)
    return UNKNOWN_CONCURRENCY if known is None else max(1, min(MAX_CONCURRENCY, known))


# --- the report ----------------------------------------------------------------------------


@dataclass
class Cell:
    """One answer of a batch: one question about one document."""

    question: str
    status: Literal["pending", "done", "failed"] = "pending"
    answer: str = ""
    from_cache: bool = False
    model: str = ""
    error: str = ""
    citations: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class BatchItem:
    """One file of the batch and what became of it."""

    path: str
    status: ItemStatus = "pending"
    title: str = ""
    sha256: str = ""
    pages: int = 0
    tokens: int = 0
    error: str = ""
    seconds: float = 0.0
    cells: list[Cell] = field(default_factory=list)

    @property
    def from_cache(self) -> bool:
        """Every answer came from an earlier run."""
        return bool(self.cells) and all(c.from_cache for c in self.cells)


def _pages(n: int) -> str:
    return f"{n} page" if n == 1 else f"{n} pages"


@dataclass
class BatchReport:
    """Every file of a run, in the order given."""

    kind: Kind
    questions: list[str]
    style: str = ""
    items: list[BatchItem] = field(default_factory=list)
    started_at: float = field(default_factory=time.time)
    finished_at: float | None = None

    def counts(self) -> dict[str, int]:
        """How many files ended in each status."""
        result: dict[str, int] = {}
        for item in self.items:
            result[item.status] = result.get(item.status, 0) + 1
        return result

    @property
    def failed(self) -> list[BatchItem]:
        """Documents that did not get all their answers."""
        return [i for i in self.items if i.status in ("failed", "cancelled")]

    def _heading(self) -> str:
        return "Summaries" if self.kind == "summary" else "Review"

    def to_markdown(self) -> str:
        """A section per document (title, pages, tokens, model, answers with citations)."""
        stamp = time.strftime("%Y-%m-%d %H:%M", time.localtime(self.started_at))
        counts = self.counts()
        done = counts.get("done", 0)
        lines = [f"# {self._heading()} ({stamp})", ""]
        if self.kind == "summary":
            lines += [f"Style: {one_line(self.style or 'custom')}", ""]
        else:
            lines += ["Questions:", ""]
            lines += [f"{n}. {one_line(q)}" for n, q in enumerate(self.questions, 1)]
            lines.append("")
        summary = [f"{done} answered"]
        summary += [f"{counts[s]} {s}" for s in ("failed", "skipped", "cancelled") if counts.get(s)]
        lines += [", ".join(summary) + ".", ""]
        for item in self.items:
            if item.status != "done":
                continue
            model = next((c.model for c in item.cells if c.model), "")
            lines += [
                f"## {one_line(item.title or Path(item.path).name)}",
                "",
                f"{_code(item.path)}: {_pages(item.pages)}, {item.tokens:,} tokens"
                + (f", model {one_line(model)}" if model else "")
                + (", answered in an earlier run" if item.from_cache else ""),
                "",
            ]
            for cell in item.cells:
                if self.kind == "review":
                    lines += [f"### {one_line(cell.question)}", ""]
                lines += [cell.answer.strip(), ""]
                flagged = [c for c in cell.citations if c.get("status") in _FLAGGED]
                if flagged:
                    lines += [f"> Check: {_describe(c)}" for c in flagged]
                    lines.append("")
        for status, title in (
            ("failed", "Failed"),
            ("cancelled", "Cancelled"),
            ("skipped", "Skipped"),
        ):
            group = [i for i in self.items if i.status == status]
            if group:
                lines += [f"## {title}", ""]
                lines += [f"- {_code(i.path)}: {one_line(i.error)}" for i in group]
                lines.append("")
        # Answers keep their Markdown; a control character in them is shown, not obeyed.
        return safe_text("\n".join(lines))

    def to_json(self) -> str:
        """The whole report as one JSON object."""
        data = {
            "kind": self.kind,
            "style": self.style,
            "questions": self.questions,
            "started_at": self.started_at,
            "finished_at": self.finished_at,
            "counts": self.counts(),
            "items": [asdict(i) | {"from_cache": i.from_cache} for i in self.items],
        }
        return json.dumps(data, ensure_ascii=False, indent=2) + "\n"

    def to_csv(self) -> str:
        """The review grid: a row per document, a column per question."""
        rows: list[list[object]] = [["path", "title", "status", "pages", "tokens", *self.questions]]
        for item in self.items:
            cells = {c.question: c for c in item.cells}
            row: list[object] = [item.path, item.title, item.status, item.pages, item.tokens]
            for question in self.questions:
                cell = cells.get(question)
                if cell is None or cell.status != "done":
                    row.append(item.error if cell is None else cell.error or item.error)
                    continue
                text = cell.answer.strip()
                if cell.citations:
                    text += "\n\nCitations: " + "; ".join(_describe(c) for c in cell.citations)
                row.append(text)
            rows.append(row)
        return csv_text(rows)

    def render(self, fmt: str) -> str:
        """The report in ``md``, ``json`` or ``csv``."""
        if fmt == "json":
            return self.to_json()
        if fmt == "csv":
            return self.to_csv()
        return self.to_markdown()


_FLAGGED = ("other_page", "not_found")


def _code(text: str) -> str:
    """``text`` as one line of inline code, fenced by more backticks than it holds."""
    text = one_line(text)
    run = 1
    while "`" * run in text:
        run += 1
    fence = "`" * run
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _describe(citation: dict[str, Any]) -> str:
    label = str(citation.get("label", "?"))
    # Page labels read "p. 12"; transcript times and Word anchors stand alone.
    where = label if label.startswith("§") or ":" in label else f"p. {label}"
    quote = citation.get("quote")
    status = str(citation.get("status", "")).replace("_", " ")
    return f'{where} "{quote}" ({status})' if quote else f"{where} ({status})"


def report_format(out: Path | None, fmt: str | None) -> str:
    """``--format`` wins over the ``--out`` suffix (case-insensitive); Markdown otherwise."""
    if fmt:
        fmt = fmt.lower()
        if fmt not in REPORT_FORMATS:
            raise UsageError(f"--format {fmt}: use one of {', '.join(REPORT_FORMATS)}.")
        return fmt
    if out is not None:
        suffix = out.suffix.lower().lstrip(".")
        if suffix in ("md", "markdown", "txt"):
            return "md"
        if suffix in REPORT_FORMATS:
            return suffix
        raise UsageError(f"{out}: the report must end in .md, .json or .csv (or give --format).")
    return "md"


# --- running ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class BatchEvent:
    """Progress of a run: one file started, finished, failed or skipped; or the run ended."""

    event: Literal["started", "done", "failed", "skipped", "cancelled", "finished"]
    path: str = ""
    item: BatchItem | None = None
    counts: dict[str, int] | None = None

    def to_json(self) -> dict[str, Any]:
        """One line of ``--json`` output."""
        data: dict[str, Any] = {"event": self.event}
        if self.path:
            data["path"] = self.path
        item = self.item
        if item is not None and self.event == "done":
            data |= {
                "title": item.title,
                "pages": item.pages,
                "tokens": item.tokens,
                "seconds": round(item.seconds, 3),
                "from_cache": item.from_cache,
            }
        elif item is not None and self.event in ("failed", "skipped", "cancelled"):
            data["error"] = item.error
        if self.counts is not None:
            data["counts"] = self.counts
        return data


Listener = Callable[[BatchEvent], None]


@dataclass
class Job:
    """What to ask of every document."""

    kind: Kind
    questions: list[str]
    style: str = ""
    thinking: bool = False
    force: bool = False


def collect(paths: Sequence[Path]) -> list[Path]:
    """Files as given, and every file inside folders (``library.walk``: recursive, sorted,
    hidden ones left out). Files that are not documents stay in the list: the run reports
    them as skipped.
    """
    return walk(paths)


def _not_a_document(path: Path) -> str | None:
    """Why ``path`` is not a document to ask about, or None."""
    if not path.exists():
        return "no such file"
    if not path.is_file():
        return "not a regular file"
    if path.suffix.lower() not in SUPPORTED_SUFFIXES:
        kinds = ", ".join(sorted(SUPPORTED_SUFFIXES))
        return f"not a document Longdoc reads ({kinds})"
    return None


class Batch:
    """One run: files, a job, a store and an answerer; ``run()`` blocks until it ends."""

    def __init__(
        self,
        paths: Sequence[Path],
        store: Store,
        answerer: Answerer,
        job: Job,
        *,
        concurrency: int,
        listener: Listener | None = None,
        cancel: threading.Event | None = None,
    ) -> None:
        self.store = store
        self.answerer = answerer
        self.job = job
        self.concurrency = max(1, concurrency)
        self.cancel = cancel or threading.Event()
        self._listener = listener
        self._lock = threading.Lock()
        self.report = BatchReport(job.kind, list(job.questions), job.style)
        self.report.items = [BatchItem(str(p)) for p in paths]
        self._paths = [Path(p) for p in paths]

    def _emit(self, event: BatchEvent) -> None:
        if self._listener is not None:
            with self._lock:
                self._listener(event)

    def run(self) -> BatchReport:
        """Ask every document; a failure stays with its document and nothing else stops."""
        # Nothing could start without a server, or without knowing its context length (the
        # same for every document): raise (the usual exit codes), ask nothing.
        self.answerer.limits()
        todo: list[tuple[Path, BatchItem]] = []
        for path, item in zip(self._paths, self.report.items, strict=True):
            reason = _not_a_document(path)
            if reason is not None:
                item.status, item.error = "skipped", reason
                self._emit(BatchEvent("skipped", item.path, item))
            else:
                todo.append((path, item))
        pool = ThreadPoolExecutor(self.concurrency, thread_name_prefix="longdoc-batch")
        futures = [pool.submit(self._one, path, item) for path, item in todo]
        try:
            for future in futures:
                future.result()
        except BaseException:
            # Ctrl-C or a bug: stop asking; answers in flight end as incomplete (kept,
            # never served from the cache) and files not started are reported as such.
            self.cancel.set()
            for future in futures:
                future.cancel()
            raise
        finally:
            pool.shutdown(wait=True)
            self.finish()
        return self.report

    def finish(self) -> None:
        """Mark files never started as cancelled and announce the end (once)."""
        if self.report.finished_at is not None:
            return
        for item in self.report.items:
            if item.status == "pending":
                item.status, item.error = "cancelled", "not started: the run was stopped"
        self.report.finished_at = time.time()
        self._emit(BatchEvent("finished", counts=self.report.counts()))

    def _ask_all(self, doc: Document, item: BatchItem) -> None:
        """Each question of the job about ``doc``, in order (the prefix stays warm)."""
        for text in self.job.questions:
            cell = Cell(text)
            item.cells.append(cell)
            question = Question(doc, text, thinking=self.job.thinking, use_cache=not self.job.force)
            for event in self.answerer.ask(question, self.cancel):
                if isinstance(event, Stored):
                    stored = event.answer
                    cell.answer = stored.answer
                    cell.model = stored.model
                    cell.from_cache = event.from_cache
                    # Checked and stored by the core, as ``ask --json`` lists them.
                    checks = stored.citations.items if stored.citations else ()
                    cell.citations = citations_json(checks)
            cell.status = "done"

    @contextlib.contextmanager
    def _claim(self, sha256: str) -> Iterator[None]:
        """This process alone asks about the document while inside: two batches over one
        folder take turns (the second then finds the answers in the cache).

        An advisory lock on ``<data_dir>/claims/<sha256>``: the kernel releases it when the
        holder exits, however it dies (kill -9 included), so no claim is ever stale and no
        process identity needs checking.
        """
        folder = self.store.path.parent / "claims"
        try:
            folder.mkdir(mode=0o700, exist_ok=True)
            fd = os.open(folder / sha256, os.O_RDWR | os.O_CREAT, 0o600)
        except OSError:
            yield  # no claims possible (read-only?): the store reports the real problem
            return
        try:
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if self.cancel.wait(CLAIM_POLL_S):
                        raise Cancelled() from None
            yield
        finally:
            os.close(fd)  # releases the lock

    def _one(self, path: Path, item: BatchItem) -> None:
        """Open one document and ask each question in order (the prefix stays warm)."""
        if self.cancel.is_set():
            item.status, item.error = "cancelled", "cancelled before it started"
            self._emit(BatchEvent("cancelled", item.path, item))
            return
        started = time.monotonic()
        item.status = "running"
        self._emit(BatchEvent("started", item.path, item))
        try:
            doc, _ = open_document(path, self.store)
            item.title, item.sha256 = doc.title, doc.sha256
            item.pages, item.tokens = len(doc.pages), doc.tokens
            with self._claim(doc.sha256):
                self._ask_all(doc, item)
        except Cancelled:
            item.status, item.error = "cancelled", "cancelled while answering"
        except DocumentError as exc:
            item.status, item.error = "failed", exc.reason
        except LongdocError as exc:
            item.status, item.error = "failed", str(exc)
        else:
            item.status = "done"
        finally:
            item.seconds = time.monotonic() - started
            for cell in item.cells:
                if cell.status == "pending":
                    cell.status, cell.error = "failed", item.error
        self._emit(BatchEvent(item.status, item.path, item))

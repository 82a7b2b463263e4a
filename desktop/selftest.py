"""``longdoc server selftest``: does the server really read a whole long document?

A wrong ``--context-length``, a bad YaRN setting, a quantized checkpoint or a broken
attention backend all fail quietly: answers still come, they just miss what sits deep in
the document. This builds haystack documents of given lengths from generated, never
repeated sentences, plants facts ("needles") at several depths, asks for them through the
normal whole-document path, and reports recall per length and depth, prefill and decode
speed, and whether the server's prefix cache served a repeated prompt.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import re
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from desktop.answering.events import Finished, Stored, Usage
from desktop.documents.model import Document, Page

DEFAULT_LENGTHS = (8_000, 64_000, 128_000, 200_000, 250_000)
DEPTHS = (0.0, 0.25, 0.5, 0.75, 1.0)
VAULTS = ("amber", "cobalt", "crimson", "jade", "violet")
# The needle sentence; the test server's needle mode reads the same wording.
NEEDLE = "The access code for the {vault} vault is {code}."
NEEDLE_RE = re.compile(r"access code for the (\w+) vault is (\d{6})")
QUESTION = (
    "The document mentions access codes for these vaults: {vaults}. List the access code of "
    "each, one line per vault, as `vault: code`. Write `not found` for a vault whose code the "
    "document does not give."
)
ANSWER_TOKENS = 400
PAGE_CHARS = 2_600
RESULTS_KEPT = 20

LengthStatus = Literal["ok", "skipped", "failed"]


@dataclass
class LengthResult:
    """What one haystack length showed."""

    length: int
    status: LengthStatus
    prompt_tokens: int = 0
    recall: dict[str, bool] = field(default_factory=dict)  # depth ("0%".."100%") -> found
    recall_fraction: float | None = None
    ttft_s: float | None = None
    prefill_tokens_per_s: float | None = None
    decode_tokens_per_s: float | None = None
    detail: str = ""


@dataclass
class SelftestReport:
    """A whole run: one result per length, the cache check, and where it ran."""

    started_at: float
    endpoint: str
    model: str
    context_length: int | None
    lengths: list[LengthResult] = field(default_factory=list)
    cache_hit_fraction: float | None = None
    cache_detail: str = ""

    @property
    def full_recall(self) -> bool:
        """Every tested length found every needle (skipped lengths do not count)."""
        tested = [r for r in self.lengths if r.status != "skipped"]
        return bool(tested) and all(r.recall_fraction == 1.0 for r in tested)

    def to_json(self) -> dict[str, Any]:
        """The documented JSON shape (see README, `server selftest --json`)."""
        data = asdict(self)
        data["full_recall"] = self.full_recall
        return data


def parse_lengths(text: str) -> list[int]:
    """``8k,64k,250000`` -> token counts; raises ValueError naming the bad item."""
    result = []
    for item in text.split(","):
        item = item.strip().lower()
        if not item:
            continue
        scale = 1
        if item.endswith("k"):
            scale, item = 1_000, item[:-1]
        try:
            value = int(float(item) * scale)
        except ValueError:
            raise ValueError(f"not a length: {item!r} (use e.g. 8k,64k,128k)") from None
        if value < 1_000:
            raise ValueError(f"a length must be at least 1k tokens, not {value}")
        result.append(value)
    if not result:
        raise ValueError("no lengths given (use e.g. 8k,64k,128k)")
    return sorted(set(result))


# --- haystack ----------------------------------------------------------------------------

_PLACES = (
    "Alderbrook",
    "Marlow Fen",
    "Kestrel Bay",
    "Ostrava Ridge",
    "Tamsin Cove",
    "Brightwater",
    "Corvallis Gap",
    "Dunmore",
    "Eskerfield",
    "Fallowmere",
    "Gorse Hill",
    "Harrowgate",
    "Islay Point",
    "Juniper Flats",
    "Kilnsey",
    "Larkspur",
    "Millbeck",
    "Northope",
)
_BODIES = (
    "harbour commission",
    "water board",
    "guild of surveyors",
    "county archive",
    "railway company",
    "grain cooperative",
    "school council",
    "lighthouse trust",
    "textile mill",
    "observatory",
    "ferry service",
    "road authority",
    "choir society",
)
_VERBS = (
    "approved",
    "postponed",
    "rejected",
    "funded",
    "audited",
    "redesigned",
    "catalogued",
    "extended",
    "inspected",
    "relocated",
    "repaired",
    "surveyed",
    "renamed",
)
_THINGS = (
    "the northern quay",
    "a stone bridge",
    "the tide gauge",
    "twelve new moorings",
    "the reading room",
    "a drainage channel",
    "the signal box",
    "the old granary",
    "a weather station",
    "the east wing",
    "the ledger of tolls",
    "a footpath network",
)
_REASONS = (
    "after a dispute over tariffs",
    "following a winter of storms",
    "despite objections",
    "to settle a boundary claim",
    "once the accounts were cleared",
    "at the request of traders",
    "because the foundations had shifted",
    "ahead of the spring fair",
    "after a long survey",
)
_DETAILS = (
    "The minutes record {n} votes in favour.",
    "The cost was put at {n} crowns.",
    "Work took {n} weeks longer than planned.",
    "{n} residents signed the petition.",
    "The clerk filed report number {n}.",
    "A later audit counted {n} errors in the plans.",
)


def _sentence(rng: random.Random, serial: int) -> str:
    """One plausible, never repeated sentence (the serial year and numbers keep it unique)."""
    year = 1700 + serial % 300
    main = (
        f"In {year} the {rng.choice(_BODIES)} of {rng.choice(_PLACES)} "
        f"{rng.choice(_VERBS)} {rng.choice(_THINGS)} {rng.choice(_REASONS)}."
    )
    detail = rng.choice(_DETAILS).format(n=serial * 7 + rng.randrange(1, 7))
    return f"{main} {detail}"


@dataclass(frozen=True)
class Haystack:
    """A generated document and the needles planted in it."""

    document: Document
    needles: dict[str, str]  # vault -> code
    depth_of: dict[str, str]  # vault -> "25%"


def build_haystack(length: int, seed: int, count: Callable[[str], int] | None = None) -> Haystack:
    """A document of about ``length`` tokens with one needle at each of DEPTHS."""
    from desktop.documents import tokens
    from desktop.documents.layout import document_block

    counter = count or tokens.count
    rng = random.Random(f"{seed}:{length}")
    pages_text: list[str] = []
    total = 0
    serial = 0
    while total < length:
        sentences = []
        size = 0
        while size < PAGE_CHARS:
            serial += 1
            sentence = _sentence(rng, serial)
            sentences.append(sentence)
            size += len(sentence) + 1
        text = " ".join(sentences)
        page_tokens = counter(text)
        if pages_text and total + page_tokens > length:
            # Trim the last page to land close to the target instead of overshooting it.
            keep = max(1, int(len(sentences) * (length - total) / page_tokens))
            text = " ".join(sentences[:keep])
            page_tokens = counter(text)
        pages_text.append(text)
        total += page_tokens
    needles: dict[str, str] = {}
    depth_of: dict[str, str] = {}
    for vault, depth in zip(VAULTS, DEPTHS, strict=True):
        code = f"{rng.randrange(100_000, 1_000_000)}"
        needles[vault] = code
        depth_of[vault] = f"{round(depth * 100)}%"
        index = round(depth * (len(pages_text) - 1))
        sentence = NEEDLE.format(vault=vault, code=code)
        parts = pages_text[index].split(". ")
        at = 0 if depth == 0.0 else len(parts) if depth == 1.0 else len(parts) // 2
        parts.insert(at, sentence.rstrip("."))
        pages_text[index] = ". ".join(parts)
    pages = [Page(i + 1, str(i + 1), text) for i, text in enumerate(pages_text)]
    title = f"Longdoc selftest haystack, {length:,} tokens"
    digest = hashlib.sha256(f"selftest:{seed}:{length}".encode()).hexdigest()
    doc = Document(
        sha256=digest,
        path=f"selftest-{length}.txt",
        kind="text",
        title=title,
        pages=pages,
        extractor="selftest/1",
    )
    doc.tokens = counter(document_block(title, pages))
    return Haystack(doc, needles, depth_of)


def score(answer: str, haystack: Haystack) -> dict[str, bool]:
    """Depth -> whether the answer gives that needle's code."""
    return {haystack.depth_of[vault]: code in answer for vault, code in haystack.needles.items()}


# --- running -----------------------------------------------------------------------------

Progress = Callable[[str], None]


def run_selftest(
    answerer: Any,
    lengths: Sequence[int],
    *,
    endpoint: str,
    progress: Progress | None = None,
    cancel: threading.Event | None = None,
    seed: int | None = None,
) -> SelftestReport:
    """Ask for the needles at every length through ``answerer`` (an ``Answerer``)."""
    from desktop.answering.service import Question
    from desktop.errors import DocumentTooLarge

    say = progress or (lambda _line: None)
    seed = seed if seed is not None else int.from_bytes(os.urandom(4), "big")
    info = answerer.model()
    # The context the budget uses: the server's, or a stated one (smaller wins).
    context = answerer.limits().context_length
    report = SelftestReport(
        started_at=time.time(),
        endpoint=endpoint,
        model=info.id,
        context_length=context,
    )
    cache_checked = False
    for length in lengths:
        if cancel is not None and cancel.is_set():
            break
        if length + ANSWER_TOKENS >= context:
            report.lengths.append(
                LengthResult(
                    length,
                    "skipped",
                    detail=f"longer than the server's context of {context:,} tokens",
                )
            )
            say(f"{length:,} tokens: skipped, the server's context is {context:,}.")
            continue
        say(f"{length:,} tokens: building the document…")
        haystack = build_haystack(length, seed)
        question = Question(
            haystack.document,
            QUESTION.format(vaults=", ".join(VAULTS)),
            thinking=False,
            use_cache=False,
            max_tokens=ANSWER_TOKENS,
        )
        say(f"{length:,} tokens: asking ({haystack.document.tokens:,} document tokens)…")
        try:
            answer, usage, finished = _ask(answerer, question, cancel)
        except DocumentTooLarge as exc:
            report.lengths.append(LengthResult(length, "skipped", detail=str(exc)))
            say(f"{length:,} tokens: skipped, {exc}")
            continue
        result = LengthResult(length, "ok")
        result.recall = score(answer, haystack)
        result.recall_fraction = sum(result.recall.values()) / len(result.recall)
        _speeds(result, usage, finished)
        report.lengths.append(result)
        found = sum(result.recall.values())
        say(f"{length:,} tokens: found {found} of {len(result.recall)} needles.")
        if not cache_checked:
            cache_checked = True
            _, again, _ = _ask(answerer, question, cancel)
            if again is None or again.cached_tokens is None:
                report.cache_detail = (
                    "the server does not report cached tokens (SGLang: --enable-cache-report)"
                )
            elif again.prompt_tokens:
                report.cache_hit_fraction = again.cached_tokens / again.prompt_tokens
                report.cache_detail = (
                    f"{again.cached_tokens:,} of {again.prompt_tokens:,} prompt tokens of a "
                    "repeated question came from the server's cache"
                )
            say(f"Prefix cache: {report.cache_detail}.")
    return report


def _ask(
    answerer: Any, question: Any, cancel: threading.Event | None
) -> tuple[str, Usage | None, Finished | None]:
    """One question through the normal path: the answer text, usage and timings."""
    usage: Usage | None = None
    finished: Finished | None = None
    answer = ""
    for event in answerer.ask(question, cancel):
        if isinstance(event, Usage):
            usage = event
        elif isinstance(event, Finished):
            finished = event
        elif isinstance(event, Stored):
            answer = event.answer.answer
    return answer, usage, finished


def _speeds(result: LengthResult, usage: Usage | None, finished: Finished | None) -> None:
    """Prefill speed over uncached tokens until the first token; decode speed after it."""
    if usage is not None:
        result.prompt_tokens = usage.prompt_tokens
    if finished is None or finished.ttft_s is None:
        return
    result.ttft_s = finished.ttft_s
    if usage is not None and finished.ttft_s > 0:
        uncached = usage.prompt_tokens - (usage.cached_tokens or 0)
        result.prefill_tokens_per_s = uncached / finished.ttft_s
        decode_s = finished.total_s - finished.ttft_s
        if decode_s > 0 and usage.completion_tokens > 1:
            result.decode_tokens_per_s = (usage.completion_tokens - 1) / decode_s


def run_for_settings(
    settings: Any,
    endpoint: Any,
    data_dir: Path,
    lengths: Sequence[int],
    *,
    progress: Progress | None = None,
    cancel: threading.Event | None = None,
) -> SelftestReport:
    """The selftest against ``endpoint`` (an ``Endpoint``), as the CLI and the app run it.

    Haystack answers go to a scratch store, never into the user's library or answer cache;
    the report is saved with the earlier runs.
    """
    import tempfile

    from desktop.answering.service import Answerer
    from desktop.store.db import Store

    with tempfile.TemporaryDirectory(prefix="longdoc-selftest-") as scratch:
        store = Store(Path(scratch) / "selftest.db")
        answerer = Answerer(store, endpoint, settings)
        try:
            report = run_selftest(
                answerer, lengths, endpoint=endpoint.url, progress=progress, cancel=cancel
            )
        finally:
            answerer.close()
            store.close()
    save_report(data_dir, report)
    return report


# --- results on disk ---------------------------------------------------------------------


def results_path(data_dir: Path) -> Path:
    """Where past runs are kept (shown in the server panel)."""
    return data_dir / "server" / "selftest.json"


def save_report(data_dir: Path, report: SelftestReport) -> Path:
    """Append the run to the results file (owner-only, atomic), keeping the last few."""
    path = results_path(data_dir)
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    runs = load_reports(data_dir)
    runs.append(report.to_json())
    tmp = path.with_name(f".selftest.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump(runs[-RESULTS_KEPT:], fh, indent=1)
    os.replace(tmp, path)
    return path


def load_reports(data_dir: Path) -> list[dict[str, Any]]:
    """Past runs, oldest first; empty when none or unreadable."""
    try:
        data = json.loads(results_path(data_dir).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    return [run for run in data if isinstance(run, dict)] if isinstance(data, list) else []


def summary(run: dict[str, Any]) -> str:
    """One line for a stored run, e.g. for the server panel."""
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(float(run.get("started_at", 0))))
    parts = []
    for item in run.get("lengths", []):
        length = int(item.get("length", 0))
        if item.get("status") == "ok" and item.get("recall_fraction") is not None:
            parts.append(f"{length // 1000}k {round(100 * float(item['recall_fraction']))}%")
        else:
            parts.append(f"{length // 1000}k {item.get('status', '?')}")
    verdict = "full recall" if run.get("full_recall") else "recall lost"
    return f"Selftest {when}: {verdict} ({', '.join(parts)})"

"""Meeting transcripts (WebVTT and SRT): speakers and timestamps kept, pages of five minutes.

Every line the model sees starts with the moment it was said and who said it,
``[00:41:12] Alice: ...``; that timestamp is the anchor it cites. Consecutive cues of one
speaker are joined into one line of up to ~30 seconds: captions come in 2-4 second cues,
and a timestamp per cue would cost ~9 tokens each (two thirds of a meeting's text).

Pages cover fixed five-minute windows (00:00-04:59, 05:00-09:59, ...) so the budget and
the viewer have page-sized parts; a page's label is the timestamp of its first line
(``00:05:02``), written exactly as that line's anchor. ``page_for_time`` finds the page a
timestamp falls in, for citations of a moment inside a page.
"""

from __future__ import annotations

import html
import itertools
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from desktop.documents.layout import defuse
from desktop.documents.model import Document, OutlineEntry, Page
from desktop.documents.text import decode_bytes
from desktop.documents.titles import TITLE_MAX, choose_title
from desktop.errors import DocumentEmpty

TRANSCRIPT_SUFFIXES = frozenset({".vtt", ".srt"})

PAGE_SECONDS = 300
LINE_SECONDS = 30
LINE_CHARS = 600
_WARN_LIST_MAX = 10

# 00:41:12.345, 41:12.345, 0:41:12,345, 00:41:12 (hours optional; SRT's comma accepted in
# VTT and the dot in SRT, since both appear in the wild).
_TIME = r"(?:(\d+):)?(\d{1,2}):(\d{1,2})(?:[.,](\d{1,3}))?"
_TIMING = re.compile(rf"^\s*{_TIME}\s*-->\s*{_TIME}(?:\s.*)?$")
# A WebVTT file's timing line as its parsing rules read it (what browsers show): hours
# or none, two-digit minutes and seconds, three-digit milliseconds,
# spaces, tabs or form feeds around the arrow, and anything after the end time (settings).
_VTT_WS = "[ \t\f]"
_VTT_TIME = r"(?:(\d+):)?(\d{2}):(\d{2})\.(\d{3})"
_VTT_TIMING = re.compile(rf"^{_VTT_WS}*{_VTT_TIME}{_VTT_WS}*-->{_VTT_WS}*{_VTT_TIME}(?!\d)")
_STAMP = re.compile(rf"^\s*\[?{_TIME}\]?\s*$")
_VOICE = re.compile(r"<v(?:\.[^\s>]*)?(?:\s+([^>]*))?>", re.IGNORECASE)
# Markup: VTT/HTML-like tags, VTT inline timestamps, and the ASS override blocks many SRT
# files carry ({\an8}, {\i1}).
_TAG = re.compile(r"</?[a-zA-Z][^>]*>|<\d[\d:.]*>|\{\\[^}]*\}")
# "Alice Smith: hello" or "DR. JONES: hello" at the start of a cue: a speaker without a voice
# tag (Zoom's VTT and most SRT transcripts write speakers this way).
_NAMED = re.compile(r"^([^\W\d_][\w.'’\-]*(?:\s+\w[\w.'’\-]*){0,3})\s*:\s+(?=\S)")
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f]")
_NON_CUE_BLOCKS = ("NOTE", "STYLE", "REGION")
# One line of page text: "[00:41:12] Alice: text" or "[00:41:12] text".
LINE = re.compile(r"^\[(?P<time>\d+:\d\d:\d\d)\] (?:(?P<speaker>[^:\n]{1,80}): )?(?P<text>.*)$")


@dataclass(frozen=True)
class Utterance:
    """What one speaker (or nobody named) says from ``start`` seconds on."""

    start: float
    speaker: str | None
    text: str


@dataclass(frozen=True)
class TranscriptLine:
    """A line of a transcript page as the viewer shows it."""

    seconds: int
    stamp: str
    speaker: str | None
    text: str


def format_time(seconds: float) -> str:
    """``HH:MM:SS`` (whole seconds, hours always shown): the anchor form."""
    s = int(seconds)
    return f"{s // 3600:02d}:{s % 3600 // 60:02d}:{s % 60:02d}"


def parse_time(text: str) -> float | None:
    """Seconds of ``01:02:03``, ``2:03``, ``00:02:03.5`` or ``[00:02:03]``; None otherwise."""
    match = _STAMP.match(text)
    if not match:
        return None
    return _seconds(match.groups())


def _seconds(groups: Sequence[str | None]) -> float | None:
    """Seconds from (hours, minutes, seconds, fraction) regex groups; None if out of range."""
    hours, minutes, seconds, fraction = groups
    # A 400-digit hour is no moment of a meeting (and overflows a float): skip the cue.
    if any(g is not None and len(g) > 6 for g in (hours, minutes, seconds)):
        return None
    # Minutes past 59 only make sense when there is no hour field (some SRT writers).
    if int(seconds or 0) > 59 or (hours is not None and int(minutes or 0) > 59):
        return None
    value = float(int(hours or 0) * 3600 + int(minutes or 0) * 60 + int(seconds or 0))
    if fraction:
        value += int(fraction.ljust(3, "0")) / 1000
    return value


def page_for_time(pages: Sequence[Page], stamp: str) -> int | None:
    """The number of the transcript page a timestamp falls in (``00:41:30`` -> page 9).

    A page holds the moments from its label up to the next page's label; a moment before
    the first page belongs to it. None when ``stamp`` is not a timestamp or no page has one.
    """
    seconds = parse_time(stamp)
    if seconds is None:
        return None
    found: int | None = None
    for page in pages:
        start = parse_time(page.label)
        if start is None:
            continue
        if found is None or start <= seconds:
            found = page.number
        if start > seconds:
            break
    return found


def is_name(words: str) -> bool:
    """Whether text before a colon names a speaker ("Dr. Jones", "Speaker 2"; not "the ratio")."""
    parts = words.split()
    return (
        bool(parts)
        and parts[0][0].isupper()
        and all(p[0].isupper() or p[0].isdigit() for p in parts)
    )


def parse_line(raw: str) -> TranscriptLine | None:
    """One line of a transcript page split into time, speaker and text (None if not one)."""
    match = LINE.match(raw)
    if not match:
        return None
    speaker, text = match["speaker"], match["text"]
    if speaker is not None and not is_name(speaker):
        speaker, text = None, f"{speaker}: {text}"
    return TranscriptLine(int(parse_time(match["time"]) or 0), match["time"], speaker, text)


def parse_lines(text: str) -> list[TranscriptLine]:
    """The timestamped lines of a transcript page (what the viewer lists)."""
    return [line for raw in text.split("\n") if (line := parse_line(raw)) is not None]


def extract_transcript(path: Path, data: bytes) -> Document:
    """A WebVTT or SRT file's bytes as a Document (``sha256`` and ``tokens`` left unset)."""
    decoded = decode_bytes(path, data, nul_is_text=True)
    text = decoded.text.lstrip("\ufeff").replace("\r\n", "\n").replace("\r", "\n")
    warnings = [decoded.warning] if decoded.warning else []
    vtt = text.lstrip().startswith("WEBVTT")
    fmt = "WebVTT" if vtt or path.suffix.lower() == ".vtt" else "SRT"
    if path.suffix.lower() == ".vtt" and not vtt and text.strip():
        warnings.append('the file does not start with "WEBVTT"; read as captions anyway')

    utterances, cues, skipped, title = _parse(text, webvtt=fmt == "WebVTT")
    if skipped:
        numbers = ", ".join(str(n) for n in skipped[:_WARN_LIST_MAX])
        more = ", ..." if len(skipped) > _WARN_LIST_MAX else ""
        plural = "s" if len(skipped) != 1 else ""
        warnings.append(
            f"skipped {len(skipped)} unreadable cue{plural} "
            f"(no valid timing line; line{plural} {numbers}{more})"
        )
    if not utterances:
        what = "no readable cues" if skipped else "no cues"
        raise DocumentEmpty(path, f"no text could be extracted: the {fmt} file has {what}")
    if any(b.start < a.start for a, b in itertools.pairwise(utterances)):
        warnings.append("cues were out of order; they are sorted by start time")
        utterances.sort(key=lambda u: u.start)

    pages = _pages(_join(utterances))
    speakers = list(dict.fromkeys(u.speaker for u in utterances if u.speaker))
    metadata = {
        "Format": fmt,
        "Encoding": decoded.encoding,
        "Cues": str(cues),
        "Start": format_time(utterances[0].start),
        "Last cue": format_time(utterances[-1].start),
    }
    if speakers:
        metadata["Speakers"] = ", ".join(speakers)
    return Document(
        sha256="",
        path=str(path),
        kind="transcript",
        title=choose_title([title], path.stem),
        pages=pages,
        outline=_outline(pages),
        metadata=metadata,
        warnings=warnings,
    )


def _blocks(text: str) -> list[tuple[int, list[str]]]:
    """Blank-line separated blocks of non-empty lines, each with its first line's number."""
    blocks: list[tuple[int, list[str]]] = []
    current: list[str] = []
    first = 0
    for number, line in enumerate(text.split("\n"), start=1):
        if line.strip():
            if not current:
                first = number
            current.append(line)
        elif current:
            blocks.append((first, current))
            current = []
    if current:
        blocks.append((first, current))
    return blocks


def _cues(lines: list[str]) -> list[tuple[int, list[str]]]:
    """A block's lines cut into cues: a line containing ``-->`` starts a new cue.

    As in the WebVTT parsing rules, a timing line ends the cue before it even without a
    blank line (auto-generated captions often leave it out); a number right before it is
    the new cue's SRT counter or identifier, not the old cue's text. Returns each cue's
    offset in ``lines`` and its lines, starting with its timing line.
    """
    cues: list[tuple[int, list[str]]] = []
    for i, line in enumerate(lines):
        if "-->" in line:
            if cues and cues[-1][1][-1].strip().isdigit():
                cues[-1][1].pop()
            cues.append((i, [line]))
        elif cues:
            cues[-1][1].append(line)
    return cues


def _parse(text: str, *, webvtt: bool) -> tuple[list[Utterance], int, list[int], str]:
    """Utterances in file order, cues read, first lines of skipped cues, the VTT title.

    A WebVTT file's timings follow its rules strictly (a cue a browser drops is skipped);
    SRT files, which have no such rules, are read leniently (a dot or a comma, short
    fields, minutes past 59 without hours).
    """
    cues = 0
    utterances: list[Utterance] = []
    skipped: list[int] = []
    title = ""
    for index, (line_no, lines) in enumerate(_blocks(text)):
        head = lines[0].strip()
        if index == 0 and head.startswith("WEBVTT"):
            title = head[len("WEBVTT") :].strip(" \t-–—:")
            # The header ends at the blank line, or at a timing line right below it.
            timing = next((i for i, line in enumerate(lines) if "-->" in line), None)
            if timing is None:
                continue
            line_no, lines = line_no + timing, lines[timing:]
            head = lines[0].strip()
        if head.split(" ", 1)[0] in _NON_CUE_BLOCKS and "-->" not in head:
            continue
        timing_at = next((i for i, line in enumerate(lines[:3]) if "-->" in line), None)
        if timing_at is None:
            if len(lines) == 1 and head.isdigit():
                continue  # an SRT counter whose cue text is missing
            skipped.append(line_no)
            continue
        for offset, cue in _cues(lines[timing_at:]):
            start = _vtt_start(cue[0]) if webvtt else _srt_start(cue[0])
            if start is None:
                skipped.append(line_no + timing_at + offset)
                continue
            cues += 1
            utterances.extend(_utterances(start, cue[1:]))
    return utterances, cues, skipped, title


def _srt_start(line: str) -> float | None:
    """The start of a cue from an SRT timing line (lenient), None if it is unreadable."""
    match = _TIMING.match(line)
    if not match or _seconds(match.groups()[4:]) is None:
        return None
    return _seconds(match.groups()[:4])


def _vtt_start(line: str) -> float | None:
    """The start of a cue from a WebVTT timing line (its rules), None if invalid."""
    match = _VTT_TIMING.match(line)
    if not match:
        return None
    groups = match.groups()
    if any(int(groups[k]) > 59 for k in (1, 2, 5, 6)):  # minutes and seconds
        return None
    return _seconds(groups[:4])


def _utterances(start: float, payload: list[str]) -> list[Utterance]:
    """A cue's text split at voice tags into (speaker, text) parts."""
    raw = " ".join(line.strip() for line in payload)
    parts: list[tuple[str | None, str]] = []
    position, speaker = 0, None
    for match in _VOICE.finditer(raw):
        parts.append((speaker, raw[position : match.start()]))
        speaker = _clean_speaker(match.group(1) or "")
        position = match.end()
    parts.append((speaker, raw[position:]))
    result = []
    for who, chunk in parts:
        cleaned = _clean_text(chunk)
        if not cleaned.strip("-–— "):
            continue  # nothing said (a dialogue dash before a voice tag)
        if who is None:
            named = _NAMED.match(cleaned)
            if named and is_name(named.group(1)):
                who = _clean_speaker(named.group(1))
                cleaned = cleaned[named.end() :]
        result.append(Utterance(start, who or None, cleaned))
    return result


def _clean_text(text: str) -> str:
    """Cue text without markup, entities decoded, control codes dropped, spaces collapsed."""
    text = html.unescape(_TAG.sub("", text))
    text = _CONTROL.sub(" ", text).replace("\u200e", "").replace("\u200f", "")
    return " ".join(text.split())


def _clean_speaker(name: str) -> str | None:
    """A speaker name fit for one line: no markup, no colon, defused like all document text."""
    cleaned = _clean_text(name).replace(":", " ").replace("[", "(").replace("]", ")")
    cleaned = " ".join(cleaned.split())[:80]
    return defuse(cleaned, inline=True) if cleaned else None


def _join(utterances: list[Utterance]) -> list[Utterance]:
    """Consecutive utterances of one speaker in one page window merged into ~30 s lines."""
    lines: list[Utterance] = []
    for u in utterances:
        last = lines[-1] if lines else None
        if (
            last is not None
            and last.speaker == u.speaker
            and int(last.start // PAGE_SECONDS) == int(u.start // PAGE_SECONDS)
            and u.start - last.start < LINE_SECONDS
            and len(last.text) + len(u.text) < LINE_CHARS
        ):
            lines[-1] = Utterance(last.start, last.speaker, f"{last.text} {u.text}")
        else:
            lines.append(u)
    return lines


def _render(u: Utterance) -> str:
    """One page line: ``[HH:MM:SS] Speaker: text``."""
    who = f"{u.speaker}: " if u.speaker else ""
    return f"[{format_time(u.start)}] {who}{u.text}"


def _pages(lines: list[Utterance]) -> list[Page]:
    """Lines grouped into five-minute windows; each page labelled by its first timestamp."""
    pages: list[Page] = []
    current: list[Utterance] = []
    for u in lines:
        if current and int(u.start // PAGE_SECONDS) != int(current[0].start // PAGE_SECONDS):
            pages.append(_page(len(pages) + 1, current))
            current = []
        current.append(u)
    if current:
        pages.append(_page(len(pages) + 1, current))
    return pages


def _page(number: int, lines: list[Utterance]) -> Page:
    return Page(number, format_time(lines[0].start), "\n".join(_render(u) for u in lines))


def _outline(pages: list[Page]) -> list[OutlineEntry]:
    """One entry per page: its start time and who speaks in it."""
    entries = []
    for page in pages:
        speakers = list(dict.fromkeys(line.speaker for line in parse_lines(page.text)))
        named = ", ".join(s for s in speakers if s)
        title = f"{page.label} {named}" if named else page.label
        entries.append(OutlineEntry(0, title[:TITLE_MAX], page.number))
    return entries

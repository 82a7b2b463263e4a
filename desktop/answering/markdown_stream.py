"""A small Markdown parser for streamed answers: blocks, inline spans, page citations.

Pure Python on purpose (no Qt, no HTML): the writer in ``markdown_writer`` turns blocks into
QTextDocument content with formats, never through an HTML parser, so text from a model
or a document can never become markup, a script or an active link. The only links are
page citations (the core's grammar, ``citations.CITATION_PATTERN``), whose target is built here
as ``longdoc-page:...``.

Streaming works on the *pending* text after the last finished block: ``split_first``
says whether its first block is complete. Finished blocks are written once; only the
unfinished block is rendered again (its open markup closed by ``close_open``, so a bold
phrase is bold while it streams), and a long unfinished paragraph is committed in
pieces at "clean" points (``safe_cut``) so the work per update stays bounded.

Why not markdown-it-py (issue 10 item 12), measured by ``bench/bench_markdown_parsers.py``
with markdown-it-py 4.3 feeding the same ``Block``s: CommonMark makes a whole list, table
or block quote one top-level block, so a streaming writer must parse it again from its
start on every update. Parsing cost 9-16x this parser's over a 20,000-token answer, a
300-item list and a 300-row table, and one update of the table took 85-127 ms against
this parser's 6-31 ms (goal: no stall over 50 ms). On the CommonMark cases answers use
(nested and numbered lists, emphasis nesting and intraword rules, code spans and fences,
tables, block quotes, escapes, citations in bold) both give the same blocks and formats,
except three this parser simplifies: indented code (shown as a paragraph; answers fence
code), a list inside a block quote (shown as quoted text) and a continuation paragraph
in a list item (kept, not indented under the item).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from urllib.parse import quote, unquote

from desktop.answering.citations import CITATION_PATTERN, find_citations

PAGE_SCHEME = "longdoc-page"

_HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.*?)[ \t#]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_RULE = re.compile(r"^ {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$")
_ITEM = re.compile(r"^( *)([-*+]|\d{1,9}[.)])[ \t]+")
_QUOTE = re.compile(r"^ {0,3}>[ \t]?")
_TABLE = re.compile(r"^ {0,3}\|")
_TABLE_SEPARATOR = re.compile(r"^\s*\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$")
# A partial line that may still turn into a block marker once more characters arrive.
_UNDECIDED = re.compile(r"^ *(?:[-*_+ ]*|\d{1,9}[.)]?|#{1,6}|`{1,2}|~{1,2})$")

# What counts as a page citation is the core's grammar (``CITATION_PATTERN``), so the
# links here are exactly the citations the CLI and the quote checks see.
_INLINE = re.compile(
    r"(?P<tick>`+)(?P<code>.+?)(?P=tick)"
    r"|\*\*\*(?P<bi>[^*\s](?:[^*]*?[^*\s])?)\*\*\*"
    r"|\*\*(?P<b1>.+?)\*\*"
    r"|__(?P<b2>.+?)__"
    # Italic may hold a bold run ("*it **b** it*"), else it would end at the first "*".
    r"|\*(?P<i1>(?!\s)(?:\*\*[^*]+?\*\*|[^*])+?)(?<!\s)\*"
    r"|(?<!\w)_(?P<i2>[^\s_](?:.*?[^\s_])?)_(?!\w)"
    rf"|(?P<cite>{CITATION_PATTERN})"
    r"|\[(?P<ltext>[^\[\]\n]+)\]\((?P<lurl>[^()\s]+)\)"
    r"|\\(?P<esc>[\\`*_\[\]#>|{}()+.!-])"
)


@dataclass(frozen=True)
class Span:
    """A run of text with one format; ``href`` is only ever a page citation target."""

    text: str
    bold: bool = False
    italic: bool = False
    code: bool = False
    href: str | None = None


@dataclass
class Block:
    """One block: paragraph, heading, item, code, quote, rule or table."""

    kind: str
    spans: list[Span] = field(default_factory=list)
    level: int = 0  # heading level (1-6) or list nesting depth (0 = top)
    marker: str = ""  # "•" or "3." for list items
    code: str = ""  # code blocks
    rows: list[list[list[Span]]] = field(default_factory=list)  # tables: rows of cells


# --- citations -------------------------------------------------------------------------


def citation_href(label: str, number: int | None = None) -> str:
    """The link target for a cited page: by page number if known, else by printed label."""
    if number is not None:
        return f"{PAGE_SCHEME}:n={number}"
    return f"{PAGE_SCHEME}:l={quote(label.strip(), safe='')}"


def parse_citation_href(href: str) -> tuple[str | None, int | None]:
    """``(label, number)`` from a citation target; ``(None, None)`` if it is not ours."""
    prefix = f"{PAGE_SCHEME}:"
    if not href.startswith(prefix):
        return None, None
    rest = href[len(prefix) :]
    if rest.startswith("n="):
        try:
            return None, int(rest[2:])
        except ValueError:
            return None, None
    if rest.startswith("l="):
        label = unquote(rest[2:])
        return (label, None) if label else (None, None)
    return None, None


def _citation_spans(citation: str, bold: bool, italic: bool) -> list[Span]:
    """A citation (``[pp. 3-5, A-2]``) as spans: each cited label or range its own link.

    The grammar is the core's (``find_citations``); the document view resolves the label.
    """
    [ref] = find_citations(citation)
    spans: list[Span] = []
    pos = 0
    for i, part in enumerate(ref.parts):
        if part.start > pos and i > 0:
            spans.append(Span(citation[pos : part.start], bold, italic))  # ", " between labels
            pos = part.start
        end = ref.end if i == len(ref.parts) - 1 else part.end
        spans.append(Span(citation[pos:end], bold, italic, href=citation_href(part.text)))
        pos = end
    if pos < len(citation):
        spans.append(Span(citation[pos:], bold, italic))
    return spans


# --- inline ------------------------------------------------------------------------------


def inline(text: str, bold: bool = False, italic: bool = False) -> list[Span]:
    """Spans for one block's text: code, bold, italic, citations; all else is plain text."""
    spans: list[Span] = []
    pos = 0
    for m in _INLINE.finditer(text):
        if m.start() > pos:
            spans.append(Span(text[pos : m.start()], bold, italic))
        if m.group("code") is not None:
            spans.append(Span(m.group("code"), bold, italic, code=True))
        elif m.group("bi") is not None:
            spans.extend(inline(m.group("bi"), True, True))
        elif m.group("b1") is not None or m.group("b2") is not None:
            spans.extend(inline(m.group("b1") or m.group("b2"), True, italic))
        elif m.group("i1") is not None or m.group("i2") is not None:
            spans.extend(inline(m.group("i1") or m.group("i2"), bold, True))
        elif m.group("cite") is not None:
            spans.extend(_citation_spans(m.group("cite"), bold, italic))
        elif m.group("ltext") is not None:
            # Links from the model are shown, never followed: the target as plain text.
            spans.extend(inline(m.group("ltext"), bold, italic))
            spans.append(Span(f" ({m.group('lurl')})", bold, italic))
        else:
            spans.append(Span(m.group("esc"), bold, italic))
        pos = m.end()
    if pos < len(text):
        spans.append(Span(text[pos:], bold, italic))
    return spans


def safe_cut(text: str, start: int) -> int:
    """The last index after ``start`` where ``text[:index]`` ends with balanced inline markup.

    Cutting there renders exactly as the whole would: no open code span, emphasis or
    bracket. Returns ``start`` when there is no such point.
    """
    best = start
    ticks = stars = unders = bolds = 0
    depth = 0
    i = start
    n = len(text)
    while i < n:
        c = text[i]
        if c == "\\":
            i += 2
            continue
        if c == "`":
            ticks += 1
        elif ticks % 2 == 0:
            if c in "*_" and i + 1 < n and text[i + 1] == c:
                bolds += 1  # "**" or "__" opens or closes bold
                i += 2
                continue
            if c == "*":
                stars += 1
            elif c == "_" and not (
                i > 0 and text[i - 1].isalnum() and i + 1 < n and text[i + 1].isalnum()
            ):
                unders += 1  # snake_case words are not emphasis
            elif c == "[":
                depth += 1
            elif c == "]":
                depth = max(0, depth - 1)
            elif c in " \n" and not (stars % 2 or unders % 2 or bolds % 2 or depth):
                best = i + 1
        i += 1
    return best


def close_open(text: str) -> str:
    """An unfinished block's text with its open inline markup closed (streaming only).

    "The **three ye" renders as "The **three ye**": the phrase shows bold while it
    streams instead of a raw "**" that turns bold a moment later. A marker with nothing
    after it yet is dropped. Markers are openers only before a non-space and closers only
    after one, so "2 * 3" stays as it is.
    """
    stack: list[tuple[str, int]] = []  # (marker, index where it starts)
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == "\\":
            i += 2
            continue
        if stack and stack[-1][0].startswith("`"):
            if c == "`":
                run = len(text[i:]) - len(text[i:].lstrip("`"))
                if text[i : i + run] == stack[-1][0]:
                    stack.pop()
                i += run
                continue
            i += 1
            continue
        if c == "`":
            run = len(text[i:]) - len(text[i:].lstrip("`"))
            stack.append((text[i : i + run], i))
            i += run
            continue
        if c in "*_":
            run = min(len(text[i:]) - len(text[i:].lstrip(c)), 3)
            marker = c * run
            before = text[i - 1] if i else " "
            after = text[i + run] if i + run < n else ""
            if c == "_" and before.isalnum() and after.isalnum():
                i += run  # snake_case
                continue
            if stack and stack[-1][0] == marker and not before.isspace():
                stack.pop()
            elif after and not after.isspace():
                stack.append((marker, i))
            elif not after:
                stack.append((marker, i))  # the phrase has not started yet
            i += run
            continue
        i += 1
    if not stack:
        return text
    suffix = ""
    end = len(text)
    for marker, start in reversed(stack):
        if not text[start + len(marker) : end].strip():
            end = start  # nothing after the opener yet: drop it
            suffix = ""
            continue
        suffix = marker + suffix
    return text[:end].rstrip() + suffix if suffix else text[:end]


# --- blocks ------------------------------------------------------------------------------


def line_kind(line: str, complete: bool = True) -> str | None:
    """The block a line starts; None when a partial line cannot be classified yet."""
    if not complete and _UNDECIDED.match(line):
        return None
    if not line.strip():
        return "blank"
    if _FENCE.match(line):
        return "code"
    if _HEADING.match(line):
        return "heading"
    if complete and _RULE.match(line):
        return "rule"
    if _ITEM.match(line):
        return "item"
    if _QUOTE.match(line):
        return "quote"
    if _TABLE.match(line):
        return "table"
    return "paragraph"


def _ends(kind: str, next_kind: str) -> bool:
    """Does a line of ``next_kind`` end a block of ``kind``?"""
    if next_kind == "blank":
        return True
    if kind == "paragraph":
        return next_kind not in ("paragraph",)
    if kind == "item":
        return next_kind != "paragraph"
    return next_kind != kind  # quote, table


def split_first(pending: str, final: bool = False) -> tuple[str, str] | None:
    """``(block, rest)`` when the first block of ``pending`` is complete, else None.

    Blank lines before the block are dropped. With ``final`` the text is all there is,
    so a last partial line counts as complete.
    """
    lines = pending.split("\n")
    # Every line but the last ended with "\n"; the last is partial unless final.
    count = len(lines)
    first = 0
    while first < count - 1 and not lines[first].strip():
        first += 1
    if first == count - 1 and not lines[first].strip():
        return None  # nothing but blank lines
    head = lines[first]
    head_complete = final or first < count - 1
    kind = line_kind(head, head_complete)
    if kind is None:
        return None

    def result(last: int) -> tuple[str, str]:
        block = "\n".join(lines[first : last + 1])
        rest = "\n".join(lines[last + 1 :])
        return block, rest

    if kind in ("heading", "rule"):
        return result(first) if head_complete else None
    if kind == "code":
        fence = _FENCE.match(head)
        assert fence is not None
        mark = fence.group(1)
        for j in range(first + 1, count):
            complete = final or j < count - 1
            stripped = lines[j].strip()
            if (
                complete
                and stripped.startswith(mark[0] * len(mark))
                and not stripped.strip(mark[0])
            ):
                return result(j)
        return result(count - 1) if final else None
    for j in range(first + 1, count):
        complete = final or j < count - 1
        next_kind = line_kind(lines[j], complete)
        if next_kind is None:
            return None
        if not complete and not lines[j]:
            return None  # the next line has not started yet
        if _ends(kind, next_kind):
            return result(j - 1)
        if not complete:
            return None
    return result(count - 1) if final else None


def block_kind(text: str) -> str:
    """The kind of a (possibly partial) block's text."""
    first = text.lstrip("\n").split("\n", 1)[0]
    return line_kind(first) or "paragraph"


def parse_block(text: str) -> Block:
    """A block from its text (as returned by ``split_first`` or the pending tail)."""
    text = text.strip("\n")
    lines = text.split("\n")
    kind = block_kind(text)
    if kind == "heading":
        m = _HEADING.match(lines[0])
        assert m is not None
        return Block("heading", inline(m.group(2)), level=len(m.group(1)))
    if kind == "rule":
        return Block("rule")
    if kind == "code":
        body = lines[1:]
        if body and _FENCE.match(body[-1]) and not body[-1].strip().strip("`~"):
            body = body[:-1]
        return Block("code", code="\n".join(body))
    if kind == "item":
        m = _ITEM.match(lines[0])
        assert m is not None
        indent = len(m.group(1))
        marker = m.group(2)
        bullet = marker if marker[0].isdigit() else ("•" if indent < 2 else "◦")
        content = " ".join([lines[0][m.end() :], *(ln.strip() for ln in lines[1:])])
        return Block("item", inline(content), level=min(indent // 2, 4), marker=bullet)
    if kind == "quote":
        content = " ".join(_QUOTE.sub("", ln, count=1) for ln in lines)
        return Block("quote", inline(content))
    if kind == "table":
        rows: list[list[list[Span]]] = []
        for ln in lines:
            if _TABLE_SEPARATOR.match(ln):
                continue
            cells = ln.strip()
            cells = cells[1:] if cells.startswith("|") else cells
            cells = cells[:-1] if cells.endswith("|") else cells
            rows.append([inline(c.strip()) for c in cells.split("|")])
        return Block("table", rows=rows)
    return Block("paragraph", inline(paragraph_source(text)))


def paragraph_source(text: str) -> str:
    """A paragraph's text with line breaks as spaces (same length, so offsets still hold)."""
    return text.replace("\n", " ")


def parse_all(text: str) -> list[Block]:
    """Every block of a finished text (used for stored answers and tests)."""
    blocks: list[Block] = []
    pending = text
    while True:
        split = split_first(pending, final=True)
        if split is None:
            break
        block, pending = split
        blocks.append(parse_block(block))
    return blocks


def to_plain_markdown(blocks: list[Block]) -> str:
    """Blocks back to text (for tests: what the user reads, links reduced to their text)."""
    out: list[str] = []
    for b in blocks:
        if b.kind == "code":
            out.append(b.code)
        elif b.kind == "table":
            out.append("\n".join(" | ".join("".join(s.text for s in c) for c in r) for r in b.rows))
        elif b.kind == "rule":
            out.append("---")
        else:
            prefix = f"{b.marker} " if b.kind == "item" else ""
            out.append(prefix + "".join(s.text for s in b.spans))
    return "\n".join(out)

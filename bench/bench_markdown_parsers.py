"""Markdown parsers for streamed answers: the hand-written one against markdown-it-py.

Issue 10 item 12 asks whether markdown-it-py (CommonMark, HTML disabled, a token stream)
should feed the answer writer instead of ``desktop/ui/markdown_stream.py``. Both are
measured here the way a streaming writer must use them: after each arriving piece of
text, find which blocks are finished and parse the unfinished one again.

* hand-written: ``split_first`` + ``parse_block`` on the pending text (each list item is
  its own block, so the unfinished part stays one item or one paragraph long);
* markdown-it-py: parse the pending text from the start of the last top-level block it
  found (a list, a table or a block quote is one top-level block to CommonMark, so the
  unfinished part grows with the list).

Then the CommonMark cases answers use (nested and numbered lists, emphasis rules, code,
tables, block quotes) are rendered by both into the writer's ``Block``s and compared.

    .venv/bin/python bench/bench_markdown_parsers.py
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

from markdown_it import MarkdownIt
from markdown_it.token import Token

from desktop.answering.markdown_stream import (
    Block,
    Span,
    inline,
    parse_all,
    parse_block,
    split_first,
)

MD = MarkdownIt("commonmark", {"html": False}).enable("table")
CHUNK = 24  # characters per update: a UI batch at full speed carries about this much


def answer(sections: int = 200) -> str:
    """Like bench_ui_stream's answer: headings, paragraphs, short lists, citations."""
    return "".join(
        f"## {i + 1}. Clause {i + 1}\n\nThe agreement states that the **supplier** must "
        f"deliver within *thirty days* of the order [p. {i % 4 + 1}]. Late delivery lets "
        f"the buyer terminate under `section {i % 12 + 1}.2`.\n\n"
        f"- Notice must be in writing [p. 2]\n- The cure period is **ten** days\n\n"
        for i in range(sections)
    )


def long_list(items: int = 300) -> str:
    """One list of many items (one top-level block to CommonMark)."""
    return "".join(
        f"{i + 1}. Item {i} says the **term** is *{i}* months [p. {i % 9 + 1}]\n"
        f"   - nested detail `{i}`\n"
        for i in range(items)
    )


def long_table(rows: int = 300) -> str:
    """One table of many rows."""
    head = "| Clause | Term | Page |\n|---|---|---|\n"
    return head + "".join(f"| {i} | **{i}** months | [p. {i % 9 + 1}] |\n" for i in range(rows))


# --- markdown-it-py tokens -> the writer's blocks ------------------------------------


def _spans(children: list[Token]) -> list[Span]:
    spans: list[Span] = []
    bold = italic = False
    for t in children:
        if t.type == "strong_open":
            bold = True
        elif t.type == "strong_close":
            bold = False
        elif t.type == "em_open":
            italic = True
        elif t.type == "em_close":
            italic = False
        elif t.type == "code_inline":
            spans.append(Span(t.content, bold, italic, code=True))
        elif t.type in ("softbreak", "hardbreak"):
            spans.append(Span(" ", bold, italic))
        elif t.type == "text":
            # Citations are text to CommonMark; the writer's citation spans come from the
            # same inline pass the hand-written parser uses, so only emphasis differs.
            spans.extend(inline(t.content, bold, italic) if "[" in t.content else [])
            if "[" not in t.content:
                spans.append(Span(t.content, bold, italic))
    return spans


def mdit_blocks(text: str) -> list[Block]:
    """markdown-it-py's tokens as the writer's blocks."""
    tokens = MD.parse(text)
    blocks: list[Block] = []
    lists: list[list[int]] = []  # per open list: [next number] or [-1] for bullets
    quote = 0
    heading = 0
    pending_marker = ""
    row: list[list[Span]] = []
    table: list[list[list[Span]]] | None = None
    for t in tokens:
        kind = t.type
        if kind == "bullet_list_open":
            lists.append([-1])
        elif kind == "ordered_list_open":
            lists.append([int(t.attrs.get("start", 1) or 1)])
        elif kind in ("bullet_list_close", "ordered_list_close"):
            lists.pop()
        elif kind == "list_item_open":
            current = lists[-1]
            if current[0] < 0:
                pending_marker = "•" if len(lists) == 1 else "◦"
            else:
                pending_marker = f"{current[0]}{t.markup}"
                current[0] += 1
        elif kind == "blockquote_open":
            quote += 1
        elif kind == "blockquote_close":
            quote -= 1
        elif kind == "heading_open":
            heading = int(t.tag[1])
        elif kind == "table_open":
            table = []
        elif kind == "tr_open":
            row = []
        elif kind == "tr_close" and table is not None:
            table.append(row)
        elif kind == "table_close" and table is not None:
            blocks.append(Block("table", rows=table))
            table = None
        elif kind in ("fence", "code_block"):
            blocks.append(Block("code", code=t.content.rstrip("\n")))
        elif kind == "hr":
            blocks.append(Block("rule"))
        elif kind == "inline":
            spans = _spans(t.children or [])
            if table is not None:
                row.append(spans)
            elif heading:
                blocks.append(Block("heading", spans, level=heading))
                heading = 0
            elif pending_marker:
                blocks.append(Block("item", spans, level=len(lists) - 1, marker=pending_marker))
                pending_marker = ""
            elif quote:
                blocks.append(Block("quote", spans))
            else:
                blocks.append(Block("paragraph", spans))
    return blocks


# --- streaming cost ----------------------------------------------------------------------


def stream_costs(text: str, update: Callable[[str], str]) -> list[float]:
    """Seconds per streamed update: ``update(pending)`` renders what arrived and returns
    the text still unfinished, which the next chunk extends."""
    pending = ""
    costs = []
    for i in range(0, len(text), CHUNK):
        pending += text[i : i + CHUNK]
        started = time.perf_counter()
        pending = update(pending)
        costs.append(time.perf_counter() - started)
    return costs


def stream_hand(text: str) -> list[float]:
    """Split off finished blocks, parse the unfinished one."""

    def update(pending: str) -> str:
        while (split := split_first(pending)) is not None:
            block, pending = split
            parse_block(block)
        if pending.strip():
            parse_block(pending)
        return pending

    return stream_costs(text, update)


def stream_mdit(text: str) -> list[float]:
    """Parse from the last top-level block; earlier ones are final."""

    def update(pending: str) -> str:
        tokens = MD.parse(pending)
        starts = [t.map[0] for t in tokens if t.level == 0 and t.nesting >= 0 and t.map]
        if len(starts) > 1:
            lines = pending.split("\n")
            mdit_blocks("\n".join(lines[: starts[-1]]))  # the finished blocks, once
            pending = "\n".join(lines[starts[-1] :])
            tokens = MD.parse(pending)
        mdit_blocks(pending)
        return pending

    return stream_costs(text, update)


# --- CommonMark cases --------------------------------------------------------------------

CASES: dict[str, str] = {
    "nested bullets": "- a\n  - b\n    - c\n- d\n",
    "numbered, start 3": "3. three\n4. four\n",
    "nested numbered in bullets": "- a\n   1. one\n   2. two\n- b\n",
    "numbered with 3-space nested bullet": "1. one\n   - sub\n2. two\n",
    "item continuation paragraph": "- a\n\n  more about a\n- b\n",
    "intraword star": "x*y*z and 2 * 3 * 4",
    "snake_case": "call snake_case_name now",
    "bold then text": "**bold**text",
    "nested emphasis": "***both*** and *it **b** it*",
    "code with stars": "`a*b*c` and ``x ` y``",
    "fenced code": "```python\nx = 1  # **not bold**\n```\n",
    "indented code": "    code line\n    second\n",
    "table with inline": "| a | b |\n|---|:-:|\n| **x** | `y` |\n",
    "block quote, two lines": "> one\n> two\n",
    "block quote with list": "> - a\n> - b\n",
    "citation in bold": "**the term [p. 4]**",
    "escaped star": "not \\*italic\\*",
    "heading": "## Title *it*\n",
}


def describe(blocks: list[Block]) -> list[tuple[object, ...]]:
    """What a reader sees: kind, level, marker, and each run's text and formats."""
    out: list[tuple[object, ...]] = []
    for b in blocks:
        runs: list[tuple[str, bool, bool, bool]] = []
        for s in b.spans:
            key = (s.bold, s.italic, s.code)
            if runs and runs[-1][1:] == key:
                runs[-1] = (runs[-1][0] + s.text, *key)
            elif s.text:
                runs.append((s.text, *key))
        rows = [["".join(s.text for s in c) for c in r] for r in b.rows]
        out.append((b.kind, b.level, b.marker, b.code, tuple(runs), str(rows) if rows else ""))
    return out


def ms(xs: list[float]) -> str:
    return f"{sum(xs) * 1000:.0f} ms total, worst {max(xs) * 1000:.2f} ms"


def main() -> int:
    inputs: dict[str, Callable[[], str]] = {
        "400 sections (answer-like)": lambda: answer(400),
        "one list of 300 items": long_list,
        "one table of 300 rows": long_table,
    }
    print(f"Streaming cost per update ({CHUNK}-character updates, parse only, no Qt):")
    for name, make in inputs.items():
        text = make()
        hand = [stream_hand(text) for _ in range(3)]
        mdit = [stream_mdit(text) for _ in range(3)]
        h = min(hand, key=sum)
        m = min(mdit, key=sum)
        print(
            f"  {name} ({len(text):,} chars): hand-written {ms(h)}; "
            f"markdown-it-py {ms(m)}; ratio {sum(m) / sum(h):.1f}x, "
            f"median update {statistics.median(m) / statistics.median(h):.1f}x"
        )
    print("CommonMark cases (same blocks and formats as markdown-it-py?):")
    differ = 0
    for name, text in CASES.items():
        same = describe(parse_all(text)) == describe(mdit_blocks(text))
        differ += not same
        print(f"  {'same ' if same else 'DIFF '} {name}")
        if not same:
            print(f"         hand: {describe(parse_all(text))}")
            print(f"         mdit: {describe(mdit_blocks(text))}")
    print(f"{differ} of {len(CASES)} cases differ")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

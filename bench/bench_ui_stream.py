"""UI streaming benchmark: a 20,000-token Markdown answer as fast as the server sends it.

The fake SGLang server runs in its own process (as a real server would), so only the app's
own work competes with the UI thread. A 5 ms QTimer on the UI thread records how late it
fires while the answer streams through the real path (Answerer -> tasks.run_stream ->
AskPanel -> MarkdownWriter). Then the same deltas, in the same batches, are replayed into
(a) the Markdown renderer and (b) plain-text appending, to price the rendering: once as the
app does it (each batch at its recorded arrival time, Markdown drawn at most once per frame),
then with every batch and every delta drawn (the renderer's own cost per update).

    QT_QPA_PLATFORM=offscreen .venv/bin/python bench/bench_ui_stream.py

Goals (issue 4): worst stall under 50 ms; rendering at most 2x plain-text appending.
"""

from __future__ import annotations

import argparse
import statistics
import time

from _common import FOUR_PAGES, asking_window, gui_environment, spin  # first: sys.path

gui_environment()

from PySide6.QtCore import QElapsedTimer, QTimer  # noqa: E402
from PySide6.QtGui import QTextCursor  # noqa: E402
from PySide6.QtWidgets import QTextBrowser  # noqa: E402

import desktop.ui  # noqa: E402,F401  (PySide6 6.12.0 workaround first)
from desktop.answering.events import AnswerDelta  # noqa: E402
from desktop.ui.markdown_writer import FRAME_S, MarkdownWriter  # noqa: E402

ANSWER_TOKENS = 20_000


def markdown_answer(sections: int = 400) -> str:
    """A long, realistic answer: headings, paragraphs, lists, emphasis, code, citations."""
    parts = []
    for i in range(sections):
        page = i % 4 + 1
        parts.append(
            f"## {i + 1}. Clause {i + 1}\n\n"
            f"The agreement states that the **supplier** must deliver within *thirty days* "
            f"of the order [p. {page}]. Late delivery gives the buyer the right to "
            f'terminate under `section {i % 12 + 1}.2`, as quoted: "time is of the essence" '
            f"[pp. {page}-{min(page + 1, 4)}]. No other remedy is stated.\n\n"
            f"- Notice must be in writing [p. {page}]\n"
            f"- The cure period is **ten** business days\n"
            f"- Disputes go to arbitration [p. {5 - page}]\n\n"
        )
    return "".join(parts)


def stream_once(app: object, window: object) -> dict[str, object]:
    """Ask once; lateness of a 5 ms timer and the batches the UI received."""
    panel = window.ask_panel  # type: ignore[attr-defined]
    writer = panel.answer_view.writer
    batches: list[list[str]] = []
    times: list[float] = []
    handle_s: list[float] = []
    original = panel._on_answer_events
    original_draw = writer._draw
    draws_before = writer.draws
    in_handler = [False]

    def recording(batch: list[object]) -> None:
        started = time.perf_counter()
        in_handler[0] = True
        original(batch)
        in_handler[0] = False
        handle_s.append(time.perf_counter() - started)
        if handle_s[-1] > 0.02:
            slow.append((started - t0[0], handle_s[-1], [type(e).__name__ for e in batch][-3:]))
        batches.append([e.text for e in batch if isinstance(e, AnswerDelta)])
        times.append(started - t0[0])

    def drawing(final: bool) -> None:  # draws by the frame timer count as UI time too
        if in_handler[0]:
            original_draw(final)
            return
        started = time.perf_counter()
        original_draw(final)
        handle_s.append(time.perf_counter() - started)

    panel._on_answer_events = recording
    writer._draw = drawing
    slow: list[tuple[float, float, list[str]]] = []
    t0 = [time.perf_counter()]
    late: list[float] = []
    clock = QElapsedTimer()
    timer = QTimer()
    timer.setInterval(5)
    last = [0.0]

    def tick() -> None:
        now = clock.nsecsElapsed() / 1e9
        if last[0]:
            late.append(now - last[0] - 0.005)
            if late[-1] > 0.03:
                slow.append((time.perf_counter() - t0[0], late[-1], ["timer"]))
        last[0] = now

    timer.timeout.connect(tick)
    done: list[object] = []
    panel.answer_finished.connect(done.append)
    panel.question_edit.setPlainText(f"Benchmark question {time.time()}")
    clock.start()
    timer.start()
    started = t0[0] = time.perf_counter()
    panel.ask(use_cache=False)
    spin(app, lambda: bool(done), 300)
    total = time.perf_counter() - started
    timer.stop()
    panel._on_answer_events = original
    del writer._draw
    panel.answer_finished.disconnect(done.append)
    answer = done[0]
    return {
        "late": late,
        "batches": batches,
        "times": times,
        "draws": writer.draws - draws_before,
        "handle_s": handle_s,
        "total_s": total,
        "answer": answer,
        "slow": slow,
    }


def replay(
    batches: list[list[str]], times: list[float], markdown: bool, mode: str, app: object
) -> float:
    """Seconds to put the same deltas into a QTextBrowser, rendered or as plain text.

    ``mode``: "frames" replays each batch at its recorded arrival time (the writer's clock)
    and draws Markdown at most once per frame, as the app does; "batches" and "deltas"
    draw every batch or every delta (the renderer's own cost per update).
    """
    browser = QTextBrowser()
    browser.resize(600, 800)
    browser.show()
    bar = browser.verticalScrollBar()
    writer = MarkdownWriter(
        browser.document(),
        browser.palette(),
        follow=bar,
        frame_s=FRAME_S if mode == "frames" else 0,
    )
    now = [0.0]
    writer.clock = lambda: now[0]
    if mode == "deltas":
        units = [(t, d) for t, b in zip(times, batches, strict=True) for d in b]
    else:
        units = [(t, "".join(b)) for t, b in zip(times, batches, strict=True)]
    started = time.perf_counter()
    for at, text in units:
        if not text:
            continue
        now[0] = at
        if markdown:
            writer.append(text)  # follows the end itself, when it draws
        else:
            cursor = QTextCursor(browser.document())
            cursor.movePosition(QTextCursor.MoveOperation.End)
            cursor.insertText(text)
            bar.setValue(bar.maximum())
    if markdown:
        writer.finish()
    app.processEvents()  # type: ignore[attr-defined]
    elapsed = time.perf_counter() - started
    browser.close()
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--replays", type=int, default=5, help="replays per rendering mode")
    args = parser.parse_args()
    behaviour = {
        "answer_text": markdown_answer(),
        "answer_tokens": ANSWER_TOKENS,
        "token_delay_s": 0.0,
        "reasoning_tokens": 0,
    }
    reserve = ANSWER_TOKENS + 2_000
    with asking_window(FOUR_PAGES, 2_000, behaviour, thinking=False, answer_reserve=reserve) as (
        app,
        window,
    ):
        # The first answer of a session also pays one-off costs in the worker (building
        # the HTTP client's response models holds the GIL ~90 ms): reported on its own.
        first = stream_once(app, window)
        results = [stream_once(app, window) for _ in range(args.runs)]

    print(
        f"UI streaming: {ANSWER_TOKENS:,}-token Markdown answer, fake server in a child "
        f"process sending as fast as it can; {args.runs} runs"
    )
    rows = []
    for i, r in enumerate(results, 1):
        answer = r["answer"]
        late = r["late"]  # type: ignore[assignment]
        batches = r["batches"]  # type: ignore[assignment]
        deltas = sum(len(b) for b in batches)  # type: ignore[union-attr]
        chars = sum(len(d) for b in batches for d in b)  # type: ignore[union-attr]
        tokens_out = getattr(answer, "completion_tokens", None)
        rows.append(max(late))  # type: ignore[arg-type]
        print(
            f"  run {i}: {r['total_s']:.2f} s, {tokens_out} tokens ({deltas:,} deltas, "
            f"{chars:,} chars) in {len(batches):,} UI batches; timer lateness "  # type: ignore[arg-type]
            f"p50 {statistics.median(late) * 1000:.1f} ms, p99 "  # type: ignore[arg-type]
            f"{sorted(late)[int(len(late) * 0.99)] * 1000:.1f} ms, "  # type: ignore[arg-type]
            f"worst {max(late) * 1000:.1f} ms; UI time in event handlers "  # type: ignore[arg-type]
            f"{sum(r['handle_s']) * 1000:.0f} ms"  # type: ignore[arg-type]
        )
    for r in (x for x in results if x["slow"]):
        print(
            "  slow moments (s from ask, duration, what):",
            [(round(a, 3), round(b, 3), c) for a, b, c in r["slow"]],
        )  # type: ignore[union-attr]
    first_late = first["late"]  # type: ignore[assignment]
    print(
        f"  first answer of the session (not counted below): worst "
        f"{max(first_late) * 1000:.1f} ms, p99 "  # type: ignore[arg-type]
        f"{sorted(first_late)[int(len(first_late) * 0.99)] * 1000:.1f} ms"
    )  # type: ignore[arg-type]
    worst = max(rows)
    print(
        f"worst stall: {worst * 1000:.1f} ms (goal < 50 ms): {'OK' if worst < 0.05 else 'MISSED'}"
    )

    print(
        "  draws of the answer per run: "
        + ", ".join(f"{r['draws']:,}" for r in results)
        + f" (at most one per {FRAME_S * 1000:.0f} ms frame)"
    )

    batches = results[-1]["batches"]  # type: ignore[assignment]
    times = results[-1]["times"]  # type: ignore[assignment]
    labels = {
        "frames": "as the app does (per frame)",
        "batches": "every UI batch drawn       ",
        "deltas": "every delta drawn          ",
    }
    for mode, label in labels.items():
        ratios, mds, plains = [], [], []
        for _ in range(args.replays):  # interleaved: the machine's noise hits both alike
            mds.append(replay(batches, times, True, mode, app))  # type: ignore[arg-type]
            plains.append(replay(batches, times, False, mode, app))  # type: ignore[arg-type]
            ratios.append(mds[-1] / plains[-1])
        goal = " (goal <= 2x)" if mode == "frames" else ""
        print(
            f"render {label}: markdown {statistics.median(mds) * 1000:.0f} ms, plain text "
            f"{statistics.median(plains) * 1000:.0f} ms, median ratio "
            f"{statistics.median(ratios):.2f}x (range {min(ratios):.2f}-{max(ratios):.2f})"
            f"{goal}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

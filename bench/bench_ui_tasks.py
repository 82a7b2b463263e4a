"""Background-task benchmark: memory and live objects over a day of questions.

The real window asks a few hundred questions, each a short streamed answer from the fake
SGLang server in a child process (so only the app's memory is measured). After every
block of answers it records the process's resident memory, the Task objects not yet
collected (``tasks.live_tasks()``), the pool's active threads and Python's object count.
Goal (issue 7 A): flat. Memory is compared as the growth of the second half of the run
against the first half, after a warm-up block (caches, fonts, the tokenizer fill up once).

    QT_QPA_PLATFORM=offscreen .venv/bin/python bench/bench_ui_tasks.py [--answers 300]
"""

from __future__ import annotations

import argparse
import gc
import resource
import time

from _common import FOUR_PAGES, asking_window, gui_environment, spin  # first: sys.path

gui_environment()

from PySide6.QtCore import QThreadPool  # noqa: E402

import desktop.ui  # noqa: E402,F401  (PySide6 6.12.0 workaround first)
from desktop.ui import tasks  # noqa: E402

PDF = FOUR_PAGES


def rss_mb() -> float:
    """Resident memory now (Linux), in MB."""
    with open("/proc/self/statm") as fh:
        pages = int(fh.read().split()[1])
    return pages * resource.getpagesize() / 1e6


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--answers", type=int, default=300)
    parser.add_argument("--block", type=int, default=25)
    args = parser.parse_args()
    samples: list[tuple[int, float, int, int, int]] = []
    behaviour = {"answer_tokens": 120, "reasoning_tokens": 30, "token_delay_s": 0.0}
    with asking_window(PDF, 500, behaviour) as (app, window):
        panel = window.ask_panel
        # Whether each answer failed (not the answers: the bench must not hold them).
        done: list[bool] = []
        panel.answer_finished.connect(lambda result: done.append(isinstance(result, Exception)))
        started = time.perf_counter()
        for i in range(1, args.answers + 1):
            # Separate questions, not one ever-growing conversation (whose turns the
            # window rightly keeps on screen): a new thread for each.
            panel.new_thread()
            panel.question_edit.setPlainText(f"Question number {i}: what does it say?")
            count = len(done)
            assert panel.ask(use_cache=False)
            assert spin(app, lambda count=count: len(done) > count, 120), f"answer {i} hung"  # type: ignore[misc]
            if i % args.block == 0:
                # Let the history reload and the status polls settle, then look.
                spin(app, lambda: not tasks.running_tasks(), 30)
                app.processEvents()
                gc.collect()
                samples.append(
                    (
                        i,
                        rss_mb(),
                        tasks.live_tasks(),
                        QThreadPool.globalInstance().activeThreadCount(),
                        len(gc.get_objects()),
                    )
                )
        elapsed = time.perf_counter() - started
        failed = [d for d in done if d]

    print(
        f"{args.answers} streamed answers in one window ({elapsed:.0f} s), "
        f"{len(failed)} failed; after every {args.block}:"
    )
    print("  answers   RSS MB   live Tasks   active pool threads   Python objects")
    for i, rss, live, active, objects in samples:
        print(f"  {i:7}   {rss:6.1f}   {live:10}   {active:19}   {objects:14,}")
    warm = samples[1:]  # the first block pays one-off costs
    half = len(warm) // 2
    first = warm[half][1] - warm[0][1]
    second = warm[-1][1] - warm[half][1]
    per_100 = (warm[-1][1] - warm[0][1]) / max(warm[-1][0] - warm[0][0], 1) * 100
    print(
        f"RSS growth after warm-up: {first:+.1f} MB in the first half, {second:+.1f} MB in the "
        f"second ({per_100:+.2f} MB per 100 answers); live Tasks at the end: {samples[-1][2]}"
    )
    # The history list holds one row per answer about the document: the only growth by
    # design (a few hundred bytes each).
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

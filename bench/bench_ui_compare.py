"""UI: the Compare window on two 400-page versions stays responsive.

Run as ``QT_QPA_PLATFORM=offscreen .venv/bin/python bench/bench_ui_compare.py``. Opens the
window on two generated 400-page PDFs (tests/support/contracts.py, the second with 50
changes of each kind and laid out anew), waits for the change list, then clicks through
20 changes; a 5 ms timer on the UI thread records the longest gap between its ticks (the
worst stall), from opening the window to the last click.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import _common  # noqa: F401  (first: it puts the project on sys.path)
from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication

from desktop.config import Settings
from desktop.documents.ingest import extract
from desktop.store.db import Store
from desktop.ui.compare_window import CompareWindow
from desktop.ui.session import Session
from tests.support.contracts import contract_pair, lay_out
from tests.support.pdf_maker import write_pdf

GOAL_MS = 100.0


def main() -> int:
    app = QApplication.instance() or QApplication([])
    with tempfile.TemporaryDirectory() as tmp:
        old, new, _ = contract_pair(3500, changes=50)
        a = lay_out(old, 90, 50, hyphenate=False, footer=False)
        b = lay_out(new, 90, 50, hyphenate=True, footer=True)
        a_pdf = write_pdf(Path(tmp) / "old.pdf", [p.split("\n") for p in a[:400]])
        b_pdf = write_pdf(Path(tmp) / "new.pdf", [p.split("\n") for p in b[:400]])
        da, db = extract(a_pdf), extract(b_pdf)
        print(
            f"versions: {len(da.pages)} and {len(db.pages)} pages, "
            f"{da.chars + db.chars:,} characters"
        )
        store = Store(Path(tmp) / "db.sqlite")
        session = Session(Settings(endpoint="http://127.0.0.1:9", api_key="x"), store)
        worst = 0.0
        stalls: list[tuple[float, int]] = []
        started = time.perf_counter()
        last = time.perf_counter()

        def tick() -> None:
            nonlocal worst, last
            now = time.perf_counter()
            if now - last > 0.05:
                stalls.append((round(now - started, 3), round((now - last) * 1000)))
            worst = max(worst, now - last)
            last = now

        timer = QTimer()
        timer.timeout.connect(tick)
        timer.start(5)
        started = time.perf_counter()
        window = CompareWindow(session, da, db, explain=False)
        window.show()
        opened = time.perf_counter() - started
        while window.comparison is None:
            app.processEvents()
            time.sleep(0.002)
        listed = time.perf_counter() - started
        for row in range(0, min(20, window.change_list.count())):
            window.change_list.setCurrentRow(row)
            end = time.perf_counter() + 0.05
            while time.perf_counter() < end:
                app.processEvents()
        timer.stop()
        print(
            f"window shown in {opened * 1000:.0f} ms; {window.change_list.count()} changes listed "
            f"after {listed:.2f} s; worst UI-thread stall {worst * 1000:.0f} ms "
            f"(goal < {GOAL_MS:.0f} ms, opening included); {len(stalls)} stalls over 50 ms"
        )
        window.close()
        session.close()
        store.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Library benchmark: the UI thread's work at 100, 1,000 and 10,000 stored documents.

The real window over a store filled with small documents (one page each; the library row
is what costs, not the text). At each size, with a 5 ms QTimer on the UI thread recording
how late it fires:

- **list**: ``store.list_documents()`` (in a worker in the app) and the model taking the
  rows (UI thread);
- **context**: the server's context length becomes known, the "Fits" column changes;
- **add 20**: 20 new text files are added (read in a worker, one row each on the UI thread);
- **filter**: one keystroke in the filter box;
- **paint**: the library view repainted.

UI-thread times are reported in ms and as a ratio to the 100-document figure of the same
run (goal: the UI thread's work does not grow with the library; nothing per row).

    QT_QPA_PLATFORM=offscreen .venv/bin/python bench/bench_library.py [--sizes 100,1000,10000]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import (  # first: it puts the project on sys.path
    Heartbeat,
    gui_environment,
    spin,
)

gui_environment()


import desktop.ui  # noqa: E402,F401  (PySide6 6.12.0 workaround first)
from desktop.answering.budget import ContextLimits  # noqa: E402
from desktop.config import Settings, db_path  # noqa: E402
from desktop.documents import tokens  # noqa: E402
from desktop.documents.model import Document, Page  # noqa: E402
from desktop.store.db import Store  # noqa: E402
from desktop.ui.app import application, create_window  # noqa: E402
from desktop.ui.library_panel import LibraryPanel  # noqa: E402


def fill(store: Store, start: int, end: int) -> None:
    """Store documents ``start..end-1`` (one page each)."""
    for i in range(start, end):
        text = f"Contract {i}: the supplier delivers within thirty days."
        store.save_document(
            Document(
                sha256=f"{i:064x}",
                path=f"/library/contract-{i:05}.pdf",
                kind="pdf",
                title=f"Contract {i:05}",
                pages=[Page(1, "1", text)],
                extractor="bench/1",
                tokens=2_000 + 37 * i,
            )
        )


def timed_ui(panel: LibraryPanel, names: list[str]) -> list[float]:
    """Wrap the panel's UI-thread handlers so their time is summed into the returned list."""
    spent = [0.0]
    for name in names:
        original = getattr(panel, name)

        def wrapper(*args: Any, _original: Any = original) -> Any:
            started = time.perf_counter()
            try:
                return _original(*args)
            finally:
                spent[0] += time.perf_counter() - started

        setattr(panel, name, wrapper)
    return spent


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="100,1000,10000")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    app = application()
    tokens.encoding()
    store = Store(db_path())
    files = Path(tempfile.mkdtemp(prefix="longdoc-bench-files-"))
    rows: dict[int, dict[str, float]] = {}
    stored = 0
    for size in sizes:
        fill(store, stored, size)
        stored = size
        # (each size but the first also holds the 20 files added at the previous size)
        # No server: the context is set by hand below, as the window does when it learns it.
        window = create_window(Settings(endpoint="http://127.0.0.1:9"), store, poll_ms=60_000)
        window.resize(1400, 900)
        window.show()
        library = window.library
        lateness = Heartbeat()
        figures: dict[str, float] = {}
        # Let the new window settle (first layout and paint) before measuring anything.
        settle_until = time.monotonic() + 0.5
        spin(app, lambda until=settle_until: time.monotonic() > until, 5)  # type: ignore[misc]

        def repaint(view: Any = library.view) -> float:
            started = time.perf_counter()
            view.viewport().repaint()
            return time.perf_counter() - started

        started = time.perf_counter()
        listed = store.list_documents()
        figures["list (worker)"] = time.perf_counter() - started
        started = time.perf_counter()
        library.set_documents(listed)
        figures["list (UI)"] = time.perf_counter() - started + repaint()
        assert library.model.rowCount() == size

        started = time.perf_counter()
        library.set_context(ContextLimits(262_144), 16_384)
        figures["context (UI)"] = time.perf_counter() - started + repaint()

        batch = []
        for j in range(20):
            path = files / f"size{size}-new-{j:02}.txt"
            path.write_text(f"New document {j} for the {size} library.", encoding="utf-8")
            batch.append(path)
        spent = timed_ui(library, ["_enqueue", "_on_ingested", "_next"])
        lateness.start()
        done: list[bool] = []
        library.ingest_finished.connect(lambda done=done: done.append(True))
        started = time.perf_counter()
        window.add_paths(batch)
        assert spin(app, lambda done=done: bool(done), 120), "ingest did not finish"  # type: ignore[misc]
        figures["add 20 (wall)"] = time.perf_counter() - started
        figures["add 20 (UI, sum)"] = spent[0]
        figures["add 20 worst stall"] = lateness.stop()
        assert library.model.rowCount() == size + 20

        started = time.perf_counter()
        library.filter_edit.setText("contract-0")
        figures["filter (UI)"] = time.perf_counter() - started + repaint()
        library.filter_edit.clear()
        app.processEvents()
        figures["paint (UI)"] = repaint()
        rows[size] = figures
        window.close()
        window.deleteLater()
        app.processEvents()
        # The 20 added documents stay in the store: the next size starts after them.
        stored += 20

    base = rows[sizes[0]]
    print(f"Library at {', '.join(f'{s:,}' for s in sizes)} documents (UI thread, ms):")
    keys = list(base)
    print("  " + "measurement".ljust(22) + "".join(f"{s:>18,}" for s in sizes))
    for key in keys:
        cells = []
        for size in sizes:
            value = rows[size][key] * 1000
            ratio = rows[size][key] / base[key] if base[key] else 0.0
            cells.append(f"{value:9.1f} ({ratio:4.1f}x)")
        print("  " + key.ljust(22) + "".join(f"{c:>18}" for c in cells))
    largest = rows[sizes[-1]]
    # Single blocks of the UI thread (the 20 additions' sum is spread over their arrival).
    worst_ui = max(v for k, v in largest.items() if k.endswith("(UI)") or "stall" in k)
    print(
        f"worst UI-thread block at {sizes[-1]:,} documents: {worst_ui * 1000:.1f} ms "
        f"(goal: responsive, under 100 ms)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

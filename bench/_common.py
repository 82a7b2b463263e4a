"""What every benchmark sets up the same way: the project on ``sys.path``, the corpus files,
a private data directory for GUI benches, medians, a Qt event spinner and the test server
in a child process (as a real server would be: only the app's own work is measured).

Imported first by each ``bench/bench_*.py`` (run as ``python bench/bench_x.py``, so this
folder is on ``sys.path``).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

CORPUS = ROOT.parent / "shared" / "corpus" / "pdf-samples"
GEOTOPO = CORPUS / "009-pdflatex-geotopo" / "GeoTopo-komprimiert.pdf"
FOUR_PAGES = CORPUS / "004-pdflatex-4-pages" / "pdflatex-4-pages.pdf"
API_KEY = "bench"


def gui_environment() -> None:
    """Offscreen Qt and a fresh data directory: call before importing Qt or ``desktop.ui``."""
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    os.environ["LONGDOC_HOME"] = tempfile.mkdtemp(prefix="longdoc-bench-")


def median_seconds(fn: Callable[[], object], repeats: int = 5) -> float:
    """Median wall time of ``fn()`` over ``repeats`` runs."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def spin(app: object, until: Callable[[], bool], timeout: float, step_ms: int = 5) -> bool:
    """Run Qt's event loop until ``until()`` (True) or ``timeout`` seconds pass (False)."""
    from PySide6.QtCore import QEventLoop

    deadline = time.monotonic() + timeout
    while not until():
        if time.monotonic() > deadline:
            return False
        app.processEvents(QEventLoop.ProcessEventsFlag.AllEvents, step_ms)  # type: ignore[attr-defined]
    return True


def start_server(*args: str) -> tuple[subprocess.Popen[str], str]:
    """The test server (``tests.support.sglang_server ARGS``, key ``API_KEY``, a free port)
    in a child process, and its URL once it listens."""
    proc = subprocess.Popen(
        [
            *(sys.executable, "-m", "tests.support.sglang_server", "--port", "0"),
            *("--api-key", API_KEY, *args),
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert proc.stdout is not None
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if "Uvicorn running on " in line:
            # Keep reading its log, or the pipe fills up and the server blocks writing.
            threading.Thread(target=proc.stdout.read, daemon=True).start()
            return proc, line.split("Uvicorn running on ", 1)[1].split()[0]
        if not line and proc.poll() is not None:
            break
    proc.kill()
    raise SystemExit("the test server did not start")


def set_behaviour(url: str, **fields: object) -> None:
    """Change the running test server's behaviour (``POST /_test/behaviour``)."""
    request = urllib.request.Request(
        f"{url}/_test/behaviour",
        data=json.dumps(fields).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=10):
        pass


def window_on(app: object, url: str, path: Path, poll_ms: int, **settings: Any) -> Any:
    """The app's window on the test server at ``url`` with ``path`` open and ready to ask,
    background warm-ups off (only the questions reach the server)."""
    from desktop.config import Settings, db_path
    from desktop.store.db import Store
    from desktop.ui.app import create_window

    chosen = Settings(endpoint=url, api_key=API_KEY, **settings)
    window = create_window(chosen, Store(db_path()), poll_ms=poll_ms)
    window.ask_panel.warm_up_enabled = False
    window.resize(1400, 900)
    window.show()
    window.add_paths([path])
    assert spin(app, lambda: window.ask_panel.budget_bar.view is not None, 60), "not ready"
    return window


@contextmanager
def asking_window(
    path: Path, poll_ms: int, behaviour: dict[str, Any], **settings: Any
) -> Iterator[tuple[Any, Any]]:
    """The QApplication and a window (``window_on``) on a test server in a child process
    (262,144-token context) behaving as ``behaviour`` says; the tokenizer built first (as
    the app does). The window is closed and the server stopped afterwards."""
    from desktop.documents import tokens
    from desktop.ui.app import application

    app = application()
    tokens.encoding()
    proc, url = start_server("--context-length", "262144")
    try:
        set_behaviour(url, **behaviour)
        window = window_on(app, url, path, poll_ms, **settings)
        try:
            yield app, window
        finally:
            window.close()
    finally:
        proc.terminate()
        proc.wait(10)


class Heartbeat:
    """A 5 ms timer on the UI thread: the longest gap between its ticks since ``start``
    (the first counted from ``start``), which is how long the UI thread was held up.

    Made after the ``QApplication``; Qt is imported here so non-GUI benches stay Qt-free.
    """

    INTERVAL_S = 0.005

    def __init__(self) -> None:
        from PySide6.QtCore import QElapsedTimer, QTimer

        self.clock = QElapsedTimer()
        self.timer = QTimer()
        self.timer.setInterval(round(self.INTERVAL_S * 1000))
        self.timer.timeout.connect(self._tick)
        self.last = 0.0
        self.worst_s = 0.0

    def _tick(self) -> None:
        now = self.clock.nsecsElapsed() / 1e9
        self.worst_s = max(self.worst_s, now - self.last)
        self.last = now

    def start(self) -> None:
        """Count from now (again)."""
        self.worst_s = self.last = 0.0
        self.clock.start()
        self.timer.start()

    def stop(self) -> float:
        """Stop ticking; the worst lateness in seconds (the longest gap beyond a tick)."""
        self.timer.stop()
        return max(0.0, self.worst_s - self.INTERVAL_S)

"""PNG screenshots of the app's main states, without a GPU (the fake SGLang server).

    QT_QPA_PLATFORM=offscreen .venv/bin/python packaging/screenshots.py --out screenshots/

(or ``make screenshots``; under Xvfb, drop QT_QPA_PLATFORM). Uses a temporary
LONGDOC_HOME, so your own library and settings are untouched. Writes: 01-first-run,
02-document, 03-streaming, 04-quote-marks, 05-prefill, 06-cached, 07-over-budget,
08-server, 09-settings, 10-thread, 11-citation-highlight, 12-ask-about-these-documents,
13-compare (.png).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ["LONGDOC_HOME"] = tempfile.mkdtemp(prefix="longdoc-shots-")

from PySide6.QtCore import QEventLoop, Qt  # noqa: E402
from PySide6.QtGui import QTextCursor  # noqa: E402
from PySide6.QtTest import QTest  # noqa: E402
from PySide6.QtWidgets import QWidget  # noqa: E402

import desktop.ui  # noqa: E402,F401  (PySide6 6.12.0 workaround first)
from desktop.config import Settings, db_path, save_settings  # noqa: E402
from desktop.documents import tokens  # noqa: E402
from desktop.store.db import Store  # noqa: E402
from desktop.ui.app import application, create_window  # noqa: E402
from desktop.ui.compare_window import CompareWindow  # noqa: E402
from desktop.ui.main_window import MainWindow  # noqa: E402

CORPUS = ROOT.parent / "shared" / "corpus" / "pdf-samples"
GEOTOPO = CORPUS / "009-pdflatex-geotopo" / "GeoTopo-komprimiert.pdf"
FOUR_PAGES = CORPUS / "004-pdflatex-4-pages" / "pdflatex-4-pages.pdf"
# Two versions of a short agreement for the Compare window: an amount and a term changed,
# a clause added, one removed, one moved, and the text reflowed.
DRAFT = [
    "1. Scope. The Supplier delivers widgets to the Buyer as listed in the schedule.",
    "2. Price. The Buyer pays EUR 40,000 a year, invoiced quarterly in advance.",
    "3. Term. This agreement runs for 24 months from the effective date.",
    "4. Audit. The Buyer may audit the Supplier's records once a year on notice.",
    "5. Notices. Notices are given in writing to the addresses in the schedule.",
    "6. Law. This agreement is governed by the laws of Ireland.",
]
SIGNED = [
    DRAFT[0],
    DRAFT[1].replace("40,000", "45,000"),
    DRAFT[2].replace("24", "36"),
    "3a. Service levels. The Supplier meets the service levels in Annex B.",
    DRAFT[5],
    DRAFT[4],
]
KEY = "screenshots"
COMPARE_ANSWER = (
    'The price rises: "The Buyer pays EUR 40,000 a year" [A p. 1] is now "The Buyer pays '
    'EUR 45,000 a year" [B p. 1], and the term is longer: "runs for 36 months" [B p. 1].'
)
SIZE = (1440, 900)
# Prompt tokens per second the fake server prefills: GeoTopo takes a few seconds.
PREFILL_RATE = 12_000

ANSWER = """## What the book covers

The script is an introduction to **geometry and topology** for first-semester students \
[p. i]. It starts from *topological spaces* and continuity [p. 2], then treats:

- metric spaces and their topology [p. 3]
- the fundamental group and coverings [pp. 40-45]
- manifolds and differential forms [p. 61]

The preface says: "Dieses Skript wurde im Wintersemester 2013/2014 von Martin Thoma \
geschrieben" [p. ii]. The first definition reads: "Ein topologischer Raum ist ein Paar (X, T) \
bestehend aus einer Menge X" [p. 2]. It is "written for absolute beginners with no \
background" [p. iii].

### In short

It is a lecture script, not a textbook; exercises with solutions are in the appendix [p. 101].
"""


def spin(until: Callable[[], bool], timeout: float = 30.0) -> bool:
    """Run the event loop until ``until()`` or the timeout; whether ``until()`` came true."""
    app = application()
    deadline = time.monotonic() + timeout
    while not until() and time.monotonic() < deadline:
        app.processEvents(QEventLoop.ProcessEventsFlag.AllEvents, 20)
    app.processEvents()
    return until()


def wait_for(until: Callable[[], bool], what: str, timeout: float = 30.0) -> None:
    """``spin`` for a state the next steps need: stop with ``what`` if it never comes."""
    if not spin(until, timeout):
        raise SystemExit(f"screenshots: {what} did not happen within {timeout:.0f} s")


def expect(until: Callable[[], bool], what: str, timeout: float = 30.0) -> None:
    """``spin`` for the state a screenshot is meant to show: said on stderr if it never
    comes (the screenshot is still taken, but shows something else)."""
    if not spin(until, timeout):
        late = f"screenshots: warning: {what} did not happen within {timeout:.0f} s"
        print(late, file=sys.stderr)


def compare_window(window: MainWindow) -> CompareWindow | None:
    """The Compare window the main window keeps, once it is open."""
    found = [w for w in window.several.windows if isinstance(w, CompareWindow)]
    return found[0] if found else None


def shoot(widget: QWidget, out: Path, name: str) -> None:
    """Save a widget as PNG."""
    application().processEvents()
    path = out / f"{name}.png"
    if not widget.grab().save(str(path)):
        raise SystemExit(f"could not write {path}")
    print(path)


def click_citation(window: MainWindow, href: str) -> None:
    """Click the answer's first link to ``href`` with the mouse, as a user would."""
    browser = window.ask_panel.answer_view.browser
    block = browser.document().begin()
    while block.isValid():
        it = block.begin()
        while not it.atEnd():
            fragment = it.fragment()
            if fragment.charFormat().anchorHref() == href:
                cursor = QTextCursor(browser.document())
                cursor.setPosition(fragment.position() + 1)
                browser.ensureCursorVisible()
                point = browser.cursorRect(cursor).center()
                QTest.mouseClick(browser.viewport(), Qt.MouseButton.LeftButton, pos=point)
                return
            it += 1
        block = block.next()
    raise SystemExit(f"no link {href!r} in the answer")


def window_for(settings: Settings, store: Store) -> MainWindow:
    save_settings(settings)
    window = create_window(settings, store, poll_ms=500)
    window.resize(*SIZE)
    window.show()
    return window


class TestServer:
    """The project's SGLang-compatible test server as a program of its own
    (``python -m tests.support.sglang_server``: this script imports nothing from the tests)."""

    def __init__(self, url: str) -> None:
        self.url = url

    def behave(self, **fields: object) -> None:
        """Change what it answers and how fast (its ``POST /_test/behaviour``)."""
        body = json.dumps(fields).encode()
        request = urllib.request.Request(f"{self.url}/_test/behaviour", data=body, method="POST")
        request.add_header("Content-Type", "application/json")
        with urllib.request.urlopen(request, timeout=10):
            pass


@contextmanager
def test_server(context_length: int) -> Iterator[TestServer]:
    """A test server on a free loopback port, ready for requests, stopped afterwards."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    command = [sys.executable, "-m", "tests.support.sglang_server", "--port", str(port)]
    command += ["--api-key", KEY, "--context-length", str(context_length)]
    child = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL)
    server = TestServer(f"http://127.0.0.1:{port}")
    try:
        spin(lambda: _answers(f"{server.url}/health") or child.poll() is not None, 60)
        if child.poll() is not None:
            raise SystemExit(f"the test server exited ({child.returncode})")
        yield server
    finally:
        child.terminate()
        child.wait(10)


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=1) as response:
            return bool(response.status == 200)
    except OSError:
        return False


def main() -> int:
    parser = argparse.ArgumentParser(description="Screenshots of Longdoc's main states.")
    parser.add_argument("--out", type=Path, default=ROOT / "screenshots")
    args = parser.parse_args()
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    application()
    tokens.encoding()
    store = Store(db_path())
    with test_server(262_144) as server:
        window = window_for(Settings(endpoint=server.url, api_key=KEY), store)
        spin(lambda: window.indicator.state == "ready")
        spin(lambda: window.first_run.server_label.text().startswith("✓ Server: ready"))
        shoot(window, out, "01-first-run")

        window.add_paths([GEOTOPO])
        spin(lambda: window.document is not None and window.ask_panel.budget_bar.view is not None)
        window.doc_view.go_to_page(2)
        spin(lambda: False, 0.5)
        shoot(window, out, "02-document")

        panel = window.ask_panel
        view = panel.answer_view
        # A prefill the app can time (most of the prompt uncached): it learns the rate.
        server.behave(
            answer_text=ANSWER,
            token_delay_s=0.03,
            reasoning_tokens=120,
            prefill_tokens_per_s=PREFILL_RATE,
        )
        panel.question_edit.setPlainText("What does the book cover, and for whom?")
        panel.ask()
        spin(lambda: len(view.writer.text) > 330, 90)
        view.reasoning_toggle.setChecked(True)
        spin(lambda: False, 0.2)
        shoot(window, out, "03-streaming")
        spin(lambda: not panel.busy, 60)
        spin(lambda: view.quote_checks is not None, 10)
        view.reasoning_toggle.setChecked(False)
        spin(lambda: False, 0.1)
        view.browser.verticalScrollBar().setValue(view.browser.verticalScrollBar().maximum())
        spin(lambda: False, 0.3)
        shoot(window, out, "04-quote-marks")

        # The verified quote's citation: its page, the passage highlighted.
        click_citation(window, "longdoc-page:l=ii")
        spin(lambda: window.doc_view.current_page() == 2 and bool(window.doc_view.quotes.spans))
        spin(lambda: False, 0.5)
        shoot(window, out, "11-citation-highlight")

        # Other pages, a new thread: nothing of this prompt is cached, the server reads it all.
        panel.new_thread()
        panel.pages_edit.setText("3-100")
        panel.question_edit.setPlainText("Which theorems about compactness are proved?")
        panel.ask()
        expect(
            lambda: view.prefill_bar.isVisible() and view.prefill_bar.value() > 150,
            "05-prefill: the prefill bar past 150",
            60,
        )
        shoot(window, out, "05-prefill")
        spin(lambda: not panel.busy, 90)

        panel.pages_edit.clear()
        panel.new_thread()  # the same words in the same thread would be a follow-up
        panel.question_edit.setPlainText("What does the book cover, and for whom?")
        panel.ask()
        spin(lambda: not panel.busy, 30)
        spin(lambda: view.quote_checks is not None, 10)
        shoot(window, out, "06-cached")

        # A thread of three questions: the earlier turns above the current answer.
        server.behave(answer_text=None, token_delay_s=0, reasoning_tokens=None)
        for follow_up in ("Which chapter defines compactness?", "And where is it used later?"):
            panel.question_edit.setPlainText(follow_up)
            panel.ask()
            spin(lambda: not panel.busy, 30)
        spin(lambda: False, 0.3)
        shoot(window, out, "10-thread")

        # Several documents: a set of two in its own window, then two versions compared.
        window.add_paths([FOUR_PAGES])
        spin(lambda: window.library.model.total == 2 and not window.library.ingesting)
        window.library.view.selectAll()
        window.library.set_ask_button.click()
        spin(lambda: len(window.several.windows) == 1)
        set_window = window.several.windows[0]
        spin(lambda: bool(set_window.share_bar.shares))
        set_window.question_edit.setPlainText("What do these two documents have in common?")
        set_window.ask()
        spin(lambda: set_window.quotes_label.text() != "", 60)
        shoot(set_window, out, "12-ask-about-these-documents")
        set_window.close()
        # Closed, it is deleted (and forgotten) only at a later turn of the event loop:
        # waiting for "one window" would have found it still listed, not the Compare one.
        wait_for(lambda: set_window not in window.several.windows, "the set window closing")
        folder = Path(tempfile.mkdtemp())
        draft, signed = folder / "draft.txt", folder / "signed.txt"
        draft.write_text("\n".join(DRAFT) + "\n", encoding="utf-8")
        signed.write_text("\n".join(SIGNED) + "\n", encoding="utf-8")
        server.behave(answer_text=COMPARE_ANSWER)
        window.several.compare_paths(draft, signed)
        wait_for(lambda: compare_window(window) is not None, "the Compare window opening")
        compare = compare_window(window)
        assert compare is not None
        wait_for(lambda: compare.quotes_label.text() != "", "the comparison explained", 60)
        compare.change_list.setCurrentRow(0)
        spin(lambda: False, 0.5)
        shoot(compare, out, "13-compare")
        compare.close()

        window.show_server_panel()
        assert window.server_panel is not None
        spin(lambda: window.server_panel is not None and window.server_panel.kv_label.text() != "")
        spin(lambda: False, 0.5)
        shoot(window.server_panel, out, "08-server")
        window.server_panel.close()

        dialog = window.show_settings()
        spin(lambda: False, 0.3)
        shoot(dialog, out, "09-settings")
        dialog.close()
        window.close()

    with test_server(40_000) as small:
        window = window_for(Settings(endpoint=small.url, api_key=KEY, answer_reserve=4_096), store)
        spin(lambda: window.indicator.state == "ready")
        # The book (the most recently opened document is a version the Compare step read).
        book = next(d for d in store.list_documents() if Path(d.path).name == GEOTOPO.name)
        window.library.select(book.sha256)
        wait_for(
            lambda: window.document is not None and window.document.sha256 == book.sha256,
            "the book opening",
        )
        spin(lambda: window.ask_panel.budget_bar.view is not None, 30)
        window.ask_panel.question_edit.setPlainText("Summarise the whole book.")
        expect(lambda: window.ask_panel.budget_bar.over_budget, "07-over-budget: over budget", 10)
        spin(lambda: False, 0.5)
        shoot(window, out, "07-over-budget")
        window.close()
    store.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

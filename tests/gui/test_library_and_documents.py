"""The library tells the truth at a glance, stays fast when large, and the page shown is
the page of the document asked about."""

from __future__ import annotations

import os
from dataclasses import fields
from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QImage
from PySide6.QtWidgets import QSpinBox
from pytestqt.qtbot import QtBot

from desktop.answering.budget import ContextLimits
from desktop.config import Settings, config_path, setting_sources
from desktop.documents.model import Document
from desktop.store.db import DocumentSummary, Store
from desktop.ui import tasks
from desktop.ui.document_view import DocumentView
from desktop.ui.main_window import MainWindow
from desktop.ui.settings_dialog import SettingsDialog
from tests.conftest import API_KEY, CORPUS_DIR
from tests.gui.conftest import ENCRYPTED, FOUR_PAGES, ask, open_document, wait_ready
from tests.support.sglang_server import FakeSGLang

SCANNED = CORPUS_DIR / "007-imagemagick-images" / "imagemagick-images.pdf"
WITH_IMAGE = CORPUS_DIR / "003-pdflatex-image" / "pdflatex-image.pdf"


def chat_requests(server: FakeSGLang) -> int:
    return sum(1 for r in server.requests if r.path.endswith("/chat/completions"))


# --- a scanned PDF (issue 7 I) -----------------------------------------------------------


def test_a_scanned_pdf_is_asked_about_as_images_when_the_server_reads_them(
    qtbot: QtBot, window: MainWindow, sglang: FakeSGLang
) -> None:
    """Issue 21 item 7: the app refused image-only PDFs ("✗ no text", Ask disabled) while
    the CLI sent their pages as images; now it asks as the CLI does (the core's rule)."""
    qtbot.waitUntil(lambda: window.session.reads_images is True, timeout=20_000)
    open_document(window, qtbot, SCANNED)
    doc = window.document
    assert doc is not None
    assert window.library.fits_text(doc.sha256) == "images"
    assert "asked about as images" in (window.library.fits_tip(doc.sha256) or "")
    panel = window.ask_panel
    assert panel.ask_button.isEnabled()
    result = ask(window, qtbot, "What is in the picture?")
    assert getattr(result, "answer", None)
    sent = [r for r in sglang.requests if r.path.endswith("/chat/completions")][-1]
    parts = [
        p for m in sent.body["messages"] if isinstance(m["content"], list) for p in m["content"]
    ]
    assert sum(p.get("type") == "image_url" for p in parts) == 6  # one per scanned page


def test_a_scanned_pdf_is_refused_with_one_reason_when_the_server_reads_no_images(
    qtbot: QtBot, window: MainWindow, sglang: FakeSGLang
) -> None:
    """Without images the reason says so, with OCR as the other way (not the only one)."""
    sglang.behaviour.image_understanding = False
    qtbot.waitUntil(lambda: window.session.reads_images is False, timeout=20_000)
    open_document(window, qtbot, SCANNED)
    doc = window.document
    assert doc is not None
    fits = window.library.fits_text(doc.sha256)
    assert fits == "✗ no text"
    tip = window.library.fits_tip(doc.sha256) or ""
    assert "does not read images" in tip and "or run it through OCR" in tip
    panel = window.ask_panel
    assert not panel.ask_button.isEnabled()
    assert "does not read images" in panel.ask_button.toolTip()
    assert "Cannot ask about this document: no text could be extracted" in (
        panel.budget_bar.label.text()
    )
    panel.question_edit.setPlainText("What is in the picture?")
    assert not panel.ask()
    assert chat_requests(sglang) == 0
    # A document with text, opened next, can be asked about again.
    open_document(window, qtbot, FOUR_PAGES)
    qtbot.waitUntil(lambda: panel.ask_button.isEnabled())
    assert window.library.fits_text(window.document.sha256) == "✓"  # type: ignore[union-attr]


# --- the page shown (issue 10 item 2) -------------------------------------------------------


def thumbnail(view: DocumentView) -> list[int]:
    """The PDF view as a 24x32 grey thumbnail (robust to sub-pixel scaling differences)."""
    image = view.pdf_view.viewport().grab().toImage()
    small = image.convertToFormat(QImage.Format.Format_Grayscale8).scaled(
        24, 32, Qt.AspectRatioMode.IgnoreAspectRatio, Qt.TransformationMode.SmoothTransformation
    )
    return [small.pixelColor(x, y).value() for y in range(32) for x in range(24)]


def distance(a: list[int], b: list[int]) -> float:
    return sum(abs(x - y) for x, y in zip(a, b, strict=True)) / len(a)


def own_page(qtbot: QtBot, doc: Document, size: object) -> list[int]:
    """The document's own first page, as a fresh view of the same size shows it."""
    view = DocumentView()
    qtbot.addWidget(view)
    view.resize(size)  # type: ignore[call-overload]
    view.show()
    view.show_document(doc)
    qtbot.waitUntil(lambda: view.mode == "pdf", timeout=10_000)
    previous: list[list[int]] = []

    def settled() -> bool:  # the same picture twice in a row: rendering is done
        previous.append(thumbnail(view))
        return len(previous) > 1 and previous[-1] == previous[-2]

    qtbot.waitUntil(settled, timeout=10_000)
    return previous[-1]


def test_the_viewer_shows_the_new_documents_page_not_the_previous_ones(
    qtbot: QtBot, window: MainWindow
) -> None:
    view = window.doc_view
    open_document(window, qtbot, WITH_IMAGE)
    qtbot.waitUntil(lambda: view.mode == "pdf", timeout=10_000)
    first = window.document
    assert first is not None
    # Paint now, so a render of the first file's page 1 is in flight when the next opens.
    view.pdf_view.viewport().repaint()
    open_document(window, qtbot, FOUR_PAGES)
    qtbot.waitUntil(lambda: view.mode == "pdf", timeout=10_000)
    second = window.document
    assert second is not None
    assert view.page_count_label.text() == "of 4"
    mine = own_page(qtbot, second, view.size())
    theirs = own_page(qtbot, first, view.size())
    assert distance(mine, theirs) > 5  # the two first pages look different
    qtbot.waitUntil(
        lambda: distance(thumbnail(view), mine) < distance(thumbnail(view), theirs),
        timeout=10_000,
    )


def test_a_pdf_is_opened_off_the_ui_thread(qtbot: QtBot, window: MainWindow) -> None:
    open_document(window, qtbot, FOUR_PAGES)
    doc = window.document
    assert doc is not None
    view = DocumentView()
    qtbot.addWidget(view)
    view.show()
    view.show_document(doc)
    # show_document returned before PDFium parsed the file: the view says it is opening.
    assert view.mode == "loading"
    assert view.loading_label.text() == f"Opening {FOUR_PAGES.name}…"
    view.go_to_page(3)  # navigation while it opens is kept
    qtbot.waitUntil(lambda: view.mode == "pdf", timeout=10_000)
    assert view.current_page() == 3
    assert view.pdf.pageCount() == 4


# --- which document am I asking about (issue 10 item 3) ----------------------------------


def test_the_opened_document_is_selected_and_named_and_adding_files_does_not_jump_back(
    qtbot: QtBot, window: MainWindow, tmp_path: Path
) -> None:
    open_document(window, qtbot, FOUR_PAGES)
    doc = window.document
    assert doc is not None
    library = window.library
    qtbot.waitUntil(lambda: library.selected_sha() == doc.sha256)
    panel = window.ask_panel
    assert panel.target_label.text() == f"Asking about: {doc.title} — all 4 pages"
    panel.pages_edit.setText("2-3")
    assert panel.target_label.text() == f"Asking about: {doc.title} — pages 2-3 of 4"

    first = tmp_path / "first notes.txt"
    first.write_text("The first file.", encoding="utf-8")
    last = tmp_path / "last notes.md"
    last.write_text("# Last\n\nThe last file.", encoding="utf-8")
    with qtbot.waitSignal(library.ingest_finished, timeout=30_000):
        window.add_paths([first, last])
    qtbot.waitUntil(lambda: window.document is not None and window.document.path == str(last))
    new = window.document
    assert new is not None
    assert library.selected_sha() == new.sha256
    assert panel.target_label.text() == f"Asking about: {new.title} — its 1 page"
    # A listing that changes the rows (another order: one reset) keeps the new document
    # selected and shown. (A listing of the rows as shown changes nothing: no reset.)
    listed = window.session.store.list_documents()
    assert len(listed) == 3
    with qtbot.assertNotEmitted(library.model.modelReset):
        library.set_documents(listed)
    with qtbot.waitSignal(library.model.modelReset, timeout=10_000):
        library.set_documents(listed[::-1])
    assert library.selected_sha() == new.sha256
    assert window.document is new


# --- a large library (issue 10 item 11) ------------------------------------------------------


def summaries(n: int) -> list[DocumentSummary]:
    return [
        DocumentSummary(
            sha256=f"{i:064x}",
            path=f"/library/contract-{i:05}.pdf",
            title=f"Contract {i:05}",
            kind="pdf",
            pages=40,
            tokens=20_000 + 200 * i,
            chars=80_000,
            empty_pages=0,
            opened_at=float(n - i),
        )
        for i in range(n)
    ]


def test_a_large_library_changes_in_one_batch(qtbot: QtBot, window: MainWindow) -> None:
    library = window.library
    model = library.model
    # The window lists the (empty) store as it opens: let that land first. The rows below
    # are not in the store: no listing of it may replace them (the follower lists the
    # store after a file read here).
    qtbot.waitUntil(lambda: all(t.name != "list documents" for t in tasks.running_tasks()))
    library.follower.stop()
    library.set_documents(summaries(2_000))
    assert model.rowCount() == 2_000
    changes: list[tuple[int, int]] = []
    resets: list[bool] = []
    inserted: list[tuple[int, int]] = []
    model.dataChanged.connect(lambda a, b, _roles=None: changes.append((a.row(), b.row())))
    model.modelReset.connect(lambda: resets.append(True))
    model.rowsInserted.connect(lambda _p, a, b: inserted.append((a, b)))

    # The context becomes known: one change for the whole "Fits" column.
    library.set_context(ContextLimits(262_144), 16_384)
    assert changes == [(0, 1_999)]
    assert library.fits_text(f"{0:064x}") == "✓"
    assert (library.fits_text(f"{1_999:064x}") or "").startswith("✗ +")

    # Adding a document inserts its row; the list is not rebuilt.
    open_document(window, qtbot, FOUR_PAGES)
    assert resets == []
    assert model.rowCount() == 2_001
    assert library.row_texts()[0] == window.document.title  # type: ignore[union-attr]
    assert library.selected_sha() == window.document.sha256  # type: ignore[union-attr]

    # The filter works in the model.
    library.filter_edit.setText("contract-0199")
    assert library.row_texts() == [f"Contract {i:05}" for i in range(1990, 2000)]
    library.filter_edit.clear()
    assert model.rowCount() == 2_001


# --- the message history (issue 10 item 11) -------------------------------------------------


def test_errors_are_kept_in_a_message_history(qtbot: QtBot, window: MainWindow) -> None:
    window.add_paths([ENCRYPTED])
    qtbot.waitUntil(lambda: "password" in window.message_label.text().lower(), timeout=15_000)
    # The next message replaces the status line; the history keeps both.
    open_document(window, qtbot, FOUR_PAGES)
    qtbot.waitUntil(lambda: "password" not in window.message_label.text().lower())
    assert window.messages_button.text() == "Messages (1 new)"
    qtbot.mouseClick(window.messages_button, Qt.MouseButton.LeftButton)
    dialog = window.messages_dialog
    assert dialog is not None and dialog.isVisible()
    lines = dialog.text().splitlines()
    [error] = [line for line in lines if "ERROR" in line]
    assert ENCRYPTED.name in error and "password" in error.lower()
    assert any("Read pdflatex-4-pages.pdf" in line for line in lines)
    assert window.messages_button.text() == "Messages"


# --- settings in effect (issue 10 item 7) -----------------------------------------------------


def test_settings_show_each_value_in_effect_and_where_it_comes_from(
    qtbot: QtBot,
    make_window: object,
    sglang: FakeSGLang,
    home: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A file with two keys: the rest are defaults.
    config_path().write_text(
        'endpoint = "http://file.example:1"\nanswer_reserve = 8192\n', encoding="utf-8"
    )
    monkeypatch.setenv("LONGDOC_ENDPOINT", sglang.url)
    monkeypatch.setenv("LONGDOC_API_KEY", API_KEY)
    from desktop.config import load_settings

    window: MainWindow = make_window(load_settings())  # type: ignore[operator]
    dialog: SettingsDialog = window.show_settings()
    qtbot.addWidget(dialog)
    # One editor per field of the Settings dataclass, no more, no less.
    assert set(dialog.editors) == {f.name for f in fields(Settings)}
    # The file's value is what is edited; what is in effect comes from the environment.
    assert dialog.endpoint_edit.text() == "http://file.example:1"
    assert dialog.effect_labels["endpoint"].text() == (
        f"In effect: {sglang.url} (from the environment variable LONGDOC_ENDPOINT, "
        "which overrides the file)"
    )
    assert dialog.effect_labels["api_key"].text().startswith("In effect: set (from the env")
    assert dialog.effect_labels["answer_reserve"].text() == (
        "In effect: 8,192 tokens (from longdoc.toml)"
    )
    # 0 is not "0 tokens": it means the server's own figure, in the field and beside it.
    context = dialog.editors["context_length"]
    assert isinstance(context, QSpinBox)
    assert context.text() == "as the server reports"
    assert dialog.effect_labels["context_length"].text() == (
        "In effect: as the server reports (from the default)"
    )
    assert dialog.effect_labels["thinking"].text() == "In effect: yes (from the default)"
    assert setting_sources(flags={"model": "m"})["model"] == "flag"
    os.environ.pop("LONGDOC_ENDPOINT")
    assert setting_sources()["endpoint"] == "file"


def test_the_answer_panel_is_ready_after_a_document_without_server(
    qtbot: QtBot, window: MainWindow
) -> None:
    open_document(window, qtbot, FOUR_PAGES)
    wait_ready(window, qtbot)
    assert window.ask_panel.ask_button.isEnabled()
    assert window.ask_panel.ask_button.toolTip().startswith("Ask")


# --- other Longdoc processes (issue 21 item 6) ------------------------------------------------


def test_the_library_follows_cli_ingest_and_remove(
    qtbot: QtBot, window: MainWindow, home: Path
) -> None:
    """A ``longdoc ingest`` into the same data directory shows in the open window, and a
    ``longdoc remove`` takes the row away, without a restart (SQLite's data_version, checked
    off the UI thread about once a second; the goal is within 5 s)."""
    from tests.support.cli import longdoc

    open_document(window, qtbot, FOUR_PAGES)
    library = window.library
    assert len(library.row_texts()) == 1
    ingested = longdoc("ingest", str(WITH_IMAGE), home=home)
    assert ingested.returncode == 0, ingested.stderr
    qtbot.waitUntil(lambda: len(library.row_texts()) == 2, timeout=10_000)
    removed = longdoc("remove", str(WITH_IMAGE), home=home)
    assert removed.returncode == 0, removed.stderr
    qtbot.waitUntil(lambda: len(library.row_texts()) == 1, timeout=10_000)
    assert window.document is not None  # the open document stays open


def _closed(window: MainWindow) -> bool:
    """Nothing open: no document in the window, the viewer or the ask panel."""
    panel = window.ask_panel
    return window.document is None and window.doc_view.mode == "empty" and panel.document is None


def test_the_open_document_closes_when_longdoc_remove_takes_it(
    qtbot: QtBot, window: MainWindow, home: Path, store: Store
) -> None:
    """Regression: ``longdoc remove`` of the open document took its library row but left it
    open in the viewer and the ask panel, so a question would be stored about a document
    no longer in the library. It closes (its thread too) and the status bar says why."""
    from tests.support.cli import longdoc

    open_document(window, qtbot, FOUR_PAGES)  # read by this process: not in the last listing
    wait_ready(window, qtbot)
    panel = window.ask_panel
    ask(window, qtbot, "What is this document about?")
    ask(window, qtbot, "Which page says so?")
    qtbot.waitUntil(lambda: panel.thread_view.isVisible())
    assert window.document is not None
    title = window.document.title
    removed = longdoc("remove", str(FOUR_PAGES), home=home)
    assert removed.returncode == 0, removed.stderr
    qtbot.waitUntil(lambda: _closed(window), timeout=10_000)
    assert window.library.row_texts() == []
    assert panel.current_thread is None and not panel.thread_view.isVisible()
    assert panel.answer_view.answer is None and panel.history == []
    assert not panel.ask_button.isEnabled()
    assert window.windowTitle() == "Longdoc"
    assert window.message_label.text() == (
        f"“{title}” was removed from the library by another Longdoc window or command."
    )
    panel.question_edit.setPlainText("And now?")
    assert not panel.ask()
    assert store.list_documents() == []


def test_the_open_document_closes_when_removed_here(qtbot: QtBot, window: MainWindow) -> None:
    """The app's own Remove of the open document closes it too, and says so."""
    open_document(window, qtbot, FOUR_PAGES)
    assert window.document is not None
    title = window.document.title
    assert window.library.selected_sha() == window.document.sha256
    window.library.remove_selected()
    qtbot.waitUntil(lambda: _closed(window), timeout=10_000)
    assert window.message_label.text() == f"Removed “{title}” and its answers from the library."
    assert window.library.row_texts() == []


def test_a_document_read_here_stays_open_while_another_process_changes_the_library(
    qtbot: QtBot, window: MainWindow, home: Path
) -> None:
    """The listings that follow other processes (and this one's own reads) never close a
    document still in the library."""
    from tests.support.cli import longdoc

    open_document(window, qtbot, FOUR_PAGES)
    follower = window.library.follower
    checked = follower.started
    qtbot.waitUntil(lambda: follower.started > checked + 1, timeout=10_000)
    ingested = longdoc("ingest", str(WITH_IMAGE), home=home)
    assert ingested.returncode == 0, ingested.stderr
    qtbot.waitUntil(lambda: len(window.library.row_texts()) == 2, timeout=10_000)
    assert window.document is not None and Path(window.document.path) == FOUR_PAGES.absolute()
    assert window.doc_view.mode != "empty"


def test_a_scan_opened_before_the_server_answers_is_refused_once_it_reads_no_images(
    qtbot: QtBot, window: MainWindow, sglang: FakeSGLang
) -> None:
    """Opened while the server's image support is unknown, a scan is left to the core; when
    the server turns out to read no images, Ask is disabled with the reason at once."""
    import threading

    sglang.behaviour.image_understanding = False
    gate = threading.Event()
    limits = window.session.limits

    def gated() -> ContextLimits:
        gate.wait(30)
        return limits()

    window.session.limits = gated  # type: ignore[method-assign]
    open_document(window, qtbot, SCANNED)
    panel = window.ask_panel
    assert window.session.reads_images is None and panel.ask_button.isEnabled()
    gate.set()
    qtbot.waitUntil(lambda: not panel.ask_button.isEnabled(), timeout=20_000)
    assert "does not read images" in panel.ask_button.toolTip()


def test_a_narrow_library_gives_its_titles_the_tokens_column(
    qtbot: QtBot, window: MainWindow
) -> None:
    """Too narrow for titles beside three number columns, the library drops Tokens (the
    title's tooltip has the count) rather than cut every title to a few letters."""
    open_document(window, qtbot, FOUR_PAGES)
    library = window.library
    view = library.view
    window.resize(1400, 860)
    qtbot.waitUntil(lambda: not view.isColumnHidden(2))
    sizes = window.splitter.sizes()
    window.splitter.setSizes([220, sizes[1] + sizes[0] - 220, sizes[2], 0])
    qtbot.waitUntil(lambda: view.isColumnHidden(2))
    assert view.columnWidth(0) >= view.fontMetrics().averageCharWidth() * 12
    tip = library.model.index(0, 0).data(Qt.ItemDataRole.ToolTipRole)
    assert "4 pages, " in tip and " tokens" in tip
    window.splitter.setSizes(sizes)
    qtbot.waitUntil(lambda: not view.isColumnHidden(2))

"""The main window's part for several documents at once: "Ask about these N documents"
(desktop/ui/set_window.py) and Compare (desktop/ui/compare_window.py), each in a window
of its own, and a set's citation opened in the main window's viewer."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, Qt, Slot
from PySide6.QtWidgets import QFileDialog, QWidget

from desktop.answers import StoredAnswer
from desktop.documents.model import Document
from desktop.library import open_document
from desktop.ui import messages, tasks

if TYPE_CHECKING:
    from desktop.ui.main_window import MainWindow
    from desktop.ui.set_window import SetAskWindow


class SeveralDocuments(QObject):
    """Opens the set and compare windows for the main window and keeps them."""

    def __init__(self, window: MainWindow) -> None:
        super().__init__(window)
        self.window = window
        self.windows: list[QWidget] = []

    def _load(self, shas: list[str], then: Callable[[list[Document]], object]) -> None:
        """Load stored documents off the UI thread, then ``then(documents)``, in order."""
        store = self.window.session.store

        def loaded(found: list[Document | None]) -> None:
            docs = [d for d in found if d is not None]
            if len(docs) != len(found):
                messages.warning("A selected document is no longer in the library.")
                self.window.library.refresh()
                return
            then(docs)

        tasks.run_call(
            lambda: [store.load_document(sha) for sha in shas],
            receiver=self,
            success=loaded,
            name="load documents",
        )

    def open_answer(self, shas: list[str], answer_id: int) -> None:
        """A stored answer about a set (a search hit): the set's window, showing it."""
        store = self.window.session.store

        def show(docs: list[Document]) -> None:
            window = self.show_set(docs)

            def loaded(answer: StoredAnswer | None) -> None:
                if answer is not None:
                    window.show_answer(answer)

            tasks.run_call(
                lambda: store.get_answer(answer_id),
                receiver=window,
                success=loaded,
                name="load answer",
            )

        self._load(shas, show)

    @Slot(list)
    def ask_about(self, shas: list[str]) -> None:
        """Open "Ask about these N documents" on stored documents, in this order."""
        self._load(shas, self.show_set)

    def show_set(self, docs: list[Document]) -> SetAskWindow:
        """The window asking about ``docs`` as a set (A, B, C... in this order)."""
        from desktop.ui.set_window import SetAskWindow

        window = SetAskWindow(self.window.session, docs, self.window)
        window.citation_opened.connect(self._on_set_window_citation_opened)
        self._keep(window)
        return window

    @Slot(str, str)
    def compare_stored(self, old: str, new: str) -> None:
        """The Compare window on two stored documents (old, new)."""
        self._load([old, new], lambda docs: self.show_compare(docs[0], docs[1]))

    def compare_files(self) -> None:
        """File ▸ Compare two versions: pick the old file, then the new one."""
        old, _ = QFileDialog.getOpenFileName(self.window, "Compare: the old version")
        if not old:
            return
        new, _ = QFileDialog.getOpenFileName(self.window, "Compare: the new version")
        if new:
            self.compare_paths(Path(old), Path(new))

    def compare_paths(self, old: Path, new: Path) -> None:
        """Read (or find) both files off the UI thread, then compare them."""
        store = self.window.session.store

        def both() -> tuple[Document, Document]:
            return open_document(old, store)[0], open_document(new, store)[0]

        def show(pair: tuple[Document, Document]) -> None:
            self.show_compare(*pair)

        tasks.run_call(both, receiver=self, success=show, name="versions")

    def show_compare(self, old: Document, new: Document) -> QWidget | None:
        """The Compare window on two documents (None for the same one twice)."""
        from desktop.ui.compare_window import CompareWindow

        if old.sha256 == new.sha256:
            messages.warning("Those are the same document: choose two versions.")
            return None
        return self._keep(CompareWindow(self.window.session, old, new, self.window))

    def _keep(self, window: QWidget) -> QWidget:
        self.windows.append(window)
        window.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        window.destroyed.connect(lambda: self._forget(window))
        window.show()
        window.raise_()
        return window

    def _forget(self, window: QWidget) -> None:
        if window in self.windows:
            self.windows.remove(window)

    @Slot(str, int, str, str)
    def _on_set_window_citation_opened(self, sha: str, number: int, quote: str, label: str) -> None:
        """A set's citation: its document in the viewer, at the page, the quote highlighted."""
        main = self.window

        def show(docs: list[Document]) -> None:
            main.show_document(docs[0])
            main.library.select(sha)
            if quote and number and main.doc_view.show_quote(number, quote):
                return
            if not main.doc_view.go_to_citation(label or None, number or None):
                messages.warning(f"The answer cites page {label}, which that document lacks.")

        self._load([sha], show)

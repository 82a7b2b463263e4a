"""The main window's side of the library: a search hit opens its page or its answer, and the
open document closes when it leaves the library (removed here, or by another process)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, Slot

from desktop.answers import StoredAnswer
from desktop.documents.model import Document
from desktop.search import Hit
from desktop.session import DocumentSummary
from desktop.ui import messages, tasks
from desktop.ui.search_results import first_match

if TYPE_CHECKING:
    from desktop.ui.main_window import MainWindow


class LibraryLink(QObject):
    """Follows the library panel for the window."""

    def __init__(self, window: MainWindow) -> None:
        super().__init__(window)
        self.window = window
        self._opened_after_check = 0  # the library checks started before it was shown
        library = window.library
        library.document_removed.connect(self._on_library_document_removed)
        library.follower.changed.connect(self._on_library_follower_changed)
        library.search_results.hit_activated.connect(self._on_search_hit_activated)

    def shown(self) -> None:
        """A document is shown: only listings read from now on may say it is gone."""
        self._opened_after_check = self.window.library.follower.started

    @Slot(str, str)
    def _on_library_document_removed(self, sha: str, title: str) -> None:
        doc = self.window.document
        if doc is not None and doc.sha256 == sha:
            self.window.close_document()
            messages.info(f"Removed “{title}” and its answers from the library.")

    @Slot(list)
    def _on_library_follower_changed(self, documents: list[DocumentSummary]) -> None:
        """Another process changed the library: the open document closes if it is gone.
        Only a listing read after it was shown says so (an older one may predate it)."""
        doc = self.window.document
        if doc is None or self.window.library.follower.listed_by <= self._opened_after_check:
            return
        if all(d.sha256 != doc.sha256 for d in documents):
            title = doc.title or Path(doc.path).name
            self.window.close_document()
            messages.warning(
                f"“{title}” was removed from the library by another Longdoc window or command."
            )

    @Slot(object)
    def _on_search_hit_activated(self, hit: Hit) -> None:
        """A search hit: its page with the match highlighted, or its answer and thread."""
        window = self.window
        if hit.answer_id is not None and len(hit.documents) > 1:  # about a set: its window
            window.several.open_answer([d.sha256 for d in hit.documents], hit.answer_id)
            return
        store = window.session.store
        sha, answer_id = hit.document.sha256, hit.answer_id

        def load() -> tuple[Document | None, StoredAnswer | None]:
            answer = store.get_answer(answer_id) if answer_id is not None else None
            return store.load_document(sha), answer

        def loaded(found: tuple[Document | None, StoredAnswer | None]) -> None:
            doc, answer = found
            if doc is None:
                messages.warning("That document is no longer in the library.")
                window.library.refresh()
                return
            window.show_document(doc)
            window.library.select(doc.sha256)
            if hit.page is not None and not window.doc_view.show_quote(
                hit.page, first_match(hit.snippet)
            ):
                window.doc_view.go_to_page(hit.page)
            if answer is not None:
                window.ask_panel.open_answer(answer)

        tasks.run_call(load, receiver=self, success=loaded, name="open search hit")

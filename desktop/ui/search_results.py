"""The library's search hits: matching pages and answers, listed under their document.

The library's filter box drives it: titles are filtered in the library list as before,
and the words typed are searched here in every stored page and answer
(``desktop.search``). The query runs off the UI thread (``tasks.run_call``) a moment after
the last keystroke; each query has a number, and results of any but the latest are
dropped when they arrive, so a slow early query never replaces a later one.
"""

from __future__ import annotations

import dataclasses
import html
import logging

from PySide6.QtCore import QModelIndex, QPersistentModelIndex, QSize, Qt, QTimer, Signal, Slot
from PySide6.QtGui import QAbstractTextDocumentLayout, QPainter, QPalette, QTextDocument
from PySide6.QtWidgets import (
    QLabel,
    QStyle,
    QStyledItemDelegate,
    QStyleOptionViewItem,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from desktop import search
from desktop.search import Hit, QueryError, SearchResult
from desktop.session import Store
from desktop.ui import tasks

log = logging.getLogger("longdoc.ui.search")

DELAY_MS = 150  # after the last keystroke: one query per pause, not one per key
LIMIT = 50
HIT_ROLE = Qt.ItemDataRole.UserRole + 1
HTML_ROLE = Qt.ItemDataRole.UserRole + 2
LINES = 3  # a hit's height: where (label or question) and two lines of snippet

_Index = QModelIndex | QPersistentModelIndex


def snippet_html(snippet: str) -> str:
    """The snippet as escaped rich text, each match bold (it is the document's text)."""
    return "".join(
        f"<b>{html.escape(text)}</b>" if match else html.escape(text)
        for text, match in search.parts(snippet)
    )


def first_match(snippet: str) -> str:
    """The first marked passage of a snippet ('' when none is marked)."""
    return next((text for text, match in search.parts(snippet) if match), "")


class _HitDelegate(QStyledItemDelegate):
    """Draws a hit's rich text (the match in bold) only when its row is painted, at a fixed
    height: a widget per hit (a QLabel) took ~100 ms to lay out 50 of them."""

    def paint(self, painter: QPainter, option: QStyleOptionViewItem, index: _Index) -> None:
        markup = index.data(HTML_ROLE)
        if not markup:
            super().paint(painter, option, index)
            return
        self.initStyleOption(option, index)
        option.text = ""
        style = option.widget.style() if option.widget is not None else None
        if style is not None:
            style.drawControl(QStyle.ControlElement.CE_ItemViewItem, option, painter, option.widget)
        doc = QTextDocument()
        doc.setDefaultFont(option.font)
        doc.setHtml(markup)
        doc.setTextWidth(option.rect.width() - 8)
        painter.save()
        painter.translate(option.rect.left() + 4, option.rect.top() + 2)
        painter.setClipRect(0, 0, option.rect.width() - 8, option.rect.height() - 4)
        context = QAbstractTextDocumentLayout.PaintContext()
        selected = bool(option.state & QStyle.StateFlag.State_Selected)
        role = QPalette.ColorRole.HighlightedText if selected else QPalette.ColorRole.Text
        context.palette.setColor(QPalette.ColorRole.Text, option.palette.color(role))
        doc.documentLayout().draw(painter, context)
        painter.restore()

    def sizeHint(self, option: QStyleOptionViewItem, index: _Index) -> QSize:
        size = super().sizeHint(option, index)
        if index.data(HTML_ROLE):
            size.setHeight(option.fontMetrics.lineSpacing() * LINES + 6)
        return size


class SearchResults(QWidget):
    """Page and answer hits for the library's filter text, grouped by document."""

    hit_activated = Signal(object)  # Hit

    def __init__(self, store: Store, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.store = store
        self.query = ""
        self.generation = 0  # the number of the latest query; older results are dropped
        self.searching = False
        self.result: SearchResult | None = None

        self.hint = QLabel()
        self.hint.setObjectName("searchHint")
        self.hint.setTextFormat(Qt.TextFormat.PlainText)
        self.hint.setWordWrap(True)
        self.hint.setForegroundRole(QPalette.ColorRole.PlaceholderText)
        self.tree = QTreeWidget()
        self.tree.setObjectName("searchHits")
        self.tree.setHeaderHidden(True)
        self.tree.setColumnCount(1)
        self.tree.setRootIsDecorated(False)
        self.tree.setUniformRowHeights(False)
        self.tree.setItemDelegate(_HitDelegate(self.tree))
        self.tree.itemClicked.connect(self._on_tree_item_clicked)
        self.tree.itemActivated.connect(self._on_tree_item_clicked)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.hint)
        layout.addWidget(self.tree, 1)

        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(DELAY_MS)
        self._timer.timeout.connect(self._run)
        self.setVisible(False)
        # A library stored before the index existed is indexed now, in the background
        # (in small batches; searching meanwhile completes it first).
        tasks.run_call(
            lambda: search.ensure_index(store),
            receiver=self,
            failure=lambda exc: log.info("search index not completed: %s", exc),
            name="search index",
        )

    # --- querying -----------------------------------------------------------------------

    def set_query(self, text: str) -> None:
        """Search for ``text`` after a short pause; nothing (hidden) for blank text."""
        self.query = text.strip()
        self.generation += 1  # whatever is in flight is stale from now on
        if not self.query:
            self._timer.stop()
            self.searching = False
            self.result = None
            self.tree.clear()
            self.setVisible(False)
            return
        self._timer.start()

    @Slot()
    def refresh(self) -> None:
        """The library changed (documents added or removed): search the same words again."""
        if self.query:
            self.generation += 1  # a query in flight saw the library before the change
            self._timer.start()

    def run_now(self) -> None:
        """Search at once (tests; Enter in the box)."""
        self._timer.stop()
        self._run()

    @Slot()
    def _run(self) -> None:
        if not self.query:
            return
        generation = self.generation
        query, store = self.query, self.store
        self.searching = True
        tasks.run_call(
            lambda: search.search(store, query, limit=LIMIT),
            receiver=self,
            success=lambda result: self._on_result(generation, result),
            failure=lambda exc: self._on_failure(generation, exc),
            name="search",
        )

    def _on_result(self, generation: int, result: SearchResult) -> None:
        if generation != self.generation:
            return  # typed on since: a newer query is coming
        self.searching = False
        self.result = result
        self._show(result)

    def _on_failure(self, generation: int, exc: BaseException) -> None:
        if generation != self.generation:
            return
        self.searching = False
        self.result = None
        self.tree.clear()
        if isinstance(exc, QueryError):
            self._show_hint(f"Search: {exc}.")
            return
        from desktop.ui import messages

        messages.error(exc)
        self.setVisible(False)

    # --- showing ------------------------------------------------------------------------

    def _show_hint(self, text: str) -> None:
        self.hint.setText(text)
        self.hint.setVisible(True)
        self.tree.setVisible(False)
        self.setVisible(True)

    def _show(self, result: SearchResult) -> None:
        self.tree.clear()
        if not result.hits:
            self._show_hint("No page or answer says that.")
            return
        pages = sum(h.kind == "page" for h in result.hits)
        answers = len(result.hits) - pages
        self.hint.setText(
            f"{pages} page{'s' if pages != 1 else ''} and {answers} "
            f"answer{'s' if answers != 1 else ''}"
            + (" (the best shown)" if len(result.hits) >= LIMIT else "")
        )
        self.hint.setVisible(True)
        groups: dict[str, QTreeWidgetItem] = {}
        for found in result.hits:  # best first: documents in the order of their best hit
            # An answer about a set is listed under each of its documents (opening that one).
            for ref in found.documents if found.kind == "answer" else (found.document,):
                hit = found if ref == found.document else dataclasses.replace(found, document=ref)
                parent = groups.get(ref.sha256)
                if parent is None:
                    parent = QTreeWidgetItem([ref.title or ref.path])
                    parent.setToolTip(0, ref.path)
                    parent.setFlags(Qt.ItemFlag.ItemIsEnabled)
                    font = parent.font(0)
                    font.setBold(True)
                    parent.setFont(0, font)
                    self.tree.addTopLevelItem(parent)
                    groups[ref.sha256] = parent
                item = QTreeWidgetItem(parent, [self._hit_text(hit)])
                item.setData(0, HIT_ROLE, hit)
                item.setData(0, HTML_ROLE, self._hit_html(hit))
                item.setToolTip(0, self._hit_text(hit))
        self.tree.expandAll()
        self.tree.setVisible(True)
        self.setVisible(True)

    @staticmethod
    def _where(hit: Hit) -> str:
        if hit.kind == "page":
            return f"p. {hit.label or hit.page}"
        day = (search.iso(hit.asked_at) or "")[:10]
        if len(hit.documents) > 1:  # about a set: name its documents with their letters
            names = ", ".join(f"{d.letter} {d.title or d.path}" for d in hit.documents)
            return f"Answer about {names} ({day}): {hit.question or ''}"
        return f"Answer ({day}): {hit.question or ''}"

    def _hit_html(self, hit: Hit) -> str:
        return f"<i>{html.escape(self._where(hit))}</i><br>{snippet_html(hit.snippet)}"

    def _hit_text(self, hit: Hit) -> str:
        plain = "".join(text for text, _ in search.parts(hit.snippet))
        return f"{self._where(hit)}\n{plain}"

    def _hit_items(self) -> list[QTreeWidgetItem]:
        items = []
        for i in range(self.tree.topLevelItemCount()):
            parent = self.tree.topLevelItem(i)
            if parent is not None:
                items += [c for j in range(parent.childCount()) if (c := parent.child(j))]
        return items

    def hits(self) -> list[Hit]:
        """The hits listed, top to bottom (tests)."""
        return [item.data(0, HIT_ROLE) for item in self._hit_items()]

    def item_for(self, hit: Hit) -> QTreeWidgetItem | None:
        """The row of a hit (tests)."""
        return next((i for i in self._hit_items() if i.data(0, HIT_ROLE) == hit), None)

    @Slot(QTreeWidgetItem, int)
    def _on_tree_item_clicked(self, item: QTreeWidgetItem, _column: int) -> None:
        hit = item.data(0, HIT_ROLE)
        if isinstance(hit, Hit):
            self.hit_activated.emit(hit)

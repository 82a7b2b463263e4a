"""QtPdf's view with scroll bars that cannot oscillate and a page kept across resizes.

Fit-to-width with scroll bars "as needed" can loop forever on a real display: a page
whose fitted height is about the viewport's needs a vertical bar, the bar narrows the
viewport, the narrower page fits, the bar hides, the page widens again... QPdfView
re-lays out on every show and hide, so the UI thread never returns to the event loop
(cmyk-image.pdf at 1400x860: issue 21). The vertical bar is therefore always shown (the
viewport's width never depends on the content), and the horizontal one only exists at a
custom zoom, where the layout does not depend on the viewport.

Fitted to the width, a resize changes every page's height, and QPdfView keeps the scroll
bar's pixel value, which lands on another page (9 -> 16 -> 2): the page in view, and the
place in it, are put back after each resize.

A checked quote is painted over the pages as a highlight of its own (``set_highlight``),
whole, from rectangles found off the UI thread (``desktop.answering.quote_spans``): QtPdf's
search model runs on the UI thread, searches line by line and highlights every other hit.
The pages are where ``QPdfViewPrivate::calculateDocumentLayout`` puts them, rebuilt here
(``page_rect``) since QPdfView does not expose them.
"""

from __future__ import annotations

from PySide6.QtCore import QPointF, QRectF, QSizeF, Qt
from PySide6.QtGui import QColor, QGuiApplication, QPainter, QPaintEvent, QPalette, QResizeEvent
from PySide6.QtPdfWidgets import QPdfView
from PySide6.QtWidgets import QWidget

# (0-based page, rectangles in points from the page's top-left corner)
Highlight = list[tuple[int, list[QRectF]]]


class PdfPages(QPdfView):
    """A QPdfView whose scroll bars cannot loop and whose page survives resizes."""

    def __init__(self, parent: QWidget) -> None:
        super().__init__(parent)
        self.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOn)
        self.setZoomMode(QPdfView.ZoomMode.FitToWidth)
        self.highlight: Highlight = []

    def set_highlight(self, highlight: Highlight) -> None:
        """Paint these rectangles as the highlighted passage ([]: none)."""
        self.highlight = highlight
        self.viewport().update()

    def page_rect(self, page: int) -> QRectF:
        """Where page ``page`` (0-based) is in the scrolled area, in pixels (MultiPage)."""
        doc = self.document()
        if doc is None or not 0 <= page < doc.pageCount():
            return QRectF()
        margins = self.documentMargins()
        available = self.viewport().width() - margins.left() - margins.right()
        screen = QGuiApplication.primaryScreen()
        resolution = screen.logicalDotsPerInch() / 72.0 if screen is not None else 1.0
        custom = self.zoomMode() == QPdfView.ZoomMode.Custom

        def size(number: int) -> QSizeF:
            points = doc.pagePointSize(number)
            if custom:
                return QSizeF((points * resolution * self.zoomFactor()).toSize())
            native = (points * resolution).toSize()
            factor = available / native.width() if native.width() > 0 else 0.0
            return QSizeF(native * factor)

        top = float(margins.top())
        for number in range(page):
            top += size(number).height() + self.pageSpacing()
        this = size(page)
        # Centred in the wider of the pages and the viewport (a custom zoom: the widest page).
        widest = max(size(n).width() for n in range(doc.pageCount())) if custom else this.width()
        total = widest + margins.left() + margins.right()
        left = (max(int(total), self.viewport().width()) - int(this.width())) // 2
        return QRectF(left, top, this.width(), this.height())

    def highlight_rects(self) -> list[QRectF]:
        """The highlight in the scrolled area's pixels."""
        doc = self.document()
        found: list[QRectF] = []
        for page, rects in self.highlight if doc is not None else []:
            where = self.page_rect(page)
            points = doc.pagePointSize(page)
            scale = where.width() / points.width() if points.width() > 0 else 0.0
            for rect in rects:
                found.append(
                    QRectF(
                        where.left() + rect.left() * scale,
                        where.top() + rect.top() * scale,
                        rect.width() * scale,
                        rect.height() * scale,
                    )
                )
        return found

    def scroll_to_highlight(self) -> None:
        """The highlight's first line a third of the way down the view."""
        rects = self.highlight_rects()
        if rects:
            bar = self.verticalScrollBar()
            bar.setValue(int(rects[0].top() - self.viewport().height() / 3))

    def paintEvent(self, event: QPaintEvent) -> None:
        """The pages, then the highlighted passage over them."""
        super().paintEvent(event)
        if not self.highlight:
            return
        colour = QColor(self.palette().color(QPalette.ColorRole.Highlight))
        colour.setAlpha(90)
        painter = QPainter(self.viewport())
        painter.translate(-self.horizontalScrollBar().value(), -self.verticalScrollBar().value())
        for rect in self.highlight_rects():
            painter.fillRect(rect.adjusted(-1, -1, 1, 1), colour)
        painter.end()

    def setZoomMode(self, mode: QPdfView.ZoomMode) -> None:
        """Also the horizontal bar's policy: none while fitted (see the module's note)."""
        policy = Qt.ScrollBarPolicy
        fitted = mode != QPdfView.ZoomMode.Custom
        self.setHorizontalScrollBarPolicy(
            policy.ScrollBarAlwaysOff if fitted else policy.ScrollBarAsNeeded
        )
        super().setZoomMode(mode)

    def resizeEvent(self, event: QResizeEvent) -> None:
        """Re-lay out the pages, then show the same page at the same place in it."""
        doc = self.document()
        navigator = self.pageNavigator()
        old_width = event.oldSize().width()
        keep = (
            doc is not None
            and doc.pageCount() > 0
            and self.zoomMode() == QPdfView.ZoomMode.FitToWidth
            and old_width > 0
        )
        page = navigator.currentPage()
        fraction = self._fraction_in_page(page, old_width) if keep else 0.0
        super().resizeEvent(event)
        if keep and event.size().width() != old_width:
            height = doc.pagePointSize(page).height()
            navigator.jump(page, QPointF(0, fraction * height), navigator.currentZoom())

    def _fraction_in_page(self, page: int, viewport_width: int) -> float:
        """How far down ``page`` the viewport's top is (0..1), fitted to ``viewport_width``.

        QPdfView does not expose page geometry; fitted to the width, its layout is the
        document margin, then each page at the available width, ``pageSpacing`` apart.
        """
        doc = self.document()
        margins = self.documentMargins()
        available = viewport_width - margins.left() - margins.right()
        top = float(margins.top())
        height = 0.0
        for number in range(page + 1):
            size = doc.pagePointSize(number)
            height = size.height() * available / size.width() if size.width() > 0 else 0.0
            if number < page:
                top += height + self.pageSpacing()
        if height <= 0:
            return 0.0
        return min(max((self.verticalScrollBar().value() - top) / height, 0.0), 0.999)

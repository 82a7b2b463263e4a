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
"""

from __future__ import annotations

from PySide6.QtCore import QPointF, Qt
from PySide6.QtGui import QResizeEvent
from PySide6.QtPdfWidgets import QPdfView
from PySide6.QtWidgets import QWidget


class PdfPages(QPdfView):
    """A QPdfView whose scroll bars cannot loop and whose page survives resizes."""

    def __init__(self, parent: QWidget) -> None:
        super().__init__(parent)
        self.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOn)
        self.setZoomMode(QPdfView.ZoomMode.FitToWidth)

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
